"""Row bounds of a fit: declared feature bounds, a declared data_norm, or (not public) the
largest row norm read from the data; coefficients back in the units of the raw features;
the clipping notice and the iteration-budget warning of :func:`objpert.certify._budget`;
the statistics of the private rows that a fit shows to whoever runs it
(:func:`fit_statistics`), never stored on the model.

Assumption 1 of Watkins & Arora (2026) needs every row to have norm <= zeta with zeta
public. With ``feature_bounds`` the features are clipped to their bounds and mapped onto
[-1, 1] (:func:`objpert.preprocessing._bounded.scale_to_unit`), so zeta follows from d.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from objpert._data import as_feature_matrix
from objpert._data.contract import row_norms, total_norm
from objpert.certify._budget import ceiling
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import (
    DataError,
    IterationBudgetWarning,
    ParameterError,
    PrivacyLeakWarning,
)
from objpert.preprocessing._bounded import (
    check_bounds,
    clip_to_bounds,
    clipping_notice,
    row_norm_bound,
    scale_to_unit,
)

#: ``p`` below is the estimators' validated settings (:class:`.base.FitSettings`); this
#: module does not import :mod:`.base` (which imports it).
FitSettings = Any

__all__ = [
    "DATA_NORM",
    "FitStatistics",
    "bound_features",
    "check_pipeline_units",
    "clip_for_prediction",
    "finish_fit",
    "fit_statistics",
    "pipeline_fitted_steps",
    "pipeline_row_bound",
    "preprocessing_parts",
    "public_zeta",
    "record_fit_statistics",
    "unit_map",
]

#: The name under which a row-norm bound read from the data is recorded as not public.
DATA_NORM = "data norm"
#: The ``not_public`` item of preprocessing fitted on the private rows (then its names).
FITTED_STEPS = "preprocessing fitted on the private rows"
#: ... and of a target transformer fitted on the private targets.
FITTED_TARGET = "target transformer fitted on the private targets"


def public_zeta(p: FitSettings, n_features: int) -> float | None:
    """zeta of the certificate from the public settings (the intercept column included):
    from ``data_norm``, else sqrt(d) of ``feature_bounds``; None when the bound was read
    from the data (``data_norm=None`` without feature bounds)."""
    norm = p.data_norm
    if norm is None and p.feature_bounds is not None:
        norm = math.sqrt(n_features)
    if norm is None:
        return None
    c = 0.0
    if p.fit_intercept:
        c = norm if p.intercept_scaling is None else p.intercept_scaling
    return total_norm(norm, c)


def _warn_data_norm(norm: float) -> None:
    warnings.warn(
        f"data_norm=None: the row-norm bound {norm:.6g} was read from the training rows (their "
        "largest norm). The noise scale then depends on the private rows and the certificate "
        "does not cover it; declare data_norm, feature_bounds=[(lo, hi), ...] or a bounded "
        "preprocessing step (objpert.preprocessing)",
        PrivacyLeakWarning,
        stacklevel=5,
    )


def _steps_before(estimator: Any) -> list[list[Any]]:
    """The steps before ``estimator`` in each ``Pipeline`` that is fitting it (found on
    the call stack; inner pipeline first, then each pipeline that holds it as its last
    step), "passthrough" and None left out; [] outside a fitting pipeline. A pipeline's
    last step may be a meta-estimator fitting it (a private search, a ``GridSearchCV``):
    every estimator on the stack between the two is taken as fitting it."""
    from sklearn.base import BaseEstimator
    from sklearn.pipeline import Pipeline

    levels, fitting, frame = [], {id(estimator)}, sys._getframe(2)
    while frame is not None:
        me = frame.f_locals.get("self")
        if (
            isinstance(me, Pipeline) and me.steps and id(me.steps[-1][1]) in fitting
            and frame.f_globals.get("__name__") == "sklearn.pipeline"
        ):  # fmt: skip
            levels.append([
                step for _, step in me.steps[:-1]
                if step is not None and not (isinstance(step, str) and step == "passthrough")
            ])  # fmt: skip
            fitting = {id(me)}  # its input is the outer pipeline's: look further out
        elif isinstance(me, BaseEstimator):
            fitting.add(id(me))
        frame = frame.f_back
    return levels


def pipeline_row_bound(estimator: Any) -> float | None:
    """The public row-norm bound of what the steps before ``estimator`` output, while it is
    being fitted as the last step of a scikit-learn ``Pipeline`` (however built: nested,
    in a search) whose last transforming step declares one
    (:func:`objpert.preprocessing.row_norm_bound`: objpert's bounded transformers, alone
    or in a ``ColumnTransformer``, ``FeatureUnion`` or ``Pipeline``); None otherwise. The
    bound follows from the transformers' parameters, never from the rows."""
    for transforming in _steps_before(estimator):
        if transforming:
            try:
                return row_norm_bound(transforming[-1])
            except ParameterError:  # a step that declares no bound
                return None
    return None


def preprocessing_parts(step: Any) -> list[Any]:
    """The steps inside a preprocessing ``step``: the parts of pipelines, column
    transformers (their remainder included) and feature unions, as deep as they nest;
    the step itself otherwise (None and "passthrough"/"drop" left out)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if step is None or isinstance(step, str):
        return []
    if isinstance(step, Pipeline):
        parts = [s for _, s in step.steps]
    elif isinstance(step, ColumnTransformer):
        parts = [t for _, t, _ in step.transformers] + [step.remainder]
    elif isinstance(step, FeatureUnion):
        parts = [t for _, t in step.transformer_list]
    else:
        return [step]
    return [leaf for part in parts for leaf in preprocessing_parts(part)]


def _fitted_on_rows(step: Any) -> list[str]:
    """The names of the parts of a preprocessing ``step`` whose fit may read statistics of
    the rows: anything but objpert's bounded transformers (their fit reads only the input's
    width and names), private releases (their own certificate covers them) and
    scikit-learn's stateless transformers (:func:`preprocessing_parts`)."""

    def reads_rows(part: Any) -> bool:
        if hasattr(part, "public_row_norm_bound") or hasattr(part, "certificate_"):
            return False
        tags = getattr(part, "__sklearn_tags__", None)
        return tags is None or tags().requires_fit

    return [type(p).__name__ for p in preprocessing_parts(step) if reads_rows(p)]


def check_pipeline_units(estimator: Any, rows_per_unit: int, per_person: bool) -> None:
    """Refuse (ParameterError, before any noise is drawn) a fit whose pipeline released
    privately before it (private bounds) for another privacy unit: releases certified for
    different units do not compose (:func:`objpert.accounting._composition.same_unit`).
    A fit ``per_person`` (a privacy unit, even of one row) after a release per row is
    refused too: the step read every row of each person, the fit keeps k of them."""
    from objpert.accounting._pipeline import released_certificates
    from objpert.accounting._unit import UnitCertificate

    def unit(c: Any) -> tuple[bool, int]:
        return isinstance(c, UnitCertificate) or c.rows_per_unit > 1, c.rows_per_unit

    for level in _steps_before(estimator):
        for step in level:
            units = {unit(c) for c in released_certificates(step)} - {(per_person, rows_per_unit)}
            if units:
                _, rows = min(units)
                raise ParameterError(
                    f"the pipeline step {type(step).__name__} released privately for "
                    f"{rows} row(s) per unit and {type(estimator).__name__} for up to "
                    f"{rows_per_unit} row(s) of one {'person' if per_person else 'row'}: "
                    "releases for different privacy units do not compose; declare the "
                    "bounds publicly (BoundedScaler) instead"
                )


def pipeline_fitted_steps(estimator: Any) -> tuple[str, ...]:
    """The ``not_public`` item of preprocessing fitted on the private rows before
    ``estimator`` in a fitting ``Pipeline`` (a ``StandardScaler``, an imputer): what such a
    step outputs for one row depends on every row, so the replace-one sensitivity of the
    release does not hold for the rows before it (PrivacyLeakWarning); () when every step
    before it is public (:func:`_fitted_on_rows`)."""
    names = list(
        dict.fromkeys(n for level in _steps_before(estimator) for s in level
                      for n in _fitted_on_rows(s))
    )  # fmt: skip
    targets = _target_transformers(estimator)
    if names:
        warnings.warn(
            f"the pipeline step(s) {', '.join(names)} before {type(estimator).__name__} were "
            "fitted on the training rows: what they output for one row depends on every row, "
            "so the certificate does not cover the preprocessed rows; use "
            "objpert.preprocessing (BoundedScaler, BoundedOneHotEncoder, BoundedBinner with "
            "public parameters, or PrivateFeatureBounds)",
            PrivacyLeakWarning,
            stacklevel=5,
        )
    if targets:
        warnings.warn(
            f"the target transformer {', '.join(targets)} of a TransformedTargetRegressor "
            f"around {type(estimator).__name__} was fitted on the training targets: every "
            "transformed target depends on every row, so the certificate does not cover "
            "them, and the fitted transformer is itself a statistic of the targets; transform "
            "with public constants (func= and inverse_func=, or transform y before fitting)",
            PrivacyLeakWarning,
            stacklevel=5,
        )
    return (
        *((f"{FITTED_STEPS}: {', '.join(names)}",) if names else ()),
        *((f"{FITTED_TARGET}: {', '.join(targets)}",) if targets else ()),
    )


def _target_transformers(estimator: Any) -> list[str]:
    """The parts of the target transformer fitted on the rows (:func:`_fitted_on_rows`)
    of each scikit-learn ``TransformedTargetRegressor`` on the call stack fitting
    ``estimator`` (found as :func:`_steps_before` finds pipelines)."""
    from sklearn.base import BaseEstimator
    from sklearn.compose import TransformedTargetRegressor

    names, fitting, frame = [], {id(estimator)}, sys._getframe(2)
    while frame is not None:
        me = frame.f_locals.get("self")
        if (
            isinstance(me, TransformedTargetRegressor)
            and id(getattr(me, "regressor_", None)) in fitting
            and hasattr(me, "transformer_")
        ):
            names += _fitted_on_rows(me.transformer_)
        if isinstance(me, BaseEstimator):
            fitting.add(id(me))
        frame = frame.f_back
    return list(dict.fromkeys(names))


def bound_features(X: Any, p: FitSettings) -> tuple[Any, FitSettings, tuple[str, ...], int]:
    """(X as the mechanism sees it, the settings with data_norm resolved, what was read from
    the data, rows clipped to feature_bounds). ``feature_bounds``: each feature clipped to
    its bounds and mapped onto [-1, 1], data_norm sqrt(d) unless declared.
    ``data_norm=None`` otherwise: the largest row norm (PrivacyLeakWarning; recorded as
    not public)."""
    if p.feature_bounds is not None:
        if X.shape[1] != len(p.feature_bounds):
            raise DataError(
                f"X has {X.shape[1]} columns but feature_bounds declares {len(p.feature_bounds)}"
            )
        dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
        _, rows = clip_to_bounds(dense, p.feature_bounds)
        norm = math.sqrt(X.shape[1]) if p.data_norm is None else p.data_norm
        return scale_to_unit(dense, p.feature_bounds), replace(p, data_norm=norm), (), rows
    if p.data_norm is not None:
        return X, p, (), 0
    norm = float(np.max(row_norms(as_feature_matrix(X))))
    if not norm > 0:
        raise DataError("every training row is zero: declare data_norm")
    _warn_data_norm(norm)
    return X, replace(p, data_norm=norm), (DATA_NORM,), 0


@dataclass(frozen=True)
class FitStatistics:
    """Statistics of the private rows of one ``fit``, for whoever runs it: not covered by
    the certificate (do not publish them) and never stored on the model or in its file.

    ``n_clipped``: rows clipped to ``feature_bounds`` plus rows scaled down to
    ``data_norm``; ``seconds``: the wall time of the fit's releases (a timing side
    channel on the data); ``passes``: the passes a Spark fit made over its DataFrame (AMP's
    Newton method stops at a tolerance, so their number depends on the rows), None for
    other fits."""

    n_clipped: int
    seconds: float
    passes: int | None = None


_RECORDS: ContextVar[tuple[list[FitStatistics], ...]] = ContextVar("fit_statistics", default=())


@contextmanager
def fit_statistics() -> Iterator[list[FitStatistics]]:
    """Collect the :class:`FitStatistics` of the fits run inside the block (in this thread
    or task), one per ``fit`` in order::

        with fit_statistics() as fits:
            model.fit(X, y)
        print(fits[-1].n_clipped)  # a statistic of the private rows: do not publish

    The model keeps none of them (a pickle of it cannot reveal them)."""
    records: list[FitStatistics] = []
    token = _RECORDS.set((*_RECORDS.get(), records))
    try:
        yield records
    finally:
        _RECORDS.reset(token)


def record_fit_statistics(stats: FitStatistics) -> None:
    """Hand one fit's statistics to every :func:`fit_statistics` block open here."""
    for records in _RECORDS.get():
        records.append(stats)


def finish_fit(
    model: Any, p: FitSettings, clipped: int, seconds: float, passes: int | None = None
) -> None:
    """After the release: ``coef_``/``intercept_`` in the units of the raw features (with
    feature_bounds: w/h and b - w . m/h for the map (x - m)/h), the fit's statistics for
    whoever runs it (``clipped`` rows, the releases' ``seconds``, a Spark fit's
    ``passes``: :func:`fit_statistics` and the clipping notice; never stored on the
    model), and the iteration-budget warning; ``feature_bounds_``, the bounds the release
    was fitted with (predictions clip to them, files record them)."""
    model.feature_bounds_ = None if p.feature_bounds is None else np.array(p.feature_bounds)
    if p.feature_bounds is not None:
        mid, half = unit_map(p.feature_bounds)
        coef = np.asarray(model.coef_, dtype=np.float64)
        shift = np.atleast_2d(coef) @ (mid / half)  # w . m/h per release
        model.coef_ = np.ascontiguousarray(coef / half)
        shape = np.shape(model.intercept_)
        intercept = np.asarray(model.intercept_, dtype=np.float64) - shift.reshape(shape)
        model.intercept_ = intercept if np.ndim(intercept) else float(intercept)
    stats = FitStatistics(int(clipped), float(seconds), passes)
    record_fit_statistics(stats)
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    what = "values outside feature_bounds or norms above data_norm"
    clipping_notice(stats.n_clipped, int(plans[0].n), what, stacklevel=4)
    if not isinstance(plans[0], WatkinsAroraPlan):  # a solver's plan (multinomial)
        return  # no gradient-step budget
    report = ceiling(plans[0], p.max_iter, mu_fixed=p.mu is not None)
    if report.notable:
        warnings.warn(report.advice(), IterationBudgetWarning, stacklevel=3)


def unit_map(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, h): the centres and half-widths of ``bounds`` (d, 2), the map x -> (x - m)/h
    onto [-1, 1] of :func:`objpert.preprocessing._bounded.scale_to_unit`."""
    lo, hi = bounds[:, 0], bounds[:, 1]
    return lo / 2 + hi / 2, hi / 2 - lo / 2


def clip_for_prediction(model: Any, X: Any) -> Any:
    """X with each feature clipped to the bounds the model was fitted with
    (``feature_bounds_``; a later ``set_params(feature_bounds=...)`` changes nothing)."""
    if hasattr(model, "feature_bounds_"):
        bounds = model.feature_bounds_
    else:  # built from a fitted model's parts (a Spark model's): its parameter
        bounds = getattr(model, "feature_bounds", None)
    if bounds is None:
        return X
    bounds = check_bounds(bounds, "feature_bounds")
    return np.clip(X.toarray() if hasattr(X, "toarray") else X, bounds[:, 0], bounds[:, 1])
