"""Tests of the certificate layer (objpert.certify) against independent computations.

Every expected value is recomputed here from the paper's formulas (Watkins & Arora 2026) with
mpmath, explicit sums, brute-force searches or numerical integration: eqs. (7)-(10) of
Theorem 4.1, eqs. (21)-(22), Lemma C.5 eq. (36), Theorem C.13 eqs. (47)-(50) with the radii of
Section C.4, Remark C.16, eq. (12), Theorems 4.7/4.9/4.10, Corollary 4.11 and Section C.5.
The paper's printed numbers are checked elsewhere and not repeated here.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import time
from dataclasses import dataclass

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize
from scipy.special import expit

from objpert.certify import (
    exact,
    gaussian,
    min_iterations,
    problem,
    sequences,
    theorem41,
    truncation,
    utility,
)
from objpert.certify.constants import ProblemConstants
from objpert.errors import ObjpertError, ParameterError, UnreachableTargetError
from objpert.special import chi_tail

mpmath.mp.dps = 40
mpf = mpmath.mpf

# ----------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Setting:
    """A problem with a noise scale sigma = sigma_over_g * G and truncation parameter u."""

    name: str
    loss: str
    n: int
    d: int
    zeta: float
    mu: float
    eta_frac: float  # eta = eta_frac / L
    sigma_over_g: float
    u: float
    loss_params: tuple = ()

    @property
    def pc(self) -> ProblemConstants:
        kw = dict(self.loss_params)
        base = problem(self.loss, n=self.n, d=self.d, zeta=self.zeta, mu=self.mu, **kw)
        if self.eta_frac == 1.0:
            return base
        return problem(
            self.loss,
            n=self.n,
            d=self.d,
            zeta=self.zeta,
            mu=self.mu,
            eta=self.eta_frac / base.L,
            **kw,
        )

    @property
    def sigma(self) -> float:
        return self.sigma_over_g * 2.0 * self.pc.L1 * self.zeta / self.n


SETTINGS = [
    Setting("logistic-mu0.05", "logistic", 10**4, 50, 1.0, 0.05, 1.0, 5.0, 6.0),
    Setting("logistic-mu0.2", "logistic", 10**4, 50, 1.0, 0.2, 1.0, 8.0, 6.0),
    Setting("robust-halfstep", "robust", 10**5, 20, 1.0, 0.1, 0.5, 5.0, 6.0),
    Setting("robust-scaled", "robust", 10**4, 50, 2.0, 0.05, 1.0, 6.0, 7.0, (("scale", 0.5),)),
    Setting("example-4.8", "logistic", 10**6, 10**4, 1.0, 0.01, 1.0, 5.0, 6.0),
]
SMALL = SETTINGS[:3]
IDS = [s.name for s in SETTINGS]
SMALL_IDS = [s.name for s in SMALL]


@dataclass(frozen=True)
class Ref:
    """Public constants recomputed from the raw inputs (Section 3.1), as mpmath numbers."""

    L: mpmath.mpf
    M: mpmath.mpf
    G: mpmath.mpf
    delta_h: mpmath.mpf
    rho: mpmath.mpf
    eta: mpmath.mpf
    mu: mpmath.mpf
    l1z: mpmath.mpf
    d_star: int
    n: int


def ref_constants(pc: ProblemConstants) -> Ref:
    mu, zeta = mpf(pc.mu), mpf(pc.zeta)
    return Ref(
        L=mu + mpf(pc.L2) * zeta**2,
        M=mpf(pc.L3) * zeta**3,
        G=2 * mpf(pc.L1) * zeta / pc.n,
        delta_h=2 * mpf(pc.L2) * zeta**2,
        rho=1 - mpf(pc.eta) * mu,
        eta=mpf(pc.eta),
        mu=mu,
        l1z=mpf(pc.L1) * zeta,
        d_star=min(pc.d, pc.n + 1),
        n=pc.n,
    )


def mp_q1(t) -> mpmath.mpf:
    t = mpf(t)
    return mpmath.npdf(t) - t * mpmath.erfc(t / mpmath.sqrt(2)) / 2


def nu_sum(rho, N: int):
    """eq. (21) as the explicit sum."""
    return mpmath.fsum(1 - rho**k for k in range(N))


@functools.cache
def nu_tilde_sum(rho, N: int):
    """eq. (22) as the explicit sum."""
    return mpmath.fsum((1 - rho ** (N - k)) * (1 - rho**k) for k in range(N))


def g_n(eta: float, h: np.ndarray, N: int) -> np.ndarray:
    """eq. (36) with explicit sums: g_N(h) = 1 - N a^(N-1) / sum_{j<N} a^j, a = 1 - eta h."""
    a = 1.0 - eta * np.asarray(h, dtype=float)
    powers = a[:, None] ** np.arange(N)[None, :]
    return 1.0 - N * a ** (N - 1) / powers.sum(axis=1)


def g_bar_brute(pc: ProblemConstants, N: int, points: int | None = None) -> float:
    """sup of eq. (36) over a grid of h in [mu, L] (L = mu + L2 zeta^2) containing both ends."""
    if points is None:
        points = 2001 if N <= 1000 else 101
    L = pc.mu + pc.L2 * pc.zeta**2
    return float(np.max(g_n(pc.eta, np.linspace(pc.mu, L, points), N)))


# -- Theorem 4.1, eqs. (7)-(10)


def eq7_bound(pc: ProblemConstants, sigma: float, u: float):
    """The right side of eq. (7), from the raw constants."""
    c = ref_constants(pc)
    sigma = mpf(sigma)
    r = sigma * (mpmath.sqrt(c.d_star) + u)
    r_outer = r + 2 * c.L * c.G / c.mu
    r_bar = (r_outer + c.l1z) / c.mu
    m = min(1, c.M * c.G / c.L)
    first = 2 * c.mu * r_bar * r_outer / (c.G * sigma)
    second = 8 * c.L * c.M * (1 / c.mu) * r_bar / (mpmath.e * c.rho * c.mu * m)
    return 2 / (c.eta * c.mu) * mpmath.log(max(first, second, 4))


def eps0_ref(pc: ProblemConstants, sigma: float, N: int):
    """epsilon_0 of eq. (9) with tau* of eq. (8)."""
    c = ref_constants(pc)
    sigma = mpf(sigma)
    half = c.rho ** (mpf(N) / 2)
    tau_star = (
        mpmath.log(1 + c.delta_h / (2 * c.n * c.mu))
        + min(1, c.M * c.G / c.L) * (mpmath.e * c.eta * c.mu / 2) * N * half
    )
    return c.G / sigma * half + c.G**2 / (2 * sigma**2) * (1 + half) ** 2 + tau_star


def delta41_ref(pc: ProblemConstants, sigma: float, u: float, N: int, eps: float) -> float:
    """delta(epsilon) of eq. (10); 1 below the threshold or below epsilon_0."""
    if eq7_bound(pc, sigma, u) > N:
        return 1.0
    e0 = eps0_ref(pc, sigma, N)
    if eps < e0:
        return 1.0
    c = ref_constants(pc)
    val = mpmath.exp(-(mpf(u) ** 2) / 2) + 2 * c.G / sigma * mp_q1(mpf(sigma) / c.G * (eps - e0))
    return float(min(val, 1))


# -- Theorem C.13, eqs. (47)-(50)


@functools.cache
def c13_ref(pc: ProblemConstants, sigma: float, r: float, r_outer: float, N: int) -> dict:
    c = ref_constants(pc)
    sigma, r, r_outer = mpf(sigma), mpf(r), mpf(r_outer)
    r_bar = (r_outer + c.l1z) / c.mu
    gamma = (1 - (1 - c.eta * c.L) ** N) / c.L
    nut = nu_tilde_sum(c.rho, N)
    jac = c.eta * c.M * r_bar * (1 / c.mu) * nut * c.rho ** (N - 1)
    alpha = gamma - jac
    out = {"alpha_bar": alpha, "gamma": gamma, "nu_tilde": nut}
    if alpha <= 0:
        out.update(radius_ok=False, s_n=mpmath.inf)
        return out
    lift = c.G * (1 - c.rho**N) / (c.mu * alpha)
    delta_xi = 2 * c.mu * c.rho**N * r_bar
    g_bar = g_bar_brute(pc, N)
    tau = g_bar * mpmath.log(1 + c.delta_h / (2 * c.n * c.mu)) + 2 * jac / alpha
    s_n = r * delta_xi / sigma**2 + (c.G + delta_xi) ** 2 / (2 * sigma**2) + tau
    ok = r_outer >= r + lift
    out.update(
        radius_ok=bool(ok),
        radius_lift=lift,
        delta_xi=delta_xi,
        g_bar=g_bar,
        tau=tau,
        s_n=s_n if ok else mpmath.inf,
    )
    return out


def paper_radii_ref(pc: ProblemConstants, sigma: float, u: float) -> tuple[float, float]:
    c = ref_constants(pc)
    r = mpf(sigma) * (mpmath.sqrt(c.d_star) + u)
    return float(r), float(r + 2 * c.L * c.G / c.mu)


def rel(a, b) -> float:
    a, b = mpf(a), mpf(b)
    return float(abs(a - b) / abs(b)) if b != 0 else float(abs(a))


# ----------------------------------------------------------------------------- sequences

# (label, loss kwargs, mu, eta_frac or an absolute eta): eta mu from 1e-6 to ~0.98
SEQ_CASES = [
    ("tiny-eta", dict(mu=1e-4), 0.01),  # eta = 0.01, eta mu = 1e-6
    ("tiny-mu", dict(mu=0.25e-6 / (1 - 1e-6)), None),  # eta = 1/L, eta mu = 1e-6
    ("small", dict(mu=1e-3), None),
    ("example", dict(mu=0.01), None),
    ("half-step", dict(mu=0.2), "half"),
    ("large", dict(mu=10.0), None),  # eta mu = 10/10.25
]


def _seq_pc(kw: dict, eta) -> ProblemConstants:
    base = problem("logistic", n=1000, d=5, zeta=1.0, **kw)
    if eta is None:
        return base
    if eta == "half":
        return problem("logistic", n=1000, d=5, zeta=1.0, eta=0.5 / base.L, **kw)
    return problem("logistic", n=1000, d=5, zeta=1.0, eta=eta, **kw)


@pytest.mark.parametrize(("label", "kw", "eta"), SEQ_CASES, ids=[c[0] for c in SEQ_CASES])
def test_nu_and_nu_tilde_match_explicit_sums(label, kw, eta):
    """eqs. (21)-(22): closed forms equal the defining sums for every N = 1..2000."""
    pc = _seq_pc(kw, eta)
    N_max = 2000
    Ns = np.arange(1, N_max + 1)
    nu = sequences.nu_n(pc, Ns)
    nut = sequences.nu_tilde_n(pc, Ns)
    # explicit sums in double precision with exactly rounded terms 1 - rho^k (all positive)
    t = -np.expm1(np.arange(N_max + 1) * math.log1p(-pc.eta * pc.mu))
    nu_ref = np.cumsum(t[:N_max])
    nut_ref = np.array([math.fsum(t[1 : N + 1][::-1] * t[:N]) for N in Ns])
    assert nu[0] == 0.0 and nut[0] == 0.0  # nu_1 = nu-tilde_1 = 0
    np.testing.assert_allclose(nu[1:], nu_ref[1:], rtol=1e-12, atol=0)
    np.testing.assert_allclose(nut[1:], nut_ref[1:], rtol=1e-12, atol=0)
    # 0 <= nu-tilde_N <= nu_N <= N (eq. 22)
    assert np.all(nut >= 0) and np.all(nut <= nu * (1 + 1e-14)) and np.all(nu <= Ns)
    # spot checks against 40-digit sums
    rho = 1 - mpf(pc.eta * pc.mu)
    for N in (2, 3, 17, 500, 2000):
        assert rel(nu[N - 1], nu_sum(rho, N)) < 1e-13
        assert rel(nut[N - 1], nu_tilde_sum(rho, N)) < 1e-13


def test_nu_sequences_scalar_and_large_n():
    pc = _seq_pc(dict(mu=1e-3), None)
    Ns = np.array([1.0, 2.0, 10.0, 1e4, 1e6, 1e9])
    vec_nu, vec_nut = sequences.nu_n(pc, Ns), sequences.nu_tilde_n(pc, Ns)
    for i, N in enumerate(Ns):
        assert float(sequences.nu_n(pc, N)) == pytest.approx(vec_nu[i], rel=1e-15)
        assert float(sequences.nu_tilde_n(pc, N)) == pytest.approx(vec_nut[i], rel=1e-15)
    # large N: nu_N -> N - 1/(eta mu), nu-tilde_N -> N - (1 + rho)/(eta mu)
    x = pc.eta * pc.mu
    assert vec_nu[-1] == pytest.approx(1e9 - 1 / x, rel=1e-14)
    assert vec_nut[-1] == pytest.approx(1e9 - (2 - x) / x, rel=1e-14)


@pytest.mark.parametrize("eta_frac", [1.0, 0.5, 1e-3])
@pytest.mark.parametrize("mu", [1e-3, 0.05, 1.0])
def test_gamma_n_is_the_frozen_hessian_floor(mu, eta_frac):
    """gamma_N = (1 - (1 - eta L)^N)/L = min over h in [mu, L] of (1 - (1 - eta h)^N)/h."""
    base = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu)
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu, eta=eta_frac / base.L)
    L = mu + 0.25
    hs = np.linspace(mu, L, 4001)
    for N in (1, 2, 3, 10, 100, 5000):
        value = float(sequences.gamma_n(pc, N))
        ref = (1 - (1 - mpf(pc.eta) * (mpf(mu) + mpf(0.25))) ** N) / (mpf(mu) + mpf(0.25))
        assert rel(value, ref) < 1e-13
        with np.errstate(divide="ignore"):  # eta h = 1 at h = L when eta = 1/L
            profile = -np.expm1(N * np.log1p(-pc.eta * hs)) / hs
        assert value <= profile.min() * (1 + 1e-13)
        assert value >= pc.eta * (1 - 1e-13)  # gamma_N >= eta (Lemma A.9)


@pytest.mark.parametrize(
    ("mu", "eta_frac"),
    [(0.01, 1.0), (0.2, 1.0), (0.01, 0.5), (0.2, 0.9), (1e-4, 0.3), (0.3, 1e-3)],
)
def test_g_bar_is_the_sup_of_eq36(mu, eta_frac):
    """Lemma C.5: g-bar_N = sup over h in [mu, L] of eq. (36), brute force on a fine grid."""
    base = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu)
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu, eta=eta_frac / base.L)
    Ns = [1, 2, 3, 5, 10, 50, 200, 1000]
    vec = sequences.g_bar_n(pc, np.array(Ns))
    for i, N in enumerate(Ns):
        value = float(sequences.g_bar_n(pc, N))
        assert value == vec[i]
        brute = g_bar_brute(pc, N)
        assert value >= brute - 1e-13  # never below the sup (tau0 must not shrink)
        assert value == pytest.approx(brute, abs=1e-12)
        a_min = 1 - pc.eta * (pc.mu + 0.25)
        assert 0.0 <= value <= 1 - max(a_min, 0.0) ** (N - 1) + 1e-15  # Lemma C.5's bound
    if eta_frac == 1.0:  # Section C.4: g-bar_N = 1 for N >= 2 at eta = 1/L
        assert vec[0] == 0.0 and np.all(vec[1:] == 1.0)


@pytest.mark.parametrize("x", [1e-9, 1e-3, 0.3, 0.99])
def test_rho_power_is_floored_and_exact_otherwise(x):
    """rho^p never returns a subnormal or 0 (floored at e^-708), and equals rho^p otherwise."""
    mu = 24.75  # 1/L = 1/25, so eta = x/mu <= 1/L for every x <= 0.99
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu, eta=x / mu)
    p = np.concatenate([np.arange(0, 50) / 2, np.geomspace(10, 1e12, 200)])
    values = sequences.rho_power(pc, p)
    assert np.all(values >= np.finfo(float).tiny) and np.all(values <= 1.0)
    rho = 1 - mpf(pc.eta * pc.mu)
    floored = 0
    for pi, v in zip(p, values, strict=True):
        ref = rho ** mpf(pi)
        if ref > 1e-300:
            assert rel(v, ref) < 1e-12
            if ref < 1:
                assert rel(sequences.one_minus_rho_power(pc, pi), 1 - ref) < 1e-12
        else:
            floored += 1
            assert v == math.exp(-708.0)  # the documented floor, a normal double
    assert floored > 0 or x < 1e-3
    assert float(sequences.rho_power(pc, 0)) == 1.0
    assert float(sequences.rho_power(pc, 1e300)) == math.exp(-708.0)


# ----------------------------------------------------------------------------- Theorem 4.1


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
            assert float(theorem41.delta(pc, sigma, u, N, eps, truncation=kind)) == pytest.approx(
                target, rel=1e-9
            )
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


# ----------------------------------------------------------------------------- Theorem C.13


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_c13_terms_match_eqs_47_to_49(s):
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = exact.paper_radii(pc, sigma, u)
    rr, rro = paper_radii_ref(pc, sigma, u)
    assert r == pytest.approx(rr, rel=1e-14) and r_outer == pytest.approx(rro, rel=1e-14)
    th = theorem41.threshold_iterations(pc, sigma, u)
    Ns = sorted({1, 2, 3, 5, 20, 69, th // 3, th // 2, th, 2 * th})
    seen_ok = False
    for N in Ns:
        ref = c13_ref(pc, sigma, r, r_outer, N)
        cert = exact.certify(pc, sigma, N, 1.0, u=u)
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
    r, r_outer = exact.paper_radii(pc, sigma, u)
    Ns = np.arange(1, 401)
    terms = exact.c13_terms(pc, sigma, r, r_outer, Ns)
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
    r, r_outer = exact.paper_radii(pc, sigma, u)
    th = theorem41.threshold_iterations(pc, sigma, u)
    Ns = np.unique(np.array([1, 2, 10, th // 4, th // 3, th // 2, th, 3 * th, 10**6]))
    eps = np.array([0.05, 0.5, 1.0, 2.0, 8.0])
    grid = exact.delta_n(pc, sigma, r, r_outer, Ns[:, None], eps[None, :], truncation=kind)
    assert grid.shape == (Ns.size, eps.size)
    for i, N in enumerate(Ns):
        for j, e in enumerate(eps):
            cert = exact.certify(pc, sigma, int(N), float(e), u=u, truncation=kind)
            same = exact.certify(pc, sigma, int(N), float(e), r=r, r_outer=r_outer, truncation=kind)
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
    r, r_outer = exact.paper_radii(pc, sigma, u)
    eps = np.linspace(0.0, 6.0, 601)
    th = theorem41.threshold_iterations(pc, sigma, u)
    d = exact.delta_n(pc, sigma, r, r_outer, np.array([[th // 2], [th], [4 * th]]), eps[None, :])
    assert np.all(np.diff(d, axis=1) <= 0)
    assert np.all(d >= 0) and np.all(d <= 1)


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_c13_at_least_as_tight_as_theorem41(s):
    """Same sigma, u and radii: for N past eq. (7), s_N <= epsilon_0 and delta_N <= delta."""
    pc, sigma, u = s.pc, s.sigma, s.u
    r, r_outer = exact.paper_radii(pc, sigma, u)
    th = theorem41.threshold_iterations(pc, sigma, u)
    Ns = np.concatenate([np.arange(th, th + 200), np.geomspace(th + 200, 10**6, 50).round()])
    eps = np.array([0.1, 0.5, 1.0, 2.0, 5.0])
    s_n = exact.c13_terms(pc, sigma, r, r_outer, Ns).s_n
    e0 = theorem41.epsilon0(pc, sigma, Ns)
    assert np.all(np.isfinite(s_n))
    assert np.all(s_n <= e0 * (1 + 1e-12))
    for kind in ("paper", "exact"):
        d13 = exact.delta_n(pc, sigma, r, r_outer, Ns[:, None], eps[None, :], truncation=kind)
        d41 = theorem41.delta(pc, sigma, u, Ns[:, None], eps[None, :], truncation=kind)
        assert np.all(d13 <= d41 * (1 + 1e-12))


@pytest.mark.parametrize("s", SETTINGS, ids=IDS)
def test_exact_truncation_beats_paper(s):
    pc, sigma, u = s.pc, s.sigma, s.u
    th = theorem41.threshold_iterations(pc, sigma, u)
    for N in (th, 2 * th):
        for eps in (1.0, 3.0):
            paper = exact.certify(pc, sigma, N, eps, u=u, truncation="paper")
            ex = exact.certify(pc, sigma, N, eps, u=u, truncation="exact")
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
    r, r_outer = exact.paper_radii(pc, sigma, u)
    Ns = np.arange(1, 200_001)
    for eps in (0.3, 1.0, 2.5):
        lim = float(exact.limit_delta(pc, sigma, eps))
        s_inf = pc.G**2 / (2 * sigma**2) + math.log1p(pc.delta_H / (2 * pc.n * pc.mu))
        ref = 2 * mpf(pc.G) / sigma * mp_q1(mpf(sigma) / mpf(pc.G) * (eps - mpf(s_inf)))
        assert lim == pytest.approx(float(min(ref, 1)), rel=1e-11)
        for kind in ("paper", "exact"):
            d = exact.delta_n(pc, sigma, r, r_outer, Ns, eps, truncation=kind)
            assert np.all(d >= lim)
            trunc = truncation.truncation_mass(sigma, pc.d_star, r, kind)
            far = float(exact.delta_n(pc, sigma, r, r_outer, 10**7, eps, truncation=kind))
            if lim + trunc < 1:
                assert far - trunc == pytest.approx(lim, rel=1e-9)
        lim_cert = exact.certify_limit(pc, sigma, eps)
        assert lim_cert.delta == pytest.approx(lim if lim < 1 else 1.0, rel=1e-15)
        assert lim_cert.certified == (lim < 1)
        assert lim_cert.truncation_mass == 0.0


def test_c13_radius_condition_and_explicit_radii():
    s = SETTINGS[0]
    pc, sigma = s.pc, s.sigma
    r = sigma * (math.sqrt(pc.d_star) + 5.0)
    cert = exact.certify(pc, sigma, 200, 1.0, r=r)
    assert cert.details["radius_outer"] == pytest.approx(r + 2 * pc.L * pc.G / pc.mu, rel=1e-15)
    assert cert.details["u"] == pytest.approx(5.0, rel=1e-12)
    # a too-small outer radius fails the fixed-point inequality (47)
    lift = cert.details["radius_lift"]
    tight_outer = exact.certify(pc, sigma, 200, 1.0, r=r, r_outer=r + 0.5 * lift)
    assert not tight_outer.certified
    assert any("radius condition" in x for x in tight_outer.reasons)
    loose = exact.certify(pc, sigma, 200, 1.0, r=r, r_outer=r + 1.01 * lift)
    assert loose.details["radius_ok"]
    with pytest.raises(ParameterError, match="r_outer"):
        exact.certify(pc, sigma, 200, 1.0, r=r, r_outer=0.5 * r)
    with pytest.raises(ParameterError, match="u"):
        exact.certify(pc, sigma, 200, 1.0)


# ----------------------------------------------------------------------------- serialisation

SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
REQUIRED = {
    "form",
    "iterations",
    "threshold_iterations",
    "epsilon",
    "delta",
    "truncation_mass",
    "divergence_term",
    "certified",
}


def _certificates():
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    return {
        "theorem41": theorem41.certify(pc, sigma, u, 400, 1.0),
        "theorem41-failed": theorem41.certify(pc, sigma, u, 3, 1.0),
        "c13": exact.certify(pc, sigma, 100, 1.0, u=u),
        "c13-failed": exact.certify(pc, sigma, 2, 1.0, u=u),
        "c13-exact": exact.certify(pc, sigma, 100, 1.0, u=u, truncation="exact"),
        "limit": exact.certify_limit(pc, sigma, 1.0),
    }


@pytest.mark.parametrize("label", list(_certificates()))
def test_certificates_serialise(label):
    cert = _certificates()[label]
    d = cert.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert json.loads(cert.to_json()) == back
    assert all(SNAKE.match(k) for k in back), [k for k in back if not SNAKE.match(k)]
    assert set(back) >= REQUIRED
    assert back["form"] == cert.form
    assert back["certified"] is cert.certified
    assert isinstance(back["constants"], dict) and back["constants"]["n"] == SETTINGS[0].n
    if cert.form == "theorem41":
        assert "epsilon0" in back
    if cert.form == "c13":
        assert {"alpha_bar", "s_n", "tau", "radius_ok"} <= set(back)
        assert isinstance(back["radius_ok"], bool)
    if cert.certified:
        assert back["delta"] == pytest.approx(back["truncation_mass"] + back["divergence_term"])
    else:
        assert back["delta"] == 1.0 and back["reasons"]


# ----------------------------------------------------------------------------- search


def _brute_first(pc, sigma, eps, delta, u, form, kind, cap=20_000):
    for N in range(1, cap + 1):
        if form == "c13":
            c = exact.certify(pc, sigma, N, eps, u=u, truncation=kind)
        else:
            c = theorem41.certify(pc, sigma, u, N, eps, truncation=kind)
        if c.certified and c.delta <= delta:
            return N, c
    raise AssertionError("brute force found nothing")


SEARCH_CASES = [
    (SETTINGS[0], "c13", "paper"),
    (SETTINGS[0], "c13", "exact"),
    (SETTINGS[0], "theorem41", "paper"),
    (SETTINGS[1], "c13", "paper"),
    (SETTINGS[1], "theorem41", "exact"),
    (SETTINGS[2], "c13", "exact"),
    (SETTINGS[2], "theorem41", "paper"),
]


@pytest.mark.parametrize(
    ("s", "form", "kind"), SEARCH_CASES, ids=[f"{s.name}-{f}-{k}" for s, f, k in SEARCH_CASES]
)
def test_min_iterations_equals_brute_force(s, form, kind):
    pc, sigma, u = s.pc, s.sigma, s.u
    for eps, delta in ((1.0, 1e-6), (2.0, 1e-7)):
        found = min_iterations(pc, sigma, eps, delta, u=u, form=form, truncation=kind)
        N, brute = _brute_first(pc, sigma, eps, delta, u, form, kind)
        assert found.iterations == N
        assert found.form == form and found.certified and found.delta <= delta
        assert found.delta == brute.delta
        if form == "theorem41":
            assert theorem41.threshold_iterations(pc, sigma, u) <= N


def test_min_iterations_respects_n_max_and_explicit_radii():
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    first = min_iterations(pc, sigma, 1.0, 1e-6, u=u).iterations
    assert min_iterations(pc, sigma, 1.0, 1e-6, u=u, n_max=first).iterations == first
    with pytest.raises(UnreachableTargetError, match="iterations"):
        min_iterations(pc, sigma, 1.0, 1e-6, u=u, n_max=first - 1)
    r, r_outer = exact.paper_radii(pc, sigma, u)
    by_radius = min_iterations(pc, sigma, 1.0, 1e-6, r=r, r_outer=r_outer)
    assert by_radius.iterations == first


def test_unreachable_targets_explain_what_to_change():
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    s_inf = pc.G**2 / (2 * sigma**2) + math.log1p(pc.delta_H / (2 * pc.n * pc.mu))
    # epsilon below the N -> infinity floor: more noise is needed
    with pytest.raises(UnreachableTargetError, match="sigma") as err:
        min_iterations(pc, sigma, 0.5 * s_inf, 1e-6, u=u)
    assert "s_inf" in str(err.value)
    with pytest.raises(UnreachableTargetError, match="sigma"):
        min_iterations(pc, sigma, 0.5 * s_inf, 1e-6, u=u, form="theorem41")
    # epsilon below the log-determinant term: no sigma helps; mu (or n) must grow
    log_det = math.log1p(pc.delta_H / (2 * pc.n * pc.mu))
    with pytest.raises(UnreachableTargetError, match="mu"):
        min_iterations(pc, sigma, 0.5 * log_det, 1e-6, u=u)
    # delta below the truncation mass: u must grow
    for kind in ("paper", "exact"):
        mass = truncation.truncation_mass(
            sigma, pc.d_star, truncation.radius_from_u(sigma, pc.d_star, u), kind
        )
        with pytest.raises(UnreachableTargetError, match=r"increase u") as err:
            min_iterations(pc, sigma, 1.0, 0.5 * mass, u=u, truncation=kind)
        assert "truncation mass" in str(err.value)
    # the hints are actionable: just past the suggested sigma (or u) the target is reachable
    for eps in (0.01, 0.02):
        with pytest.raises(UnreachableTargetError) as err:
            min_iterations(pc, sigma, eps, 1e-6, u=u)
        need = float(re.search(r"sigma to more than ([0-9.e+-]+)", _msg(err)).group(1))
        assert min_iterations(pc, 1.02 * need, eps, 1e-6, u=u).certified
        with pytest.raises(UnreachableTargetError, match="sigma"):
            min_iterations(pc, 0.98 * need, eps, 1e-6, u=u)
    with pytest.raises(UnreachableTargetError) as err:
        min_iterations(pc, sigma, 2.0, 1e-9, u=u)
    need_u = float(re.search(r"increase u above ([0-9.e+-]+)", _msg(err)).group(1))
    assert need_u == pytest.approx(math.sqrt(2 * math.log(1e9)), rel=1e-3)
    assert min_iterations(pc, sigma, 2.0, 1e-9, u=1.02 * need_u).certified
    for exc in (UnreachableTargetError, ObjpertError, ValueError):
        with pytest.raises(exc):
            min_iterations(pc, sigma, 1e-4, 1e-6, u=u)


def _best_time(f, repeat: int = 3) -> float:
    f()  # warm up
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def test_search_and_certify_are_fast():
    """Example 4.8's setting: a search up to 10^6 and single certificates at N = 10^6."""
    pc = problem("logistic", n=10**6, d=10**4, zeta=1.0, mu=0.01)
    sigma, u = 1e-5, 6.0
    for form in ("c13", "theorem41"):
        c = min_iterations(pc, sigma, 1.0, 1e-7, u=u, form=form)
        assert c.certified and c.delta <= 1e-7
        assert _best_time(lambda f=form: min_iterations(pc, sigma, 1.0, 1e-7, u=u, form=f)) < 0.05
    assert _best_time(lambda: exact.certify(pc, sigma, 10**6, 1.0, u=u)) < 0.05
    assert _best_time(lambda: theorem41.certify(pc, sigma, u, 10**6, 1.0)) < 0.05
    assert exact.certify(pc, sigma, 10**6, 1.0, u=u).certified
    assert theorem41.certify(pc, sigma, u, 10**6, 1.0).certified


def test_vectorised_delta_n_over_a_million_iterations():
    pc = problem("logistic", n=10**6, d=10**4, zeta=1.0, mu=0.01)
    sigma, u = 1e-5, 6.0
    r, r_outer = exact.paper_radii(pc, sigma, u)
    Ns = np.arange(1, 10**6 + 1)
    elapsed = []
    for _ in range(2):  # the better of two runs, to be robust to a busy machine
        t = time.perf_counter()
        d = exact.delta_n(pc, sigma, r, r_outer, Ns, 1.0)
        elapsed.append(time.perf_counter() - t)
    assert min(elapsed) < 1.0
    assert d.shape == Ns.shape and np.all(np.isfinite(d))
    assert np.all((d >= 0) & (d <= 1))
    assert d[0] == 1.0 and d[-1] < 1e-7
    first = int(np.argmax(d <= 1e-7)) + 1
    assert first == min_iterations(pc, sigma, 1.0, 1e-7, u=u).iterations
    d41 = theorem41.delta(pc, sigma, u, Ns, 1.0)
    assert np.all(np.isfinite(d41)) and np.all((d41 >= 0) & (d41 <= 1))


# ----------------------------------------------------------------------------- bad input


def _msg(excinfo) -> str:
    return str(excinfo.value)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(n=1), "n"),
        (dict(n=1.5), "n"),
        (dict(d=0), "d"),
        (dict(zeta=0.0), "zeta"),
        (dict(zeta=-1.0), "zeta"),
        (dict(zeta=math.inf), "zeta"),
        (dict(mu=0.0), "mu"),
        (dict(mu=-0.1), "mu"),
        (dict(mu=math.nan), "mu"),
        (dict(eta=0.0), "eta"),
        (dict(eta=4.0), "eta"),  # above 1/L = 1/(0.05 + 0.25)
        (dict(eta=(1 / 0.3) * (1 + 1e-9)), "eta"),
    ],
)
def test_problem_rejects_bad_constants(kwargs, name):
    base = dict(n=1000, d=10, zeta=1.0, mu=0.05)
    base.update(kwargs)
    with pytest.raises(ParameterError) as err:
        problem("logistic", **base)
    assert re.search(rf"\b{name}\b", _msg(err)), _msg(err)
    assert isinstance(err.value, ObjpertError) and isinstance(err.value, ValueError)


def test_problem_eta_bounds():
    pc = problem("logistic", n=1000, d=10, zeta=1.0, mu=0.05)
    assert pc.eta == 1.0 / pc.L
    # rounding of 1/L from above is accepted and snapped to 1/L
    snapped = problem("logistic", n=1000, d=10, zeta=1.0, mu=0.05, eta=(1 / 0.3) * (1 + 1e-14))
    assert snapped.eta == 1.0 / snapped.L
    # eta mu >= 1 is only possible when mu swamps L2 zeta^2 in floating point (L == mu)
    with pytest.raises(ParameterError, match=r"eta \* mu") as err:
        problem("logistic", n=1000, d=10, zeta=1e-10, mu=1.0)
    assert "mu" in _msg(err)
    # large mu is otherwise fine at eta = 1/L: eta mu = mu / (mu + L2 zeta^2) < 1
    big = problem("logistic", n=1000, d=10, zeta=1.0, mu=1e3)
    assert big.eta * big.mu < 1.0


def test_problem_rejects_bad_losses():
    with pytest.raises(ParameterError, match="loss") as err:
        problem("hinge", n=1000, d=10, zeta=1.0, mu=0.05)
    assert "logistic" in _msg(err)
    with pytest.raises(ParameterError, match="L1") as err:
        problem("squared", n=1000, d=10, zeta=1.0, mu=0.05)
    assert "loss" in _msg(err)
    with pytest.raises(ParameterError, match="scale"):
        problem("robust", n=1000, d=10, zeta=1.0, mu=0.05, scale=-1.0)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(sigma=0.0), "sigma"),
        (dict(sigma=-1e-3), "sigma"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(u=-0.5), "u"),
    ],
)
def test_certify_rejects_bad_arguments(kwargs, name):
    s = SETTINGS[0]
    args = dict(sigma=s.sigma, epsilon=1.0, u=s.u)
    args.update(kwargs)
    pc = s.pc
    calls = [
        lambda: theorem41.certify(pc, args["sigma"], args["u"], 200, args["epsilon"]),
        lambda: exact.certify(pc, args["sigma"], 200, args["epsilon"], u=args["u"]),
    ]
    for call in calls:
        with pytest.raises(ObjpertError) as err:
            call()
        assert re.search(rf"\b{name}\b", _msg(err)), _msg(err)
    if name == "sigma":
        with pytest.raises(ObjpertError, match="sigma"):
            theorem41.threshold_iterations(pc, args["sigma"], 1.0)
    with pytest.raises(ObjpertError, match="truncation"):
        theorem41.certify(pc, s.sigma, s.u, 200, 1.0, truncation="chi")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(delta=0.0), "delta"),
        (dict(delta=1.0), "delta"),
        (dict(delta=-1e-6), "delta"),
        (dict(delta=2.0), "delta"),
        (dict(n_max=0), "n_max"),
        (dict(n_max=-5), "n_max"),
        (dict(sigma=0.0), "sigma"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(form="nope"), "form"),
    ],
)
def test_min_iterations_rejects_bad_arguments(kwargs, name):
    s = SETTINGS[0]
    args = dict(sigma=s.sigma, epsilon=1.0, delta=1e-6, u=s.u)
    args.update(kwargs)
    sigma, epsilon, delta = args.pop("sigma"), args.pop("epsilon"), args.pop("delta")
    with pytest.raises(ParameterError) as err:
        min_iterations(s.pc, sigma, epsilon, delta, **args)
    assert re.search(rf"\b{name}\b", _msg(err)), _msg(err)
    assert isinstance(err.value, ValueError)


# ----------------------------------------------------------------------------- truncation


@pytest.mark.parametrize("kind", ["paper", "exact"])
def test_radius_for_mass_inverts_truncation_mass(kind):
    sigma, d_star = 0.3, 77
    for mass in (0.5, 1e-3, 1e-9, 1e-30):
        r = truncation.radius_for_mass(sigma, d_star, mass, kind)
        assert truncation.truncation_mass(sigma, d_star, r, kind) == pytest.approx(mass, rel=1e-9)
    # paper: exp(-u^2/2) at r = sigma (sqrt(d*) + u); 1 inside sigma sqrt(d*)
    assert truncation.truncation_mass(sigma, d_star, sigma * math.sqrt(d_star) * 0.9) == 1.0


# ----------------------------------------------------------------------------- utility


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


# ----------------------------------------------------------------------------- gaussian


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
    for bad in (dict(sensitivity=0.0, sigma=1.0), dict(sensitivity=1.0, sigma=-1.0)):
        with pytest.raises(ParameterError):
            gaussian.gaussian_profile(1.0, **bad)


@pytest.mark.parametrize("bad_n", [0, -3, 2.5])
def test_iterations_below_one_or_fractional_are_refused(bad_n):
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=0.1)
    with pytest.raises(ParameterError, match="iterations"):
        theorem41.certify(pc, 0.01, 3.0, bad_n, 1.0)
    with pytest.raises(ParameterError, match="iterations"):
        exact.certify(pc, 0.01, bad_n, 1.0, u=3.0)


@pytest.mark.parametrize(("mu", "epsilon"), [(3e-5, 1.0), (1e-5, 1.0), (2e-3, 0.5)])
def test_min_iterations_pruning_matches_dense_scan_to_1e6(mu, epsilon):
    """The block lower bounds of the search never skip the first certifying N (dense check)."""
    from objpert.certify.theorem41 import slack_for_divergence

    pc = problem("logistic", n=10**6, d=10**4, zeta=1.0, mu=mu)
    sigma, delta = 1e-5, 1e-7
    r, r_outer = exact.paper_radii(pc, sigma, 6.0)
    Ns = np.arange(1, 10**6 + 1, dtype=float)
    s_n = exact.c13_terms(pc, sigma, r, r_outer, Ns).s_n
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
        t0 = time.perf_counter()
        with contextlib.suppress(UnreachableTargetError):
            min_iterations(pc, 1e-5, 1.0, 1e-7, u=6.0, n_max=10**6)
        best = min(best, time.perf_counter() - t0)
    assert best < 0.05
