"""Theorem 4.1: eqs. (7)-(10) (objpert.certify), against independent computations."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from certify_cases import (
    IDS,
    SETTINGS,
    delta41_ref,
    eps0_ref,
    eq7_bound,
    rel,
)

from objpert.certify import _theorem41 as theorem41
from objpert.certify import _truncation as truncation

mpf = mpmath.mpf


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_threshold_is_the_smallest_integer_satisfying_eq7(s):
    pc, sigma = s.pc, s.sigma
    for u in (0.0, 1.0, s.u, 10.0):
        N = theorem41.threshold_iterations(pc, sigma, u)
        bound = eq7_bound(pc, sigma, u)
        assert bound * (1 - 1e-9) <= N
        assert N == 1 or bound > N - 1
        assert max(1, math.ceil(float(bound))) == N


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_epsilon0_and_delta_match_eqs_8_to_10(s):
    pc, sigma, u = s.pc, s.sigma, s.u
    th = theorem41.threshold_iterations(pc, sigma, u)
    for N in (th, th + 1, 2 * th, 10 * th):
        e0 = eps0_ref(pc, sigma, N)
        assert rel(float(theorem41.epsilon0(pc, sigma, N)), e0) < 1e-12
        for eps in (0.5, 1.0, 2.0, 5.0):
            value = float(theorem41.delta(pc, sigma, u, N, eps))
            ref = delta41_ref(pc, sigma, u, N, eps)
            assert value == pytest.approx(ref, rel=1e-11)
    # below the threshold there is no certificate
    assert float(theorem41.delta(pc, sigma, u, th - 1, 5.0)) == 1.0


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
@pytest.mark.parametrize("kind", ["paper", "exact"])
def test_theorem41_vectorised_equals_scalar_certify(s, kind):
    pc, sigma, u = s.pc, s.sigma, s.u
    th = theorem41.threshold_iterations(pc, sigma, u)
    Ns = np.unique(np.array([1, th - 1, th, th + 1, th + 7, 2 * th, 5 * th, 10**6]))
    Ns = Ns[Ns >= 1]
    eps = np.array([0.01, 0.3, 1.0, 2.0, 8.0])
    grid = theorem41.delta(pc, sigma, u, Ns[:, None], eps[None, :], truncation=kind)
    assert grid.shape == (Ns.size, eps.size)
    eps_for = theorem41.epsilon_for_delta(pc, sigma, u, Ns, 1e-3, truncation=kind)
    for i, N in enumerate(Ns):
        for j, e in enumerate(eps):
            cert = theorem41.certify(pc, sigma, u, int(N), float(e), truncation=kind)
            assert grid[i, j] == pytest.approx(cert.delta, rel=1e-12)
            assert cert.certified == (grid[i, j] < 1.0)
            assert cert.threshold_iterations == th
            if cert.certified:
                assert cert.delta == pytest.approx(
                    cert.truncation_mass + cert.divergence_term, rel=1e-15
                )
        assert float(eps_for[i]) == float(
            theorem41.epsilon_for_delta(pc, sigma, u, int(N), 1e-3, truncation=kind)
        )


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_theorem41_delta_decreasing_in_epsilon_and_epsilon0_in_n(s):
    pc, sigma, u = s.pc, s.sigma, s.u
    th = theorem41.threshold_iterations(pc, sigma, u)
    eps = np.linspace(0.0, 6.0, 601)
    for N in (th, 3 * th):
        d = theorem41.delta(pc, sigma, u, N, eps)
        assert np.all(np.diff(d) <= 0)
        mass = truncation.truncation_mass(
            sigma, pc.d_star, truncation.radius_from_u(sigma, pc.d_star, u)
        )
        active = (d[:-1] < 1.0) & (d[1:] > mass * (1 + 1e-9))  # divergence term still > 0
        assert np.all(np.diff(d)[active] < 0)
    # over the range covered by eq. (7), epsilon_0 decreases with N (Section 4.1)
    e0 = theorem41.epsilon0(pc, sigma, np.arange(th, th + 5000))
    assert np.all(np.diff(e0) <= 0)
    limit = pc.G**2 / (2 * sigma**2) + math.log1p(pc.delta_H / (2 * pc.n * pc.mu))
    assert float(theorem41.epsilon0(pc, sigma, 10**7)) == pytest.approx(limit, rel=1e-12)


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
@pytest.mark.parametrize("kind", ["paper", "exact"])
def test_epsilon_for_delta_inverts_delta(s, kind):
    pc, sigma, u = s.pc, s.sigma, s.u
    th = theorem41.threshold_iterations(pc, sigma, u)
    trunc = truncation.truncation_mass(
        sigma, pc.d_star, truncation.radius_from_u(sigma, pc.d_star, u), kind
    )
    for N in (th, 4 * th):
        for target in (1e-2, 1e-4, 1e-6, 1e-7):
            eps = float(theorem41.epsilon_for_delta(pc, sigma, u, N, target, truncation=kind))
            if target <= trunc:
                assert eps == math.inf
                continue
            reached = float(theorem41.delta(pc, sigma, u, N, eps, truncation=kind))
            assert reached == pytest.approx(target, rel=1e-9)
            assert reached <= target  # never a hair above: the rounding of Q1^{-1} is undone
            # the smallest such epsilon: a hair less certifies only a larger delta
            smaller = eps - 1e-6 * (eps - float(theorem41.epsilon0(pc, sigma, N)))
            assert float(theorem41.delta(pc, sigma, u, N, smaller, truncation=kind)) > target
    assert float(theorem41.epsilon_for_delta(pc, sigma, u, th - 1, 1e-2)) == math.inf


def test_theorem41_certificate_reasons():
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    th = theorem41.threshold_iterations(pc, sigma, u)
    below = theorem41.certify(pc, sigma, u, th - 1, 1.0)
    assert not below.certified and below.delta == 1.0
    assert any("threshold" in r for r in below.reasons)
    small_eps = theorem41.certify(pc, sigma, u, th, 1e-3)
    assert not small_eps.certified and any("epsilon_0" in r for r in small_eps.reasons)
    ok = theorem41.certify(pc, sigma, u, th, 1.0)
    assert ok.certified and ok.reasons == ()
