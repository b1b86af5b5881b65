"""DP Newton releases (objpert.mechanisms._dp_newton): with tiny noise the iteration is
Newton's method and converges to scikit-learn's ridge logistic regression; the Hessian
noise is symmetric with the stated law; the eigenvalue floor; refusals; accuracy."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from objpert._engines.glm import GLMObjective
from objpert.apps.datasets import load_breast_cancer
from objpert.exceptions import PrivacyError, TestingSeedWarning
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._certificates.dp_newton import plan_dp_newton
from objpert.mechanisms._dp_newton import (
    _steps,
    dp_newton_release,
    dp_newton_release_batch,
    floored_solve,
    symmetric_noise,
)

N, D, MU = 300, 4, 0.05


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ np.array([1.5, -1.0, 0.5, 0.0]) + 0.5 * rng.normal(size=N) > 0, 1, -1)
    return X, y


@pytest.fixture(scope="module")
def plan():
    return plan_dp_newton(
        "logistic", n=N, d=D, zeta=1.0, epsilon=1.0, delta=1e-5, mu=MU, iterations=20,
        accountant="gdp",
    )  # fmt: skip


@pytest.mark.parametrize("matrix", [np.asarray, sparse.csr_matrix])
def test_tiny_noise_converges_to_sklearn(data, plan, matrix):
    X, y = data
    objective = GLMObjective(matrix(X), y.astype(float), "logistic", MU)
    w = _steps(objective, plan, np.random.default_rng(0), None, 1e-13)
    # sklearn: C sum_i log(1 + e^{-y_i <x_i, w>}) + ||w||^2 / 2, i.e. mu = 1 / (n C)
    ref = LogisticRegression(C=1.0 / (N * MU), fit_intercept=False, tol=1e-12, max_iter=10_000)
    ref.fit(X, y)
    np.testing.assert_allclose(w, ref.coef_[0], atol=1e-6)


def test_symmetric_noise_law():
    d, std = 40, 0.7
    E = symmetric_noise(np.random.default_rng(1), std, d)
    np.testing.assert_array_equal(E, E.T)
    upper = E[np.triu_indices(d)]
    assert upper.size == d * (d + 1) // 2
    # 820 i.i.d. N(0, 0.49) entries: the sample variance is within 5 standard errors
    assert abs(upper.var() - std**2) < 5 * std**2 * np.sqrt(2 / upper.size)
    again = np.random.default_rng(1).normal(0.0, std, size=upper.size)
    np.testing.assert_array_equal(upper, again)  # exactly these draws, row-major


def test_floored_solve():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(5, 5))
    H = A @ A.T + np.eye(5)
    g = rng.normal(size=5)
    np.testing.assert_allclose(floored_solve(H, g, 0.5), np.linalg.solve(H, g), rtol=1e-10)
    S = np.diag([3.0, -1.0, 1e-9, 2.0, 0.1])  # indefinite: floored at 0.5
    np.testing.assert_allclose(floored_solve(S, g, 0.5), g / np.array([3.0, 0.5, 0.5, 2.0, 0.5]))


def test_release_draws_and_certificate(data, plan):
    X, y = data
    with pytest.warns(TestingSeedWarning):
        r = dp_newton_release(X, y, plan, rng=3)
    assert r.certificate.to_dict() == plan.certificate.to_dict() and r.iterations == 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        batch = dp_newton_release_batch(X, y, plan, 2, rng=3)
        s = dp_newton_release(sparse.csr_matrix(X), y, plan, rng=3).weights
    np.testing.assert_array_equal(batch.weights[0], r.weights)
    np.testing.assert_allclose(s, r.weights, rtol=1e-9, atol=1e-12)
    assert not np.allclose(batch.weights[1], r.weights)


def test_refusals(data, plan):
    X, y = data
    with pytest.raises(PrivacyError):
        dp_newton_release(X, y, dataclasses.replace(plan, sigma=0.5 * plan.sigma))
    with pytest.raises(PrivacyError):
        dp_newton_release(X, y, dataclasses.replace(plan, iterations=21))
    with pytest.raises(PrivacyError, match="DPNewtonPlan"):
        dp_newton_release(
            X,
            y,
            registry.get("dp_sgd").plan(
                loss="logistic", n=N, d=D, zeta=1.0, epsilon=1.0, delta=1e-5, epochs=1
            ),
        )


def test_accuracy_on_breast_cancer_at_epsilon_one():
    ds = load_breast_cancer()
    n, d = ds.X.shape
    m = registry.get("dp_newton")
    p = m.plan(loss="logistic", n=n, d=d, zeta=ds.data_norm, epsilon=1.0, delta=1e-5,
               accountant="gdp")  # fmt: skip
    majority = max(ds.y.mean(), 1 - ds.y.mean())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        acc = [np.mean((ds.X @ m.release(ds.X, ds.y, p, rng=s).weights > 0) == ds.y)
               for s in range(8)]  # fmt: skip
    assert np.mean(acc) > majority
