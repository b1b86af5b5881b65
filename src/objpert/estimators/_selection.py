"""scikit-learn's model selection on private rows: flagged, counted and recorded.

A search (``GridSearchCV``, ``RandomizedSearchCV``, the halving searches) or a
cross-validation helper (``cross_val_score``, ``cross_validate``, ``cross_val_predict``,
``validation_curve``, ``learning_curve``, ``permutation_test_score``) fits a private
estimator many times on the same private rows and selects on their scores. Each fit is a
release, and the selection reads the rows again: no single fit's certificate covers it.

Every one of them clones the estimator first (``sklearn.base.clone``), in the calling
process, before any fit. :meth:`SelectionGuard.__sklearn_clone__` looks up the calling
frames there and, when it finds one of these searches:

* warns once per call with a :class:`~objpert.exceptions.PrivacyLeakWarning` naming the
  search, its number of fits and what to use instead;
* marks the clone, so that its fit records ``"model selection by GridSearchCV (19 fits)"``
  in ``certificate_.not_public`` (and so in the saved file, ``certify --model`` and the
  report);
* shows each warning of the fits inside it once per cause (per call): the fits of one
  call share a record of the causes shown (:func:`once_per_cause`), so five folds that
  read the row bound from the data print one warning, not five;
* with an ``accountant``, refuses a search that would fit in other processes (the
  ledger cannot follow them): one :class:`~objpert.exceptions.PrivacyError`, raised before
  any fit, instead of a pickling traceback. Fits in this process charge the ledger one by
  one, each refused before it reads the data when the budget is spent.

The number of fits is read from the search's own public settings (candidates x splits,
plus the refit); a successive-halving search adds rounds as it goes, so its warning says
"at least" and the refitted model records the exact count.
"""

from __future__ import annotations

import re
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

from sklearn.base import _clone_parametrized

from objpert.exceptions import PrivacyError, PrivacyLeakWarning

__all__ = ["SelectionGuard", "SelectionUse", "find_selection", "fitting", "once_per_cause"]

#: scikit-learn's public cross-validation helpers (cross_val_score calls cross_validate).
HELPERS = (
    "cross_val_score",
    "cross_validate",
    "cross_val_predict",
    "validation_curve",
    "learning_curve",
    "permutation_test_score",
)

INSTEAD = (
    "use objpert.model_selection.PrivateGridSearch (one certificate for the search and "
    "the selected model), choose the hyperparameters on public or pilot data, or give "
    "the estimator an accountant= that charges every fit"
)

#: scikit-learn's meta-estimators that fit a private estimator repeatedly on the same rows
#: or choose from its outputs on them (a threshold, a calibration, features, an ensemble,
#: one release per class or output); each such fit is flagged and recorded like a search.
REFITTERS = (
    "sklearn.model_selection._classification_threshold",
    "sklearn.calibration",
    "sklearn.ensemble",
    "sklearn.feature_selection",
    "sklearn.multiclass",
    "sklearn.multioutput",
    "sklearn.semi_supervised",
)
#: Those of their modules that fit the estimator once, with public settings only.
SINGLE_FITS = ("FixedThresholdClassifier",)

_warned: weakref.WeakSet[Any] = weakref.WeakSet()  # the calls warned (their Parallel)
_lock = threading.Lock()


_NUMBERS = re.compile(r"[-+]?\d[\d.eE+-]*")


class _CausesShown:
    """The causes (category, and message less its numbers) of the warnings shown so far in one
    model-selection call, shared by its fits in this process (a copy pickled to another
    process starts empty: each process then shows each cause once)."""

    def __init__(self) -> None:
        self.seen: set[tuple[Any, str]] = set()

    def first(self, w: warnings.WarningMessage) -> bool:
        cause = (w.category, _NUMBERS.sub("#", str(w.message)))
        with _lock:
            if cause in self.seen:
                return False
            self.seen.add(cause)
        return True

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (_CausesShown, ())


_calls: weakref.WeakKeyDictionary[Any, _CausesShown] = weakref.WeakKeyDictionary()


def _causes_of(token: Any) -> _CausesShown | None:
    """The shared record of one call's warnings (None: a call that cannot be told apart)."""
    if token is None:
        return None
    with _lock:
        try:
            return _calls.setdefault(token, _CausesShown())
        except TypeError:  # not weakly referable
            return None


@contextmanager
def once_per_cause(model: Any) -> Iterator[None]:
    """The body of an estimator's ``fit``: inside a model-selection call, each warning of
    its fits is shown once per cause (the first fit's), not once per fit. Outside one, and
    for the warning filters (``"error"`` still raises inside the fit), nothing changes."""
    causes = model.__dict__.get("_selection_causes")
    if causes is None:
        yield
        return
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield
    finally:
        for w in caught:  # after the context: the caller's filters and display
            if causes.first(w):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextmanager
def fitting(model: Any) -> Iterator[None]:
    """The body of an estimator's ``fit``: each warning once per cause inside a model
    selection (:func:`once_per_cause`), and on any error the estimator as it was
    (scikit-learn's checks set ``n_features_in_`` before the labels are read: a failed
    refit leaves the previous model whole, never a mixture)."""
    before = dict(model.__dict__)
    with once_per_cause(model):
        try:
            yield
        except BaseException:
            model.__dict__.clear()
            model.__dict__.update(before)
            raise


@dataclass(frozen=True)
class SelectionUse:
    """One call of scikit-learn's model selection found on the stack."""

    name: str  # "GridSearchCV", "cross_val_score", "GridSearchCV within cross_val_score"
    fits: int | None  # fits of the private rows (None: not known)
    at_least: bool  # successive halving: more rounds may follow
    n_jobs: int  # the processes or threads it fits in (joblib's effective count)
    kind: str  # "fits" (cross-validation), "refit" (the selected model), "template" (the
    # search's own copy), "dispatched" (a fit cloned on a joblib thread: warned already)
    token: Any  # identifies the call (its joblib Parallel), or None
    depth: int  # frames from find_selection's caller to the user's call, less one

    @property
    def record(self) -> str:
        """The ``not_public`` item of a model fitted in this selection."""
        if self.fits is None:
            return f"model selection by {self.name}"
        more = "at least " if self.at_least else ""
        return f"model selection by {self.name} ({more}{self.fits} fits)"


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _is_search(obj: Any) -> bool:
    from sklearn.model_selection._search import BaseSearchCV

    return isinstance(obj, BaseSearchCV)


def _halving(obj: Any) -> bool:
    from sklearn.model_selection._search_successive_halving import BaseSuccessiveHalving

    return isinstance(obj, BaseSuccessiveHalving)


def _splits(loc: dict[str, Any]) -> int:
    return int(loc["cv"].get_n_splits(loc.get("X"), loc.get("y"), loc.get("groups")))


def _helper_fits(name: str, loc: dict[str, Any]) -> int | None:
    """Fits of one helper call, from its locals (None when not yet known)."""
    try:
        if name in ("cross_validate", "cross_val_predict"):
            return _splits(loc)
        if name == "validation_curve":
            return len(loc["param_range"]) * _splits(loc)
        if name == "learning_curve":
            return len(loc["train_sizes_abs"]) * _splits(loc)
        if name == "permutation_test_score":
            return (int(loc["n_permutations"]) + 1) * _splits(loc)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return None


def _search_fits(search: Any, frames: list[FrameType]) -> tuple[int | None, bool, str]:
    """(fits, at_least, kind) of a search from its frames (innermost first); kind is
    "fits" (a cross-validation fit), "refit" (the selected model) or "template" (the
    search's own copy, cloned before any fit)."""
    refit = 1 if getattr(search, "refit", False) else 0
    for f in frames:
        loc = f.f_locals
        if "n_candidates" in loc and "n_splits" in loc:  # evaluate_candidates or its loop
            try:
                n = int(loc["n_candidates"]) * int(loc["n_splits"])
            except (TypeError, ValueError):
                return None, False, "fits"
            return n + refit, _halving(search), "fits"
    for f in frames:
        if "all_out" in f.f_locals:  # every cross-validation fit is done: the exact count
            return len(f.f_locals["all_out"]) + 1, False, "refit"
    return None, False, "template"


def _n_jobs(value: Any) -> int:
    from joblib import effective_n_jobs

    try:
        return int(effective_n_jobs(value))
    except (TypeError, ValueError):
        return 1


def _refitter(frame: FrameType) -> Any:
    """The meta-estimator of :data:`REFITTERS` whose fit ``frame`` is in, or None."""
    owner = frame.f_locals.get("self")
    if not _module(frame).startswith(REFITTERS) or "fit" not in frame.f_code.co_qualname:
        return None
    from sklearn.base import BaseEstimator

    if not isinstance(owner, BaseEstimator) or type(owner).__name__ in SINGLE_FITS:
        return None
    return owner


def _entry(frame: FrameType) -> tuple[Any, str] | None:
    """(key, name) of the search, helper or refitting meta-estimator that ``frame``
    belongs to (its function, a nested function or a generator inside it), or None."""
    owner = _refitter(frame)
    if owner is not None:
        return ("refit", id(owner)), type(owner).__name__
    if not _module(frame).startswith("sklearn.model_selection"):
        return None
    search = frame.f_locals.get("self")
    if _is_search(search) and ".fit" in frame.f_code.co_qualname:
        return id(search), type(search).__name__
    head = frame.f_code.co_qualname.split(".<locals>")[0]
    if head in HELPERS:
        return head, head
    return None


def find_selection() -> SelectionUse | None:
    """The model-selection call on this thread's stack, or None.

    A clone made on a joblib dispatch thread sees only the generator that makes it (with
    the counts it refers to: warned already); the calling thread sees the whole call."""
    frame = sys._getframe(1)
    stack: list[FrameType] = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    groups: dict[Any, tuple[str, list[FrameType], int]] = {}  # innermost entry first
    for i, f in enumerate(stack):
        found = _entry(f)
        if found is not None:
            key, name = found
            _, frames, _ = groups.setdefault(key, (name, [], i))
            frames.append(f)
            groups[key] = (name, frames, i)
    if not groups:
        return None
    names: list[str] = []
    fits: int | None = 1
    at_least, kind, n_jobs = False, "fits", 1
    calling = token = None
    for name, frames, _ in groups.values():  # the calling thread sees the call itself
        for f in frames:
            if f.f_code.co_name in ("fit", name):
                calling = True
            if token is None:  # a fresh joblib Parallel (or splitter) per call
                token = f.f_locals.get("parallel", f.f_locals.get("cv"))
    for j, (key, (name, frames, _)) in enumerate(groups.items()):
        if isinstance(key, int):  # a search
            search = frames[0].f_locals["self"]
            n, more, k = _search_fits(search, frames)
            n_jobs = max(n_jobs, _n_jobs(getattr(search, "n_jobs", None)))
        elif isinstance(key, tuple):  # a refitting meta-estimator: its fits not counted
            owner = frames[0].f_locals["self"]
            n, more, k = None, False, "fits"
            n_jobs = max(n_jobs, _n_jobs(getattr(owner, "n_jobs", None)))
            token = owner if token is None else token  # one warning per fit of it
        else:
            if name == "cross_validate" and "cross_val_score" in groups:
                continue  # cross_val_score runs cross_validate: one call, counted here
            loc = frames[-1].f_locals
            if name == "cross_val_score":  # its counts are in the cross_validate it runs
                loc = groups.get("cross_validate", (name, frames, 0))[1][-1].f_locals
            helper = "cross_validate" if name == "cross_val_score" else name
            n, more, k = _helper_fits(helper, loc), False, "fits"
            n_jobs = max(n_jobs, _n_jobs(loc.get("n_jobs")))
        if j == 0:
            kind = k
        names.append(name)
        fits = None if fits is None or n is None else fits * n
        at_least = at_least or more
    outer = max(i for _, _, i in groups.values()) + 1
    while outer < len(stack) and _module(stack[outer]).startswith("sklearn."):
        outer += 1  # scikit-learn's own wrappers (parameter validation)
    return SelectionUse(
        name=" within ".join(names),
        fits=fits,
        at_least=at_least,
        n_jobs=n_jobs,
        kind=kind if calling else "dispatched",
        token=token,
        depth=outer,
    )


def _first_in_call(use: SelectionUse) -> bool:
    """True once per model-selection call (a call without a token: every time)."""
    if use.token is None:
        return True
    with _lock:
        try:
            if use.token in _warned:
                return False
            _warned.add(use.token)
        except TypeError:  # not weakly referable
            return True
    return True


class SelectionGuard:
    """Mixin of the private estimators: scikit-learn's model selection flagged and recorded
    (module docstring). Fits read the record from ``_selection_record``."""

    _selection_record: str | None = None

    def __sklearn_clone__(self):
        use = find_selection()
        clone = _clone_parametrized(self)
        if use is None:
            return clone
        if use.kind == "fits" and _first_in_call(use):
            self._check_selection_accountant(use)
            count = (
                "repeatedly"
                if use.fits is None
                else (f"{'at least ' if use.at_least else ''}{use.fits} times")
            )
            warnings.warn(
                f"{use.name} fits this private estimator {count} on the private rows: "
                "each fit is a release, and the scores and whatever is chosen from them "
                "are covered by no certificate (a model fitted in it records this as not "
                f"covered); {INSTEAD}",
                PrivacyLeakWarning,
                stacklevel=use.depth + 1,
            )
        clone._selection_record = use.record
        clone._selection_causes = _causes_of(use.token)
        return clone

    def _check_selection_accountant(self, use: SelectionUse) -> None:
        if getattr(self, "accountant", None) is not None and use.n_jobs > 1:
            raise PrivacyError(
                f"{use.name} would fit this estimator in {use.n_jobs} parallel workers, "
                "where its PrivacyAccountant cannot record their releases: run the search "
                "with n_jobs=1 (or use objpert.model_selection.PrivateGridSearch)"
            )

    def _selection_not_public(self) -> tuple[str, ...]:
        """The model-selection record of this fit, as a ``not_public`` item (or none)."""
        record = self.__dict__.get("_selection_record")
        return () if record is None else (record,)
