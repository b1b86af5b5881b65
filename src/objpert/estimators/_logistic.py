"""Differentially private logistic regression: binary, and K classes over a public label
set by one multinomial release or K one-vs-rest releases (Watkins & Arora 2026)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import expit, log_expit, log_softmax, logsumexp, softmax
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets

from objpert._data import class_codes, prepare
from objpert.certify._multiclass import COMPOSITIONS
from objpert.estimators._base import (
    LABEL_SET,
    PrivateGLM,
    blockwise_on_dask,
    warn_label_set,
)
from objpert.estimators._data_errors import data_errors
from objpert.estimators._docstrings import COMMON_DOC
from objpert.estimators._multinomial import (
    MULTI_CLASS,
    check_multinomial_budget,
    descent_settings,
    fit_multinomial,
    use_multinomial,
)
from objpert.estimators._planning import DEFAULT_MAX_ITER
from objpert.estimators._selection import fitting
from objpert.estimators._unit import fit_multinomial_per_unit
from objpert.exceptions import DataError, ParameterError

__all__ = ["PrivateLogisticRegression"]


class PrivateLogisticRegression(ClassifierMixin, PrivateGLM):
    """Differentially private logistic regression (Watkins & Arora 2026).

    Binary: one release of gradient descent on the perturbed, ridge-regularised logistic
    objective, certified (epsilon, delta)-DP. K >= 3 classes: by default
    (``multi_class="auto"``) one multinomial release, the softmax cross-entropy minimised
    with objective and output noise (:mod:`objpert.mechanisms._certificates.multinomial`;
    docs/multiclass.md); by choice: one-vs-rest, K releases on the same
    data whose composition is (epsilon, delta)-DP (``composition``), reported in
    ``certificate_``.

    Parameters
    ----------
    epsilon : float > 0, default=1.0
        Target epsilon of the whole fit (all releases together).
    delta : float in (0, 1), default=1e-6
        Target delta of the whole fit.
    data_norm : float > 0 or None, default=None
        Public bound on the Euclidean norm of each feature row (Assumption 1), after the
        scaling of ``feature_bounds``. None: sqrt(n_features) with ``feature_bounds``;
        without them, the largest row norm of the training rows, read from the data
        (:class:`objpert.PrivacyLeakWarning`, ``"data norm"`` in
        ``certificate_.not_public``), unless the estimator is the last step of a
        scikit-learn ``Pipeline`` whose last transforming step declares a bound (objpert's
        bounded transformers, alone or in a ``ColumnTransformer`` or ``FeatureUnion``):
        then that bound (:func:`objpert.preprocessing.row_norm_bound`), public, recorded
        in ``pipeline_data_norm_`` and saved as ``data_norm``.
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
    %(mu)s
    comparator_norm : "auto" or float > 0, default="auto"
        W, the norm of the comparators the "auto" mu is tuned against (public). Smaller W
        weighs the noise more against the regularisation bias. ``"auto"``: 3 without a
        prior (3 beat 10 on every real dataset of the README and matches exact LOP at
        equal mu; README, compare); with a ``prior``, W = min(3, epsilon), the distance
        from the prior, epsilon each release's own (its share for one-vs-rest), so that
        the release tends to the prior as epsilon falls (docs/priors.md).
    max_iter : int >= 1, default=5000
        Public compute budget: the most gradient steps the tight calibration may plan.
    random_state : None, int, Generator or RandomState, default=None
        Source of the noise (see Privacy).
    verbose : bool or "auto", default="auto"
        Show a progress bar (stderr) during gradient descent: True always, False never,
        "auto" on a terminal outside notebooks for long fits (about 2 s or more).
    classes : list of labels or None, default=None
        The public label set (at least two labels). The classes, the number of releases
        K, the label mapping (the larger of two labels is +1), every shape and the
        certificate then depend on this list only: declared classes missing from the
        training rows are trained as usual, and a label outside the list is an error.
        ``None`` reads the label set from the training labels, warns
        :class:`objpert.PrivacyLeakWarning` and records ``"label set"`` in
        ``certificate_.not_public``: one relabelled row can change the model's shape,
        which no certificate covers.
    feature_bounds : list of (lo, hi) or None, default=None
        Public bounds of each feature. The model is trained on each feature clipped to
        its bounds and mapped onto [-1, 1] (rows of norm <= sqrt(n_features)); ``coef_``
        and ``intercept_`` are in the units of the raw features, and prediction clips
        raw features to the bounds, so predictions on raw X are those of the trained
        model (without an intercept column, ``intercept_`` holds the affine shift).
    n_jobs : None, -1 or int >= 1, default=None
        Threads of the gradient sweeps: None picks them from the work per step (small
        problems: one) and the cores not busy with other work; 1: one thread; -1: every
        core. It changes the speed only, never the released weights.
    max_seconds : float > 0 or None, default=None
        A time budget for the gradient steps: ``max_iter`` is cut to the steps it
        buys at the speed of one step on this machine, timed on synthetic data of the
        public shape (never the private rows) before calibration, with the declared
        ``engine`` and ``dtype`` (for ``"auto"`` and ``"shaped"`` the default engine: their
        speed depends on the private rows); recorded in ``max_iter_used_``.
        Calibration is not counted.
    composition : {"auto", "pld", "split"}, default="auto"
        How the K one-vs-rest releases share the budget. ``"pld"``: calibrated jointly so
        that the composition of their privacy-loss distributions (their whole Theorem
        C.13 profiles) is (epsilon, delta)-DP: less noise per release
        (:mod:`objpert.accounting`, needs dp-accounting). ``"split"``: each release gets
        (epsilon_i, delta_i) by basic or advanced composition. ``"auto"``: pld when
        dp-accounting is installed, else split. ``certificate_.method`` says which.
    multi_class : {"auto", "ovr", "multinomial"}, default="auto"
        How K > 2 classes are trained. ``"multinomial"``: one softmax release of a
        (K, n_features) weight matrix, approximate minima perturbation certified by the
        softmax objective's exact-minimiser privacy profile
        (:mod:`objpert.mechanisms._certificates.multinomial`); ``comparator_norm`` is then
        the norm of each class's comparator in the "auto" ridge, ``mu`` its ridge;
        ``calibration``, ``composition`` and ``max_iter`` do not apply (its solver has its
        own public budget of 2000 iterations), ``max_seconds``, an ``engine`` or a
        ``dtype`` are refused; a ``prior`` centres its ridge (one row per class). Its plan
        is ``objpert.plan("multinomial",
        loss="softmax", ..., n_classes=K, mu=, comparator_norm=comparator_norm)``.
        ``"ovr"``: K one-vs-rest releases of Watkins & Arora (2026). ``"auto"``:
        multinomial for K >= 3 classes on in-memory data without a composition,
        ``max_seconds``, engine or dtype declared (settings of
        gradient-descent releases); one-vs-rest otherwise (a rule of public values only, from
        benchmarks/accuracy_suite.json).
        Two classes: one binary release whatever this says. ``multi_class_`` records the choice.
    accountant : PrivacyAccountant or None, default=None
        A privacy budget shared by several releases (:class:`objpert.accounting.
        PrivacyAccountant`): ``fit`` charges it and raises
        :class:`objpert.BudgetExceededError`, releasing nothing, when the fit does not
        fit in what remains (checked before the data are read when the label set is
        declared and the row bound public). Clones share the same accountant.
    engine : {"auto", "default", "shaped", "xp", "gpu"}, default="auto"
        Where the gradient steps run (:func:`objpert.mechanisms._perturbed_gd.
        perturbed_gradient_descent`): ``"default"`` the fused dense or sparse sweep;
        ``"shaped"`` duplicate rows merged and indicator columns as CSR; ``"auto"`` the
        shaped engine for dense in-memory data with indicator columns when its cost model
        says it pays and the plan runs at least 500 steps, the default engine otherwise;
        ``"xp"``/``"gpu"`` the array-API engine on the CPU or a CUDA GPU. It changes the
        speed and the rounding only (the weights equal the default engine's to ~1e-12
        relative), never the certificate; the time to fit, though, then depends on the
        data's duplicate rows and sparsity (use ``"default"`` where others can observe
        it; docs/performance.md).
    dtype : {"float64", "float32"}, default="float64"
        Precision of the gradient steps; ``"float32"`` runs the array-API engine (weights
        within ~1e-4 relative of float64). Rounding only, never the certificate.
    client : distributed.Client, scheduler address or None, default=None
        Fit on this Dask cluster (any X, not only Dask arrays; docs/dask.md). Dask arrays
        and DataFrames are fitted on their own cluster without it.
    step_timeout : float > 0 or None, default=None
        Seconds each gradient step on a cluster may wait for it before a ClusterError
        (None: 60 s; ``math.inf``: no limit).
    prior : fitted linear model, (coef, intercept), {"coef", "intercept"}, array or None, \
default=None
        A public model to start from (docs/priors.md): the ridge is centred at it, (mu/2)
        ||w - w_pub||^2, and the descent starts there; ``comparator_norm`` is then the
        distance from it (``"auto"``: min(3, each release's epsilon)). Anything with ``coef_`` and
        ``intercept_`` (scikit-learn's LogisticRegression, an objpert model; its feature
        names and classes must match), or coef of shape (n_features,) or (n_classes,
        n_features) with an intercept, in the units of the raw features. The plan and
        certificate are those without a prior at the same W. It must be public: a prior
        fitted on the same private rows is not covered.
    max_rows_per_unit : int >= 1 or None, default=None
        Certify the model for one privacy unit (a person) of up to k rows instead of one
        row: ``fit(X, y, privacy_unit=ids)`` keeps at most k rows per unit (chosen by a
        keyed hash, never by their values), n becomes the number of units times k, and
        ``certificate_`` is a :class:`~objpert.accounting.UnitCertificate` naming the
        unit (docs/privacy-unit.md). None: the guarantee is per row.

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Released weights without the intercept column.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        w_last * c, the weight of the intercept column times its value c (0 without it).
    classes_ : ndarray of shape (n_classes,)
        ``classes`` sorted (or the labels found, with ``classes=None``).
    n_iter_ : ndarray of shape (n_releases,)
        Gradient steps of each release (fixed by the plan, never data-dependent); for the
        multinomial release, its solver's public iteration budget (the count it used
        depends on the private rows and is not kept).
    certificate_ : Certificate or ComposedCertificate
        The release's certificate (binary) or the composition of the K releases; with
        ``max_rows_per_unit``, a :class:`~objpert.accounting.UnitCertificate` wrapping it.
    plan_ : Plan or list of Plan
    releases_ : list of CertifiedRelease
        Each release's weights, plan, certificate, iterations and seed flag (no statistic
        of the private rows: :class:`objpert.mechanisms._perturbed_gd.CertifiedRelease`).
    max_iter_used_ : int
        The iteration budget of the calibration: ``max_iter``, or the steps
        ``max_seconds`` buys (a multinomial release: its solver's budget).
    seeded_ : bool
        Whether a testing seed drew the noise (then the model is not private).
    multi_class_ : {"ovr", "multinomial"}
        How the classes were trained (``"ovr"`` for two classes: one binary release).
    prior_coef_, prior_intercept_ : ndarray or None
        The public prior in the units of the raw features, shaped as ``coef_`` and
        ``intercept_`` (None without one).
    pipeline_data_norm_ : float or None
        The row-norm bound declared by the bounded steps before the estimator in a
        ``Pipeline`` (see ``data_norm``); None when the fit did not take it from them.
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
        classes=None,
        composition="auto",
        multi_class="auto",
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
        self.classes = classes
        self.composition = composition
        self.multi_class = multi_class
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

    _loss = "logistic"

    _parameter_constraints: ClassVar[dict] = {
        **PrivateGLM._parameter_constraints,
        "classes": "no_validation",  # checked as a label set (DataError naming the fault)
        "composition": [StrOptions(set(COMPOSITIONS))],
        "multi_class": [StrOptions(set(MULTI_CLASS))],
    }

    def fit(self, X, y, privacy_unit=None):
        """Release the model for (X, y): one release (binary) or one per class (OvR).

        ``privacy_unit``: the id of each row's privacy unit (a person), routed through
        pipelines and searches as fit metadata (``set_fit_request(privacy_unit=True)``).
        With ``max_rows_per_unit=k`` the certificate is for one unit of up to k rows
        (docs/privacy-unit.md); without it, the fit is for one row and ids that repeat
        warn that the guarantee is per row.

        With ``classes`` declared, the label set, the number of releases, the label mapping,
        every shape and the certificate depend on that list only (a declared class absent
        from the rows is trained as usual; a label outside the list is a DataError). With
        ``classes=None`` they are read from the labels: PrivacyLeakWarning, and
        ``certificate_.not_public`` records it.

        Raises ParameterError for invalid hyperparameters, DataError (a ValueError) for
        data breaking the contract (non-finite values, labels outside the declared
        classes, oversized rows with ``clip=False``), UnreachableTargetError when no plan
        certifies the target. Dask arrays or DataFrames (or any X with ``client`` set) are
        fitted on the cluster; see docs/dask.md.
        """
        with fitting(self):
            p = self._fit_settings()
            declared = p.classes
            if declared is not None:  # the releases are known before the data are read
                k = len(declared)
                if self._multinomial_for(k, self.client is not None, p):
                    check_multinomial_budget(self, X, p, k)  # in-memory arrays only
                else:
                    self._check_budget(X, p, 1 if k == 2 else k)
            on_cluster = self._on_cluster(X, y)
            if on_cluster and (privacy_unit is not None or self.max_rows_per_unit is not None):
                raise ParameterError("a fit per privacy unit needs in-memory data (not Dask)")
            if on_cluster:
                prepared = self._prepare_dask(X, y, "classes", p)
                read: tuple[str, ...] = ()
                bound_rows = 0  # feature_bounds are for in-memory data
                classes, codes = prepared.classes, prepared.y  # codes: a Dask array
                data_errors("the labels cannot be classes", check_classification_targets, classes)
            else:
                X, y = self._validate_training(X, y, y_numeric=False)
                X, y, p = self._units(X, y, privacy_unit, p)
                X, p, read, bound_rows = self._bound_features(X, p)
                data_errors("the labels cannot be classes", check_classification_targets, y)
                if declared is None:
                    classes, codes = np.unique(y, return_inverse=True)
                else:
                    classes, codes = declared, class_codes(y, declared)
                prepared = None
            not_public: tuple[str, ...] = read
            if declared is None:
                warn_label_set(classes)
                not_public = (LABEL_SET, *not_public)
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
            if self._multinomial_for(len(classes), on_cluster, p):
                fit = fit_multinomial if p.units is None else fit_multinomial_per_unit
                codes = np.asarray(codes)
                clipped, seconds = fit(self, prepared, codes, classes, p, not_public)
                self.classes_ = classes
                self._finish_fit(p, bound_rows + clipped, seconds)
                return self
            # binary: +1 for classes_[1]; one-vs-rest: release k has +1 for class k, -1 otherwise
            ks = [1] if len(classes) == 2 else range(len(classes))
            targets = [np.where(codes == k, 1.0, -1.0) for k in ks]
            clipped, seconds = self._release(prepared, targets, p, not_public, classes)
            self.multi_class_ = "ovr"
            self.classes_ = classes  # set with the weights: a failed refit leaves no mixture
            self._finish_fit(p, bound_rows + clipped, seconds)  # shown at fit time, not kept
            return self

    def _multinomial_for(self, k: int, on_cluster: bool, p) -> bool:
        """Whether this fit of k classes is one multinomial release (the public rule of
        :func:`~objpert.estimators._multinomial.use_multinomial`)."""
        descent = descent_settings(p, self.composition)
        return use_multinomial(self.multi_class, k, on_cluster, self.prior, descent)

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

    def _multinomial(self) -> bool:
        return getattr(self, "multi_class_", "ovr") == "multinomial"

    @blockwise_on_dask
    def predict_proba(self, X):
        """Multinomial: the softmax of the margins. Otherwise the sigmoid of the margins;
        one-vs-rest rows normalised to sum to one (as scikit-learn's LogisticRegression
        does for OvR)."""
        scores = self.decision_function(X)
        if self._multinomial():
            return _softmax_proba(scores)
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
        if self._multinomial():
            return _softmax_log_proba(scores)
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


def _top_share(scores: np.ndarray) -> np.ndarray:
    """Rows of margins beyond the float64 range: the classes with the largest margin share
    the probability (the limit of the softmax as the margins grow)."""
    top = scores == scores.max(axis=1, keepdims=True)
    return top / top.sum(axis=1, keepdims=True)


def _softmax_proba(scores: np.ndarray) -> np.ndarray:
    """The softmax of each row of margins; rows with an infinite margin by
    :func:`_top_share`."""
    with np.errstate(invalid="ignore", over="ignore"):
        p = softmax(scores, axis=1)
    bad = ~np.isfinite(p).all(axis=1)
    if bad.any():
        p[bad] = _top_share(scores[bad])
    return p


def _softmax_log_proba(scores: np.ndarray) -> np.ndarray:
    """log of :func:`_softmax_proba` in log space (finite wherever the probability is
    positive, never NaN)."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = log_softmax(scores, axis=1)
    bad = np.isnan(out).any(axis=1)
    if bad.any():
        with np.errstate(divide="ignore"):
            out[bad] = np.log(_top_share(scores[bad]))
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
