"""Differentially private logistic regression: binary, and one-vs-rest over a public label
set (Watkins & Arora 2026)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit, logsumexp
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from objpert.data import DataError, class_codes, is_dask, prepare
from objpert.estimators.base import (
    COMMON_DOC,
    DEFAULT_COMPARATOR_NORM,
    DEFAULT_MAX_ITERATIONS,
    LABEL_SET,
    PrivateGLM,
    blockwise_on_dask,
    data_errors,
    warn_label_set,
)

__all__ = ["PrivateLogisticRegression"]


class PrivateLogisticRegression(ClassifierMixin, PrivateGLM):
    """Differentially private logistic regression (Watkins & Arora 2026).

    Binary: one release of gradient descent on the perturbed, ridge-regularised logistic
    objective, certified (epsilon, delta)-DP. K > 2 classes: one-vs-rest, K releases on the
    same data; the budget is split by :func:`objpert.certify.composition.split_budget` so
    that their composition (basic or advanced, whichever allows more per release) is
    (epsilon, delta)-DP, reported in ``certificate_``.

    Parameters
    ----------
    epsilon : float > 0, default=1.0
        Target epsilon of the whole fit (all releases together).
    delta : float in (0, 1), default=1e-6
        Target delta of the whole fit.
    data_norm : float > 0, default=1.0
        Public bound on the Euclidean norm of each feature row (Assumption 1).
    fit_intercept : bool, default=True
        Append a constant column of value c = ``intercept_scaling`` (after clipping); the
        certificate then uses zeta = sqrt(data_norm^2 + c^2).
    intercept_scaling : float > 0 or None, default=None
        The value c of the intercept column (None: ``data_norm``). A larger c regularises
        the intercept less but enlarges zeta (more noise).
    clip : bool, default=True
        Scale rows with norm above ``data_norm`` down to it (True) or refuse them (False).
    calibration : {"tight", "corollary413"}, default="tight"
        ``"tight"``: numerical calibration certified by Theorem C.13 (any epsilon).
        ``"corollary413"``: Corollary 4.13 as stated (per-release epsilon <= 1).
    %(alpha)s
    comparator_norm : float > 0, default=3.0
        W, the norm of the comparators the "auto" mu is tuned against (public). Smaller W
        weighs the noise more against the regularisation bias: 3 beat 10 on every real
        dataset of the README (and matches exact LOP at equal mu; README, compare).
    max_iterations : int >= 1, default=5000
        Public compute budget: the most gradient steps the tight calibration may plan.
    random_state : None, int, Generator or RandomState, default=None
        Source of the noise (see Privacy).
    verbose : bool, default=False
        Show a progress bar during gradient descent.
    classes : list of labels or None, default=None
        The public label set (at least two labels). The classes, the number of releases
        K, the label mapping (the larger of two labels is +1), every shape and the
        certificate then depend on this list only: declared classes missing from the
        training rows are trained as usual, and a label outside the list is an error.
        ``None`` reads the label set from the training labels, warns
        :class:`objpert.PrivacyLeakWarning` and records ``"label set"`` in
        ``certificate_.not_public``: one relabelled row can change the model's shape,
        which no certificate covers.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Released weights without the intercept column.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        w_last * c, the weight of the intercept column times its value c (0 without it).
    classes_ : ndarray of shape (n_classes,)
        ``classes`` sorted (or the labels found, with ``classes=None``).
    n_iter_ : ndarray of shape (n_releases,)
        Gradient steps of each release (fixed by the plan, never data-dependent).
    certificate_ : Certificate or ComposedCertificate
        The release's certificate (binary) or the composition of the K releases.
    plan_ : Plan or list of Plan
    releases_ : list of Release
    seeded_ : bool
        Whether a testing seed drew the noise (then the model is not private).
    n_clipped_ : int
        Rows clipped to ``data_norm`` (a data statistic: not covered by the certificate).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names (pandas).

    %(privacy)s
    """

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-6,
        data_norm=1.0,
        fit_intercept=True,
        intercept_scaling=None,
        clip=True,
        calibration="tight",
        alpha="auto",
        comparator_norm=DEFAULT_COMPARATOR_NORM,
        max_iterations=DEFAULT_MAX_ITERATIONS,
        random_state=None,
        verbose=False,
        classes=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.clip = clip
        self.calibration = calibration
        self.alpha = alpha
        self.comparator_norm = comparator_norm
        self.max_iterations = max_iterations
        self.random_state = random_state
        self.verbose = verbose
        self.classes = classes

    _loss = "logistic"

    def fit(self, X, y, client=None):
        """Release the model for (X, y): one release (binary) or one per class (OvR).

        With ``classes`` declared, the label set, the number of releases, the label mapping,
        every shape and the certificate depend on that list only (a declared class absent
        from the rows is trained as usual; a label outside the list is a DataError). With
        ``classes=None`` they are read from the labels: PrivacyLeakWarning, and
        ``certificate_.not_public`` records it.

        Raises ParameterError for invalid hyperparameters, DataError (a ValueError) for
        data breaking the contract (non-finite values, labels outside the declared
        classes, oversized rows with ``clip=False``), UnreachableTargetError when no plan
        certifies the target. Dask arrays or DataFrames (or any X with ``client``: a
        ``distributed.Client`` or a scheduler address) are fitted on the cluster; see
        docs/dask.md.
        """
        p = self._public_constants()
        declared = p.classes
        if is_dask(X) or is_dask(y) or client is not None:
            prepared = self._prepare_dask(X, y, "classes", p, client)
            classes, codes = prepared.classes, prepared.y  # codes: a Dask array
            data_errors("the labels cannot be classes", check_classification_targets, classes)
        else:
            X, y = self._validate_training(X, y, y_numeric=False)
            data_errors("the labels cannot be classes", check_classification_targets, y)
            if declared is None:
                classes, codes = np.unique(y, return_inverse=True)
            else:
                classes, codes = declared, class_codes(y, declared)
            prepared = None
        not_public: tuple[str, ...] = ()
        if declared is None:
            warn_label_set(classes)
            not_public = (LABEL_SET,)
            if len(classes) < 2:
                raise DataError(
                    f"the training labels hold only one class ({classes.tolist()!r}); a "
                    "classifier needs at least two: declare the label set with classes=[...]"
                )
        if prepared is None:  # X prepared once, class codes as placeholder targets
            prepared = prepare(
                X,
                codes.astype(np.float64),
                labels="real",
                data_norm=p.data_norm,
                fit_intercept=p.fit_intercept,
                intercept_scaling=p.intercept_scaling,
                clip=p.clip,
            )
        # binary: +1 for classes_[1]; one-vs-rest: release k has +1 for class k, -1 otherwise
        ks = [1] if len(classes) == 2 else range(len(classes))
        self._release(prepared, [np.where(codes == k, 1.0, -1.0) for k in ks], p, not_public)
        self.classes_ = classes  # set with the weights: a failed refit leaves no mixture
        return self

    def _set_release_attributes(self, coef, intercept):
        self.coef_ = np.ascontiguousarray(coef)
        self.intercept_ = np.asarray(intercept, dtype=np.float64)

    @blockwise_on_dask
    def decision_function(self, X):
        """Margins x . coef + intercept: shape (n,) for two classes, (n, K) otherwise."""
        scores = self._decision(X)
        return scores.ravel() if scores.shape[1] == 1 else scores

    @blockwise_on_dask
    def predict(self, X):
        """The class with the largest margin (binary: classes_[1] when the margin > 0)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    @blockwise_on_dask
    def predict_proba(self, X):
        """Sigmoid of the margins; one-vs-rest rows normalised to sum to one (as
        scikit-learn's LogisticRegression does for OvR)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        p = expit(scores)
        total = p.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            p /= total
        bad = _unstable_rows(p, total)
        if bad.any():  # every sigmoid underflowed: normalise in log space
            p[bad] = np.exp(_ovr_log_proba(scores[bad]))
        return p

    def score(self, X, y, sample_weight=None):
        """Mean accuracy on (X, y) (scikit-learn's); mismatched or unreadable labels are a
        DataError."""
        return data_errors("cannot score", super().score, X, y, sample_weight=sample_weight)

    @blockwise_on_dask
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed in log space where the
        probabilities underflow (log-sigmoids, log-sum-exp): finite wherever the
        probability is positive, never NaN."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return np.column_stack([log_expit(-scores), log_expit(scores)])
        p = expit(scores)
        total = p.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.log(p / total)
        bad = _unstable_rows(p / np.where(total > 0, total, 1.0), total)
        if bad.any():
            out[bad] = _ovr_log_proba(scores[bad])
        return out


#: Below this row sum of the sigmoids, one-vs-rest probabilities are normalised in log space
#: (the sigmoids are subnormal or zero: their ratio has lost its precision).
_TINY_TOTAL = 1e-290


def _unstable_rows(p: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Rows whose direct normalisation is not trustworthy: NaN, or a tiny sigmoid sum."""
    return ~np.isfinite(p).all(axis=1) | ~(total[:, 0] >= _TINY_TOTAL)


def _ovr_log_proba(scores: np.ndarray) -> np.ndarray:
    """log(sigmoid(s_k) / sum_j sigmoid(s_j)) by log-sigmoids and log-sum-exp. Where every
    margin is -inf (beyond the float64 range) the classes with the largest margin share the
    probability (the limit of the normalisation as the margins grow)."""
    logs = log_expit(scores)
    with np.errstate(invalid="ignore"):
        out = logs - logsumexp(logs, axis=1, keepdims=True)
    bad = ~np.isfinite(out).any(axis=1) | np.isnan(out).any(axis=1)
    if bad.any():
        top = scores[bad] == scores[bad].max(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            out[bad] = np.log(top / top.sum(axis=1, keepdims=True))
    return out


PrivateLogisticRegression.__doc__ = PrivateLogisticRegression.__doc__ % COMMON_DOC
