"""The multinomial (softmax) release's certificate: its profile against mpmath, its
constants against the loss computed by brute force, and the privacy loss of explicit
replace-one pairs (exact, by the change of variables of the release map) against the
bound the certificate integrates."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from objpert._engines.softmax import SoftmaxObjective
from objpert._solvers.newton import solve_to_tolerance
from objpert.exceptions import UnreachableTargetError
from objpert.mechanisms._certificates.multinomial import (
    certify_multinomial,
    chi_profile_delta,
    multinomial_sigma,
    plan_multinomial,
    profile_dimension,
    softmax_gradient_bound,
    softmax_log_det,
)
from objpert.mechanisms._certificates.redberg import folded_gaussian_delta


def mp_profile(eps, t, c0, m):
    """E[(1 - exp(eps - c0 - t^2/2 - t R))_+], R ~ chi_m, by mpmath quadrature of the
    definition (chi density written out, no rearrangement)."""
    mpmath.mp.dps = 30
    eps, t, c0 = mpmath.mpf(eps), mpmath.mpf(t), mpmath.mpf(c0)

    def f(r):
        dens = mpmath.mpf(2) ** (1 - mpmath.mpf(m) / 2) * r ** (m - 1) * mpmath.exp(-r * r / 2)
        loss = c0 + t * t / 2 + t * r
        return dens / mpmath.gamma(mpmath.mpf(m) / 2) * max(0, 1 - mpmath.exp(eps - loss))

    r0 = max(mpmath.mpf(0), (eps - c0 - t * t / 2) / t)
    return float(mpmath.quad(f, [0, r0, r0 + 1, r0 + 5, r0 + 20, r0 + 80]))


@pytest.mark.parametrize(
    ("eps", "t", "c0", "m"),
    [(1.0, 0.2, 0.05, 18), (0.5, 1.0, 0.1, 1), (3.0, 0.5, 0.0, 4), (0.1, 2.0, 0.3, 2),
     (1.0, 0.3, 0.01, 38), (0.99, 0.3, 0.02, 18), (2.0, 0.1, 1.5, 9)],
)  # fmt: skip
def test_profile_matches_mpmath(eps, t, c0, m):
    got = chi_profile_delta(eps, t, c0, m)
    want = mp_profile(eps, t, c0, m)
    assert got == pytest.approx(want, rel=1e-8, abs=1e-300)


@pytest.mark.parametrize(("eps", "t", "c0"), [(1.0, 0.4, 0.1), (0.3, 2.0, 0.0), (2.0, 1.0, 0.5)])
def test_one_dimension_is_the_folded_gaussian(eps, t, c0):
    """m = 1 is Redberg et al.'s folded Gaussian, computed there in closed form."""
    assert chi_profile_delta(eps, t, c0, 1) == pytest.approx(
        folded_gaussian_delta(eps, t, c0), rel=1e-8
    )


def test_profile_grows_with_the_dimension():
    values = [chi_profile_delta(1.0, 0.3, 0.05, m) for m in (1, 2, 4, 18)]
    assert values == sorted(values)
    assert values[-1] > 10 * values[0]


def _per_row(x, w, y, k):
    """The gradient and Hessian of one row's softmax loss by a plain loop (no engine)."""
    s = np.array([x @ w[:, j] for j in range(k)])
    p = np.exp(s - s.max())
    p /= p.sum()
    r = p.copy()
    r[y] -= 1.0
    grad = np.outer(x, r)
    hess = np.kron(np.outer(x, x), np.diag(p) - np.outer(p, p))  # row-major vec(W)
    return grad, hess, p


def test_gradient_bound_is_sqrt2_zeta_and_attained():
    """||grad|| <= sqrt(2) zeta on random points, and sqrt(2) zeta is approached when the
    softmax concentrates on a wrong class: the per-row bound 1 * zeta would be broken."""
    rng = np.random.default_rng(0)
    k, d, zeta = 4, 3, 1.7
    worst = 0.0
    for _ in range(2000):
        x = rng.normal(size=d)
        x *= zeta / np.linalg.norm(x)
        w = rng.normal(scale=rng.uniform(0.1, 30.0), size=(d, k))
        grad, _, _ = _per_row(x, w, int(rng.integers(k)), k)
        worst = max(worst, float(np.linalg.norm(grad)))
    assert worst <= softmax_gradient_bound(zeta) * (1 + 1e-12)
    x = np.zeros(d)
    x[0] = zeta
    w = np.zeros((d, k))
    w[0, 1] = 50.0  # all mass on class 1; the label is class 0
    grad, _, _ = _per_row(x, w, 0, k)
    assert np.linalg.norm(grad) > 1.4 * zeta
    assert np.linalg.norm(grad) <= softmax_gradient_bound(zeta)


def test_hessian_rank_trace_and_log_det_bound():
    """Per-row Hessians have rank <= K - 1 and trace <= zeta^2 (1 - 1/K); the
    log-determinant ratio of explicit neighbours stays within c0 and c0 is not far above
    the worst found (the bound is used, not a looser one by a factor K)."""
    rng = np.random.default_rng(1)
    k, d, zeta, lam = 5, 3, 1.0, 0.05
    c0 = softmax_log_det(1, zeta, lam, k)  # n = 1: the sum-form ridge is lam
    worst = 0.0
    for _ in range(500):
        xs = rng.normal(size=(2, d))
        xs *= zeta / np.linalg.norm(xs, axis=1, keepdims=True)
        w = rng.normal(scale=rng.uniform(0.01, 2.0), size=(d, k))
        hs = [_per_row(x, w, 0, k)[1] for x in xs]
        for h in hs:
            assert np.linalg.matrix_rank(h, tol=1e-10) <= k - 1
            assert np.trace(h) <= zeta**2 * (1 - 1 / k) + 1e-12
        base = lam * np.eye(d * k)
        ratio = abs(np.linalg.slogdet(base + hs[0])[1] - np.linalg.slogdet(base + hs[1])[1])
        assert ratio <= c0 + 1e-12
        worst = max(worst, ratio)
    assert worst > c0 / 3


def _release_map_loss(S, S2, k, mu, sigma, z):
    """The exact privacy loss log p_S(W)/p_S'(W) at the minimiser W of F_S + <z, W> (mean
    form): Gaussian ratio of the two noises producing W plus the log-Jacobian ratio; and
    the pieces of the certificate's bound."""
    (X, y), (X2, y2) = S, S2
    f1 = SoftmaxObjective(X, y, k, mu)
    f2 = SoftmaxObjective(X2, y2, k, mu)
    w, norm, _ = solve_to_tolerance(f1, z, 1e-12, 200)
    assert norm <= 1e-12
    b1 = -f1.gradient(w)  # = z
    b2 = -f2.gradient(w)
    gauss = (b2 @ b2 - b1 @ b1) / (2 * sigma**2)
    logdet = np.linalg.slogdet(f1.hessian(w))[1] - np.linalg.slogdet(f2.hessian(w))[1]
    return gauss + logdet, b2 - b1, logdet


@pytest.mark.parametrize("angle", [0.0, math.pi / 2, math.pi])
def test_explicit_pairs_stay_below_the_profile(angle):
    """Replace-one pairs (n = 2, d = 2, K = 3): at every sampled release the exact loss is
    below c0 + (||v||^2 + 2 ||v|| ||P z||) / (2 sigma^2) with ||v|| <= G, v in
    span{x, x'} (x) 1^perp; the Monte Carlo delta of the exact loss is below the
    certified one."""
    k, n, zeta, mu, eps = 3, 2, 1.0, 0.5, 1.5
    sigma = multinomial_sigma(n, 2, k, zeta, mu, eps, 0.05)
    x0 = np.array([[0.6, 0.8]])
    xa = np.array([[1.0, 0.0]])
    xb = np.array([[math.cos(angle), math.sin(angle)]])
    S = (np.vstack([x0, xa]), np.array([0, 1]))
    S2 = (np.vstack([x0, xb]), np.array([0, 2]))
    c0 = softmax_log_det(n, zeta, mu, k)
    t = 2 * softmax_gradient_bound(zeta) / (n * sigma)
    m = profile_dimension(2, k)
    basis = np.linalg.qr(
        np.column_stack([np.kron(x, e) for x in (xa[0], xb[0]) for e in ([1, -1, 0], [0, 1, -1])])
    )[0]
    rng = np.random.default_rng(2)
    losses = []
    for _ in range(200):
        z = rng.normal(scale=sigma, size=2 * k)
        loss, v, logdet = _release_map_loss(S, S2, k, mu, sigma, z)
        assert abs(logdet) <= c0 + 1e-10
        assert np.linalg.norm(v) <= 2 * softmax_gradient_bound(zeta) / n + 1e-12
        assert np.linalg.norm(v - basis @ (basis.T @ v)) <= 1e-12
        pz = np.linalg.norm(basis.T @ z)
        nv = np.linalg.norm(v)
        assert loss <= c0 + (nv * nv + 2 * nv * pz) / (2 * sigma**2) + 1e-9
        losses.append(loss)
    losses = np.array(losses)
    terms = np.maximum(0.0, -np.expm1(eps - losses))
    mc, se = terms.mean(), terms.std() / math.sqrt(terms.size)
    assert mc <= chi_profile_delta(eps, t, c0, m) + 4 * se


def test_sigma_is_the_smallest_that_certifies():
    args = (500, 5, 4, 1.0, 0.01, 1.0, 1e-6)
    sigma = multinomial_sigma(*args)
    n, d, k, zeta, mu, eps, delta = args
    t = lambda s: 2 * softmax_gradient_bound(zeta) / (n * s)  # noqa: E731
    c0, m = softmax_log_det(n, zeta, mu, k), profile_dimension(d, k)
    assert chi_profile_delta(eps, t(sigma), c0, m) <= delta
    assert chi_profile_delta(eps, t(sigma * (1 - 1e-6)), c0, m) > delta


def test_a_too_small_ridge_is_unreachable():
    with pytest.raises(UnreachableTargetError, match="raise mu"):
        multinomial_sigma(100, 5, 10, 1.0, 1e-6, 0.1, 1e-6)


def test_an_edited_plan_does_not_certify_its_target():
    plan = plan_multinomial(n=300, d=4, n_classes=3, zeta=1.0, epsilon=1.0, delta=1e-6)
    assert plan.certificate == certify_multinomial(plan)
    from dataclasses import replace

    weaker = certify_multinomial(replace(plan, sigma=plan.sigma * 0.8))
    assert weaker.delta > plan.delta
    assert certify_multinomial(replace(plan, mu=plan.mu / 50)).delta > plan.delta


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(50, 100_000),
    d=st.integers(1, 40),
    k=st.integers(2, 25),
    zeta=st.floats(0.1, 10.0),
    eps=st.floats(0.05, 8.0),
    log_delta=st.floats(-12, -2),
)
def test_every_plan_certifies_its_target(n, d, k, zeta, eps, log_delta):
    delta = 10.0**log_delta
    try:
        plan = plan_multinomial(n=n, d=d, n_classes=k, zeta=zeta, epsilon=eps, delta=delta)
    except UnreachableTargetError:
        return
    cert = certify_multinomial(plan)
    assert cert.certified
    assert cert.delta <= delta
    assert cert.epsilon <= eps * (1 + 1e-12)
    assert cert.to_dict() == plan.certificate.to_dict()


def test_the_auto_ridge_minimises_its_criterion():
    """mu of mu="auto": p sigma(mu)^2 / (2 mu) + mu K W^2 / 2 is smallest there among
    nearby ridges (sigma recalibrated at each)."""
    n, d, k, zeta, eps, delta, w = 1000, 9, 5, 1.4, 1.0, 1e-6, 3.0
    plan = plan_multinomial(n=n, d=d, n_classes=k, zeta=zeta, epsilon=eps, delta=delta)
    eps1, delta1 = plan.epsilon_objective, plan.delta_objective

    def risk(mu):
        sigma = multinomial_sigma(n, d, k, zeta, mu, eps1, delta1)
        return d * k * sigma**2 / (2 * mu) + mu * k * w**2 / 2

    best = risk(plan.mu)
    for factor in (0.5, 0.8, 1.25, 2.0):
        assert best <= risk(plan.mu * factor) * (1 + 1e-6)
