"""Shared settings and independent reference computations of the certificate tests
(mpmath, explicit sums, brute force), from the formulas of Watkins & Arora (2026)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import mpmath
import numpy as np

from objpert.certify import (
    problem,
)
from objpert.certify._constants import ProblemConstants

mpmath.mp.dps = 40
mpf = mpmath.mpf


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


def msg_of(excinfo) -> str:
    """The message of a pytest.raises excinfo."""
    return str(excinfo.value)
