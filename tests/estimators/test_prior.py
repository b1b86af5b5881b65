"""Public priors (prior=): the ridge centred at a public model w_pub, the descent started
there. The plan and certificate are those without a prior; the release equals a plain
numpy loop in w-space and the v = w - w_pub formulation with public margin offsets; the
exact pairwise audit holds on the shifted map; bad priors are refused; model files keep
the prior (docs/priors.md)."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import expit
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LinearRegression, LogisticRegression

from objpert._losses import get_loss
from objpert.accounting._gaussian_mechanism import gaussian_profile
from objpert.audit._maps import GradientDescentMap, gradient_descent_jacobian
from objpert.audit._pairwise import pairwise_profile, privacy_loss
from objpert.certify._calibration import calibrate
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ModelFileError, ParameterError
from objpert.mechanisms._perturbed_gd import (
    perturbed_gradient_descent,
    release_batch,
    run_gradient_descent,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore::objpert.exceptions.TestingSeedWarning",
    "ignore::objpert.exceptions.UnverifiedModelWarning",
    "ignore::objpert.exceptions.ClippingNotice",
)

N, D = 240, 3
COMMON = dict(epsilon=2.0, delta=1e-6, mu=1.0, max_iter=400, random_state=11)
DATA_NORM = 3.0
BOUNDS = [(-2.0, 2.0), (0.0, 4.0), (-1.0, 3.0)]


def _data(seed: int = 0, n: int = N):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.uniform(0, 4, n), rng.uniform(-1, 3, n)])
    t = X @ np.array([1.0, -0.5, 0.4]) + 0.5 + 0.3 * rng.normal(size=n)
    y2 = (t > np.median(t)).astype(int)
    y3 = np.digitize(t, np.quantile(t, [1 / 3, 2 / 3]))
    return X, y2, y3, t


def _prior(k: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(k, D)), rng.normal(size=k)


# ---------------------------------------------------------------- independent references


def _internal(X, model, kw):
    """The rows as the mechanism sees them (feature bounds mapped onto [-1, 1], rows scaled
    to data_norm, the intercept column of value c appended) and c; recomputed here."""
    X = np.asarray(X, dtype=float)
    bounds = kw.get("feature_bounds")
    if bounds is not None:
        b = np.asarray(bounds, dtype=float)
        mid, half = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
        X = (np.clip(X, b[:, 0], b[:, 1]) - mid) / half
    norm = kw.get("data_norm", math.sqrt(X.shape[1]))
    X = X * np.minimum(1.0, norm / np.linalg.norm(X, axis=1))[:, None]
    c = kw.get("intercept_scaling") or norm
    return np.column_stack([X, np.full(len(X), c)]), c


def _to_internal(coef, intercept, kw, c):
    """A model (coef (K, p), intercept (K,)) in raw units in the mechanism's coordinates."""
    coef, intercept = np.atleast_2d(coef), np.atleast_1d(intercept)
    bounds = kw.get("feature_bounds")
    if bounds is not None:
        b = np.asarray(bounds, dtype=float)
        mid, half = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
        coef, intercept = coef * half, intercept + coef @ mid
    return np.column_stack([coef, intercept / c])


def _to_raw(W, kw, c):
    """Weights (K, d) in the mechanism's coordinates back to raw units (coef, intercept)."""
    coef, intercept = W[:, :-1], W[:, -1] * c
    bounds = kw.get("feature_bounds")
    if bounds is not None:
        b = np.asarray(bounds, dtype=float)
        mid, half = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
        coef, intercept = coef / half, intercept - (coef / half) @ mid
    return coef, intercept


def _d1(loss, m, y):
    if loss == "logistic":
        return -y * expit(-y * m)
    return (m - y) / np.sqrt(1.0 + (m - y) ** 2)  # pseudo-Huber, scale 1


def _w_space(X, y, loss, w_pub, z, mu, eta, N):
    """Plain gradient descent on (1/n) sum l + (mu/2)||w - w_pub||^2 + <z, w> from w_pub."""
    w = w_pub.copy()
    for _ in range(N):
        w = w - eta * (X.T @ _d1(loss, X @ w, y) / len(y) + mu * (w - w_pub) + z)
    return w


def _v_space(X, y, loss, w_pub, z, mu, eta, N):
    """The same release as a GLM in v = w - w_pub with the public margin offsets
    <x_i, w_pub>, the ridge at 0 and v_0 = 0 (docs/priors.md): w = w_pub + v_N."""
    offset = X @ w_pub
    v = np.zeros_like(w_pub)
    for _ in range(N):
        v = v - eta * (X.T @ _d1(loss, X @ v + offset, y) / len(y) + mu * v + z)
    return w_pub + v


def _noise(seed, plan, k):
    """The noise the estimator draws: seed for one release, SeedSequence(seed).spawn(k)."""
    seeds = [seed] if k == 1 else np.random.SeedSequence(seed).spawn(k)
    return [np.random.default_rng(s).normal(0.0, plan.sigma, size=plan.d) for s in seeds]


LOGIT, ROBUST = PrivateLogisticRegression, PrivateRobustRegression
OVR = {"multi_class": "ovr"}  # one release per class: each row of the prior centres one
CASES = {
    "binary": (LOGIT, "logistic", 1, dict(data_norm=DATA_NORM, classes=[0, 1])),
    "bounds": (LOGIT, "logistic", 1, dict(feature_bounds=BOUNDS, classes=[0, 1])),
    "ovr": (LOGIT, "logistic", 3, dict(data_norm=DATA_NORM, classes=[0, 1, 2], **OVR)),
    "robust": (ROBUST, "robust", 1, dict(data_norm=DATA_NORM)),
    "robust-bounds": (ROBUST, "robust", 1, dict(feature_bounds=BOUNDS)),
}


def _fit(case, prior, **extra):
    cls, _, k, kw = CASES[case]
    X, y2, y3, t = _data()
    y = {"logistic": y2 if k == 1 else y3, "robust": t}[CASES[case][1]]
    return cls(**COMMON, **kw, prior=prior, **extra).fit(X, y), X, y


@pytest.mark.parametrize("case", list(CASES))
def test_plan_and_certificate_are_those_without_a_prior(case):
    """At the same comparator norm (with a prior, ``"auto"`` is min(3, epsilon) of each
    release: 2 for a single release here, less for each one-vs-rest release; it enters the
    plan's utility bound, never the certificate)."""
    k = CASES[case][2]
    with_prior, _, _ = _fit(case, _prior(k))
    plans = with_prior.plan_ if isinstance(with_prior.plan_, list) else [with_prior.plan_]
    norm = min(3.0, plans[0].epsilon)
    assert {p.comparator_norm for p in plans} == {norm}
    assert norm == min(3.0, COMMON["epsilon"]) if k == 1 else norm < min(3.0, COMMON["epsilon"])
    plain, _, _ = _fit(case, None, comparator_norm=norm)
    assert with_prior.plan_ == plain.plan_
    assert with_prior.certificate_ == plain.certificate_
    assert with_prior.certificate_.to_dict() == plain.certificate_.to_dict()
    assert not with_prior.certificate_.not_public
    assert not np.allclose(with_prior.coef_, plain.coef_)  # the prior did change the release


@pytest.mark.parametrize("case", list(CASES))
def test_release_equals_a_plain_loop_and_the_offset_formulation(case):
    """coef_/intercept_ equal numpy gradient descent from w_pub on the ridge centred at
    w_pub with the same z (w-space), and w_pub + v_N of the GLM with margin offsets
    <x_i, w_pub> (v-space), to 1e-10; each release records its prior."""
    _, loss, k, kw = CASES[case]
    coef, intercept = _prior(k)
    model, X, y = _fit(case, (coef, intercept))
    M, c = _internal(X, model, kw)
    W_pub = _to_internal(coef, intercept, kw, c)
    plan = model.releases_[0].plan
    labels = [np.where(y == j, 1.0, -1.0) for j in range(k)] if k > 1 else None
    if loss == "logistic" and k == 1:
        labels = [np.where(y == 1, 1.0, -1.0)]
    elif loss == "robust":
        labels = [np.asarray(y, dtype=float)]
    zs = _noise(COMMON["random_state"], plan, k)
    args = (plan.mu, plan.eta, plan.iterations)
    W = np.vstack([_w_space(M, labels[j], loss, W_pub[j], zs[j], *args) for j in range(k)])
    V = np.vstack([_v_space(M, labels[j], loss, W_pub[j], zs[j], *args) for j in range(k)])
    np.testing.assert_allclose(V, W, rtol=0, atol=1e-10)
    ref_coef, ref_intercept = _to_raw(W, kw, c)
    scale = 1.0 + np.abs(ref_coef).max()
    np.testing.assert_allclose(np.atleast_2d(model.coef_), ref_coef, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(
        np.atleast_1d(model.intercept_), ref_intercept, rtol=0, atol=1e-10 * scale
    )
    for j, r in enumerate(model.releases_):
        np.testing.assert_allclose(r.prior, W_pub[j], rtol=0, atol=1e-15)
        assert r.to_dict()["prior"] == pytest.approx(W_pub[j].tolist(), abs=1e-15)
    np.testing.assert_array_equal(np.atleast_2d(model.prior_coef_), coef)
    np.testing.assert_array_equal(np.atleast_1d(model.prior_intercept_), intercept)


@pytest.mark.parametrize("case", list(CASES))
def test_a_prior_of_zeros_is_no_prior_bit_for_bit(case):
    k = CASES[case][2]
    plain, _, _ = _fit(case, None)
    zeros, _, _ = _fit(case, (np.zeros((k, D)), np.zeros(k)))
    assert np.array_equal(zeros.coef_, plain.coef_)
    assert np.array_equal(zeros.intercept_, plain.intercept_)
    assert plain.prior_coef_ is None and plain.releases_[0].prior is None


@pytest.mark.parametrize("engine", ["xp", "shaped"])
def test_engines_with_their_own_descent_take_the_prior(engine):
    X, y2, _, _ = _data()
    prior = _prior(1)
    kw = dict(**COMMON, data_norm=DATA_NORM, classes=[0, 1], prior=prior)
    ref = PrivateLogisticRegression(**kw).fit(X, y2)
    got = PrivateLogisticRegression(**kw, engine=engine).fit(X, y2)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("span", [True, False])
def test_the_feature_span_reduction_keeps_the_prior_outside_the_span(span):
    """d > n: the span recursion (Lemma B.6) with the complement starting at w_pub equals
    the plain loop; so do the batched draws."""
    rng = np.random.default_rng(3)
    n, d = 12, 40
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.choice([-1.0, 1.0], n)
    plan = calibrate("logistic", n=n, d=d, zeta=1.0, epsilon=1.0, delta=1e-5, mu=0.5)
    w_pub = rng.normal(size=d)
    r = perturbed_gradient_descent(X, y, plan, rng=4, prior=w_pub, span_reduction=span)
    z = np.random.default_rng(4).normal(0.0, plan.sigma, size=d)
    ref = _w_space(X, y, "logistic", w_pub, z, plan.mu, plan.eta, plan.iterations)
    np.testing.assert_allclose(r.weights, ref, rtol=0, atol=1e-10)
    batch = release_batch(X, y, plan, 3, rng=4, prior=w_pub, span_reduction=span)
    np.testing.assert_allclose(batch.weights[0], ref, rtol=0, atol=1e-10)
    assert np.array_equal(batch.prior, w_pub)


def test_dask_fit_with_a_prior_equals_the_in_memory_fit():
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    X, y2, _, _ = _data()
    kw = dict(**COMMON, data_norm=DATA_NORM, classes=[0, 1], prior=_prior(1))
    ref = PrivateLogisticRegression(**kw).fit(X, y2)
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    with cluster, distributed.Client(cluster):
        got = PrivateLogisticRegression(**kw).fit(
            da.from_array(X, chunks=100), da.from_array(y2, chunks=100)
        )
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(got.prior_coef_, ref.prior_coef_)


# ---------------------------------------------------------------- fitted models as priors


def test_fitted_models_are_priors_in_raw_units():
    """scikit-learn's LogisticRegression (binary and multiclass), wrapped in FrozenEstimator
    (survives clone), and an objpert model, each equal to its (coef_, intercept_)."""
    import pandas as pd

    X, y2, y3, t = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    for y, classes in ((y2, [0, 1]), (y3, [0, 1, 2])):
        lr = LogisticRegression(max_iter=1000).fit(frame[:40], y[:40])
        kw = dict(**COMMON, feature_bounds=BOUNDS, classes=classes)
        by_model = PrivateLogisticRegression(**kw, prior=lr).fit(frame, y)
        by_arrays = PrivateLogisticRegression(**kw, prior=(lr.coef_, lr.intercept_)).fit(frame, y)
        assert np.array_equal(by_model.coef_, by_arrays.coef_)
        cloned = clone(PrivateLogisticRegression(**kw, prior=FrozenEstimator(lr))).fit(frame, y)
        assert np.array_equal(cloned.coef_, by_model.coef_)
    public = PrivateRobustRegression(**COMMON, data_norm=DATA_NORM).fit(X[:50], t[:50])
    chained = PrivateRobustRegression(**COMMON, data_norm=DATA_NORM, prior=public).fit(X, t)
    np.testing.assert_array_equal(chained.prior_coef_, public.coef_)
    assert chained.prior_intercept_ == public.intercept_
    lin = LinearRegression().fit(X[:50], t[:50])
    assert PrivateRobustRegression(**COMMON, data_norm=DATA_NORM, prior=lin).fit(X, t).coef_.shape


BAD = {
    "width": ((np.zeros(D + 1), 0.0), "coefficients per row"),
    "rows": ((np.zeros((2, D)), np.zeros(2)), "release"),
    "nan": ((np.array([0.0, np.nan, 0.0]), 0.0), "finite"),
    "inf intercept": ((np.zeros(D), np.inf), "finite"),
    "text": ((np.array(["a", "b", "c"]), 0.0), "numbers"),
    "bools": ((np.array([True, False, True]), 0.0), "numbers"),
    "intercept shape": ((np.zeros(D), np.zeros(3)), "intercept"),
    "3-d": ((np.zeros((1, 1, D)), 0.0), "shape"),
    "tuple of three": ((np.zeros(D), 0.0, 1.0), "tuple"),
    "list": ([0.0, 0.0, 0.0], "must be None"),
    "mapping keys": ({"weights": np.zeros(D)}, "keys"),
    "unfitted": (LogisticRegression(), "not fitted"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_priors_are_refused_before_any_release(name):
    prior, message = BAD[name]
    X, y2, _, _ = _data()
    model = PrivateLogisticRegression(**COMMON, data_norm=DATA_NORM, classes=[0, 1], prior=prior)
    with pytest.raises(ParameterError, match=message):
        model.fit(X, y2)
    assert not hasattr(model, "coef_")


def test_feature_names_classes_and_the_intercept_must_match():
    import pandas as pd

    X, y2, _, _ = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    kw = dict(**COMMON, data_norm=DATA_NORM)
    other = LogisticRegression().fit(frame.rename(columns={"c": "z"})[:40], y2[:40])
    with pytest.raises(ParameterError, match="features"):
        PrivateLogisticRegression(**kw, classes=[0, 1], prior=other).fit(frame, y2)
    relabelled = LogisticRegression().fit(X[:40], np.where(y2[:40] == 1, 5, 0))
    with pytest.raises(ParameterError, match="classes"):
        PrivateLogisticRegression(**kw, classes=[0, 1], prior=relabelled).fit(X, y2)
    with pytest.raises(ParameterError, match="regression"):
        PrivateRobustRegression(**kw, prior=relabelled).fit(X, y2.astype(float))
    with pytest.raises(ParameterError, match="fit_intercept=False"):
        PrivateLogisticRegression(
            **kw, classes=[0, 1], fit_intercept=False, prior=(np.ones(D), 0.5)
        ).fit(X, y2)
    ok = PrivateLogisticRegression(**kw, classes=[0, 1], fit_intercept=False, prior=np.ones(D))
    assert ok.fit(X, y2).prior_intercept_ == pytest.approx([0.0])


# ---------------------------------------------------------------- the audit on the shifted map


@dataclass(frozen=True)
class OffsetObjective:
    """F in v = w - w_pub: (1/n) sum l(<x_i, v> + <x_i, w_pub>, y_i) + (mu/2)||v||^2, the
    GLM with public margin offsets, written out here (gradient and Hessian products)."""

    X: np.ndarray
    y: np.ndarray
    w_pub: np.ndarray
    mu: float
    engine: object = None  # no device descent: run_gradient_descent's own loop

    def _margins(self, V):
        offset = self.X @ self.w_pub
        return self.X @ V + (offset[:, None] if V.ndim == 2 else offset)

    def _labels(self, m):
        return self.y[:, None] if m.ndim == 2 else self.y

    def gradient(self, V):
        m = self._margins(V)
        loss = get_loss("logistic")
        return self.X.T @ loss.d1(m, self._labels(m)) / len(self.y) + self.mu * V

    def hvp(self, V, U):
        m = self._margins(V)
        curv = get_loss("logistic").d2(m, self._labels(m)) / len(self.y)
        return self.X.T @ (curv * (self.X @ U)) + self.mu * U


@dataclass(frozen=True)
class PriorMap(GradientDescentMap):
    """The release with a prior as the audit sees it: z -> w_pub + v_N(z) with v_N of eq.
    (4) for the offset GLM, and its Jacobian by eq. (5) (the public shift does not change
    it)."""

    w_pub: np.ndarray | None = None
    name: str = "wa+prior"

    def objective(self, X, y):
        return OffsetObjective(np.asarray(X, float), np.asarray(y, float), self.w_pub, self.mu)

    def preimage_guess(self, A, B, Z, W):
        V = W - self.w_pub[:, None]
        return Z + self.objective(*A).gradient(V) - self.objective(*B).gradient(V)

    def forward(self, X, y, Z, *, jacobian=True):
        f = self.objective(X, y)
        if not jacobian:
            V = run_gradient_descent(f, np.array(Z, dtype=float), self.eta, self.iterations)
            return V + self.w_pub[:, None], None
        V, J = gradient_descent_jacobian(f, Z, self.eta, self.iterations)
        return V + self.w_pub[:, None], J


@pytest.fixture(scope="module")
def pair():
    """Logistic, n = 10, d = 2, mu = 0.5: the tight plan, a public prior and an antipodal
    neighbouring pair (x' = -x, the same label)."""
    plan = calibrate("logistic", n=10, d=2, zeta=1.0, epsilon=1.0, delta=1e-5, mu=0.5)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(10, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.choice([-1.0, 1.0], 10)
    Xp, yp = X.copy(), y.copy()
    Xp[-1] = -X[-1]
    w_pub = np.array([1.5, -2.0])
    return plan, X, y, Xp, yp, w_pub


def test_the_prior_map_is_the_mechanism(pair):
    """The audit's map equals the mechanism's release with the prior at the same noise."""
    plan, X, y, _, _, w_pub = pair
    release = PriorMap.from_plan(plan)
    release = PriorMap(**{**release.__dict__, "w_pub": w_pub, "name": "wa+prior"})
    r = perturbed_gradient_descent(X, y, plan, rng=9, prior=w_pub)
    z = np.random.default_rng(9).normal(0.0, plan.sigma, size=2)
    W, _ = release.forward(X, y, z[:, None], jacobian=False)
    np.testing.assert_allclose(W[:, 0], r.weights, rtol=0, atol=1e-12)


def test_the_exact_pairwise_check_holds_with_a_prior(pair):
    """The mechanism with a prior is the Watkins & Arora map shifted by the public w_pub
    for the GLM with public margin offsets. On the antipodal pair, l(-t, y) = l(t, y) + y t
    still gives F_S'(w) = F_S(w) + <y x/n, w>, so the preimage is z - y x/n (Newton finds
    it through the shifted map) and the pairwise profile is exactly the Gaussian profile
    at sensitivity ||x||/n; it lies below the certified delta at every epsilon."""
    plan, X, y, Xp, yp, w_pub = pair
    base = PriorMap.from_plan(plan)
    release = PriorMap(**{**base.__dict__, "w_pub": w_pub, "name": "wa+prior"})
    Z = np.random.default_rng(8).normal(scale=plan.sigma, size=(2, 100))
    ls = privacy_loss(release, (X, y), (Xp, yp), Z)
    shift = y[-1] * X[-1][:, None] / plan.n
    np.testing.assert_allclose(ls.preimage, Z - shift, rtol=0, atol=1e-9)
    eps = np.array([0.0, 0.1, 0.3, 0.6, 1.0])
    prof = pairwise_profile(X, y, Xp, yp, plan, eps, samples=3000, rng=13, release_map=release)
    exact = gaussian_profile(eps, np.linalg.norm(X[-1]) / plan.n, plan.sigma)
    for lo, hi in ((prof.lower, prof.upper), (prof.lower_reverse, prof.upper_reverse)):
        assert np.all(np.asarray(lo) <= exact) and np.all(exact <= np.asarray(hi))
    assert prof.newton_failures == (0, 0)
    assert prof.below_certified and not prof.flagged
    assert prof.release == "wa+prior"


def test_the_pairwise_check_holds_on_a_generic_pair_with_a_prior(pair):
    plan, X, y, _, _, w_pub = pair
    Xp, yp = X.copy(), y.copy()
    Xp[-1], yp[-1] = [0.6, 0.8], -y[-1]
    base = PriorMap.from_plan(plan)
    release = PriorMap(**{**base.__dict__, "w_pub": w_pub, "name": "wa+prior"})
    eps = np.array([0.1, 0.3, 0.6])
    prof = pairwise_profile(X, y, Xp, yp, plan, eps, samples=2000, rng=5, release_map=release)
    assert prof.newton_failures == (0, 0)
    assert prof.below_certified


# ---------------------------------------------------------------- property and model files


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    coef=st.lists(st.floats(-20, 20), min_size=D, max_size=D),
    intercept=st.floats(-20, 20),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_finite_prior_keeps_the_certificate_and_the_offset_release(coef, intercept, seed):
    X, y2, _, _ = _data()
    kw = dict(epsilon=2.0, delta=1e-6, mu=1.0, max_iter=400, data_norm=DATA_NORM, classes=[0, 1],
              comparator_norm=3.0)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = PrivateLogisticRegression(**kw, random_state=seed).fit(X, y2)
        model = PrivateLogisticRegression(
            **kw, random_state=seed, prior=(np.array(coef), intercept)
        ).fit(X, y2)
    assert model.certificate_ == plain.certificate_ and model.plan_ == plain.plan_
    M, c = _internal(X, model, kw)
    w_pub = _to_internal(np.array(coef), intercept, kw, c)[0]
    plan = model.plan_
    z = _noise(seed, plan, 1)[0]
    v = _v_space(M, np.where(y2 == 1, 1.0, -1.0), "logistic", w_pub, z, plan.mu, plan.eta,
                 plan.iterations)  # fmt: skip
    ref_coef, ref_intercept = _to_raw(v[None, :], kw, c)
    scale = 1.0 + np.abs(v).max() * c
    np.testing.assert_allclose(model.coef_, ref_coef, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(model.intercept_, ref_intercept, rtol=0, atol=1e-10 * scale)


@pytest.mark.parametrize("case", ["binary", "bounds", "ovr", "robust"])
def test_model_files_keep_the_prior(case, tmp_path):
    from objpert.persistence import load, save

    k = CASES[case][2]
    model, X, y = _fit(case, _prior(k))
    loaded = load(save(model, tmp_path / "m.json"))
    np.testing.assert_array_equal(loaded.prior_coef_, model.prior_coef_)
    np.testing.assert_array_equal(loaded.prior_intercept_, model.prior_intercept_)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.certificate_ == model.certificate_
    refit = clone(loaded).fit(X, y)  # the saved prior is a valid prior=
    np.testing.assert_array_equal(refit.coef_, model.coef_)
    plain, _, _ = _fit(case, None)
    assert load(save(plain, tmp_path / "p.json")).prior_coef_ is None
    # the file keeps the prior of the release, whatever set_params says after the fit
    model.set_params(prior=None)
    again = load(save(model, tmp_path / "m2.json"))
    np.testing.assert_array_equal(again.prior_coef_, loaded.prior_coef_)
    plain.set_params(prior=_prior(k))
    assert load(save(plain, tmp_path / "p2.json")).prior_coef_ is None


def test_the_privacy_report_shows_the_public_prior(tmp_path):
    from objpert.apps._privacy_report import build_report, render
    from objpert.persistence import read, save

    coef, intercept = np.array([[0.5, -1.25, 2.0]]), np.array([0.75])
    model, _, _ = _fit("binary", (coef, intercept))
    path = save(model, tmp_path / "m.json")
    report = build_report(path, read(path))
    text = render(report, "md")
    assert "public prior: coef [[0.5, -1.25, 2]], intercept [0.75]" in text
    assert ("public prior (the centre of the ridge)", report.prior) in report.declared
    plain, _, _ = _fit("binary", None)
    path = save(plain, tmp_path / "p.json")
    assert "public prior:" not in render(build_report(path, read(path)), "md")


def test_the_default_release_tends_to_the_prior_as_epsilon_falls():
    """With a prior, ``comparator_norm="auto"`` is W = min(3, epsilon): the calibrated
    ridge is about sqrt(d) sigma / W, so the noise moves the release a distance of order W
    from the prior (docs/priors.md) and the release tends to the prior as epsilon falls,
    where W = 3 (the default without a prior) leaves it far from the prior."""
    rng = np.random.default_rng(0)
    n, d = 2000, 5
    X = rng.uniform(-1.0, 1.0, (n, d)) / np.sqrt(d)
    w = 3.0 * rng.normal(size=d)
    y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)
    prior = (0.5 * w, 0.1)

    def distance(epsilon, **kw):
        out = []
        for seed in range(5):
            model = PrivateLogisticRegression(
                epsilon=epsilon, data_norm=1.0, classes=[0, 1], prior=prior, random_state=seed,
                **kw,
            ).fit(X, y)  # fmt: skip
            release = model.releases_[0]
            out.append(np.linalg.norm(release.weights - release.prior))
        return float(np.mean(out))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        far = distance(0.01, comparator_norm=3.0)
        d001, d01, d1 = distance(0.01), distance(0.1), distance(1.0)
    assert d001 < d01 < d1
    assert d001 <= 2 * 0.01 and d01 <= 2 * 0.1
    assert far > 50 * d001


def test_each_one_vs_rest_release_has_its_own_comparator_norm(tmp_path):
    """With a prior and ``comparator_norm="auto"``, each one-vs-rest release's W is
    min(3, its own epsilon), below the fit's min(3, epsilon); a model file whose plans carry
    the fit's instead (the plans of the same fit without a prior at that W, digest
    recomputed) is refused."""
    import json

    from objpert.persistence import digest, load, save

    model, _, _ = _fit("ovr", _prior(3))
    for plan in model.plan_:
        assert plan.comparator_norm == min(3.0, plan.epsilon) < min(3.0, COMMON["epsilon"])
    path = save(model, tmp_path / "m.json")
    assert [p.comparator_norm for p in load(path).plan_] == [p.comparator_norm for p in model.plan_]
    plain, _, _ = _fit("ovr", None, comparator_norm=min(3.0, COMMON["epsilon"]))
    payload = json.loads(path.read_text())
    payload["plans"] = json.loads(save(plain, tmp_path / "plain.json").read_text())["plans"]
    payload["digest"] = digest(payload)
    path.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match="comparator_norm"):
        load(path)


def _softmax_minimiser(M, codes, k, mu, centre, z):
    """The minimiser of (1/n) sum_i CE(x_i W, y_i) + (mu/2) ||W - centre||^2 + <z, W>,
    W (d, K) row-major as the release's weights, by scipy's L-BFGS from the centre and
    Newton steps: written here from the formula, not from the library's objective."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp, softmax

    n, d = M.shape
    onehot = np.eye(k)[codes]

    def f(w):
        W = w.reshape(d, k)
        S = M @ W
        value = np.mean(logsumexp(S, axis=1) - np.sum(S * onehot, axis=1))
        value += mu / 2 * np.sum((w - centre) ** 2) + z @ w
        grad = (M.T @ (softmax(S, axis=1) - onehot) / n).ravel() + mu * (w - centre) + z
        return value, grad

    w = minimize(f, centre.copy(), jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 20000}).x  # fmt: skip
    for _ in range(5):  # Newton steps with the exact Hessian (d K is small)
        P = softmax(M @ w.reshape(d, k), axis=1)
        pairs = zip(M, P, strict=True)
        H = sum(np.kron(np.outer(x, x), np.diag(q) - np.outer(q, q)) for x, q in pairs)
        w = w - np.linalg.solve(H / n + mu * np.eye(d * k), f(w)[1])
    assert np.linalg.norm(f(w)[1]) < 1e-12
    return w


def test_a_multinomial_release_with_a_prior_is_the_centred_minimiser():
    """The multinomial release with a prior W_pub: the minimiser of the softmax objective
    with the ridge centred at W_pub and the release's own objective noise (an independent
    solver on the formula, to the plan's tolerance), on the plan's grid plus the release's
    output noise; a prior of
    zeros gives the release without one, bit for bit."""
    import objpert
    from objpert.mechanisms._certificates import grid_noise
    from objpert.mechanisms._peers.multinomial import multinomial_release
    from objpert.mechanisms._peers.noise import discrete

    rng = np.random.default_rng(3)
    n, d, k = 300, 4, 3
    M = rng.normal(size=(n, d))
    M /= 1.01 * np.linalg.norm(M, axis=1, keepdims=True)
    codes = rng.integers(0, k, n)
    plan = objpert.plan("multinomial", loss="softmax", n=n, d=d, zeta=1.0, epsilon=1.0,
                        delta=1e-6, n_classes=k, comparator_norm=1.0)  # fmt: skip
    centre = rng.normal(size=d * k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        released = multinomial_release(M, codes.astype(float), plan, 7, prior=centre)
        plain = multinomial_release(M, codes.astype(float), plan, 7)
        zero = multinomial_release(M, codes.astype(float), plan, 7, prior=np.zeros(d * k))
    np.testing.assert_array_equal(zero.weights, plain.weights)
    np.testing.assert_array_equal(released.prior, centre)
    draws = np.random.default_rng(7)  # the release's generator for seed 7
    z = draws.normal(0.0, plan.sigma, size=d * k)
    gamma, scale = grid_noise(plan.output_sigma, plan.grid_bits)
    units = discrete(draws, scale, d * k, None)
    w = _softmax_minimiser(M, codes, k, plan.mu, centre, z)
    expected = gamma * (np.rint(w / gamma) + units)
    # the release solves to the plan's gradient tolerance: within tolerance / mu of the
    # minimiser (mu-strong convexity), plus one grid step per coordinate for the rounding
    bound = plan.tolerance / plan.mu + np.sqrt(d * k) * gamma
    assert np.linalg.norm(released.weights - expected) <= bound
    assert np.linalg.norm(released.weights - plain.weights) > 100 * bound  # the prior moved it


def test_multinomial_fits_take_a_prior_and_files_keep_it(tmp_path):
    """``multi_class="auto"`` with a prior trains the multinomial release, centred at the
    prior (W = min(3, epsilon) of its single release): plan and certificate are those of
    the fit without a prior at that W, and the model file keeps the prior and reloads."""
    from objpert.persistence import load, save

    X, _, y3, _ = _data()
    kw = dict(data_norm=DATA_NORM, classes=[0, 1, 2], epsilon=1.5, delta=1e-6, random_state=4)
    coef, intercept = _prior(3)
    model = LOGIT(**kw, prior=(coef, intercept)).fit(X, y3)
    assert model.multi_class_ == "multinomial"
    plain = LOGIT(**kw, comparator_norm=min(3.0, 1.5)).fit(X, y3)
    assert model.plan_ == plain.plan_ and model.certificate_ == plain.certificate_
    assert not np.allclose(model.coef_, plain.coef_)
    np.testing.assert_array_equal(model.prior_coef_, coef)
    loaded = load(save(model, tmp_path / "m.json"))
    assert loaded.multi_class_ == "multinomial" and loaded.certificate_ == model.certificate_
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    np.testing.assert_array_equal(loaded.prior_coef_, coef)
    with pytest.raises(ParameterError, match="rows"):
        LOGIT(**kw, prior=(coef[:2], intercept[:2])).fit(X, y3)


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
def test_a_prior_refused_charges_no_budget(multi_class):
    """A prior that does not fit the data is refused before the accountant is charged."""
    from objpert.accounting import PrivacyAccountant

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = np.argmax(X, axis=1)
    ledger = PrivacyAccountant(epsilon=5.0, delta=1e-5)
    model = PrivateLogisticRegression(
        classes=[0, 1, 2], data_norm=3.0, multi_class=multi_class, accountant=ledger,
        prior=(np.zeros((3, 5)), np.zeros(3)),  # five features; X has three
    )  # fmt: skip
    with pytest.raises(ParameterError, match="prior"):
        model.fit(X, y)
    assert not ledger.steps and not hasattr(model, "coef_")
