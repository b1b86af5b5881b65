"""Differentially private robust linear regression: the pseudo-Huber loss (Watkins &
Arora 2026)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.metrics import r2_score

from objpert._data import as_targets, prepare
from objpert.estimators._base import (
    PrivateGLM,
    blockwise_on_dask,
)
from objpert.estimators._data_errors import data_errors
from objpert.estimators._docstrings import COMMON_DOC
from objpert.estimators._planning import DEFAULT_MAX_ITER
from objpert.estimators._selection import fitting
from objpert.exceptions import DataError, ParameterError
from objpert.preprocessing._parameters import POSITIVE

__all__ = ["PrivateRobustRegression"]


class PrivateRobustRegression(RegressorMixin, PrivateGLM):
    """Differentially private robust linear regression (pseudo-Huber loss).

    One release of gradient descent on the perturbed, ridge-regularised objective
    (1/n) sum_i c^2 (sqrt(1 + ((x_i . w - y_i)/c)^2) - 1) + mu/2 ||w||^2 with c = ``scale``
    (Watkins & Arora 2026). The loss's gradient is bounded by c whatever the targets, so
    the targets need no bound; residuals beyond c count linearly (robust to outliers).

    Parameters
    ----------
    epsilon, delta, data_norm, feature_bounds, fit_intercept, intercept_scaling, clip,
    calibration, comparator_norm, max_iter, random_state, accountant, verbose, n_jobs,
    max_seconds, engine, dtype, client, step_timeout, prior, max_rows_per_unit
        As in :class:`PrivateLogisticRegression` (``feature_bounds``: coef_ and
        intercept_ in the units of the raw features).
    %(mu)s
    scale : float > 0, default=1.0
        c, the residual scale where the pseudo-Huber loss turns from quadratic to linear
        (public; in the units of y). L1 = c: the noise grows with c.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
        w_last * c', the weight of the intercept column times its value
        c' = ``intercept_scaling`` (0.0 without an intercept).
    n_iter_ : ndarray of shape (1,)
    certificate_ : Certificate
        A :class:`~objpert.accounting.UnitCertificate` with ``max_rows_per_unit``.
    plan_ : Plan
    releases_ : list of CertifiedRelease
        As for :class:`PrivateLogisticRegression` (no statistic of the private rows).
    max_iter_used_ : int
    seeded_ : bool
        Whether a testing seed drew the noise (then the model is not private).
    prior_coef_ : ndarray of shape (n_features,) or None
    prior_intercept_ : float or None
        The public prior (``prior``) in the units of the raw features.
    pipeline_data_norm_ : float or None
        As for :class:`PrivateLogisticRegression`.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names (pandas).

    %(privacy)s
    """

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-6,
        data_norm=None,
        feature_bounds=None,
        fit_intercept=True,
        intercept_scaling=None,
        clip=True,
        calibration="tight",
        mu="auto",
        comparator_norm="auto",
        max_iter=DEFAULT_MAX_ITER,
        scale=1.0,
        random_state=None,
        accountant=None,
        verbose="auto",
        n_jobs=None,
        max_seconds=None,
        engine="auto",
        dtype="float64",
        client=None,
        step_timeout=None,
        prior=None,
        max_rows_per_unit=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.feature_bounds = feature_bounds
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.clip = clip
        self.calibration = calibration
        self.mu = mu
        self.comparator_norm = comparator_norm
        self.max_iter = max_iter
        self.scale = scale
        self.random_state = random_state
        self.accountant = accountant
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.max_seconds = max_seconds
        self.engine = engine
        self.dtype = dtype
        self.client = client
        self.step_timeout = step_timeout
        self.prior = prior
        self.max_rows_per_unit = max_rows_per_unit

    _loss = "robust"

    _parameter_constraints: ClassVar[dict] = {
        **PrivateGLM._parameter_constraints,
        "scale": [POSITIVE],
    }

    def fit(self, X, y, privacy_unit=None):
        """Release the model for (X, y) (real targets). ``privacy_unit``, errors and Dask
        input as in :meth:`PrivateLogisticRegression.fit`."""
        with fitting(self):
            p = self._fit_settings()
            self._check_budget(X, p, 1)  # before the data are read
            if self._on_cluster(X, y):
                if privacy_unit is not None or self.max_rows_per_unit is not None:
                    raise ParameterError("a fit per privacy unit needs in-memory data (not Dask)")
                prepared = self._prepare_dask(X, y, "real", p)
                clipped, seconds = self._release(prepared, [prepared.y], p)
                self._finish_fit(p, clipped, seconds)  # shown at fit time, never kept
                return self
            X, y = self._validate_training(X, y, y_numeric=True)
            X, y, p = self._units(X, y, privacy_unit, p)
            X, p, read, bound_rows = self._bound_features(X, p)
            prepared = prepare(
                X,
                y,
                labels="real",
                data_norm=p.data_norm,
                fit_intercept=p.fit_intercept,
                intercept_scaling=p.intercept_scaling,
                clip=p.clip,
            )
            clipped, seconds = self._release(prepared, [prepared.y], p, read)
            self._finish_fit(p, bound_rows + clipped, seconds)
            return self

    def _set_release_attributes(self, coef, intercept):
        self.coef_ = np.ascontiguousarray(coef[0])
        self.intercept_ = float(intercept[0])

    @blockwise_on_dask
    def predict(self, X):
        """x . coef + intercept, exact to rounding for every finite x; a prediction beyond
        the float64 range is a DataError (never inf or NaN)."""
        pred = self._decision(X).ravel()
        if not np.isfinite(pred).all():
            raise DataError(
                f"{int(np.count_nonzero(~np.isfinite(pred)))} predictions exceed the float64 "
                "range (about 1.8e308): the features are too large for the model's weights; "
                "scale them as at training"
            )
        return pred

    def score(self, X, y, sample_weight=None):
        """R^2 of the predictions (scikit-learn's), finite for every finite input: where the
        squares overflow, it is computed on predictions and targets divided by their
        largest magnitude (R^2 does not change under a common scale)."""
        value = data_errors("cannot score", super().score, X, y, sample_weight=sample_weight)
        if np.isfinite(value):
            return value
        pred = self.predict(X)
        target = as_targets(y)
        if target.shape != pred.shape:
            raise DataError(f"y has {target.size} values for {pred.size} rows of X")
        scale = max(float(np.max(np.abs(pred))), float(np.max(np.abs(target))), 1.0)
        return float(
            data_errors(
                "cannot score", r2_score, target / scale, pred / scale, sample_weight=sample_weight
            )
        )


PrivateRobustRegression.__doc__ = PrivateRobustRegression.__doc__ % COMMON_DOC
