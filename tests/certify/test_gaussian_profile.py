"""The Gaussian profile of Section C.5, and the iteration-count edge cases of the search
(objpert.certify), against independent computations."""

from __future__ import annotations

import contextlib
import math
import time

import mpmath
import numpy as np
import pytest
from certify_cases import (
    mp_q1,
)
from scipy import integrate

from objpert.accounting import _gaussian_mechanism as gaussian
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _truncation as truncation
from objpert.certify import min_iterations, problem
from objpert.exceptions import ParameterError, UnreachableTargetError

mpf = mpmath.mpf


def gaussian_profile_mp(eps, G, sigma):
    with mpmath.workdps(150):
        eps, G, sigma = mpf(eps), mpf(G), mpf(sigma)
        return mpmath.ncdf(G / (2 * sigma) - eps * sigma / G) - mpmath.exp(eps) * mpmath.ncdf(
            -G / (2 * sigma) - eps * sigma / G
        )


GAUSS_CASES = [
    (0.0, 1.0, 1.0),
    (0.5, 1.0, 1.0),
    (1.0, 2e-6, 1e-5),  # Section C.5's benchmark point sigma/G = 5
    (1.0, 1.0, 0.2),
    (5.0, 1.0, 1.0),
    (20.0, 1.0, 1.0),  # the two terms nearly cancel: e^20 Phi(b) ~ Phi(a)
    (50.0, 1.0, 0.5),
    (100.0, 1.0, 0.1),
    (300.0, 1.0, 0.05),
    (10.0, 1.0, 3.0),
    (1e-3, 1.0, 10.0),
    (3.0, 1e-4, 1e-5),
]


@pytest.mark.parametrize(("eps", "G", "sigma"), GAUSS_CASES)
def test_gaussian_profile_against_mpmath(eps, G, sigma):
    ref = gaussian_profile_mp(eps, G, sigma)
    value = float(gaussian.gaussian_profile(eps, G, sigma))
    assert ref > 1e-300
    assert value == pytest.approx(float(ref), rel=1e-10)


HOCKEY_CASES = [
    (0.0, 1.0, 1.0),
    (0.5, 1.0, 0.7),
    (1.0, 2.0, 1.0),
    (2.0, 1.0, 0.5),
    (0.1, 1.0, 3.0),
    (4.0, 3.0, 1.0),
]


@pytest.mark.parametrize(("eps", "G", "sigma"), HOCKEY_CASES)
def test_gaussian_profile_is_the_hockey_stick_divergence(eps, G, sigma):
    """delta(eps) = int [p0 - e^eps p1]_+ for p0 = N(0, s^2), p1 = N(G, s^2), by quadrature."""

    def integrand(x):
        p0 = math.exp(-0.5 * (x / sigma) ** 2)
        p1 = math.exp(-0.5 * ((x - G) / sigma) ** 2)
        return max(p0 - math.exp(eps) * p1, 0.0) / (sigma * math.sqrt(2 * math.pi))

    cross = G / 2 - eps * sigma**2 / G  # where p0 = e^eps p1
    lo, hi = min(-40 * sigma, cross - 40 * sigma), max(G + 40 * sigma, cross + 40 * sigma)
    val = sum(
        integrate.quad(integrand, a, b, epsabs=1e-15, epsrel=1e-12, limit=400)[0]
        for a, b in ((lo, cross), (cross, hi))
    )
    assert float(gaussian.gaussian_profile(eps, G, sigma)) == pytest.approx(val, rel=1e-8)


def test_gaussian_integrated_tail_bound_dominates_profile():
    eps = np.linspace(0.0, 12.0, 241)
    for ratio in (0.3, 1.0, 2.0, 5.0, 20.0):
        G = 1e-4
        sigma = ratio * G
        exact_profile = gaussian.gaussian_profile(eps, G, sigma)
        bound = gaussian.gaussian_integrated_tail_bound(eps, G, sigma)
        assert np.all(bound >= exact_profile * (1 - 1e-12))
        # and it is the zero-log-determinant certificate (2G/s) Q1((s/G)(eps - G^2/(2 s^2)))
        for e in (1.0, 5.0):
            slack = e - G**2 / (2 * sigma**2)
            if slack >= 0:
                ref = 2 * mpf(G) / sigma * mp_q1(mpf(sigma) / mpf(G) * slack)
                value = float(gaussian.gaussian_integrated_tail_bound(e, G, sigma))
                assert value == pytest.approx(float(ref), rel=1e-11)


@pytest.mark.parametrize("bad_n", [0, -3, 2.5])
def test_iterations_below_one_or_fractional_are_refused(bad_n):
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=0.1)
    with pytest.raises(ParameterError, match="iterations"):
        theorem41.certify(pc, 0.01, 3.0, bad_n, 1.0)
    with pytest.raises(ParameterError, match="iterations"):
        theorem_c13.certify(pc, 0.01, bad_n, 1.0, u=3.0)


@pytest.mark.parametrize(("mu", "epsilon"), [(3e-5, 1.0), (1e-5, 1.0), (2e-3, 0.5)])
def test_min_iterations_pruning_matches_dense_scan_to_1e6(mu, epsilon):
    """The block lower bounds of the search never skip the first certifying N (dense check)."""
    from objpert.certify._theorem41 import slack_for_divergence

    pc = problem("logistic", n=10**6, d=10**4, zeta=1.0, mu=mu)
    sigma, delta = 1e-5, 1e-7
    r, r_outer = theorem_c13.paper_radii(pc, sigma, 6.0)
    Ns = np.arange(1, 10**6 + 1, dtype=float)
    s_n = theorem_c13.c13_terms(pc, sigma, r, r_outer, Ns).s_n
    slack = slack_for_divergence(pc, sigma, delta - truncation.truncation_mass(sigma, pc.d_star, r))
    dense = np.nonzero(s_n + slack <= epsilon)[0]
    if dense.size == 0:
        with pytest.raises(UnreachableTargetError):
            min_iterations(pc, sigma, epsilon, delta, u=6.0)
    else:
        assert min_iterations(pc, sigma, epsilon, delta, u=6.0).iterations == dense[0] + 1


@pytest.mark.parametrize("mu", [1e-5, 3e-5])
def test_min_iterations_up_to_1e6_is_fast_even_when_the_answer_is_far(mu):
    pc = problem("logistic", n=10**6, d=10**4, zeta=1.0, mu=mu)
    best = math.inf
    for _ in range(3):
        t0 = time.process_time()
        with contextlib.suppress(UnreachableTargetError):
            min_iterations(pc, 1e-5, 1.0, 1e-7, u=6.0, n_max=10**6)
        best = min(best, time.process_time() - t0)
    assert best < 0.05
