"""Tests of objpert._solvers: Davis-Yin three-operator splitting, deterministic and stochastic.

References are independent: scipy's L-BFGS(-B) for smooth and box-constrained problems, a
proximal-gradient (ISTA) loop written here for l1, and the first-order optimality (KKT)
conditions checked coordinate by coordinate.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from objpert._solvers import (
    DavisYinResult,
    authors_relaxation,
    davis_yin,
    project_box,
    soft_threshold,
    stochastic_davis_yin,
)
from objpert.exceptions import ParameterError


def ridge_problem(seed: int = 0, n: int = 40, d: int = 6, mu: float = 0.5):
    """f(theta) = 0.5 ||A theta - b||^2 + (mu/2) ||theta||^2: smooth, strongly convex."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    b = A @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n)
    H = A.T @ A + mu * np.eye(d)
    beta = float(np.linalg.eigvalsh(H)[-1])

    def f(t):
        r = A @ t - b
        return 0.5 * r @ r + 0.5 * mu * t @ t

    def grad(t):
        return A.T @ (A @ t - b) + mu * t

    return A, b, mu, f, grad, beta


def logistic_problem(seed: int = 1, n: int = 50, d: int = 5, mu: float = 0.1):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)

    def f(t):
        return float(np.sum(np.logaddexp(0.0, -y * (A @ t)))) + 0.5 * mu * t @ t

    def grad(t):
        s = 1.0 / (1.0 + np.exp(y * (A @ t)))
        return A.T @ (-y * s) + mu * t

    beta = 0.25 * float(np.linalg.eigvalsh(A.T @ A)[-1]) + mu
    return f, grad, beta


def ista(grad, beta, d, lam, iterations=20000):
    """Reference: proximal gradient for f + lam ||.||_1 (step 1/beta)."""
    t = np.zeros(d)
    for _ in range(iterations):
        u = t - grad(t) / beta
        t = np.sign(u) * np.maximum(np.abs(u) - lam / beta, 0.0)
    return t


# ---------------------------------------------------------------- prox and projection


def test_soft_threshold_values():
    x = np.array([-3.0, -1.0, -0.5, 0.0, 0.2, 1.0, 2.5])
    np.testing.assert_array_equal(
        soft_threshold(x, 1.0), np.array([-2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5])
    )
    np.testing.assert_array_equal(soft_threshold(x, 0.0), x)


def test_soft_threshold_is_the_l1_prox():
    """u = prox_{t||.||_1}(x) iff x - u in t * subdifferential of ||.||_1 at u."""
    rng = np.random.default_rng(3)
    x, t = rng.standard_normal(200) * 2, 0.7
    u = soft_threshold(x, t)
    r = x - u
    nz = u != 0
    np.testing.assert_allclose(r[nz], t * np.sign(u[nz]), atol=1e-15)
    assert np.all(np.abs(r[~nz]) <= t + 1e-15)
    # and it beats random competitors on the prox objective
    obj = lambda v: t * np.abs(v).sum() + 0.5 * np.sum((v - x) ** 2)  # noqa: E731
    for _ in range(20):
        assert obj(u) <= obj(u + 0.01 * rng.standard_normal(200))


def test_project_box_is_the_projection():
    rng = np.random.default_rng(4)
    x, kappa = rng.standard_normal(50) * 3, 1.5
    p = project_box(x, kappa)
    assert np.max(np.abs(p)) <= kappa
    np.testing.assert_array_equal(p[np.abs(x) <= kappa], x[np.abs(x) <= kappa])
    for _ in range(50):  # variational inequality <x - p, q - p> <= 0 for q in the box
        q = rng.uniform(-kappa, kappa, size=50)
        assert (x - p) @ (q - p) <= 1e-12


def test_authors_relaxation():
    assert authors_relaxation(0) == 1.0
    assert authors_relaxation(99) == pytest.approx(100 ** (-0.502))


# --------------------------------------------------------------- deterministic Davis-Yin


def test_smooth_problem_converges_to_scipy_minimiser():
    A, b, mu, f, grad, beta = ridge_problem()
    res = davis_yin(grad, np.zeros(A.shape[1]), 1.0 / beta, 2000)
    assert isinstance(res, DavisYinResult)
    ref = minimize(f, np.zeros(A.shape[1]), jac=grad, method="L-BFGS-B", tol=1e-14).x
    exact = np.linalg.solve(A.T @ A + mu * np.eye(A.shape[1]), A.T @ b)
    np.testing.assert_allclose(ref, exact, atol=1e-6)
    np.testing.assert_allclose(res.theta, exact, atol=1e-10)


def test_logistic_converges_to_scipy_minimiser():
    f, grad, beta = logistic_problem()
    res = davis_yin(grad, np.zeros(5), 1.0 / beta, 5000)
    ref = minimize(f, np.zeros(5), jac=grad, method="BFGS", options={"gtol": 1e-12}).x
    np.testing.assert_allclose(res.theta, ref, atol=1e-7)


def test_l1_matches_proximal_gradient_and_optimality():
    A, b, _mu, _f, grad, beta = ridge_problem(seed=5, d=8)
    lam = 0.5 * float(np.max(np.abs(A.T @ b)))
    res = davis_yin(grad, np.zeros(8), 1.0 / beta, 5000, l1=lam)
    ref = ista(grad, beta, 8, lam)
    np.testing.assert_allclose(res.theta, ref, atol=1e-8)
    assert np.any(res.theta == 0.0), "lambda chosen so that some coordinates vanish"
    g = grad(res.theta)
    nz = res.theta != 0
    np.testing.assert_allclose(g[nz] + lam * np.sign(res.theta[nz]), 0.0, atol=1e-8)
    assert np.all(np.abs(g[~nz]) <= lam + 1e-8)


def test_box_satisfies_kkt_and_matches_lbfgsb():
    A, b, mu, f, grad, beta = ridge_problem(seed=6, d=8)
    exact = np.linalg.solve(A.T @ A + mu * np.eye(8), A.T @ b)
    kappa = 0.5 * float(np.max(np.abs(exact)))  # some constraints active
    res = davis_yin(grad, np.zeros(8), 1.0 / beta, 5000, box=kappa)
    t, g = res.theta, grad(res.theta)
    assert np.max(np.abs(t)) <= kappa * (1 + 1e-12)
    upper, lower = np.isclose(t, kappa, atol=1e-10), np.isclose(t, -kappa, atol=1e-10)
    free = ~(upper | lower)
    assert upper.any() or lower.any()
    np.testing.assert_allclose(g[free], 0.0, atol=1e-8)
    assert np.all(g[upper] <= 1e-8) and np.all(g[lower] >= -1e-8)
    ref = minimize(f, np.zeros(8), jac=grad, method="L-BFGS-B", bounds=[(-kappa, kappa)] * 8)
    np.testing.assert_allclose(t, ref.x, atol=1e-5)


def test_l1_and_box_together_kkt():
    """0 in grad f + lam * d||.||_1 + N_box: coordinatewise."""
    A, b, _mu, _f, grad, beta = ridge_problem(seed=7, d=10)
    lam, kappa = 0.3 * float(np.max(np.abs(A.T @ b))), 0.3
    res = davis_yin(grad, np.zeros(10), 1.0 / beta, 8000, l1=lam, box=kappa)
    t, g = res.theta, grad(res.theta)
    assert np.max(np.abs(t)) <= kappa * (1 + 1e-12)
    for ti, gi in zip(t, g, strict=True):
        if ti == 0.0:
            assert abs(gi) <= lam + 1e-8
        elif abs(abs(ti) - kappa) < 1e-10:  # at the bound: normal cone points outward
            assert np.sign(ti) * (gi + lam * np.sign(ti)) <= 1e-8
        else:
            assert gi + lam * np.sign(ti) == pytest.approx(0.0, abs=1e-8)


def test_fixed_iteration_count_and_relaxation():
    _A, _b, _mu, _f, grad, beta = ridge_problem()
    calls = []

    def counted(t):
        calls.append(1)
        return grad(t)

    res = davis_yin(counted, np.zeros(6), 1.0 / beta, 37, relaxation=0.8)
    assert len(calls) == 37 and res.iterations == 37
    res0 = davis_yin(grad, np.full(6, 0.5), 1.0 / beta, 0, l1=1.0)
    np.testing.assert_array_equal(res0.theta, soft_threshold(np.full(6, 0.5), 1.0 / beta))
    # a schedule is called with k = 0..K-1
    ks = []
    davis_yin(grad, np.zeros(6), 1.0 / beta, 5, relaxation=lambda k: ks.append(k) or 1.0)
    assert ks == [0, 1, 2, 3, 4]


def test_x0_is_not_modified():
    _A, _b, _mu, _f, grad, beta = ridge_problem()
    x0 = np.zeros(6)
    davis_yin(grad, x0, 1.0 / beta, 10)
    np.testing.assert_array_equal(x0, 0.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"x0": np.zeros((2, 3))}, "x0"),
        ({"x0": np.array([np.nan, 0.0])}, "x0"),
    ],
)
def test_bad_inputs_refused(kwargs, match):
    args = {"x0": np.zeros(3), "step": 0.1, "iterations": 5, **kwargs}
    x0, step, iterations = args.pop("x0"), args.pop("step"), args.pop("iterations")
    with pytest.raises(ParameterError, match=match):
        davis_yin(lambda t: t, x0, step, iterations, **args)


# ------------------------------------------------------------------ stochastic Davis-Yin


def test_stochastic_gets_close_and_is_reproducible():
    """Finite sum sum_i 0.5 (a_i.t - b_i)^2 + (mu/2)||t||^2 with the estimate
    n grad l_i + mu t; the decaying schedule brings it near the minimiser."""
    A, b, mu, _f, grad, beta = ridge_problem(seed=8, n=30, d=4, mu=20.0)
    n = A.shape[0]
    L_i = float(np.max(np.sum(A * A, axis=1)))

    def sample(t, i):
        return n * (A[i] @ t - b[i]) * A[i] + mu * t

    step = 1.0 / (n * L_i + mu)
    r1 = stochastic_davis_yin(sample, n, np.zeros(4), step, 20000, rng=np.random.default_rng(1))
    r2 = stochastic_davis_yin(sample, n, np.zeros(4), step, 20000, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(r1.theta, r2.theta)
    exact = np.linalg.solve(A.T @ A + mu * np.eye(4), A.T @ b)
    assert np.linalg.norm(r1.theta - exact) < 0.1 * np.linalg.norm(exact)
    # the deterministic variant with the exact gradient is the sharp reference
    det = davis_yin(grad, np.zeros(4), 1.0 / beta, 3000)
    np.testing.assert_allclose(det.theta, exact, atol=1e-9)


def test_stochastic_indices_uniform_and_counted():
    seen = []

    def sample(t, i):
        seen.append(i)
        return t

    stochastic_davis_yin(sample, 4, np.zeros(2), 0.1, 4000, rng=np.random.default_rng(0))
    assert len(seen) == 4000
    counts = np.bincount(seen, minlength=4)
    assert counts.min() > 850 and counts.max() < 1150


def test_stochastic_respects_box_and_l1():
    A, b, mu, _f, _grad, _beta = ridge_problem(seed=9, n=30, d=6, mu=5.0)
    n = A.shape[0]

    def sample(t, i):
        return n * (A[i] @ t - b[i]) * A[i] + mu * t

    r = stochastic_davis_yin(
        sample, n, np.zeros(6), 1e-3, 500, l1=0.5, box=0.2, rng=np.random.default_rng(2)
    )
    assert r.iterations == 500 and r.theta.shape == (6,)
    assert np.all(np.isfinite(r.theta))


def test_stochastic_refuses_a_bad_rng():
    with pytest.raises(ParameterError, match="rng"):
        stochastic_davis_yin(lambda t, i: t, 3, np.zeros(2), 0.1, 3, rng=42)


def test_stochastic_default_rng_runs():
    r = stochastic_davis_yin(lambda t, i: t, 3, np.ones(2), 0.1, 3)
    assert r.theta.shape == (2,)
