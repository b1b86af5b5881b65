"""Private model selection: choose hyperparameters on private data under one certificate.

:class:`PrivateGridSearch` is used like scikit-learn's ``GridSearchCV`` but its choice is
differentially private. Two methods:

- ``method="random_stopping"`` trains every run on all the rows (Liu & Talwar 2019;
  Papernot & Steinke 2022; the maths and the certificate are in
  :mod:`objpert.model_selection._random_stopping`);
- ``method="split"`` (below) trains each candidate on its own part of the rows.

The split method is the parameter-tuning procedure of Chaudhuri, Monteleoni &
Sarwate (2011, Section 6): the rows are split at random (independently of their values)
into m + 1 parts of public sizes; candidate i is trained on part i by its own private
release; the last part scores every candidate, and the exponential mechanism
(McSherry & Talwar 2007) picks one.

Why the choice is covered. Replace one row. If it lies in training part j, only candidate
j's release sees a change, and the selected model is a post-processing of the m releases
and the untouched scoring part: (epsilon_j, delta_j). If it lies in the scoring part, no
release changes and the choice is the exponential mechanism's: epsilon_sel. The whole
output (the choice and the chosen model) is therefore (max(epsilon_j, epsilon_sel),
max delta_j)-DP (parallel composition).

What it costs. Each candidate sees n / (m + 1) rows instead of n, so its noise (which
scales as 1/n) grows by a factor of about m + 1 against selecting on public data. Scores
of the candidates are statistics of the private data: they are neither stored nor shown.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.utils._param_validation import StrOptions

from objpert._data.labels import class_codes
from objpert._randomness import make_rng
from objpert.accounting._composition import budget_text
from objpert.estimators._base import PrivateGLM
from objpert.estimators._unit import unit_key
from objpert.exceptions import (
    DataError,
    ParameterError,
    TestingSeedWarning,
    UnreachableTargetError,
)
from objpert.mechanisms._exponential import exponential_mechanism
from objpert.mechanisms._progress import show_progress, spinner, step_progress, sweep_work
from objpert.model_selection import _random_stopping as rs
from objpert.model_selection._candidates import (
    final,
    refuse_unaccounted,
    rows_and_labels,
    same_structure,
)
from objpert.model_selection._chosen import ChosenModel
from objpert.model_selection._split_selection import (
    split_certificate,
    split_sizes,
)
from objpert.model_selection._stopping_runs import (
    SCORE_LEVELS,
    integer_utility,
    run_budget,
    stop_randomly,
)
from objpert.model_selection._units import (
    check_search_unit,
    scoring_rows,
    unit_parts,
    unit_scoring,
)
from objpert.preprocessing._parameters import POSITIVE, RANDOM_STATE, Number, ValidatedParameters

__all__ = ["METHODS", "PrivateGridSearch"]

#: The selection methods of :class:`PrivateGridSearch`.
METHODS = ("split", "random_stopping")
#: Default share of each run's epsilon spent on its noisy score (random stopping).
SCORE_FRACTION = 0.1
#: Default mean number of runs per grid point (random stopping): M = 4 m.
RUNS_PER_CANDIDATE = 4
#: The largest mean run count of a random-stopping search (each run trains a model on all
#: the rows): a public compute bound.
MAX_RUNS_MEAN = 10_000
#: The most grid points a search takes (split: each trains on 1/(m + 1) of the rows).
MAX_CANDIDATES = 1000
#: Parameters that random stopping sets on each run itself (refused in the grid).
_RUN_SET = ("epsilon", "delta", "random_state")


def _final_prefix(model: Any) -> str:
    """How a pipeline names its last step's parameters (``step__``); "" for an estimator."""
    return f"{model.steps[-1][0]}__" if isinstance(model, Pipeline) else ""


def _carrying(model: Any, search_certificate: Any) -> Any:
    """The chosen model (or pipeline), carrying what releasing it cost: its estimator's
    ``certificate_`` is the search's (it covers the choice and the model), its own
    release's is ``release_certificate_``."""
    estimator = final(model)
    estimator.release_certificate_ = estimator.certificate_
    estimator.certificate_ = search_certificate
    return model


class PrivateGridSearch(ChosenModel, ValidatedParameters, MetaEstimatorMixin, BaseEstimator):
    """Private selection among the candidates of ``param_grid`` (one certificate).

    ``method="random_stopping"``: the estimator's ``epsilon`` and ``delta`` are the budget
    of the whole search. A number K of runs is drawn from ``law`` (mean ``runs_mean``); each
    run picks a grid point uniformly, trains it on all n rows with the per-run budget of
    :func:`~objpert.model_selection.random_stopping_budget` (the model
    ``1 - score_fraction`` of it), and releases its score on the same rows (correct
    predictions, or the clipped squared errors on ``SCORE_LEVELS`` integer levels) with
    exact discrete Laplace noise (Canonne, Kamath & Steinke 2020, Algorithm 2). The run
    with the highest noisy score (ties broken by an independent uniform) is output. One run
    is (epsilon_c, delta_c)-DP (model and score by basic composition; a uniform draw among
    grid points that each are, is too), so the output is (epsilon, delta)-DP by Papernot &
    Steinke (2022, Theorem 2; logarithmic law) or Liu & Talwar (2019, Theorem 3.2;
    geometric law) and the coupling corollary of
    :mod:`objpert.model_selection._random_stopping`. Each run draws its own noise (the
    estimator's ``random_state`` is replaced: from OS entropy, or from the search's seed).
    Neither K nor the other runs' models or scores are kept. A run whose certificate
    exceeds the per-run budget stops the search before anything is released.

    ``method="split"``: the parallel selection of the module docstring.

    Parameters
    ----------
    estimator : PrivateLogisticRegression or PrivateRobustRegression
        The private estimator; each candidate is a clone with one point of the grid set.
    param_grid : dict or list of dicts
        As for scikit-learn's ``ParameterGrid`` (public hyperparameters only).
    selection_epsilon : float > 0 or None, default=None
        Epsilon of the exponential mechanism that chooses; None: the largest epsilon of the
        candidates (the choice then adds nothing to the certificate's epsilon).
    score_bound : float > 0, default=1.0
        Regression only: squared errors are clipped at ``score_bound**2`` (public), the
        sensitivity of the score. Classification scores by the count of correct
        predictions (sensitivity 1).
    random_state : None, int, SeedSequence, Generator or RandomState, default=None
        The split and the exponential mechanism's draw (split), or the run count, the
        grid points, the scores' noise and the runs' seeds (random stopping): None draws
        from OS entropy; a seed is for tests only (warns). Split: each candidate's noise
        follows its own random_state.
    method : {"split", "random_stopping"}, default="split"
        How the candidates are trained and chosen (see above).
    runs_mean : int in [1, 10000] or None, default=None
        Random stopping: the mean number of runs (public; the logarithmic law's mean is
        the smallest of its means at least this); None: 4 per grid point. At most
        ``MAX_RUNS_MEAN`` (a public compute bound; a grid has at most ``MAX_CANDIDATES``
        = 1000 points).
    law : {"logarithmic", "geometric"} or None, default=None
        Random stopping: the law of the number of runs; None: "logarithmic" (each run gets
        epsilon / 2 against epsilon / 3 for the geometric law).
    score_fraction : float in (0, 1) or None, default=None
        Random stopping: the share of each run's epsilon spent on its noisy score; None:
        0.1. ``selection_epsilon`` is for the split method only.
    verbose : "auto", bool or None, default="auto"
        Progress on stderr: the split method's fits done of all, random stopping's
        elapsed time (its number of runs stays hidden); "auto" (or None) shows it on a
        terminal for a long search, True always, False never. When shown, the fits show
        no bar of their own. It never changes what is computed.

    Attributes
    ----------
    best_estimator_, best_params_, best_index_ : the chosen candidate.
    certificate_ : :class:`SelectionCertificate` (split) or
        :class:`~objpert.model_selection.RandomStoppingCertificate`,
        covering the choice and the chosen model; ``best_estimator_.certificate_`` is the
        same (what releasing the chosen model cost), its own release's certificate is
        ``best_estimator_.release_certificate_``.
    """

    _parameter_constraints: ClassVar[dict] = {
        "estimator": [PrivateGLM, Pipeline],
        "param_grid": [dict, list],
        "selection_epsilon": [None, POSITIVE],
        "score_bound": [POSITIVE],
        "random_state": RANDOM_STATE,
        "method": [StrOptions(set(METHODS))],
        "runs_mean": [None, Number(Integral, 1, None, closed="left")],  # <= MAX_RUNS_MEAN
        "law": [None, StrOptions(set(rs.LAWS))],
        "score_fraction": [None, Number(Real, 0, 1, closed="neither")],
        "verbose": [StrOptions({"auto"}), "boolean", None],
    }

    def __init__(
        self,
        *,
        estimator: Any,
        param_grid: Any,
        selection_epsilon: float | None = None,
        score_bound: float = 1.0,
        random_state: Any = None,
        method: str = "split",
        runs_mean: int | None = None,
        law: str | None = None,
        score_fraction: float | None = None,
        verbose: bool | str | None = "auto",
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.selection_epsilon = selection_epsilon
        self.score_bound = score_bound
        self.random_state = random_state
        self.method = method
        self.runs_mean = runs_mean
        self.law = law
        self.score_fraction = score_fraction
        self.verbose = verbose

    def _candidates(self) -> tuple[list[dict], list[Any]]:
        try:
            points = ParameterGrid(self.param_grid)
            size = len(points)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"param_grid: {exc}") from None
        if size > MAX_CANDIDATES:  # counted before any is built
            raise ParameterError(
                f"param_grid has {size} candidates; a private search takes at most "
                f"{MAX_CANDIDATES} (each is at least one fit, and costs privacy or rows): "
                "search a coarser grid"
            )
        grid = list(points)
        if not grid:
            raise ParameterError("param_grid has no candidates")
        if not isinstance(final(self.estimator), PrivateGLM):
            raise ParameterError(
                "estimator must be a private estimator of objpert or a Pipeline ending in one"
            )
        try:
            models = [clone(self.estimator).set_params(**params) for params in grid]
        except ValueError as exc:  # scikit-learn's: a name the estimator does not have
            raise ParameterError(f"param_grid: {exc}") from None
        refuse_unaccounted(models)  # no private step, no accountant, in any grid point
        for model in models:  # every candidate's public settings, before any data
            final(model)._public_constants()
        return grid, models

    def _method(self) -> str:
        """The method, its parameters validated (``_parameter_constraints``; the others of
        the other method must be left at None)."""
        self._validate_params()
        if self.runs_mean is not None and self.runs_mean > MAX_RUNS_MEAN:
            raise ParameterError(
                f"runs_mean={self.runs_mean} is above {MAX_RUNS_MEAN}: each run fits the "
                "estimator on all the rows, so the search costs about runs_mean fits (and "
                "drawing a count of 10 million alone takes about 30 s): search fewer points "
                "with fewer runs each"
            )
        if self.method == "split":
            for name in ("runs_mean", "law", "score_fraction"):
                if getattr(self, name) is not None:
                    raise ParameterError(f"{name} is for method='random_stopping' only")
        elif self.selection_epsilon is not None:
            raise ParameterError(
                "selection_epsilon is for method='split' only (random stopping spends "
                "score_fraction of each run's epsilon on its score)"
            )
        return self.method

    def fit(self, X: Any, y: Any, privacy_unit: Any = None) -> PrivateGridSearch:
        """Choose and release one candidate; ``privacy_unit``: each row's unit id, for a
        search per person of up to k rows (method="split", :mod:`._units`)."""
        method = self._method()
        grid, models = self._candidates()
        k = 1 if privacy_unit is None else check_search_unit([final(m) for m in models])
        if method == "random_stopping":
            return self._fit_random_stopping(grid, models, X, y, privacy_unit, k)
        settings = [final(m)._public_constants() for m in models]
        eps_sel = (
            max(s.epsilon for s in settings)
            if self.selection_epsilon is None
            else float(self.selection_epsilon)
        )
        classify = final(models[0])._loss == "logistic"
        bound = float(self.score_bound)
        n, y = rows_and_labels(X, y)
        if classify and settings[0].classes is not None:  # every row's, before any split
            class_codes(y, settings[0].classes)
        generator, _ = make_rng(self.random_state)
        if privacy_unit is not None:  # the units are split, not the rows
            parts, sizes, labels = unit_parts(
                privacy_unit, n, split_sizes, len(models) + 1, generator
            )
            ids = np.asarray(privacy_unit, dtype=object)
        else:
            sizes = split_sizes(n, len(models) + 1)
            if min(sizes) < 2:
                raise DataError(
                    f"{len(models)} candidates need at least {2 * (len(models) + 1)} rows "
                    f"(2 per part); got {n}"
                )
            order = generator.permutation(n)  # independent of the rows' values
            bounds = np.cumsum((0, *sizes))
            parts = [order[bounds[i] : bounds[i + 1]] for i in range(len(sizes))]
        columns = getattr(X, "shape", (n, 0))[-1]
        parts_n = [size * k for size in sizes[:-1]]  # each candidate's n: its part's rows
        _check_runs_certify(models, grid, parts_n, columns)  # before any fit
        show = self._quiet_fits(models, X, len(models))
        with step_progress("private search (split)", len(models), show) as tick:
            for i, (model, part) in enumerate(zip(models, parts[:-1], strict=True)):
                named = None if privacy_unit is None else _named(ids, part, privacy_unit)
                meta = {} if named is None else _unit_meta(model, named)
                model.fit(_take(X, part), y[part], **meta)
                tick(i)
        val = (
            parts[-1]
            if privacy_unit is None
            else scoring_rows(labels, parts[-1], k, unit_key(self.random_state))
        )
        Xv, yv = _take(X, val), y[val]
        if classify:
            utilities = [float(np.sum(m.predict(Xv) == yv)) for m in models]
            sensitivity = float(k)  # one unit: up to k scoring rows
        else:
            clip = bound * bound
            utilities = [
                -float(np.sum(np.minimum((np.asarray(m.predict(Xv)) - yv) ** 2, clip)))
                for m in models
            ]
            sensitivity = k * clip
        with warnings.catch_warnings():  # the generator is the search's own: a seed (if
            warnings.simplefilter("ignore", TestingSeedWarning)  # any) was warned of above
            index = exponential_mechanism(utilities, eps_sel, sensitivity, generator)
        del utilities  # statistics of the private rows: not kept
        self.certificate_ = split_certificate(
            [final(m).certificate_ for m in models], eps_sel, sizes
        )
        self.best_index_ = index
        self.best_params_ = grid[index]
        self.best_estimator_ = _carrying(models[index], self.certificate_)
        self.n_candidates_ = len(models)
        self._keep_chosen(self.best_estimator_)
        return self

    def _fit_random_stopping(
        self, grid: list[dict], models: list[Any], X: Any, y: Any, ids: Any = None, k: int = 1
    ) -> PrivateGridSearch:
        """Random stopping on all the rows (the class docstring; the maths in
        :mod:`objpert.model_selection._random_stopping`); per privacy unit (``ids``, k rows
        per unit): every run fitted per unit, scored on at most k rows per unit with
        sensitivity k (:mod:`._units`)."""
        for params in grid:
            fixed = sorted(p for p in params if p.rsplit("__", 1)[-1] in _RUN_SET)
            if fixed:
                raise ParameterError(
                    f"random stopping sets {', '.join(fixed)} of each run itself (the "
                    "estimator's epsilon and delta are the budget of the whole search): "
                    "remove them from param_grid"
                )
        same_structure(models, grid)  # the chosen run's not_public is every run's
        settings = final(models[0])._public_constants()
        epsilon, delta = settings.epsilon, settings.delta
        prefix = _final_prefix(models[0])
        runs_mean = (
            RUNS_PER_CANDIDATE * len(models) if self.runs_mean is None else int(self.runs_mean)
        )
        law = rs.LAWS[0] if self.law is None else self.law
        fraction = SCORE_FRACTION if self.score_fraction is None else self.score_fraction
        bound = float(self.score_bound)
        budget = run_budget(epsilon, delta, runs_mean, law, fraction)
        per_run = {
            "epsilon": budget.model_epsilon,
            "delta": budget.candidate_delta,
            "random_state": None,
        }
        runs = [clone(m).set_params(**{prefix + k: v for k, v in per_run.items()}) for m in models]
        for run in runs:
            final(run)._public_constants()  # every run's settings, before any data
        classify = final(runs[0])._loss == "logistic"
        n, y_arr = rows_and_labels(X, y)
        X_score, y_score, meta, n_public = X, y_arr, {}, n
        if ids is not None:  # per unit: n = units x k, at most k scored rows per unit
            scored, n_public = unit_scoring(ids, n, k, unit_key(self.random_state))
            X_score, y_score = _take(X, scored), y_arr[scored]
            meta = _unit_meta(runs[0], ids)
        columns = getattr(X, "shape", (n, 0))[-1]
        _check_runs_certify(runs, grid, [n_public] * len(runs), columns)
        generator, seeded = make_rng(self.random_state)

        def fit(index: int, seed: int | None) -> tuple[Any, Any, bytes]:
            model = clone(runs[index]).set_params(**{prefix + "random_state": seed})
            model.fit(X, y, **meta)
            return model, final(model).certificate_, _release_bytes(model)

        def utility(model: Any) -> int:
            return integer_utility(model.predict(X_score), y_score, classify, bound)

        show = self._quiet_fits(runs, X, runs_mean)
        running = "private search (random stopping; the number of runs stays hidden)"
        sensitivity = k * (1 if classify else SCORE_LEVELS)
        caught: list[Any] = []
        try:  # each kind of the runs' warnings shown once: one per run tells the count
            with warnings.catch_warnings(record=True) as caught, spinner(running, show):
                warnings.simplefilter("always")
                warnings.simplefilter("ignore", TestingSeedWarning)  # the search's: warned
                index, chosen = stop_randomly(
                    budget, len(runs), generator, seeded, fit, utility, sensitivity
                )
        finally:
            _warn_once_each(caught)
        self.certificate_ = budget.certificate(len(runs), n_public, final(chosen).certificate_)
        self.best_index_ = index
        self.best_params_ = grid[index]
        self.best_estimator_ = _carrying(chosen, self.certificate_)
        self.n_candidates_ = len(runs)
        self._keep_chosen(chosen)
        return self

    def _quiet_fits(self, models: list[Any], X: Any, fits: int) -> bool:
        """Whether the search shows its progress (``verbose``; "auto": on a terminal, for
        about ``fits`` fits of long work); when it does, the fits show none of their own."""
        steps = final(models[0]).max_iter
        work = sweep_work(X, steps * fits) if hasattr(X, "shape") else None
        show = show_progress(self.verbose, steps * fits, work)
        if show:
            prefix = _final_prefix(models[0])
            for model in models:
                model.set_params(**{prefix + "verbose": False})
        return show


def _named(ids: np.ndarray, rows: np.ndarray, given: Any) -> Any:
    """The ids of ``rows``, named as the ids ``given`` were (a pandas Series' name: the
    unit's column, which each candidate's certificate names)."""
    name = getattr(given, "name", None)
    return ids[rows] if name is None else type(given)(ids[rows], name=name)


def _unit_meta(model: Any, ids: Any) -> dict[str, Any]:
    """The fit parameter that gives a candidate's estimator its rows' unit ids: by
    scikit-learn's metadata routing when it is enabled (the estimator requested it),
    as ``step__privacy_unit`` otherwise."""
    from sklearn import get_config

    if get_config().get("enable_metadata_routing", False):
        return {"privacy_unit": ids}
    return {_final_prefix(model) + "privacy_unit": ids}


def _warn_once_each(caught: list[Any]) -> None:
    """Each kind (category) of the recorded warnings, its first one, warned again."""
    first: dict[type, Any] = {}
    for record in caught:
        first.setdefault(record.category, record)
    for record in first.values():
        warnings.warn(record.message, stacklevel=4)


def _release_bytes(model: Any) -> bytes:
    """The released coefficients and intercepts as bytes (the last key of the order)."""
    estimator = final(model)
    coef = np.ascontiguousarray(estimator.coef_, dtype=np.float64)
    intercept = np.ascontiguousarray(estimator.intercept_, dtype=np.float64)
    return coef.tobytes() + intercept.tobytes()


def _input_shape(run: Any, n_columns: int) -> tuple[int, float | None]:
    """The width of what a run's estimator is fitted on and the public row bound its
    pipeline's steps declare (None: none, or a bare estimator), from their parameters
    alone (0 columns: not declared)."""
    from objpert.preprocessing import row_norm_bound
    from objpert.preprocessing._width import declared_width

    if not hasattr(run, "steps"):
        return n_columns, None
    last = run.steps[-2][1] if len(run.steps) > 1 else None
    if last is None or isinstance(last, str):  # what reaches the estimator is not declared
        return 0, None
    try:
        bound = row_norm_bound(last)
    except ParameterError:  # a step that declares no bound
        bound = None
    return declared_width(last) or 0, bound


def _check_runs_certify(
    candidates: list[Any], grid: list[dict], sizes: list[int], n_columns: int
) -> None:
    """Before any fit: every grid point of a single-release candidate (binary or
    regression) whose row bound is declared (by the estimator, or by its pipeline's
    steps: :func:`_input_shape`, each candidate's own) must certify its budget at its
    public n (``sizes``) and shape (its cached calibration, which the fit then reuses), so
    that no fit made later fails; an UnreachableTargetError names the grid point
    otherwise. Public constants only."""
    from objpert.estimators._bounds import public_zeta

    for candidate, params, n in zip(candidates, grid, sizes, strict=True):
        run = final(candidate)
        n_features, bound = _input_shape(candidate, n_columns)
        p = run._fit_settings()
        if p.data_norm is None and p.feature_bounds is None and bound is not None:
            p = replace(p, data_norm=bound, data_norm_from_pipeline=True)
        classes = p.classes
        single = run._loss != "logistic" or (classes is not None and len(classes) == 2)
        zeta = public_zeta(p, n_features) if n_features else None
        if not single or zeta is None or p.max_seconds is not None:
            continue  # the release count or the row bound is known only from the data
        d = n_features + (1 if p.fit_intercept else 0)
        try:
            run._calibration(p, n, d, zeta, 1)
        except UnreachableTargetError as exc:
            raise UnreachableTargetError(
                f"the grid point {params} cannot be certified at its budget "
                f"{budget_text(p.epsilon, p.delta)} with n = {n}: {exc}. Remove it from "
                "param_grid (nothing was fitted)"
            ) from None


def _take(X: Any, rows: np.ndarray) -> Any:
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    if hasattr(X, "tocsr"):
        return X.tocsr()[rows]
    return np.asarray(X)[rows]
