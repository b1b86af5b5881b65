"""Tests of objpert._engines: the GLM objective F(w) = (1/n) sum_i l(<x_i, w>, y_i) + mu/2 ||w||^2.

Each quantity is checked against a plain reference written here (explicit per-sample loops with
the losses' formulas typed out, not objpert._losses) and against central finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from objpert._engines import ArrayEngine, GLMObjective, make_engine
from objpert._losses import get_loss

SCALE = 0.7  # pseudo-Huber scale
ZETA = 1.0
MU = 0.3

# ----------------------------------------------------------------- reference, by hand


def ref_l(name: str, t: float, y: float) -> float:
    if name == "logistic":
        return float(np.log1p(np.exp(-y * t)))
    if name == "robust":
        return SCALE**2 * (np.sqrt(1.0 + ((t - y) / SCALE) ** 2) - 1.0)
    return 0.5 * (t - y) ** 2


def ref_d1(name: str, t: float, y: float) -> float:
    if name == "logistic":
        return -y / (1.0 + np.exp(y * t))
    if name == "robust":
        return (t - y) / np.sqrt(1.0 + ((t - y) / SCALE) ** 2)
    return t - y


def ref_d2(name: str, t: float, y: float) -> float:
    if name == "logistic":
        s = 1.0 / (1.0 + np.exp(-y * t))
        return s * (1.0 - s)
    if name == "robust":
        return (1.0 + ((t - y) / SCALE) ** 2) ** -1.5
    return 1.0


def ref_value(name, X, y, w, mu):
    n = X.shape[0]
    return np.mean([ref_l(name, X[i] @ w, y[i]) for i in range(n)]) + 0.5 * mu * (w @ w)


def ref_gradient(name, X, y, w, mu):
    n, d = X.shape
    g = np.zeros(d)
    for i in range(n):
        g += ref_d1(name, X[i] @ w, y[i]) * X[i]
    return g / n + mu * w


def ref_hessian(name, X, y, w, mu):
    n, d = X.shape
    H = np.zeros((d, d))
    for i in range(n):
        H += ref_d2(name, X[i] @ w, y[i]) * np.outer(X[i], X[i])
    return H / n + mu * np.eye(d)


# ----------------------------------------------------------------- data


def loss_object(name: str):
    return get_loss(name, scale=SCALE) if name == "robust" else get_loss(name)


def make_data(name: str, n: int = 60, d: int = 4, seed: int = 0, density: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if density < 1.0:
        X[rng.random(X.shape) > density] = 0.0
        X[np.all(X == 0, axis=1), 0] = 1.0
    X *= (ZETA * rng.uniform(0.05, 1.0, size=n) / np.linalg.norm(X, axis=1))[:, None]
    if name == "logistic":
        y = rng.choice([-1.0, 1.0], size=n)
    else:
        y = X @ rng.normal(size=d) + 0.5 * rng.standard_t(2, size=n)
    return X, y


def points(d: int, k: int, seed: int = 1, scale: float = 2.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(scale=scale, size=(k, d))


LOSSES = ["logistic", "robust", "squared"]


# ----------------------------------------------------------------- value, gradient, Hessian


@pytest.mark.parametrize("name", LOSSES)
def test_value_matches_plain_reference(name):
    X, y = make_data(name)
    f = GLMObjective(X, y, loss_object(name), MU)
    for w in points(X.shape[1], 5):
        got = f.value(w)
        assert np.ndim(got) == 0
        assert got == pytest.approx(ref_value(name, X, y, w, MU), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("name", LOSSES)
def test_gradient_matches_plain_reference_and_finite_differences(name):
    X, y = make_data(name)
    d = X.shape[1]
    f = GLMObjective(X, y, loss_object(name), MU)
    h = 1e-6
    for w in points(d, 5, seed=2):
        g = f.gradient(w)
        assert g.shape == (d,)
        np.testing.assert_allclose(g, ref_gradient(name, X, y, w, MU), rtol=1e-12, atol=1e-14)
        fd = np.array([(f.value(w + h * e) - f.value(w - h * e)) / (2 * h) for e in np.eye(d)])
        np.testing.assert_allclose(g, fd, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", LOSSES)
def test_hvp_and_hessian_match_plain_reference_and_finite_differences(name):
    X, y = make_data(name)
    d = X.shape[1]
    f = GLMObjective(X, y, loss_object(name), MU)
    rng = np.random.default_rng(3)
    h = 1e-6
    for w in points(d, 4, seed=4):
        H_ref = ref_hessian(name, X, y, w, MU)
        H = f.hessian(w)
        assert H.shape == (d, d)
        np.testing.assert_allclose(H, H_ref, rtol=1e-12, atol=1e-14)
        fd = np.column_stack(
            [(f.gradient(w + h * e) - f.gradient(w - h * e)) / (2 * h) for e in np.eye(d)]
        )
        np.testing.assert_allclose(H, fd, rtol=0, atol=1e-8)
        v = rng.normal(size=d)
        np.testing.assert_allclose(f.hvp(w, v), H_ref @ v, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", LOSSES)
def test_hessian_symmetric_with_spectrum_in_mu_to_L(name):
    """Lemma B.1: mu I <= Hess F <= (mu + L2 zeta^2) I when every row has norm <= zeta."""
    X, y = make_data(name, n=80, d=5, seed=5)
    assert np.all(np.linalg.norm(X, axis=1) <= ZETA)
    loss = loss_object(name)
    f = GLMObjective(X, y, loss, MU)
    upper = MU + loss.L2 * ZETA**2
    for w in points(5, 8, seed=6, scale=3.0):
        H = f.hessian(w)
        np.testing.assert_allclose(H, H.T, rtol=1e-14, atol=1e-16)
        eig = np.linalg.eigvalsh(0.5 * (H + H.T))
        assert eig.min() >= MU * (1 - 1e-12)
        assert eig.max() <= upper * (1 + 1e-12)


def test_hessian_upper_bound_is_attained_by_aligned_rows():
    """With every row equal to zeta e_1 and logistic curvature at t = 0, Hess = mu + L2 zeta^2."""
    n, d = 10, 3
    X = np.zeros((n, d))
    X[:, 0] = ZETA
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    f = GLMObjective(X, y, "logistic", MU)
    eig = np.linalg.eigvalsh(f.hessian(np.zeros(d)))
    assert eig.max() == pytest.approx(MU + 0.25 * ZETA**2, rel=1e-15)
    assert eig.min() == pytest.approx(MU, rel=1e-15)


# ----------------------------------------------------------------- sparse, batches


@pytest.mark.parametrize("name", LOSSES)
def test_sparse_equals_dense(name):
    X, y = make_data(name, n=70, d=6, seed=7, density=0.4)
    S = sparse.csr_matrix(X)
    assert S.nnz < X.size
    fd = GLMObjective(X, y, loss_object(name), MU)
    fs = GLMObjective(S, y, loss_object(name), MU)
    assert (fs.n, fs.d) == (fd.n, fd.d) == (70, 6)
    rng = np.random.default_rng(8)
    for w in points(6, 4, seed=9):
        v = rng.normal(size=6)
        assert fs.value(w) == pytest.approx(fd.value(w), rel=1e-12)
        np.testing.assert_allclose(fs.gradient(w), fd.gradient(w), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(fs.hvp(w, v), fd.hvp(w, v), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(fs.hessian(w), fd.hessian(w), rtol=1e-12, atol=1e-15)
        W = rng.normal(size=(6, 3))
        np.testing.assert_allclose(fs.gradient(W), fd.gradient(W), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(fs.value(W), fd.value(W), rtol=1e-12)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_batched_points_equal_separate_evaluations(name, fmt):
    X, y = make_data(name, n=50, d=4, seed=10, density=0.6)
    data = X if fmt == "dense" else sparse.csr_matrix(X)
    f = GLMObjective(data, y, loss_object(name), MU)
    B = 5
    rng = np.random.default_rng(11)
    W = rng.normal(scale=2.0, size=(4, B))
    V = rng.normal(size=(4, B))
    W0, V0 = W.copy(), V.copy()
    vals, grads, hvps = f.value(W), f.gradient(W), f.hvp(W, V)
    assert vals.shape == (B,) and grads.shape == (4, B) and hvps.shape == (4, B)
    for b in range(B):
        w, v = W[:, b].copy(), V[:, b].copy()
        assert vals[b] == pytest.approx(f.value(w), rel=1e-13)
        np.testing.assert_allclose(grads[:, b], f.gradient(w), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(hvps[:, b], f.hvp(w, v), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(
            grads[:, b], ref_gradient(name, X, y, w, MU), rtol=1e-12, atol=1e-14
        )
        assert vals[b] == pytest.approx(ref_value(name, X, y, w, MU), rel=1e-12)
    np.testing.assert_array_equal(W, W0)  # evaluations do not write into their arguments
    np.testing.assert_array_equal(V, V0)


def test_gradient_does_not_modify_its_argument_or_the_data():
    X, y = make_data("logistic")
    X0, y0 = X.copy(), y.copy()
    f = GLMObjective(X, y, "logistic", MU)
    w = points(4, 1)[0]
    w0 = w.copy()
    g1 = f.gradient(w)
    g2 = f.gradient(w)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(g1, g2)
    assert not np.shares_memory(g1, w)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


# ----------------------------------------------------------------- engines


def test_array_engine_products():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(9, 4))
    X[rng.random(X.shape) < 0.5] = 0.0
    for data in (X, sparse.csr_matrix(X)):
        e = ArrayEngine(data)
        assert (e.n, e.d) == (9, 4)
        w, r = rng.normal(size=4), rng.normal(size=9)
        W, R = rng.normal(size=(4, 3)), rng.normal(size=(9, 3))
        np.testing.assert_allclose(e.matvec(w), X @ w, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(e.rmatvec(r), X.T @ r, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(e.matvec(W), X @ W, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(e.rmatvec(R), X.T @ R, rtol=1e-14, atol=1e-15)
        for out in (e.matvec(w), e.rmatvec(R)):
            assert isinstance(out, np.ndarray) and not isinstance(out, np.matrix)


def test_make_engine_passes_engines_through():
    e = ArrayEngine(np.eye(3))
    assert make_engine(e) is e
    assert isinstance(make_engine(np.eye(2)), ArrayEngine)
    f = GLMObjective(e, np.array([1.0, -1.0, 1.0]), "logistic", MU)
    assert f.engine is e and (f.n, f.d) == (3, 3)
