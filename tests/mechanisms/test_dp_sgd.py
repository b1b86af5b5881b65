"""DP-SGD releases (objpert.mechanisms._dp_sgd) against a plain per-row reference loop.

The reference draws the same numbers from the same seed in the same order (the Poisson
mask, then the noise, at every step) and computes each per-example gradient and its
clipping row by row, so it shares nothing with the vectorised release but the random
stream.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from scipy import sparse
from scipy.special import expit

from objpert.apps.datasets import load_breast_cancer
from objpert.exceptions import PrivacyError, TestingSeedWarning
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._certificates.dp_sgd import plan_dp_sgd
from objpert.mechanisms._dp_sgd import _steps, dp_sgd_release, dp_sgd_release_batch

N, D = 200, 3


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(N, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.where(X @ np.array([2.0, -1.0, 0.5]) + 0.3 * rng.normal(size=N) > 0, 1, -1)
    return X, y


@pytest.fixture(scope="module")
def plan():
    return plan_dp_sgd("logistic", n=N, d=D, zeta=1.0, epsilon=2.0, delta=1e-5, epochs=3, mu=0.01)


def _reference(X, y, plan, seed, noise_multiplier):
    """Plain DP-SGD for logistic loss: a Python loop over the rows of each batch."""
    rng = np.random.default_rng(seed)
    w = np.zeros(plan.d)
    q, C, b = plan.batch_size / plan.n, plan.clip, plan.batch_size
    for _ in range(plan.iterations):
        mask = rng.random(plan.n) < q
        total = rng.normal(0.0, noise_multiplier * C, size=plan.d)
        for i in np.flatnonzero(mask):
            g = -y[i] * expit(-y[i] * (X[i] @ w)) * X[i]  # d/dw log(1 + exp(-y <x, w>))
            total = total + g * min(1.0, C / np.linalg.norm(g)) if np.any(g) else total
        w = w - plan.eta * (total / b + plan.mu * w)
    return w


@pytest.mark.parametrize("z", [0.0, 1e-9])
def test_no_noise_no_clipping_is_the_reference_loop(data, plan, z):
    X, y = data
    assert plan.clip == 1.0  # L1 zeta: no gradient is ever clipped
    w = _steps(X, y.astype(float), plan.loss_object(), plan, np.random.default_rng(5), None, z)
    np.testing.assert_allclose(w, _reference(X, y, plan, 5, z), rtol=1e-10, atol=1e-12)


def test_per_example_clipping_is_the_reference_loop(data, plan):
    X, y = data
    tight = dataclasses.replace(plan, clip=0.05)  # most gradients are clipped
    w = _steps(X, y.astype(float), tight.loss_object(), tight, np.random.default_rng(3), None, 0.0)
    ref = _reference(X, y, tight, 3, 0.0)
    np.testing.assert_allclose(w, ref, rtol=1e-10, atol=1e-12)
    unclipped = _reference(X, y, plan, 3, 0.0)
    assert np.linalg.norm(ref - unclipped) > 1e-3  # the clipping did something


def test_release_is_the_steps_with_the_plans_noise(data, plan):
    X, y = data
    with pytest.warns(TestingSeedWarning):
        r = dp_sgd_release(X, y, plan, rng=11)
    np.testing.assert_allclose(r.weights, _reference(X, y, plan, 11, plan.sigma), rtol=1e-9)
    assert r.certificate.to_dict() == plan.certificate.to_dict() and r.seeded
    assert r.iterations == plan.iterations


def test_sparse_equals_dense(data, plan):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        a = dp_sgd_release(X, y, plan, rng=2).weights
        b = dp_sgd_release(sparse.csr_matrix(X), y, plan, rng=2).weights
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_batch_of_one_is_one_release(data, plan):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        one = dp_sgd_release(X, y, plan, rng=4).weights
        batch = dp_sgd_release_batch(X, y, plan, 3, rng=4)
    assert batch.weights.shape == (3, D)
    np.testing.assert_array_equal(batch.weights[0], one)
    assert not np.allclose(batch.weights[1], batch.weights[0])


def test_refusals(data, plan):
    X, y = data
    with pytest.raises(PrivacyError):  # the stored certificate no longer matches
        dp_sgd_release(X, y, dataclasses.replace(plan, sigma=0.5 * plan.sigma))
    with pytest.raises(PrivacyError):
        dp_sgd_release(X, y, dataclasses.replace(plan, batch_size=plan.batch_size + 5))
    with pytest.raises(PrivacyError, match="DPSGDPlan"):
        dp_sgd_release(
            X,
            y,
            registry.get("lop").plan(loss="logistic", n=N, d=D, zeta=1.0, epsilon=1.0, delta=1e-5),
        )
    with pytest.raises(Exception, match="shape"):
        dp_sgd_release(X[:-1], y[:-1], plan)
    with pytest.raises(Exception, match="norm"):
        dp_sgd_release(2 * X, y, plan)


def test_robust_loss_through_the_registry(data):
    X, _ = data
    t = X @ np.array([1.0, 0.0, -1.0])
    m = registry.get("dp_sgd")
    p = m.plan(loss="robust", n=N, d=D, zeta=1.0, epsilon=4.0, delta=1e-5, epochs=5)
    assert m.certificate(p).certified
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        w = m.release(X, t, p, rng=0).weights
    assert np.isfinite(w).all() and np.corrcoef(X @ w, t)[0, 1] > 0.5


def test_accuracy_on_breast_cancer_at_epsilon_one():
    ds = load_breast_cancer()
    n, d = ds.X.shape
    p = plan_dp_sgd("logistic", n=n, d=d, zeta=ds.data_norm, epsilon=1.0, delta=1e-5)
    majority = max(ds.y.mean(), 1 - ds.y.mean())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        acc = [np.mean((ds.X @ dp_sgd_release(ds.X, ds.y, p, rng=s).weights > 0) == ds.y)
               for s in range(3)]  # fmt: skip
    assert np.mean(acc) > majority + 0.1
