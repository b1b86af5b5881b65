"""Theorem C.13: eqs. (47)-(50) with the radii of Section C.4, and the limit form
(objpert.certify), against independent computations."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from certify_cases import (
    IDS,
    SETTINGS,
    c13_ref,
    mp_q1,
    nu_tilde_sum,
    paper_radii_ref,
    ref_constants,
    rel,
)

from objpert._special import chi_tail
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _truncation as truncation
from objpert.exceptions import ParameterError

mpf = mpmath.mpf


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_c13_terms_match_eqs_47_to_49(s):
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    rr, rro = paper_radii_ref(pc, sigma, u)
    assert r == pytest.approx(rr, rel=1e-14) and r_outer == pytest.approx(rro, rel=1e-14)
    th = theorem41.threshold_iterations(pc, sigma, u)
    Ns = sorted({1, 2, 3, 5, 20, 69, th // 3, th // 2, th, 2 * th})
    seen_ok = False
    for N in Ns:
        ref = c13_ref(pc, sigma, r, r_outer, N)
        cert = theorem_c13.certify(pc, sigma, N, 1.0, u=u)
        det = cert.details
        scale = float(ref["gamma"]) + float(ref["gamma"] - ref["alpha_bar"])
        assert det["alpha_bar"] == pytest.approx(
            float(ref["alpha_bar"]), rel=1e-11, abs=1e-14 * scale
        )
        assert det["radius_ok"] == ref["radius_ok"]
        if ref["radius_ok"]:
            seen_ok = True
            for key in ("s_n", "tau", "delta_xi", "radius_lift"):
                assert rel(det[key], ref[key]) < 1e-11, key
            assert det["g_bar"] == pytest.approx(ref["g_bar"], abs=1e-12)
        else:
            assert not cert.certified and cert.delta == 1.0
    assert seen_ok


def test_c13_alpha_bar_matches_direct_formula_over_many_n():
    """alpha-bar = gamma_N - eta M R-bar B nu-tilde_N rho^(N-1) over N = 1..400, vectorised."""
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    Ns = np.arange(1, 401)
    terms = theorem_c13.c13_terms(pc, sigma, r, r_outer, Ns)
    c = ref_constants(pc)
    r_bar = (mpf(r_outer) + c.l1z) / c.mu
    for N in [1, 2, 3, 4, 7, 12, 18, 25, 50, 100, 150, 200, 300, 400]:
        nut = nu_tilde_sum(c.rho, N)
        gamma = (1 - (1 - c.eta * c.L) ** N) / c.L
        alpha = gamma - c.eta * c.M * r_bar * (1 / c.mu) * nut * c.rho ** (N - 1)
        i = N - 1
        assert terms.alpha_bar[i] == pytest.approx(float(alpha), rel=1e-11, abs=1e-14)
        assert terms.nu_tilde[i] == pytest.approx(float(nut), rel=1e-12, abs=1e-300)
        assert terms.gamma[i] == pytest.approx(float(gamma), rel=1e-13)
    assert np.any(terms.alpha_bar <= 0) and np.any(terms.alpha_bar > 0)


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
@pytest.mark.parametrize("kind", ["paper", "exact"])
def test_c13_vectorised_equals_scalar_certify(s, kind):
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    th = theorem41.threshold_iterations(pc, sigma, u)
    Ns = np.unique(np.array([1, 2, 10, th // 4, th // 3, th // 2, th, 3 * th, 10**6]))
    eps = np.array([0.05, 0.5, 1.0, 2.0, 8.0])
    grid = theorem_c13.delta_n(pc, sigma, r, r_outer, Ns[:, None], eps[None, :], truncation=kind)
    assert grid.shape == (Ns.size, eps.size)
    for i, N in enumerate(Ns):
        for j, e in enumerate(eps):
            cert = theorem_c13.certify(pc, sigma, int(N), float(e), u=u, truncation=kind)
            same = theorem_c13.certify(
                pc, sigma, int(N), float(e), r=r, r_outer=r_outer, truncation=kind
            )
            assert same.delta == cert.delta
            assert grid[i, j] == pytest.approx(cert.delta, rel=1e-12)
            assert cert.certified == (grid[i, j] < 1.0)
            if cert.certified:
                assert cert.delta == pytest.approx(
                    cert.truncation_mass + cert.divergence_term, rel=1e-15
                )
                ref = c13_ref(pc, sigma, r, r_outer, int(N)) if N <= 2000 else None
                if ref is not None:
                    div = 2 * mpf(pc.G) / sigma * mp_q1(mpf(sigma) / mpf(pc.G) * (e - ref["s_n"]))
                    assert cert.divergence_term == pytest.approx(float(div), rel=1e-10)


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_c13_delta_decreasing_in_epsilon(s):
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    eps = np.linspace(0.0, 6.0, 601)
    th = theorem41.threshold_iterations(pc, sigma, u)
    d = theorem_c13.delta_n(
        pc, sigma, r, r_outer, np.array([[th // 2], [th], [4 * th]]), eps[None, :]
    )
    assert np.all(np.diff(d, axis=1) <= 0)
    assert np.all(d >= 0) and np.all(d <= 1)


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_c13_at_least_as_tight_as_theorem41(s):
    """Same sigma, u and radii: for N past eq. (7), s_N <= epsilon_0 and delta_N <= delta."""
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    th = theorem41.threshold_iterations(pc, sigma, u)
    Ns = np.concatenate([np.arange(th, th + 200), np.geomspace(th + 200, 10**6, 50).round()])
    eps = np.array([0.1, 0.5, 1.0, 2.0, 5.0])
    s_n = theorem_c13.c13_terms(pc, sigma, r, r_outer, Ns).s_n
    e0 = theorem41.epsilon0(pc, sigma, Ns)
    assert np.all(np.isfinite(s_n))
    assert np.all(s_n <= e0 * (1 + 1e-12))
    for kind in ("paper", "exact"):
        d13 = theorem_c13.delta_n(pc, sigma, r, r_outer, Ns[:, None], eps[None, :], truncation=kind)
        d41 = theorem41.delta(pc, sigma, u, Ns[:, None], eps[None, :], truncation=kind)
        assert np.all(d13 <= d41 * (1 + 1e-12))


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_exact_truncation_beats_paper(s):
    pc, sigma, u = s.pc, s.sigma, s.u
    th = theorem41.threshold_iterations(pc, sigma, u)
    for N in (th, 2 * th):
        for eps in (1.0, 3.0):
            paper = theorem_c13.certify(pc, sigma, N, eps, u=u, truncation="paper")
            ex = theorem_c13.certify(pc, sigma, N, eps, u=u, truncation="exact")
            r = sigma * (math.sqrt(min(pc.d, pc.n + 1)) + u)
            assert paper.truncation_mass == pytest.approx(math.exp(-u * u / 2), rel=1e-15)
            assert ex.truncation_mass == pytest.approx(
                float(chi_tail(r / sigma, min(pc.d, pc.n + 1))), rel=1e-12
            )
            assert ex.truncation_mass < paper.truncation_mass
            assert ex.divergence_term == paper.divergence_term
            if paper.certified:
                assert ex.certified and ex.delta < paper.delta
            t41p = theorem41.certify(pc, sigma, u, N, eps, truncation="paper")
            t41e = theorem41.certify(pc, sigma, u, N, eps, truncation="exact")
            if t41p.certified:
                assert t41e.delta < t41p.delta


ETA_1_OVER_L = [s for s in SETTINGS if s.eta_frac == 1.0]


@pytest.mark.parametrize("s", ETA_1_OVER_L, ids=[s.name for s in ETA_1_OVER_L])
def test_limit_delta_is_below_every_finite_n_and_is_the_limit(s):
    """Remark C.16 at eta = 1/L: delta_inf <= delta_N for every N, and delta_N minus its
    truncation mass tends to delta_inf."""
    pc, sigma, u = s.pc, s.sigma, s.u
    assert pc.eta == 1.0 / pc.L
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    Ns = np.arange(1, 200_001)
    for eps in (0.3, 1.0, 2.5):
        lim = float(theorem_c13.limit_delta(pc, sigma, eps))
        s_inf = pc.G**2 / (2 * sigma**2) + math.log1p(pc.delta_H / (2 * pc.n * pc.mu))
        ref = 2 * mpf(pc.G) / sigma * mp_q1(mpf(sigma) / mpf(pc.G) * (eps - mpf(s_inf)))
        assert lim == pytest.approx(float(min(ref, 1)), rel=1e-11)
        for kind in ("paper", "exact"):
            d = theorem_c13.delta_n(pc, sigma, r, r_outer, Ns, eps, truncation=kind)
            assert np.all(d >= lim)
            trunc = truncation.truncation_mass(sigma, pc.d_star, r, kind)
            far = float(theorem_c13.delta_n(pc, sigma, r, r_outer, 10**7, eps, truncation=kind))
            if lim + trunc < 1:
                assert far - trunc == pytest.approx(lim, rel=1e-9)
        lim_cert = theorem_c13.certify_limit(pc, sigma, eps)
        assert lim_cert.delta == pytest.approx(lim if lim < 1 else 1.0, rel=1e-15)
        assert lim_cert.certified == (lim < 1)
        assert lim_cert.truncation_mass == 0.0


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
@pytest.mark.parametrize("kind", ["paper", "exact"])
def test_epsilon_for_delta_reaches_the_target_and_no_less(s, kind):
    """The inverses of eq. (50) and of the limit form: delta(epsilon) <= target exactly
    (not a few ulps above it), and a hair less epsilon certifies only a larger delta."""
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    th = theorem41.threshold_iterations(pc, sigma, u)
    for target in (1e-2, 3e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
        pairs = [
            (
                float(theorem_c13.limit_epsilon_for_delta(pc, sigma, target)),
                lambda e: float(theorem_c13.limit_delta(pc, sigma, e)),
            )
        ]
        for N in (th, 2 * th, 10 * th):
            eps = theorem_c13.epsilon_for_delta(pc, sigma, r, r_outer, N, target, kind)
            pairs.append(
                (
                    float(eps),
                    lambda e, N=N: float(
                        theorem_c13.delta_n(pc, sigma, r, r_outer, N, e, truncation=kind)
                    ),
                )
            )
        for eps, delta_of in pairs:
            if not math.isfinite(eps):
                continue
            assert delta_of(eps) <= target
            assert delta_of(eps) == pytest.approx(target, rel=1e-9)
            assert delta_of(eps * (1 - 1e-9)) > target


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_delta_at_infinite_epsilon_is_its_limit(s):
    """delta(epsilon) decreases to the truncation mass (0 for the limit form) as epsilon
    grows: at epsilon = inf it is that limit, not the trivial bound 1."""
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    th = theorem41.threshold_iterations(pc, sigma, u)
    for delta_of in (
        lambda e: theorem41.delta(pc, sigma, u, th, e),
        lambda e: theorem_c13.delta_n(pc, sigma, r, r_outer, th, e),
        lambda e: theorem_c13.limit_delta(pc, sigma, e),
    ):
        at_inf, large = float(delta_of(math.inf)), float(delta_of(1e300))
        assert at_inf == large < 1.0


def test_c13_radius_condition_and_explicit_radii():
    s = SETTINGS[0]
    pc, sigma = s.pc, s.sigma
    r = sigma * (math.sqrt(pc.d_star) + 5.0)
    cert = theorem_c13.certify(pc, sigma, 200, 1.0, r=r)
    assert cert.details["radius_outer"] == pytest.approx(r + 2 * pc.L * pc.G / pc.mu, rel=1e-15)
    assert cert.details["u"] == pytest.approx(5.0, rel=1e-12)
    # a too-small outer radius fails the fixed-point inequality (47)
    lift = cert.details["radius_lift"]
    tight_outer = theorem_c13.certify(pc, sigma, 200, 1.0, r=r, r_outer=r + 0.5 * lift)
    assert not tight_outer.certified
    assert any("radius condition" in x for x in tight_outer.reasons)
    loose = theorem_c13.certify(pc, sigma, 200, 1.0, r=r, r_outer=r + 1.01 * lift)
    assert loose.details["radius_ok"]
    with pytest.raises(ParameterError, match="r_outer"):
        theorem_c13.certify(pc, sigma, 200, 1.0, r=r, r_outer=0.5 * r)
    with pytest.raises(ParameterError, match="u"):
        theorem_c13.certify(pc, sigma, 200, 1.0)
