"""The engine's softmax objective against a plain loop over rows and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from objpert._engines.softmax import SoftmaxObjective
from objpert.exceptions import DataError


def _reference(X, y, k, mu, w):
    """Value and gradient by a loop over rows and classes (no engine, no vectorisation)."""
    n, d = X.shape
    W = w.reshape(d, k)
    value, grad = 0.0, np.zeros((d, k))
    for i in range(n):
        s = [float(X[i] @ W[:, j]) for j in range(k)]
        top = max(s)
        z = sum(np.exp(v - top) for v in s)
        value += top + np.log(z) - s[y[i]]
        for j in range(k):
            grad[:, j] += (np.exp(s[j] - top) / z - (j == y[i])) * X[i]
    value = value / n + 0.5 * mu * float(w @ w)
    return value, (grad / n).ravel() + mu * w


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    n, d, k = 40, 5, 4
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, size=n)
    return X, y, k, 0.3, rng.normal(scale=2.0, size=d * k)


def test_value_and_gradient_match_a_plain_loop(problem):
    X, y, k, mu, w = problem
    f = SoftmaxObjective(X, y, k, mu)
    value, grad = _reference(X, y, k, mu, w)
    assert f.value(w) == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(f.gradient(w), grad, rtol=1e-10, atol=1e-13)


def test_gradient_and_hvp_match_finite_differences(problem):
    X, y, k, mu, w = problem
    f = SoftmaxObjective(X, y, k, mu)
    h = 1e-6
    eye = np.eye(w.size)
    fd = np.array([(f.value(w + h * e) - f.value(w - h * e)) / (2 * h) for e in eye])
    np.testing.assert_allclose(f.gradient(w), fd, rtol=1e-6, atol=1e-8)
    v = np.random.default_rng(1).normal(size=w.size)
    fd_hv = (f.gradient(w + h * v) - f.gradient(w - h * v)) / (2 * h)
    np.testing.assert_allclose(f.hvp(w, v), fd_hv, rtol=1e-6, atol=1e-8)
    H = f.hessian(w)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    assert np.linalg.eigvalsh(H).min() >= mu - 1e-10  # mu-strongly convex


def test_batches_sparse_input_and_threads_agree(problem):
    X, y, k, mu, w = problem
    f = SoftmaxObjective(X, y, k, mu)
    W = np.column_stack([w, -w, 0 * w])
    G = f.gradient(W)
    for b in range(3):
        np.testing.assert_allclose(G[:, b], f.gradient(W[:, b]), rtol=1e-14)
    np.testing.assert_allclose(f.value(W), [f.value(W[:, b]) for b in range(3)])
    fs = SoftmaxObjective(sparse.csr_matrix(X), y, k, mu)
    np.testing.assert_allclose(fs.gradient(w), f.gradient(w), rtol=1e-12, atol=1e-15)
    ft = SoftmaxObjective(X, y, k, mu, threads=2, block_rows=7)
    np.testing.assert_allclose(ft.gradient(w), f.gradient(w), rtol=1e-12, atol=1e-15)


def test_bad_codes_are_refused(problem):
    X, y, k, mu, _ = problem
    with pytest.raises(DataError, match="class codes"):
        SoftmaxObjective(X, np.where(y == 0, k, y), k, mu)
    with pytest.raises(DataError, match="integers"):
        SoftmaxObjective(X, y.astype(float), k, mu)
