"""Spark ML's tuning over a private stage: flagged once and recorded.

``CrossValidator`` and ``TrainValidationSplit`` fit the private estimator once per
setting and fold on the same private rows, select on their scores and fit the selected
setting again on all rows: each fit is a release, and the selection reads the rows again,
so no single fit's certificate covers the search. As for scikit-learn's searches
(:mod:`objpert.estimators._selection`), the search warns once with a
:class:`~objpert.exceptions.PrivacyLeakWarning` naming it and its number of fits, and
every model it fits records ``"model selection by CrossValidator (7 fits)"`` in its
certificate's ``not_public``. The search is found on the calling frames when it asks the
estimator for its fits (``fitMultiple``, in the search's own thread) and when it fits the
selected setting again; over a ``Pipeline`` (whose fits run in the search's worker
threads), on the frames of the thread that runs the search.
"""

from __future__ import annotations

import sys
import threading
import warnings
import weakref
from typing import Any

from objpert.estimators._selection import SelectionUse
from objpert.exceptions import PrivacyLeakWarning

__all__ = ["find_search", "warn_search"]

_warned: weakref.WeakSet[Any] = weakref.WeakSet()
_lock = threading.Lock()

INSTEAD = (
    "choose the hyperparameters on public or pilot data, or fit one setting; the "
    "selected model's certificate records the search as not covered"
)


def _searches() -> tuple[type, ...]:
    from pyspark.ml.tuning import CrossValidator, TrainValidationSplit

    return CrossValidator, TrainValidationSplit


def find_search() -> tuple[Any, SelectionUse] | None:
    """(the search, its use) when a Spark ML search is on the calling frames, or when
    they are a search's task fitting a stage in its worker thread (a search over a
    ``Pipeline``: the search is then on its own thread's frames)."""
    kinds = _searches()
    frame, task = sys._getframe(1), False
    while frame is not None:
        obj = frame.f_locals.get("self")
        if isinstance(obj, kinds):
            return obj, _use(obj)
        task = task or (
            frame.f_code.co_name == "singleTask"
            and frame.f_globals.get("__name__") == "pyspark.ml.tuning"
        )
        frame = frame.f_back
    if task:  # the threads' frames, for the search whose task this is
        for top in sys._current_frames().values():
            while top is not None:
                obj = top.f_locals.get("self")
                if isinstance(obj, kinds):
                    return obj, _use(obj)
                top = top.f_back
    return None


def _use(search: Any) -> SelectionUse:
    folds = search.getNumFolds() if hasattr(search, "getNumFolds") else 1
    fits = len(search.getEstimatorParamMaps()) * folds + 1  # + the selected refit
    return SelectionUse(type(search).__name__, fits, False, 1, "fits", None, 0)


def warn_search(search: Any, use: SelectionUse) -> None:
    """Warn once per search."""
    with _lock:
        if search in _warned:
            return
        _warned.add(search)
    warnings.warn(
        f"{use.name} fits this private estimator {use.fits} times on the same private rows "
        f"and selects on their scores: no single fit's certificate covers that; {INSTEAD}",
        PrivacyLeakWarning,
        stacklevel=4,
    )
