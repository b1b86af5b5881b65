"""The multinomial release: its plan checked before the data, the solver's tolerance
enforced (no release otherwise), the data contract, reproducibility."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from objpert._engines.softmax import SoftmaxObjective
from objpert.exceptions import DataError, ParameterError, PrivacyError, ToleranceError
from objpert.mechanisms._certificates.multinomial import plan_multinomial
from objpert.mechanisms._peers.multinomial import multinomial_release, multinomial_release_batch


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    n, d, k = 120, 4, 3
    y = rng.integers(0, k, size=n)
    X = rng.normal(size=(n, d)) + np.eye(k, d)[y]
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    plan = plan_multinomial(n=n, d=d, n_classes=k, zeta=1.0, epsilon=2.0, delta=1e-6)
    return X, y, plan


def _release(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return multinomial_release(*args, **kwargs)


def test_the_release_is_the_noisy_minimiser_on_the_grid(data):
    X, y, plan = data
    rel = _release(X, y, plan, rng=5)
    assert rel.weights.shape == (plan.d * plan.n_classes,)
    assert rel.certificate == plan.certificate
    # the same noise again: the same release; the objective's minimiser is within the
    # output noise and the tolerance of it
    again = _release(X, y, plan, rng=5)
    np.testing.assert_array_equal(rel.weights, again.weights)
    rng = np.random.default_rng(5)
    z = rng.normal(0.0, plan.sigma, size=plan.dimension)
    f = SoftmaxObjective(X, y, plan.n_classes, plan.mu)
    g = f.gradient(rel.weights) + z
    assert np.linalg.norm(g) < 1e-3  # output noise of std ~1e-8 moves it a little


def test_a_missed_tolerance_releases_nothing(data):
    X, y, plan = data
    tight = plan_multinomial(
        n=plan.n, d=plan.d, n_classes=3, zeta=1.0, epsilon=2.0, delta=1e-6, max_iter=1
    )
    with pytest.raises(ToleranceError, match="nothing was released"):
        _release(X, y, tight, rng=1)


def test_an_edited_plan_is_refused_before_the_data(data):
    X, y, plan = data
    with pytest.raises(PrivacyError, match=r"differs|certif"):
        _release(X, y, replace(plan, sigma=plan.sigma / 2), rng=1)
    with pytest.raises(PrivacyError, match="MultinomialPlan"):
        _release(X, y, object(), rng=1)


def test_the_data_contract(data):
    X, y, plan = data
    with pytest.raises(DataError, match="class codes"):
        _release(X, np.where(y == 0, 7, y), plan, rng=1)
    with pytest.raises(DataError):
        _release(2.0 * X, y, plan, rng=1)  # rows above zeta
    _release(2.0 * X, y, plan, rng=1, clip=True)
    with pytest.raises(DataError, match="shape"):
        _release(X[:-1], y[:-1], plan, rng=1)


def test_a_batch_of_one_is_one_release(data):
    X, y, plan = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = multinomial_release_batch(X, y, plan, 1, rng=9)
    np.testing.assert_array_equal(batch.weights[0], _release(X, y, plan, rng=9).weights)


def test_the_registry_plans_and_releases_it(data):
    import objpert
    from objpert.mechanisms import _registry as registry

    X, y, plan = data
    assert "multinomial" in registry.names(multiclass=True)
    assert "multinomial" not in registry.names()  # not a one-weight-vector mechanism
    got = objpert.plan(
        "multinomial", loss="softmax", n=plan.n, d=plan.d, zeta=1.0, epsilon=2.0, delta=1e-6,
        n_classes=3,
    )  # fmt: skip
    assert got == plan
    mech = registry.for_plan(got)
    assert mech.name == "multinomial"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = mech.release(X, y, got, rng=4)
    assert rel.weights.shape == (plan.dimension,)
    with pytest.raises(ParameterError, match="n_classes"):
        objpert.plan("multinomial", loss="softmax", n=50, d=2, zeta=1.0, epsilon=1.0, delta=1e-6)
