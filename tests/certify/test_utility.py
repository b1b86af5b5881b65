"""Utility bounds: eq. (12), Theorems 4.7/4.9/4.10, Corollary 4.11 (objpert.certify),
against independent computations."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
from certify_cases import (
    IDS,
    SETTINGS,
)
from scipy import optimize
from scipy.special import expit

from objpert._special import chi_tail
from objpert.certify import _utility as utility
from objpert.certify import problem
from objpert.exceptions import ParameterError

mpf = mpmath.mpf


def e_opt_direct(L, rho, mu, a_r, d, sigma, N):
    """eq. (12) written out."""
    b = 1.0 / mu
    rn = rho**N
    quadratic = b * b * d * sigma**2 + 2 * a_r * b * sigma * math.sqrt(d) + a_r**2
    linear = b * d * sigma**2 + a_r * sigma * math.sqrt(d)
    return (L / 2) * rn**2 * quadratic + rn * linear


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_e_opt_matches_eq12(s):
    pc, sigma = s.pc, s.sigma
    L = pc.mu + pc.L2 * pc.zeta**2
    rho = 1 - pc.eta * pc.mu
    Ns = [0, 1, 5, 50, 300]
    for grad0 in (None, 0.0, 0.3 * pc.L1 * pc.zeta):
        a_r = (pc.L1 * pc.zeta if grad0 is None else grad0) / pc.mu
        vec = utility.e_opt(pc, sigma, np.array(Ns), grad_norm_at_zero=grad0)
        for i, N in enumerate(Ns):
            ref = e_opt_direct(L, rho, pc.mu, a_r, pc.d, sigma, N)
            assert vec[i] == pytest.approx(ref, rel=1e-12)
            assert float(utility.e_opt(pc, sigma, N, grad_norm_at_zero=grad0)) == pytest.approx(
                ref, rel=1e-12
            )
    with pytest.raises(ParameterError, match="grad_norm_at_zero"):
        utility.e_opt(pc, sigma, 10, grad_norm_at_zero=-1.0)


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_utility_theorem_relationships(s):
    pc, sigma = s.pc, s.sigma
    Ns = np.array([1, 10, 100, 1000])
    for delta_s in (0.01, 0.1):
        for W in (0.5, 1.0, 3.0):
            t410 = utility.theorem_410(pc, sigma, Ns)
            t49 = utility.theorem_49(pc, sigma, Ns, delta_s)
            t47 = utility.theorem_47(pc, sigma, Ns, W, delta_s)
            sample = 16 * (pc.L1 * pc.zeta) ** 2 * (32 + math.log(1 / delta_s)) / (pc.mu * pc.n)
            np.testing.assert_allclose(
                t410, pc.d * sigma**2 / (2 * pc.mu) + utility.e_opt(pc, sigma, Ns), rtol=1e-14
            )
            np.testing.assert_allclose(t49, 2 * t410 + sample, rtol=1e-14)
            np.testing.assert_allclose(t47, t49 + pc.mu * W**2 / 2, rtol=1e-14)
            assert np.all(np.diff(t410) <= 0)  # the optimisation term decreases with N
    with pytest.raises(ParameterError, match="delta_sample"):
        utility.theorem_49(pc, sigma, 10, 1.5)
    with pytest.raises(ParameterError, match="comparator_norm"):
        utility.theorem_47(pc, sigma, 10, comparator_norm=0.0)


def test_corollary_411_fields():
    s = SETTINGS[0]
    pc, sigma = s.pc, s.sigma
    L = pc.mu + pc.L2 * pc.zeta**2
    rho = 1 - pc.eta * pc.mu
    for N, beta, W, ds in ((1, 0.05, 1.0, 0.01), (50, 0.01, 2.0, 0.1), (500, 0.5, 0.3, 0.2)):
        b = utility.corollary_411(pc, sigma, N, beta, comparator_norm=W, delta_sample=ds)
        r_beta = sigma * (math.sqrt(pc.d) + math.sqrt(2 * math.log(1 / beta)))
        R_beta = (pc.L1 * pc.zeta + r_beta) / pc.mu
        U = r_beta**2 / (2 * pc.mu) + L / 2 * rho ** (2 * N) * R_beta**2 + rho**N * r_beta * R_beta
        sample = 16 * (pc.L1 * pc.zeta) ** 2 * (32 + math.log(1 / ds)) / (pc.mu * pc.n)
        assert b.r_beta == pytest.approx(r_beta, rel=1e-14)
        assert b.R_beta == pytest.approx(R_beta, rel=1e-14)
        assert b.empirical == pytest.approx(U, rel=1e-12)
        assert b.population_regularized == pytest.approx(2 * U + sample, rel=1e-12)
        assert b.population_unregularized == pytest.approx(2 * U + sample + pc.mu * W**2 / 2)
        assert json.loads(json.dumps(b.to_dict()))["r_beta"] == b.r_beta
    for beta in (0.0, 1.0):
        with pytest.raises(ParameterError, match="beta"):
            utility.corollary_411(pc, sigma, 10, beta)


@pytest.mark.parametrize("d", [1, 3, 8])
def test_corollary_411_radius_holds_with_probability_1_minus_beta(d):
    """Monte Carlo: ||Z|| <= r_beta for Z ~ N(0, sigma^2 I_d) with probability >= 1 - beta."""
    pc = problem("logistic", n=1000, d=d, zeta=1.0, mu=0.1)
    sigma = 0.7
    rng = np.random.default_rng(20260 + d)
    norms = np.linalg.norm(rng.normal(scale=sigma, size=(20_000, d)), axis=1)
    for beta in (0.5, 0.2, 0.05, 0.01):
        r_beta = utility.corollary_411(pc, sigma, 10, beta).r_beta
        assert np.mean(norms > r_beta) <= beta
        assert float(chi_tail(r_beta / sigma, d)) <= beta  # the exact probability too


def _logistic_problem(seed: int = 7, n: int = 200, d: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    X *= rng.uniform(0.3, 1.0, size=(n, 1))  # rows of norm <= 1 = zeta
    w_true = np.array([1.5, -2.0, 0.5])[:d]
    y = np.where(rng.uniform(size=n) < expit(X @ w_true), 1.0, -1.0)
    return X, y


def test_theorem_410_end_to_end_on_a_tiny_logistic_problem():
    """Run w_{k+1} = w_k - eta (grad F(w_k) + z) in numpy and compare the average excess
    empirical risk over seeded draws of z with the Theorem 4.10 bound; also Corollary 4.11's
    single-release bound U_N(beta) holds in at least a 1 - beta fraction of the draws."""
    X, y = _logistic_problem()
    n, d = X.shape
    assert np.all(np.linalg.norm(X, axis=1) <= 1.0 + 1e-12)
    mu = 0.05
    pc = problem("logistic", n=n, d=d, zeta=1.0, mu=mu)

    def F(W):
        W = np.atleast_2d(W)
        return np.mean(np.logaddexp(0.0, -y * (W @ X.T)), axis=1) + 0.5 * mu * np.sum(W * W, 1)

    def grad(W):
        m = W @ X.T
        return (-y * expit(-y * m)) @ X / n + mu * W

    res = optimize.minimize(
        lambda w: F(w)[0],
        np.zeros(d),
        jac=lambda w: grad(w[None, :])[0],
        method="BFGS",
        options={"gtol": 1e-13, "maxiter": 10_000},
    )
    w_star = res.x
    for _ in range(20):  # polish with Newton steps: the Hessian is explicit for a GLM
        s = expit(y * (X @ w_star))
        H = (X.T * (s * (1 - s))) @ X / n + mu * np.eye(d)
        w_star = w_star - np.linalg.solve(H, grad(w_star[None, :])[0])
    assert np.linalg.norm(grad(w_star[None, :])[0]) < 1e-13
    F_star = F(w_star)[0]

    rng = np.random.default_rng(2026)
    draws = 300
    for sigma, N in ((0.05, 20), (0.05, 200), (0.15, 8), (0.01, 60)):
        Z = rng.normal(scale=sigma, size=(draws, d))
        W = np.zeros((draws, d))
        for _ in range(N):
            W = W - pc.eta * (grad(W) + Z)
        excess = F(W) - F_star
        assert np.all(excess >= -1e-12)
        bound = float(utility.theorem_410(pc, sigma, N))
        assert excess.mean() <= bound
        beta = 0.1
        U = utility.corollary_411(pc, sigma, N, beta).empirical
        assert np.mean(excess > U) <= beta


@pytest.mark.parametrize("N", [0.5, [1, 2.5], 1e-9])
def test_a_utility_bound_takes_a_whole_number_of_steps(N):
    from objpert.certify import problem, utility
    from objpert.exceptions import ParameterError

    pc = problem("logistic", n=100, d=3, zeta=1.0, mu=0.1)
    with pytest.raises(ParameterError, match="whole number"):
        utility.theorem_47(pc, 0.5, N)
    assert np.all(np.isfinite(utility.theorem_47(pc, 0.5, [1, 2, 3])))
