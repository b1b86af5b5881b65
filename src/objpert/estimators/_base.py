"""What the private estimators share: parameter checks, the data contract, releases.

The estimators (:mod:`objpert.estimators`) are scikit-learn estimators releasing
differentially private GLMs (Watkins & Arora 2026).

:class:`PrivateLogisticRegression` and :class:`PrivateRobustRegression` follow the
scikit-learn estimator API (``fit``/``predict``/``score``, ``get_params``/``set_params``,
``clone``, pipelines, ``GridSearchCV``). Each ``fit`` is one private release (K releases
for a K-class one-vs-rest classifier) by gradient descent on a perturbed objective:

1. the data are brought under the contract of :mod:`objpert._data` (rows of norm
   <= ``data_norm``, an intercept column of public value c appended);
2. a :class:`~objpert.certify.WatkinsAroraPlan` (noise sigma, ridge mu, step
   eta, iterations N) is computed from public constants only: n (the number of rows,
   treated as public, as in the paper), d, zeta, the loss and the target (epsilon, delta),
   by :func:`objpert.plan` with the estimator's settings (:mod:`.planning`);
3. :func:`~objpert.mechanisms.perturbed_gradient_descent` draws the noise
   once and runs exactly N steps; the plan's certificate is recomputed before any data
   are touched.

Plans are pure functions of public constants, so they are cached
(:func:`.planning.plan_for`): repeated fits of the same shape (cross-validation folds,
``GridSearchCV``) calibrate once. The shared docstring parts are in :mod:`.docstrings`.
"""

from __future__ import annotations

import functools
import math
import numbers
import time
import warnings
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, Options, StrOptions
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import (
    _check_feature_names,
    _check_n_features,
    check_is_fitted,
    validate_data,
)

from objpert._data import PreparedData, as_feature_matrix, check_label_set, is_dask
from objpert._data.labels import check_labels
from objpert._engines.distributed import step_timeout as check_step_timeout
from objpert._engines.factory import ENGINES, check_engine
from objpert._engines.xp import DTYPES
from objpert.certify._multiclass import Calibration, check_settings
from objpert.estimators._bounds import (
    DATA_NORM,
    bound_features,
    check_pipeline_units,
    clip_for_prediction,
    finish_fit,
    pipeline_fitted_steps,
    pipeline_row_bound,
    public_zeta,
)
from objpert.estimators._data_errors import as_data_error
from objpert.estimators._planning import CALIBRATIONS, calibration_for, comparator_norm_for
from objpert.estimators._prior import (
    PublicPrior,
    check_public_prior,
    match_prior,
    prior_weights,
)
from objpert.estimators._selection import SelectionGuard
from objpert.estimators._time_budget import check_time_budget, time_budget
from objpert.estimators._unit import (
    bound_contributions,
    check_unit_settings,
    pad_rows,
    unit_certificate,
    unit_key,
)
from objpert.exceptions import DataError, ParameterError, PrivacyLeakWarning
from objpert.mechanisms._perturbed_gd import Release, release_targets
from objpert.mechanisms._progress import check_verbose
from objpert.preprocessing._bounded import check_bounds
from objpert.preprocessing._parameters import POSITIVE, RANDOM_STATE, Number, ValidatedParameters

__all__ = [
    "DATA_NORM",
    "LABEL_SET",
    "ROWS_LEFT_OUT",
    "FitSettings",
    "PrivateGLM",
    "blockwise_on_dask",
    "public_zeta",
    "warn_label_set",
]

#: The name under which a label set read from the data is recorded as not public.
LABEL_SET = "label set"

#: The ``not_public`` item of a model trained on the complete rows of a table whose
#: incomplete rows were left out: which rows (and so how many) were trained on depends on
#: the private data, while the certificate treats the number of rows as public.
ROWS_LEFT_OUT = "which rows were trained on: rows with missing values were left out"


def warn_label_set(classes: Any) -> None:
    warnings.warn(
        f"classes=None: the label set {list(np.asarray(classes).tolist())[:10]!r} was read "
        "from the training labels. The number of classes, the label mapping and the model's "
        "shape then depend on the private rows (one relabelled row can change them) and the "
        "certificate does not cover them; declare the public label set with classes=[...]",
        PrivacyLeakWarning,
        stacklevel=4,
    )


def _release_rngs(random_state: Any, k: int) -> list[Any]:
    """One generator argument per release. None: OS entropy for each (independent).

    An int seeds K independent children ``SeedSequence(seed).spawn(K)``; a Generator or
    RandomState is consumed release after release (independent successive draws).
    """
    if k == 1:
        return [random_state]
    if random_state is None:
        return [None] * k
    if isinstance(random_state, numbers.Integral):
        return list(np.random.SeedSequence(int(random_state)).spawn(k))
    if isinstance(random_state, np.random.SeedSequence):
        fresh = np.random.SeedSequence(
            random_state.entropy,
            spawn_key=random_state.spawn_key,
            pool_size=random_state.pool_size,
        )
        return list(fresh.spawn(k))
    return [random_state] * k


def blockwise_on_dask(method: Any) -> Any:
    """Dask input (array or DataFrame): ``method`` applied to each row partition on the
    cluster, returning a lazy Dask array; other input: ``method`` itself."""

    @functools.wraps(method)
    def wrapper(self, X):
        if is_dask(X):
            from objpert._data.distributed import map_rows

            return map_rows(functools.partial(method, self), X)
        return method(self, X)

    return wrapper


@dataclass(frozen=True)
class FitSettings:
    """The validated public settings of one fit (from the estimator's parameters)."""

    epsilon: float
    delta: float
    data_norm: float | None  # None: from feature_bounds, else read from the data
    fit_intercept: bool
    clip: bool
    comparator_norm: float | None  # None: "auto" with a prior, each release's own W
    max_iter: int
    intercept_scaling: float | None
    calibration: str
    mu: float | None  # None: mu="auto"
    scale: float | None  # the pseudo-Huber scale (robust regression only)
    classes: np.ndarray | None = field(default=None, compare=False)  # the declared label set
    feature_bounds: np.ndarray | None = field(default=None, compare=False)  # (d, 2), public
    n_jobs: int | None = None  # the engine's threads: None automatic, -1 every core
    max_seconds: float | None = None  # a time budget, turned into max_iter at fit
    composition: str = "split"  # how the releases of one fit compose (COMPOSITIONS)
    engine: str = "auto"  # where the steps run (engines.factory.ENGINES): rounding only
    dtype: str = "float64"  # their precision (engines.xp.DTYPES): rounding only
    # data_norm declared by the bounded steps before the estimator in a Pipeline
    data_norm_from_pipeline: bool = field(default=False, compare=False)
    # the not_public item of the steps before it in a Pipeline that were fitted on the rows
    fitted_steps: tuple[str, ...] = field(default=(), compare=False)
    # the public model the ridge is centred at (original units; None: 0; docs/priors.md)
    prior: PublicPrior | None = field(default=None, compare=False)
    rows_per_unit: int = 1  # max_rows_per_unit: one privacy unit of up to k rows
    units: int | None = None  # the public number of units of a unit-level fit
    unit_name: str = field(default="", compare=False)  # the ids' column name, if any


_POSITIVE = POSITIVE


class PrivateGLM(ValidatedParameters, SelectionGuard, BaseEstimator):
    """Shared machinery: parameter checks, data contract, plans and releases.

    Parameters are keyword-only, declared once in ``_parameter_constraints``
    (scikit-learn's; :mod:`objpert.preprocessing._parameters`) and validated when ``fit``
    starts, then resolved into one :class:`FitSettings`. Where two parameters overlap,
    the precedence is:

    - ``feature_bounds`` over ``data_norm``: with bounds, the rows are the features mapped
      onto [-1, 1] and ``data_norm`` (default sqrt(n_features)) bounds those mapped rows;
      without either, the row bound is read from the data (not public);
    - ``clip`` applies to whatever row bound is in force (rows above it scaled down, or a
      DataError with ``clip=False``); features outside ``feature_bounds`` are always
      clipped to them;
    - ``engine`` chooses where the steps run and ``dtype`` their precision; ``"shaped"``
      runs in float64 only, ``"xp"``/``"gpu"`` in either dtype (refused otherwise), and
      sparse X in float64 on the default engine only;
    - ``max_seconds`` cuts ``max_iter`` to the steps it buys, never raises it.
    """

    _loss: str = ""

    _parameter_constraints: ClassVar[dict] = {
        "epsilon": [_POSITIVE],
        "delta": [Number(Real, 0, 1, closed="neither")],
        "data_norm": [None, _POSITIVE],
        "feature_bounds": [None, "array-like"],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [None, _POSITIVE],
        "clip": ["boolean"],
        "calibration": [StrOptions(set(CALIBRATIONS))],
        "mu": [StrOptions({"auto"}), _POSITIVE],
        "comparator_norm": [StrOptions({"auto"}), _POSITIVE],
        "max_iter": [Number(Integral, 1, None, closed="left")],
        "random_state": RANDOM_STATE,
        "verbose": [StrOptions({"auto"}), "boolean", None],
        "n_jobs": [None, Options(Integral, {-1}), Number(Integral, 1, None, closed="left")],
        "max_seconds": [None, _POSITIVE],
        "accountant": [None, HasMethods(["spend", "check"])],
        "engine": [StrOptions(set(ENGINES))],
        "dtype": [StrOptions(set(DTYPES))],
        "client": [None, str, HasMethods(["submit"])],
        "step_timeout": [None, Options(Real, {math.inf}), _POSITIVE],
        "prior": "no_validation",  # checked by check_public_prior (ParameterError)
        "max_rows_per_unit": [None, Number(Integral, 1, None, closed="left")],
    }

    def _public_constants(self) -> FitSettings:
        """Validate the parameters (scikit-learn's constraints: the whole check of each
        number, :class:`~objpert.preprocessing._parameters.Number`) and resolve them into
        one FitSettings."""
        self._validate_params()
        params = self.get_params(deep=False)
        mu = None if isinstance(self.mu, str) else float(self.mu)
        if self.calibration == "corollary413" and mu is not None:
            raise ParameterError(
                "calibration='corollary413' chooses mu itself (Corollary 4.13): use "
                f"mu='auto'; got mu={self.mu!r}"
            )
        scaling, classes = self.intercept_scaling, params.get("classes")
        engine, dtype = check_engine(self.engine, self.dtype, device=False)
        return FitSettings(
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            data_norm=None if self.data_norm is None else float(self.data_norm),
            fit_intercept=bool(self.fit_intercept),
            clip=bool(self.clip),
            comparator_norm=comparator_norm_for(
                self.comparator_norm, params.get("prior") is not None
            ),
            max_iter=int(self.max_iter),
            intercept_scaling=None if scaling is None else float(scaling),
            calibration=self.calibration,
            mu=mu,
            scale=None if self._loss != "robust" else float(params["scale"]),
            classes=None if classes is None else check_label_set(classes),
            n_jobs=None if self.n_jobs is None else int(self.n_jobs),
            engine=engine,
            dtype=dtype,
            composition=check_settings(params.get("composition", "split"), self.accountant),
            max_seconds=None if self.max_seconds is None else float(self.max_seconds),
            feature_bounds=(
                None if self.feature_bounds is None
                else check_bounds(self.feature_bounds, "feature_bounds")
            ),
            prior=check_public_prior(params.get("prior")),
            rows_per_unit=check_unit_settings(self.max_rows_per_unit, self.calibration) or 1,
        )  # fmt: skip

    def _fit_settings(self) -> FitSettings:
        """The public settings of this fit: the parameters and, when neither ``data_norm``
        nor ``feature_bounds`` is set, the row-norm bound that the bounded steps before
        this estimator in a fitting ``Pipeline`` declare (:func:`.bounds.pipeline_row_bound`;
        public, so nothing is read from the rows), and the steps before it that were fitted
        on the rows (:func:`.bounds.pipeline_fitted_steps`: PrivacyLeakWarning)."""
        p = replace(self._public_constants(), fitted_steps=pipeline_fitted_steps(self))
        check_pipeline_units(self, p.rows_per_unit, self.max_rows_per_unit is not None)
        if p.data_norm is None and p.feature_bounds is None:
            bound = pipeline_row_bound(self)
            if bound is not None:
                p = replace(p, data_norm=bound, data_norm_from_pipeline=True)
        return p

    def _context_not_public(self, p: FitSettings) -> tuple[str, ...]:
        """The ``not_public`` items of the context of this fit: preprocessing fitted on the
        rows before it in a ``Pipeline`` and the model selection it is part of."""
        return (*p.fitted_steps, *self._selection_not_public())

    def _bound_features(
        self, X: Any, p: FitSettings
    ) -> tuple[Any, FitSettings, tuple[str, ...], int]:
        """X scaled by feature_bounds, or data_norm resolved, and the rows clipped to
        feature_bounds (:func:`.bounds.bound_features`; the count is for
        :meth:`_finish_fit`, never stored)."""
        return bound_features(X, p)

    def _finish_fit(
        self, p: FitSettings, clipped: int, seconds: float, passes: int | None = None
    ) -> None:
        """Original units, the fit's statistics for whoever runs it (``clipped`` rows,
        ``seconds``, a Spark fit's ``passes``; never stored), iteration budget:
        :func:`.bounds.finish_fit`."""
        finish_fit(self, p, clipped, seconds, passes)

    def _validate_training(self, X: Any, y: Any, *, y_numeric: bool) -> tuple[Any, np.ndarray]:
        _refuse_special_features(X)  # objpert's messages: non-numeric, dates, complex
        if not y_numeric and y is not None and _ndim(y) == 1:
            check_labels(y)  # dates and times, mixed kinds (None among strings): DataError
        if y_numeric and getattr(getattr(y, "dtype", None), "kind", None) in ("m", "M"):
            raise DataError(
                "the regression target holds dates or durations: convert it to numbers "
                "(for example days since a public origin) before fitting"
            )
        # Non-finite values pass here so that objpert._data refuses them (DataError).
        try:
            return validate_data(
                self,
                X,
                y,
                accept_sparse="csr",
                dtype=np.float64,
                ensure_all_finite=False,
                ensure_min_samples=2,
                y_numeric=y_numeric,
            )
        except (TypeError, ValueError) as exc:  # scikit-learn's checks: shapes, sizes, types
            raise as_data_error(exc) from None

    def _units(self, X: Any, y: Any, ids: Any, p: FitSettings) -> tuple[Any, Any, FitSettings]:
        """The rows a unit-level fit keeps (``privacy_unit`` ids, ``max_rows_per_unit``:
        :mod:`.unit`) and the public number of units in the settings."""
        rows = bound_contributions(
            ids, int(X.shape[0]), self.max_rows_per_unit, unit_key(self.random_state)
        )
        if rows is None:
            return X, y, p
        p = replace(p, units=rows.units, unit_name=rows.name)
        return X[rows.keep], y[rows.keep], p

    def _on_cluster(self, X: Any, y: Any) -> bool:
        """Whether the fit runs on a Dask cluster (Dask input, or ``client`` set)."""
        return is_dask(X) or is_dask(y) or self.client is not None

    def _prepare_dask(self, X: Any, y: Any, labels: str, p: FitSettings):
        """Dask input (or ``client`` set): n_features_in_ and feature_names_in_ as
        validate_data sets them, the data checked and prepared on the cluster (each step
        waits at most ``step_timeout`` seconds for it; docs/dask.md)."""
        from objpert._data.distributed import prepare_dask

        timeout = check_step_timeout(self.step_timeout, "step_timeout")
        client = self.client
        if p.data_norm is None or p.feature_bounds is not None:
            raise ParameterError(
                "a fit on a Dask cluster needs a declared data_norm (feature_bounds and a "
                "data_norm read from the data are for in-memory data): scale the features "
                "to public bounds and set data_norm"
            )

        head = X._meta if hasattr(X, "columns") and hasattr(X, "_meta") else X  # Dask frame
        _check_n_features(self, head, reset=True)
        _check_feature_names(self, head, reset=True)
        prepared = prepare_dask(
            X,
            y,
            labels=labels,
            data_norm=p.data_norm,
            fit_intercept=p.fit_intercept,
            intercept_scaling=p.intercept_scaling,
            clip=p.clip,
            client=client,
            classes=p.classes,
            timeout=timeout,
        )
        if prepared.n < 2:
            raise DataError(f"training needs at least 2 rows; got {prepared.n}")
        return prepared

    def _release(
        self,
        prepared: PreparedData,
        targets: list[Any],
        p: FitSettings,
        not_public: tuple[str, ...] = (),
        classes: Any = None,
    ) -> tuple[int, float]:
        """Calibrate (cached), release once per target, and store the fitted attributes;
        returns the rows scaled down to data_norm and the seconds of the releases
        (statistics of the private rows for :meth:`_finish_fit`: the model keeps neither).
        ``not_public``: structural choices read from the data (recorded in the certificate),
        and the model selection this fit is part of (:mod:`.selection`). ``classes``: the
        fit's label set, checked against a classifier given as ``prior``."""
        not_public = (*not_public, *self._context_not_public(p))
        if p.units is not None:  # one unit: k rows, zero rows completing the smaller ones
            prepared, targets = pad_rows(prepared, targets, p.units * p.rows_per_unit)
        check_engine(p.engine, p.dtype, X=prepared.X)  # a missing GPU, sparse X: no budget
        prior = self._prior(p, prepared, len(targets), classes)  # before any budget
        p = time_budget(p, prepared, len(targets), self._loss)
        cal = self._calibration(p, prepared.n, prepared.d, prepared.zeta, len(targets))
        plan = cal.plan
        check_time_budget(p, plan)  # before any budget
        self._spend(cal, not_public)  # BudgetExceededError: nothing is released
        rngs = _release_rngs(self.random_state, len(targets))
        start = time.perf_counter()
        releases: list[Release] = release_targets(
            prepared.X, targets, plan, rngs, verbose=check_verbose(self.verbose), n_jobs=p.n_jobs,
            engine=p.engine, dtype=p.dtype, prior=None if prior is None else prior[1],
        )  # fmt: skip
        seconds = time.perf_counter() - start
        self.max_iter_used_ = p.max_iter
        W = np.vstack([r.weights for r in releases])  # (releases, d)
        c = prepared.intercept_scaling
        if p.fit_intercept:
            coef, intercept = W[:, :-1], W[:, -1] * c  # intercept column of value c
        else:
            coef, intercept = W, np.zeros(W.shape[0])
        self._set_release_attributes(coef, intercept)
        self._set_prior_attributes(None if prior is None else prior[0])
        self.n_iter_ = np.array([r.iterations for r in releases], dtype=np.int64)
        self.releases_ = [r.certified() for r in releases]  # no clipping count, no timing
        self.seeded_ = any(r.seeded for r in releases)
        # the row bound the bounded steps before it declared (public; saved as data_norm)
        self.pipeline_data_norm_ = p.data_norm if p.data_norm_from_pipeline else None
        if cal.method == "single":
            self.plan_ = plan
            self.certificate_ = replace(releases[0].certificate, not_public=not_public)
        else:
            self.plan_ = [r.plan for r in releases]
            self.certificate_ = cal.composed_certificate(
                [r.certificate for r in releases], not_public
            )
        if self.max_rows_per_unit is not None:  # the guarantee names its unit
            plans = self.plan_ if isinstance(self.plan_, list) else [self.plan_]
            self.certificate_ = unit_certificate(
                self.certificate_, plans, p.rows_per_unit, p.unit_name
            )
        return int(prepared.n_clipped), seconds

    def _prior(
        self, p: FitSettings, prepared: PreparedData, k: int, classes: Any
    ) -> tuple[PublicPrior, np.ndarray] | None:
        """The public prior checked against this fit (:func:`.prior.match_prior`) and in
        the mechanism's coordinates (:func:`.prior.prior_weights`), (K, d); None without
        one. ParameterError before any budget is spent or noise drawn."""
        if p.prior is None:
            return None
        prior = match_prior(
            p.prior,
            n_features=int(self.n_features_in_),
            releases=k,
            feature_names=getattr(self, "feature_names_in_", None),
            classes=classes,
        )
        weights = prior_weights(
            prior,
            feature_bounds=p.feature_bounds,
            fit_intercept=p.fit_intercept,
            intercept_scaling=prepared.intercept_scaling,
        )
        return prior, weights

    def _set_prior_attributes(self, prior: PublicPrior | None) -> None:
        """``prior_coef_`` and ``prior_intercept_``: the public prior in original units,
        shaped as ``coef_`` and ``intercept_`` (None without a prior)."""
        if prior is None:
            self.prior_coef_ = self.prior_intercept_ = None
            return
        self.prior_coef_ = prior.coef.reshape(np.shape(self.coef_)).copy()
        shape = np.shape(self.intercept_)
        intercept = prior.intercept.reshape(shape)
        self.prior_intercept_ = intercept.copy() if shape else float(intercept)

    def _calibration(self, p: FitSettings, n: int, d: int, zeta: float, k: int) -> Calibration:
        """The plan of each of the fit's k releases and how they compose (cached)."""
        return calibration_for(
            k, p.composition, self._loss, p.scale, p.calibration, n, d, zeta, p.epsilon,
            p.delta, p.comparator_norm, p.max_iter, p.mu, p.rows_per_unit,
        )  # fmt: skip

    def _spend(self, cal: Calibration, not_public: tuple[str, ...] = ()) -> None:
        """Charge the fit's releases to ``accountant`` (BudgetExceededError if they do not
        fit: raised before anything is released)."""
        if self.accountant is not None:
            self.accountant.spend(cal.losses(), name=type(self).__name__, not_public=not_public)

    def _check_budget(self, X: Any, p: FitSettings, k: int | None) -> None:
        """Before the data are read: refuse (BudgetExceededError) a fit whose releases do
        not fit in the accountant's budget, from public constants and the shape of X. Only
        when every constant is public before the data are read (k releases known, zeta
        declared, no time budget); otherwise :meth:`_spend` refuses before the release."""
        accountant, shape = self.accountant, getattr(X, "shape", None)
        if accountant is None or k is None or p.max_seconds is not None or shape is None:
            return
        if self.max_rows_per_unit is not None:  # n = units x k: known once the ids are read
            return
        if len(shape) != 2 or not all(isinstance(v, numbers.Integral) for v in shape):
            return  # a Dask array with unknown chunks: checked before the release
        zeta = public_zeta(p, int(shape[1]))
        if zeta is None or int(shape[0]) < 2:
            return
        d = int(shape[1]) + (1 if p.fit_intercept else 0)
        cal = self._calibration(p, int(shape[0]), d, zeta, k)
        accountant.check(cal.losses(), name=type(self).__name__)

    def _set_release_attributes(self, coef: np.ndarray, intercept: np.ndarray) -> None:
        raise NotImplementedError

    def _validate_prediction(self, X: Any) -> Any:
        """X for prediction: numeric (no dates or times), finite, of the fitted width
        (DataError otherwise, as for training)."""
        check_is_fitted(self)
        _refuse_special_features(X)
        try:
            return validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        except (TypeError, ValueError) as exc:  # scikit-learn's checks: shapes, NaN, types
            raise as_data_error(exc, "X cannot be used for prediction") from None

    def _decision(self, X: Any) -> np.ndarray:
        """Margins x . w + b, exact to rounding for every finite x: rows whose product
        overflows (inf - inf, or an overflowed partial sum) are recomputed divided by their
        largest |entry| and multiplied back (+-inf only where the margin itself is beyond
        the float64 range)."""
        X = self._validate_prediction(X)
        X = clip_for_prediction(self, X)  # as at training: features clipped to their bounds
        coef = np.atleast_2d(self.coef_)
        with np.errstate(over="ignore", invalid="ignore"):
            scores = safe_sparse_dot(X, coef.T, dense_output=True) + self.intercept_
        bad = ~np.isfinite(scores).all(axis=1)
        if bad.any():
            scores[bad] = _scaled_margins(X[np.flatnonzero(bad)], coef, self.intercept_)
        return scores

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _ndim(value: Any) -> int:
    """np.ndim, or -1 for what numpy cannot shape (a ragged list: scikit-learn says why)."""
    try:
        return int(np.ndim(value))
    except (TypeError, ValueError):
        return -1


def _refuse_special_features(X: Any) -> None:
    """Frames and date/time or complex arrays through the data contract's checks
    (DataError naming the offending columns or dtype), at training and prediction."""
    if (hasattr(X, "dtypes") and hasattr(X, "columns")) or getattr(
        getattr(X, "dtype", None), "kind", None
    ) in ("m", "M", "c"):
        as_feature_matrix(X)


def _scaled_margins(X: Any, coef: np.ndarray, intercept: Any) -> np.ndarray:
    """x . w + b for rows whose direct product overflowed: ((x / s) . w) s + b with s the
    row's largest |entry|, so that no partial sum overflows (the margin is +-inf only when
    it is beyond the float64 range)."""
    dense = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    scale = np.max(np.abs(dense), axis=1, keepdims=True)
    scale[scale == 0.0] = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        out = (dense / scale) @ coef.T * scale + intercept
    return np.where(np.isnan(out), 0.0, out)  # inf - inf: margin and intercept both beyond
