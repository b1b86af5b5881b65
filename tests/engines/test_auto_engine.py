"""The estimators' ``engine``/``dtype`` parameters, ``engine="auto"`` and the fused weighted
CSR sweep: every choice gives the default engine's weights to 1e-12 relative (float32:
1e-4), the same certificate, and bad choices are refused before anything is released."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import sparse

from objpert import persistence
from objpert._engines import factory, shaped
from objpert._engines.compiled import csr_rows_kernel, kernel_set
from objpert._engines.sparse import SparseEngine
from objpert._engines.xp import gpu_namespace
from objpert._losses import get_loss
from objpert.accounting import PrivacyAccountant
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ParameterError
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, release_one_vs_rest

pytestmark = pytest.mark.filterwarnings("ignore")


def one_hot_data(n: int, seed: int, pool: int = 40):
    """A continuous column and two one-hot groups (3 and 4 levels), rows drawn from
    ``pool`` distinct ones (duplicates), rows of norm <= 1; labels 0/1 and 0/1/2."""
    rng = np.random.default_rng(seed)
    cont = np.round(rng.uniform(-0.5, 0.5, size=(pool, 1)), 1)
    oh = np.hstack([np.eye(3)[rng.integers(0, 3, pool)], np.eye(4)[rng.integers(0, 4, pool)]])
    X = np.column_stack([cont, 0.5 * oh])[rng.integers(0, pool, n)]
    return X, (X[:, 0] + rng.normal(0, 0.2, n) > 0).astype(int), rng.integers(0, 3, n)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def reference_weighted(X, y, counts, w, name):
    """sum_i c_i x_i l'(<x_i, w>, y_i), the derivatives typed out."""
    t = X @ w
    d1 = -y / (1.0 + np.exp(y * t)) if name == "logistic" else t - y
    return X.T @ (counts * d1)


@pytest.mark.parametrize("backend", ["numba", "python"])
@pytest.mark.parametrize("name", ["logistic", "squared"])
def test_weighted_csr_sweep_against_a_reference(backend, name):
    X, y01, _ = one_hot_data(3000, 1)
    y = 2.0 * y01 - 1.0
    counts = np.random.default_rng(2).integers(1, 5, len(X)).astype(float)
    w = np.random.default_rng(3).normal(size=X.shape[1])
    A = sparse.csr_matrix(X)
    if kernel_set(backend) is None:
        pytest.skip(f"no {backend} kernels")
    kernel = csr_rows_kernel(get_loss(name), backend=backend)
    out = np.zeros(X.shape[1])
    same = np.zeros(len(X), np.uint8)
    kernel(A.indptr, A.indices, A.data, w, y, counts, same, 0, len(X), out)
    ref = reference_weighted(X, y, counts, w, name)
    assert rel(out, ref) < 1e-12
    engine = SparseEngine(A, threads=1, counts=counts, block_nnz=500)  # many blocks
    assert rel(engine.glm_gradient(w, y, get_loss(name)), ref) < 1e-12
    W = np.column_stack([w, -w])  # two points: the two-pass sweep, weighted
    G = engine.glm_gradient(W, y, get_loss(name))
    assert rel(G[:, 1], reference_weighted(X, y, counts, -w, name)) < 1e-12


@pytest.mark.parametrize("collide", [False, True])
def test_rows_with_several_labels_share_one_gather_and_scatter(monkeypatch, collide):
    """Merged pairs with the same row next to each other (flagged exactly, even when every
    row hashes alike): the weighted sweep still gives the plain gradient over all rows."""
    rng = np.random.default_rng(14)
    X, _, _ = one_hot_data(4000, 15, pool=30)
    y = np.where(rng.random(len(X)) < 0.5, 1.0, -1.0)  # both labels on most rows
    if collide:
        monkeypatch.setattr(shaped, "_row_hash", lambda keys: np.zeros(len(keys), np.uint64))
    engine, held, shape = shaped.shape_engine(X, y, merge=True, layout="csr", n_jobs=1)
    inner = engine.inner
    assert held is None and shape.rows <= 60 and (collide or inner.same.sum() > 0)
    Xs = inner.X.toarray()
    flagged = np.flatnonzero(inner.same)
    np.testing.assert_array_equal(Xs[flagged], Xs[flagged - 1])  # a flag means equal rows
    if not collide:  # every repeat next to its row and flagged
        assert len({tuple(r) for r in Xs}) == len(Xs) - len(flagged)
    w = rng.normal(size=X.shape[1])
    ref = reference_weighted(X, y, np.ones(len(X)), w, "logistic")
    assert rel(engine.glm_gradient(w, None, get_loss("logistic")), ref) < 1e-12


def fit(model, X, y):
    return model.fit(X, y)


def binary_model(**kw):
    kw = {"max_iter": 800, **kw}
    return PrivateLogisticRegression(epsilon=2.0, data_norm=1.0, classes=[0, 1],
                                     random_state=3, **kw)  # fmt: skip


def test_auto_shapes_long_descents_and_changes_rounding_only(monkeypatch):
    X, y, _ = one_hot_data(600, 4)
    calls = []
    real = shaped.shape_engine
    monkeypatch.setattr(shaped, "shape_engine", lambda *a, **k: calls.append(1) or real(*a, **k))
    base = fit(binary_model(engine="default"), X, y)
    assert not calls
    auto = fit(binary_model(), X, y)  # engine="auto" is the default
    assert calls and auto.n_iter_[0] >= factory.AUTO_MIN_STEPS
    assert rel(auto.coef_, base.coef_) < 1e-12
    assert abs(auto.intercept_[0] - base.intercept_[0]) <= 1e-12 * np.abs(base.coef_).max()
    assert auto.certificate_ == base.certificate_
    again = fit(binary_model(), X, y)  # bit for bit repeatable
    np.testing.assert_array_equal(again.coef_, auto.coef_)
    assert auto.get_params()["engine"] == "auto" and auto.get_params()["dtype"] == "float64"


def test_auto_keeps_the_default_engine_when_shaping_cannot_pay(monkeypatch):
    calls = []
    real = shaped.shape_engine
    monkeypatch.setattr(shaped, "shape_engine", lambda *a, **k: calls.append(1) or real(*a, **k))
    X, y, _ = one_hot_data(600, 5)
    fit(binary_model(max_iter=100), X, y)  # N < AUTO_MIN_STEPS
    rng = np.random.default_rng(6)
    dense = rng.uniform(-0.3, 0.3, size=(600, 4))  # no indicator column
    fit(binary_model(), dense, (dense[:, 0] > 0).astype(int))
    assert not calls


def test_multiclass_with_every_cpu_engine():
    X, _, y3 = one_hot_data(300, 7)
    kw = dict(epsilon=2.0, data_norm=1.0, classes=[0, 1, 2], random_state=8, max_iter=150,
              multi_class="ovr")  # the engines of one-vs-rest descents  # fmt: skip
    base = fit(PrivateLogisticRegression(engine="default", **kw), X, y3)
    for engine, tol in (("shaped", 1e-12),):
        got = fit(PrivateLogisticRegression(engine=engine, **kw), X, y3)
        assert rel(got.coef_, base.coef_) < tol, engine
    f32 = fit(PrivateLogisticRegression(dtype="float32", **kw), X, y3)
    assert rel(f32.coef_, base.coef_) < 1e-4 and f32.certificate_ == base.certificate_


def test_robust_regression_auto():
    X, _, _ = one_hot_data(300, 9)
    t = X[:, 0] + 0.1 * np.random.default_rng(9).normal(size=len(X))
    rkw = dict(epsilon=2.0, data_norm=1.0, random_state=8, max_iter=600)
    rbase = fit(PrivateRobustRegression(engine="default", **rkw), X, t)
    rauto = fit(PrivateRobustRegression(**rkw), X, t)
    assert rauto.n_iter_[0] >= factory.AUTO_MIN_STEPS
    assert rel(rauto.coef_, rbase.coef_) < 1e-12 and rauto.certificate_ == rbase.certificate_


def test_one_vs_rest_release_with_an_engine_equals_the_sequential_releases():
    X, _, y3 = one_hot_data(400, 10)
    from objpert.certify import _calibration as calibration

    plan = calibration.tight("logistic", n=len(X), d=X.shape[1], zeta=1.0, epsilon=2.0,
                             delta=1e-5, mu=0.1, max_iter=600,
                             objective="empirical")  # fmt: skip
    Y = np.column_stack([np.where(y3 == k, 1.0, -1.0) for k in range(3)])
    got = release_one_vs_rest(X, Y, plan, [11, 12, 13], engine="shaped")
    for k, r in enumerate(got):
        ref = perturbed_gradient_descent(X, Y[:, k], plan, 11 + k)
        assert rel(r.weights, ref.weights) < 1e-12


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"engine": "quantum"}, "engine"),
        ({"engine": None}, "engine"),
        ({"dtype": "float16"}, "dtype"),
        ({"engine": "shaped", "dtype": "float32"}, "float64"),
    ],
)
def test_bad_choices_are_refused_in_fit(kw, match):
    X, y, _ = one_hot_data(100, 11)
    with pytest.raises(ParameterError, match=match):
        fit(binary_model(**kw), X, y)


@pytest.mark.skipif(gpu_namespace() is not None, reason="a GPU is present")
def test_a_missing_gpu_is_refused_before_the_budget_is_charged():
    X, y, _ = one_hot_data(100, 12)
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-4)
    with pytest.raises(ParameterError, match="GPU"):
        fit(binary_model(engine="gpu", accountant=accountant), X, y)
    assert accountant.steps == ()  # nothing charged, nothing released


def test_the_choice_is_saved_with_the_model_and_loads_without_a_gpu(tmp_path):
    X, y, _ = one_hot_data(300, 13)
    model = fit(binary_model(engine="shaped", max_iter=100), X, y)
    path = persistence.save(model, tmp_path / "m.json", key="k")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = persistence.load(path, key="k")
    assert loaded.get_params()["engine"] == "shaped"
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.certificate_ == model.certificate_
