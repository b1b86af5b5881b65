"""Quadratic objective perturbation (QOP): the Wishart calibration of Cortild & Cartis (2026).

The mechanism (``objpert.mechanisms.qop``) releases the minimiser over a convex set C of

    sum_i l(theta; s_i) + r(theta) + (sigma^2 / 2) (theta - theta_ref)^T W (theta - theta_ref),

W = G G^T with G a d x m matrix of iid N(0, 1) entries (a Wishart W_d(m, I) matrix, m >= d).
This module computes sigma^2 and the other public constants from (epsilon, delta), the
dimension d, the Wishart degrees of freedom m, the per-sample smoothness L and the
per-sample Hessian rank rho. Pure mathematics: no data, no randomness.

Source: the formulas of ``shared/papers/qop-notes.md`` (read off the authors' companion
code, ``loss_constants.py``), cited below by the notes' section names:

* "Calibration of sigma^2": D_m, alpha, alpha1, f2, sigma^2 for (eps, delta1 + delta3)-DP;
* "Inexact solve (output noise)": beta, sigma_tilde, total (eps1 + eps2, delta1..4)-DP;
* "Utility bound": expected empirical excess risk, exact and inexact.

Notation: a = (m - d + 1)/2, P(a, x) the regularised lower incomplete gamma function,
gamma(a, x) = Gamma(a) P(a, x) the unregularised one and gamma^{-1}(y; a) its inverse in x.

Numerics. Everything is evaluated in log space: D_m with log-gamma (it underflows, and
Gamma overflows, for d beyond ~170: flag (ii) of the notes), and gamma(a, x) through
log P(a, x) (a series once P underflows), so that alpha and alpha1 are finite for d up to
1e4 and beyond. ``m`` may be real (the utility bound is minimised over it); a plan for a
release needs an integer m.

Flags about the authors' formulas
---------------------------------
(i)  alpha = 2 gamma^{-1}(delta3 / D_m; a) is defined on the scale lambda/2 (chi-square
     variables: P(lambda_min(W) < alpha) <= D_m gamma(a, alpha / 2), checked here against
     Monte Carlo in the tests), but the authors' alpha1 evaluates gamma(a, alpha), not
     gamma(a, alpha / 2). ``reading="authors"`` (the default) keeps their formula;
     ``reading="half"`` puts every argument of gamma on the lambda/2 scale,
         alpha1 = 2 gamma^{-1}(delta1 (1 - delta3) / D_m + gamma(a, alpha / 2); a) - alpha,
     i.e. D_m [gamma(a, (alpha + alpha1)/2) - gamma(a, alpha/2)] = delta1 (1 - delta3): the
     Wishart bound on P(alpha <= lambda_min(W) < alpha + alpha1) is exactly
     delta1 (1 - delta3). The authors' alpha1 is the smaller (their sigma^2 the larger,
     so their reading errs on the conservative side), and by far: gamma(a, alpha) dwarfs
     delta1 (1 - delta3) / D_m once d is moderate, so their alpha1 ~ exp(-c d) (about 2e-14
     at d = 100, m = 200, where it is at the level of double rounding in the authors'
     code) and sigma^2 = 2L / alpha1 leaves double range near d ~ 1000; computed here in
     log space (``log_sigma2``), and refused by :func:`qop_plan` when it overflows.
(ii) D_m overflows with Gamma directly (the authors' notebook warns); computed with
     log-gamma here.
(iii) The inexact utility bound carries sigma^2 m (D^2 + eta^2) where the exact one has
     sigma^2 m D^2 / 2: at tau = eta = 0 it does not reduce to the exact bound (factor 2).
     Kept as the authors wrote it.
(iv) sigma_tilde uses the classical Gaussian mechanism factor sqrt(2 log(1.25/delta2))/eps2,
     a theorem for eps2 < 1 only (Dwork & Roth 2014, Theorem A.1); the formula functions
     evaluate it for any eps2 (the authors' Figure 1 does), :func:`qop_plan` refuses
     eps2 >= 1 for a release.
(v)  The output noise is released as a discrete Gaussian on a grid
     (:mod:`objpert.mechanisms.discrete_noise`, scale
     :func:`objpert.certify.peers.grid_sigma` (sigma_tilde) >= sigma_tilde), not as the
     continuous Gaussian of the classical theorem: :func:`qop_plan` checks that it
     certifies delta2 at eps2 by Canonne, Kamath & Steinke (2020), Theorem 14 and
     Corollary 13, with sensitivity 2 radius + gamma sqrt(d) (the grid's rounding), and
     refuses the plan otherwise (:func:`output_noise_delta`). The classical factor leaves
     room: for eps2 < 1 the discrete Gaussian's delta is below 5% of delta2 at the
     default grid.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammainc, gammaincc, gammainccinv, gammaincinv, gammaln

from objpert.certify.peers import discrete_gaussian_delta
from objpert.errors import (
    ParameterError,
    UnreachableTargetError,
    check_finite,
    check_int,
    check_nonnegative,
    check_open_unit,
    check_positive,
)
from objpert.jsonable import to_json_value

__all__ = [
    "READINGS",
    "QOPCertificate",
    "QOPPlan",
    "alpha1",
    "f2",
    "inverse_lower_gamma",
    "log_alpha1",
    "log_lower_gamma",
    "log_sigma2",
    "log_wishart_constant",
    "max_eigenvalue_bound",
    "min_eigenvalue_bound",
    "output_noise",
    "output_noise_delta",
    "qop_plan",
    "sigma2",
    "utility_exact",
    "utility_inexact",
    "wishart_constant",
]

#: The two readings of alpha1 (flag (i) of the notes): the authors' code, or gamma's
#: argument on the lambda/2 scale of alpha.
READINGS: tuple[str, ...] = ("authors", "half")

_TINY_LOG = math.log(1e-280)  # below this, P(a, x) is handled in log space
_SMALL_INCREMENT = math.log(1e-6)  # relative increment below which an integral is used
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


# --------------------------------------------------------------------------- validation


def _check_dm(d: Any, m: Any) -> tuple[int, float]:
    """d an integer >= 1, m real with m >= d (the Wishart W_d(m, I) needs m >= d)."""
    d = check_int("d", d, 1)
    m = check_finite("m", m)
    if m < d:
        raise ParameterError(f"m must be >= d = {d} (Wishart degrees of freedom); got {m!r}")
    return d, m


def _check_reading(reading: str) -> str:
    if reading not in READINGS:
        raise ParameterError(f"reading must be one of {READINGS}; got {reading!r}")
    return reading


def _shape(d: int, m: float) -> float:
    """a = (m - d + 1) / 2."""
    return (m - d + 1.0) / 2.0


# -------------------------------------------------------------- incomplete gamma, logs


def _log_p(a: float, x: float) -> float:
    """log P(a, x), accurate where P underflows (series a log x - x - log Gamma(a+1) + log S,
    S = sum_k x^k / ((a+1)...(a+k)), used when x < a only, where it converges geometrically)."""
    if x <= 0.0:
        return -math.inf
    v = float(gammainc(a, x))
    if v > 0.5:
        return math.log1p(-float(gammaincc(a, x)))
    if v > 1e-280:
        return math.log(v)
    # underflow: x is far below a
    term, total, k = 1.0, 1.0, 0
    while term > 1e-17 * total:
        k += 1
        term *= x / (a + k)
        total += term
        if k > 1_000_000:  # pragma: no cover - cannot happen for x < a
            break
    return a * math.log(x) - x - float(gammaln(a + 1.0)) + math.log(total)


def _log_density(a: float, x: float) -> float:
    """log of the Gamma(a, 1) density x^(a-1) e^(-x) / Gamma(a)."""
    return (a - 1.0) * math.log(x) - x - float(gammaln(a))


def _inv_log_p(a: float, log_target: float) -> float:
    """x with log P(a, x) = log_target < 0 (log space below 1e-280)."""
    if not log_target < 0.0:
        raise ParameterError(
            "the incomplete gamma function cannot reach the requested mass: "
            f"log P = {log_target!r} >= 0 (a larger m, or smaller deltas, are needed)"
        )
    if log_target > _TINY_LOG:
        if log_target > math.log(0.5):
            x = float(gammainccinv(a, -math.expm1(log_target)))
        else:
            x = float(gammaincinv(a, math.exp(log_target)))
        if x > 0.0 and math.isfinite(x):
            return x
    u0 = (log_target + float(gammaln(a + 1.0))) / a  # a log x ~ log P + log Gamma(a+1)

    def f(u: float) -> float:
        return _log_p(a, math.exp(u)) - log_target

    lo, hi = u0 - 1.0, u0 + 1.0
    while f(lo) > 0.0:
        lo -= 2.0 * (hi - lo)
    while f(hi) < 0.0:
        hi += 2.0 * (hi - lo)
    return math.exp(brentq(f, lo, hi, xtol=1e-15, rtol=4.0 * np.finfo(float).eps, maxiter=500))


def log_lower_gamma(a: float, x: float) -> float:
    """log gamma(a, x) = log Gamma(a) + log P(a, x), the unregularised lower incomplete gamma
    function of the notes ("Calibration of sigma^2"), finite where gamma(a, x) under- or
    overflows."""
    a = check_positive("a", a)
    x = check_nonnegative("x", x)
    return float(gammaln(a)) + _log_p(a, x)


def inverse_lower_gamma(log_y: float, a: float) -> float:
    """gamma^{-1}(y; a): the x >= 0 with gamma(a, x) = y, from log y (notes, "Calibration of
    sigma^2"). Requires y < Gamma(a) (ParameterError otherwise)."""
    a = check_positive("a", a)
    log_y = float(log_y)
    if math.isnan(log_y):
        raise ParameterError("log_y must be a number; got nan")
    if log_y == -math.inf:
        return 0.0
    return _inv_log_p(a, log_y - float(gammaln(a)))


def _interval_inverse(a: float, x0: float, log_y: float) -> float:
    """log h, h >= 0 with P(a, x0 + h) - P(a, x0) = y (regularised mass y, given log y).

    When y is not negligible against P(a, x0) the end point is inverted in log space;
    otherwise h solves y = int_{x0}^{x0+h} density by Gauss-Legendre quadrature (there is no
    cancellation to lose h to: the authors' reading reaches h ~ exp(-c d))."""
    lp0 = _log_p(a, x0)
    if log_y - lp0 > _SMALL_INCREMENT:
        target = float(np.logaddexp(lp0, log_y))
        if not target < 0.0:
            raise ParameterError(
                "delta1 (1 - delta3) / D_m + gamma(a, x0) >= Gamma(a): no alpha1 exists; "
                "take smaller deltas or another m"
            )
        x1 = _inv_log_p(a, target)
        if x1 > x0:
            return math.log(x1 - x0)
    # tiny increment: h = y / (mean density over [x0, x0 + h]), a contraction from h = y/p(x0)
    lp_x0 = _log_density(a, x0)
    log_h = log_y - lp_x0
    for _ in range(50):
        h = math.exp(log_h)
        s = x0 + 0.5 * h * (_GL_NODES + 1.0)
        rel = (a - 1.0) * np.log(s / x0) - (s - x0)
        log_mean = float(np.log(0.5 * np.sum(_GL_WEIGHTS * np.exp(rel))))
        new = log_y - lp_x0 - log_mean
        if abs(new - log_h) < 1e-14:
            return new
        log_h = new
    return log_h


# ------------------------------------------------------------------------- the formulas


def log_wishart_constant(d: int, m: float) -> float:
    """log D_m (notes, "Calibration of sigma^2"), with log-gamma (flag ii):

    D_m = d Gamma(3/2) Gamma((m+1)/2) / (Gamma(d/2 + 1) Gamma((m-d+1)/2) Gamma((m-d+2)/2)).
    """
    d, m = _check_dm(d, m)
    return (
        math.log(d)
        + float(gammaln(1.5))
        + float(gammaln((m + 1.0) / 2.0))
        - float(gammaln(d / 2.0 + 1.0))
        - float(gammaln((m - d + 1.0) / 2.0))
        - float(gammaln((m - d + 2.0) / 2.0))
    )


def wishart_constant(d: int, m: float) -> float:
    """D_m itself (0.0 or inf when it leaves double range: use :func:`log_wishart_constant`)."""
    log_dm = log_wishart_constant(d, m)
    return math.exp(log_dm) if log_dm < 709.0 else math.inf


def min_eigenvalue_bound(d: int, m: float, delta3: float) -> float:
    """alpha = 2 gamma^{-1}(delta3 / D_m; a): P(lambda_min(W) < alpha) <= delta3
    (notes, "Calibration of sigma^2"; Wishart bound D_m gamma(a, alpha/2))."""
    d, m = _check_dm(d, m)
    delta3 = check_open_unit("delta3", delta3)
    a = _shape(d, m)
    log_y = math.log(delta3) - log_wishart_constant(d, m)
    return 2.0 * inverse_lower_gamma(log_y, a)


def log_alpha1(
    d: int, m: float, delta1: float, delta3: float, *, reading: str = "authors"
) -> float:
    """log alpha1 (notes, "Calibration of sigma^2"; see flag (i) in the module docstring).

    ``authors``: alpha1 = gamma^{-1}(delta1 (1 - delta3) / D_m + gamma(a, alpha); a) - alpha.
    ``half``:    alpha1 = 2 gamma^{-1}(delta1 (1 - delta3) / D_m + gamma(a, alpha/2); a) - alpha.
    """
    d, m = _check_dm(d, m)
    delta1 = check_open_unit("delta1", delta1)
    delta3 = check_open_unit("delta3", delta3)
    reading = _check_reading(reading)
    a = _shape(d, m)
    alpha = min_eigenvalue_bound(d, m, delta3)
    log_y = math.log(delta1) + math.log1p(-delta3) - log_wishart_constant(d, m) - float(gammaln(a))
    if reading == "authors":
        return _interval_inverse(a, alpha, log_y)
    # half: gamma^{-1}(...) = alpha/2 + h, so alpha1 = 2 (alpha/2 + h) - alpha = 2 h
    return math.log(2.0) + _interval_inverse(a, alpha / 2.0, log_y)


def alpha1(d: int, m: float, delta1: float, delta3: float, *, reading: str = "authors") -> float:
    """alpha1 of :func:`log_alpha1` (may underflow to 0.0 under the authors' reading)."""
    return math.exp(log_alpha1(d, m, delta1, delta3, reading=reading))


def f2(d: int, m: float, alpha: float) -> float:
    """f2 = 2 ((m - d + 1) / (2 alpha) + 1/2) (notes, "Calibration of sigma^2")."""
    d, m = _check_dm(d, m)
    alpha = check_positive("alpha", alpha)
    return 2.0 * ((m - d + 1.0) / (2.0 * alpha) + 0.5)


def _sigma2_parts(
    smoothness: float,
    epsilon: float,
    delta1: float,
    delta3: float,
    d: int,
    m: float,
    rank: int,
    reading: str,
) -> tuple[float, float, float, float, float]:
    """(alpha, log alpha1, f2, log of the privacy branch, log of the alpha1 branch)."""
    L = check_positive("smoothness", smoothness)
    epsilon = check_positive("epsilon", epsilon)
    rank = check_int("rank", rank, 1)
    d, m = _check_dm(d, m)
    alpha = min_eigenvalue_bound(d, m, delta3)
    if not alpha > 0.0:
        raise UnreachableTargetError(
            f"alpha = {alpha!r}: the Wishart lower tail bound leaves double range "
            f"(d = {d}, m = {m:g}, delta3 = {delta3:g})"
        )
    la1 = log_alpha1(d, m, delta1, delta3, reading=reading)
    f = f2(d, m, alpha)
    log_privacy = math.log(2.0 * L / epsilon) + math.log(f + 2.0 * (2.0 * rank + 2.0) / alpha)
    log_curv = math.log(2.0 * L) - la1
    return alpha, la1, f, log_privacy, log_curv


def log_sigma2(
    smoothness: float,
    epsilon: float,
    delta1: float,
    delta3: float,
    d: int,
    m: float,
    *,
    rank: int = 1,
    reading: str = "authors",
) -> float:
    """log sigma^2 (notes, "Calibration of sigma^2"), finite even where sigma^2 overflows:

    sigma^2 = max( (2L/eps) (f2 + 2 (2 rho + 2) / alpha),  2L / alpha1 ).
    """
    *_, lp, lc = _sigma2_parts(smoothness, epsilon, delta1, delta3, d, m, rank, reading)
    return max(lp, lc)


def sigma2(
    smoothness: float,
    epsilon: float,
    delta1: float,
    delta3: float,
    d: int,
    m: float,
    *,
    rank: int = 1,
    reading: str = "authors",
) -> float:
    """sigma^2 of :func:`log_sigma2` (``inf`` when it exceeds double range)."""
    ls = log_sigma2(smoothness, epsilon, delta1, delta3, d, m, rank=rank, reading=reading)
    return math.exp(ls) if ls < 709.0 else math.inf


def max_eigenvalue_bound(d: int, m: float, delta3: float, delta4: float) -> float:
    """beta = (sqrt(2 log(2 / (delta4 (1 - delta3)))) + sqrt(m) + sqrt(d))^2:
    P(lambda_max(W) > beta) <= delta4 (notes, "Inexact solve"; Davidson & Szarek 2001)."""
    d, m = _check_dm(d, m)
    delta3 = check_open_unit("delta3", delta3)
    delta4 = check_open_unit("delta4", delta4)
    t = math.sqrt(2.0 * math.log(2.0 / (delta4 * (1.0 - delta3))))
    return (t + math.sqrt(m) + math.sqrt(d)) ** 2


def output_noise(
    tau: float,
    eta: float,
    alpha: float,
    sigma2_value: float,
    beta: float,
    epsilon2: float,
    delta2: float,
) -> float:
    """sigma_tilde (notes, "Inexact solve"): the standard deviation of the output noise,

        (sqrt(2 tau / (alpha sigma^2)) + beta eta / alpha) (2 / eps2) sqrt(2 log(1.25 / delta2)).

    tau: objective accuracy of the solve; eta: the authors' second accuracy parameter.
    Evaluated for any eps2 > 0 (flag iv: the Gaussian-mechanism theorem needs eps2 < 1).
    """
    tau = check_nonnegative("tau", tau)
    eta = check_nonnegative("eta", eta)
    alpha = check_positive("alpha", alpha)
    s2 = float(sigma2_value)
    if not s2 > 0.0 or math.isnan(s2):
        raise ParameterError(f"sigma2 must be > 0; got {sigma2_value!r}")
    beta = check_positive("beta", beta)
    epsilon2 = check_positive("epsilon2", epsilon2)
    delta2 = check_open_unit("delta2", delta2)
    radius = _output_radius(tau, eta, alpha, s2, beta)
    return radius * (2.0 / epsilon2) * math.sqrt(2.0 * math.log(1.25 / delta2))


def _output_radius(tau: float, eta: float, alpha: float, s2: float, beta: float) -> float:
    """sqrt(2 tau / (alpha sigma^2)) + beta eta / alpha: how far the inexact solve may be
    from the exact minimiser (notes, "Inexact solve"); the output sensitivity is twice it."""
    return math.sqrt(2.0 * tau / (alpha * s2)) + beta * eta / alpha


def output_noise_delta(
    tau: float,
    eta: float,
    alpha: float,
    sigma2_value: float,
    beta: float,
    epsilon2: float,
    sigma_tilde: float,
    d: int,
) -> float:
    """The delta2 the released output noise certifies at eps2 (flag v): the discrete
    Gaussian on the grid of sigma_tilde (:func:`objpert.certify.peers.grid_noise`) with l2
    sensitivity 2 radius + gamma sqrt(d), by Canonne, Kamath & Steinke (2020), Theorem 14
    (rho-zCDP) and Corollary 13 (to (eps2, delta2)). 0 when there is no noise (radius 0)."""
    radius = _output_radius(tau, eta, alpha, float(sigma2_value), beta)
    if sigma_tilde == 0.0 and radius == 0.0:
        return 0.0
    return discrete_gaussian_delta(check_positive("epsilon2", epsilon2), 2.0 * radius,
                                   check_positive("sigma_tilde", sigma_tilde), d)  # fmt: skip


def utility_exact(sigma2_value: float, m: float, distance: float) -> float:
    """Expected empirical excess risk of the exact-minimiser release: sigma^2 m D^2 / 2
    (notes, "Utility bound"); D = ||theta_ref - common minimiser||."""
    D = check_nonnegative("D", distance)
    return 0.5 * float(sigma2_value) * check_positive("m", m) * D**2


def utility_inexact(
    n: int,
    d: int,
    smoothness: float,
    sigma_tilde: float,
    subgradient_bound: float,
    tau: float,
    sigma2_value: float,
    m: float,
    distance: float,
    eta: float,
) -> float:
    """Expected empirical excess risk with output noise (notes, "Utility bound"):

        n d L sigma_tilde^2 / 2 + G sqrt(d) sigma_tilde + tau + sigma^2 m (D^2 + eta^2),

    G bounding the subgradients of r (flag iii: no 1/2 on the last term, as the authors)."""
    n = check_int("n", n, 1)
    d = check_int("d", d, 1)
    L = check_positive("smoothness", smoothness)
    st = check_nonnegative("sigma_tilde", sigma_tilde)
    G = check_nonnegative("subgradient_bound", subgradient_bound)
    return (
        n * d * L * st**2 / 2.0
        + G * math.sqrt(d) * st
        + check_nonnegative("tau", tau)
        + float(sigma2_value)
        * check_positive("m", m)
        * (check_nonnegative("D", distance) ** 2 + check_nonnegative("eta", eta) ** 2)
    )


# ----------------------------------------------------------------------- plan, certificate


@dataclass(frozen=True)
class QOPCertificate:
    """The (epsilon, delta) guarantee of a QOP release and the terms it is made of.

    ``mechanism`` is ``"qop-exact"`` ((eps1, delta1 + delta3) for the exact minimiser) or
    ``"qop-inexact"`` ((eps1 + eps2, delta1 + delta2 + delta3 + delta4) with output noise
    sigma_tilde, for a solve of accuracy (tau, eta)). ``assumptions`` lists what the
    guarantee takes for granted and objpert does not (cannot, without touching the data)
    check.
    """

    mechanism: str
    epsilon: float
    delta: float
    epsilon_parts: dict
    delta_parts: dict
    sigma2: float
    sigma_tilde: float
    reading: str
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict:
        out = {k: to_json_value(v) for k, v in asdict(self).items()}
        out["epsilon_parts"] = {k: to_json_value(v) for k, v in self.epsilon_parts.items()}
        out["delta_parts"] = {k: to_json_value(v) for k, v in self.delta_parts.items()}
        out["assumptions"] = list(self.assumptions)
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


@dataclass(frozen=True)
class QOPPlan:
    """Public constants of a QOP release and everything computed from them.

    Inputs: ``d``, ``m`` (integer, >= d), ``smoothness`` L (per-sample), ``rank`` rho
    (per-sample Hessian rank; 1 for a GLM), the split ``epsilon1`` (+ ``epsilon2``) and
    ``delta1``, ``delta3`` (+ ``delta2``, ``delta4``), ``reading`` (flag i) and, for the
    inexact variant, the accuracies ``tau`` and ``eta``. Derived (notes, "Calibration of
    sigma^2" and "Inexact solve"): ``log_wishart`` (log D_m), ``alpha``, ``log_alpha1``,
    ``f2``, ``sigma2`` and which branch of its max is active, ``beta``, ``sigma_tilde``.
    Build with :func:`qop_plan`; :meth:`recompute` re-derives everything from the inputs.
    """

    d: int
    m: int
    smoothness: float
    rank: int
    epsilon1: float
    delta1: float
    delta3: float
    reading: str
    log_wishart: float
    alpha: float
    log_alpha1: float
    f2: float
    sigma2: float
    sigma2_branch: str
    inexact: bool = False
    epsilon2: float = 0.0
    delta2: float = 0.0
    delta4: float = 0.0
    tau: float = 0.0
    eta: float = 0.0
    beta: float | None = None
    sigma_tilde: float = 0.0

    @property
    def epsilon(self) -> float:
        return self.epsilon1 + self.epsilon2

    @property
    def delta(self) -> float:
        return self.delta1 + self.delta2 + self.delta3 + self.delta4

    @property
    def alpha1(self) -> float:
        return math.exp(self.log_alpha1)

    @property
    def epsilons(self) -> tuple[float, ...]:
        return (self.epsilon1, self.epsilon2) if self.inexact else (self.epsilon1,)

    @property
    def deltas(self) -> tuple[float, ...]:
        if self.inexact:
            return (self.delta1, self.delta2, self.delta3, self.delta4)
        return (self.delta1, self.delta3)

    def recompute(self) -> QOPPlan:
        """The plan re-derived from its public inputs alone."""
        return qop_plan(
            self.d,
            self.epsilon,
            self.delta,
            smoothness=self.smoothness,
            rank=self.rank,
            m=self.m,
            deltas=self.deltas,
            epsilons=self.epsilons,
            inexact=self.inexact,
            tau=self.tau if self.inexact else None,
            eta=self.eta if self.inexact else None,
            reading=self.reading,
        )

    @property
    def certificate(self) -> QOPCertificate:
        """The plan's certificate, computed from its public fields (an attribute, as every
        plan type has)."""
        assumptions = [
            "per-sample losses convex with smoothness <= L and Hessian rank <= rho",
            "interpolation: the per-sample losses share a common minimiser",
            "theta_ref, the constraint set and the regulariser are public (data-independent)",
        ]
        if self.inexact:
            assumptions.append(
                f"the solve reaches accuracy tau = {self.tau:g}, eta = {self.eta:g} "
                "(not verified: checking would touch the data)"
            )
            grid_delta = output_noise_delta(
                self.tau, self.eta, self.alpha, self.sigma2, self.beta, self.epsilon2,
                self.sigma_tilde, self.d,
            )  # fmt: skip
            assumptions.append(
                "output noise: discrete Gaussian on a grid (Canonne, Kamath & Steinke 2020, "
                f"Theorem 14 and Corollary 13): delta2 = {grid_delta:.3g} <= {self.delta2:g}"
            )
            mech = "qop-inexact"
        else:
            assumptions.append("the released point is the exact minimiser")
            mech = "qop-exact"
        eps_parts = {"epsilon1": self.epsilon1}
        delta_parts = {"delta1": self.delta1, "delta3": self.delta3}
        if self.inexact:
            eps_parts["epsilon2"] = self.epsilon2
            delta_parts.update(delta2=self.delta2, delta4=self.delta4)
        return QOPCertificate(
            mechanism=mech,
            epsilon=self.epsilon,
            delta=self.delta,
            epsilon_parts=eps_parts,
            delta_parts=delta_parts,
            sigma2=self.sigma2,
            sigma_tilde=self.sigma_tilde,
            reading=self.reading,
            assumptions=tuple(assumptions),
        )

    def utility_bound(self, n: int, distance: float, subgradient_bound: float = 0.0) -> float:
        """The notes' expected excess-risk bound for this plan (exact or inexact)."""
        if not self.inexact:
            return utility_exact(self.sigma2, self.m, distance)
        return utility_inexact(
            n,
            self.d,
            self.smoothness,
            self.sigma_tilde,
            subgradient_bound,
            self.tau,
            self.sigma2,
            self.m,
            distance,
            self.eta,
        )

    def to_dict(self) -> dict:
        out = {k: to_json_value(v) for k, v in asdict(self).items()}
        out.update(
            epsilon=self.epsilon,
            delta=self.delta,
            alpha1=self.alpha1,
            log_sigma2=math.log(self.sigma2),
        )
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


def _split(name: str, total: float, parts: Any, count: int, check) -> tuple[float, ...]:
    if parts is None:
        return tuple(total / count for _ in range(count))
    try:
        values = tuple(parts)
    except TypeError:
        raise ParameterError(f"{name} must be a tuple of {count} numbers; got {parts!r}") from None
    if len(values) != count:
        raise ParameterError(f"{name} must have {count} entries; got {len(values)}")
    values = tuple(check(f"{name}[{i}]", v) for i, v in enumerate(values))
    if not math.isclose(sum(values), total, rel_tol=1e-9, abs_tol=0.0):
        raise ParameterError(f"{name} must sum to {total!r}; they sum to {sum(values)!r}")
    return values


def qop_plan(
    d: int,
    epsilon: float,
    delta: float,
    *,
    smoothness: float,
    rank: int = 1,
    m: int | None = None,
    deltas: tuple[float, ...] | None = None,
    epsilons: tuple[float, ...] | None = None,
    inexact: bool = False,
    tau: float | None = None,
    eta: float | None = None,
    reading: str = "authors",
) -> QOPPlan:
    """The QOP plan for an (epsilon, delta) target (Cortild & Cartis 2026; qop-notes).

    Exact solve: ``deltas = (delta1, delta3)`` (default delta/2 each, as the authors'
    experiments), sigma^2 at ``epsilon``. Inexact (``inexact=True``): ``deltas = (delta1,
    delta2, delta3, delta4)`` (default delta/4 each), ``epsilons = (eps1, eps2)`` (default
    epsilon/2 each; eps2 < 1 required, flag iv), sigma^2 at eps1 and output noise
    sigma_tilde for accuracies ``tau``, ``eta`` (both required, >= 0). ``m`` defaults to 2d.
    Raises :class:`ParameterError` for inputs outside their ranges and
    :class:`UnreachableTargetError` when sigma^2 leaves double range (the authors' reading
    for large d; see flag i).
    """
    d = check_int("d", d, 1)
    m = 2 * d if m is None else check_int("m", m, 1)
    if m < d:
        raise ParameterError(f"m must be >= d = {d} (Wishart degrees of freedom); got {m!r}")
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    L = check_positive("smoothness", smoothness)
    rank = check_int("rank", rank, 1)
    reading = _check_reading(reading)
    if not isinstance(inexact, bool | np.bool_):
        raise ParameterError(f"inexact must be True or False; got {inexact!r}")
    inexact = bool(inexact)
    if inexact:
        d1, d2, d3, d4 = _split("deltas", delta, deltas, 4, check_open_unit)
        e1, e2 = _split("epsilons", epsilon, epsilons, 2, check_positive)
        if e2 >= 1.0:
            raise ParameterError(
                f"epsilon2 must be < 1 (the Gaussian output noise sqrt(2 log(1.25/delta2))/eps2 "
                f"is a theorem for eps2 < 1 only); got {e2!r}: pass epsilons=(eps1, eps2)"
            )
        if tau is None or eta is None:
            raise ParameterError("the inexact plan needs the solve accuracies tau and eta")
        tau = check_nonnegative("tau", tau)
        eta = check_nonnegative("eta", eta)
    else:
        d1, d3 = _split("deltas", delta, deltas, 2, check_open_unit)
        if epsilons is not None:
            (e1,) = _split("epsilons", epsilon, epsilons, 1, check_positive)
        e1, e2, d2, d4 = epsilon, 0.0, 0.0, 0.0
        if tau is not None or eta is not None:
            raise ParameterError("tau and eta are for the inexact plan; pass inexact=True")
    alpha, la1, f, lp, lc = _sigma2_parts(L, e1, d1, d3, d, m, rank, reading)
    log_s2 = max(lp, lc)
    if log_s2 >= 709.0:
        raise UnreachableTargetError(
            f"sigma^2 = exp({log_s2:.6g}) exceeds double range (2L / alpha1 with "
            f"log alpha1 = {la1:.6g}, reading={reading!r}); see flag (i) of "
            "objpert.certify.qop: reading='half' keeps sigma^2 moderate"
        )
    s2 = math.exp(log_s2)
    plan = dict(
        d=d,
        m=m,
        smoothness=L,
        rank=rank,
        epsilon1=e1,
        delta1=d1,
        delta3=d3,
        reading=reading,
        log_wishart=log_wishart_constant(d, m),
        alpha=alpha,
        log_alpha1=la1,
        f2=f,
        sigma2=s2,
        sigma2_branch="privacy" if lp >= lc else "alpha1",
    )
    if inexact:
        beta = max_eigenvalue_bound(d, m, d3, d4)
        st = output_noise(tau, eta, alpha, s2, beta, e2, d2)
        grid_delta = output_noise_delta(tau, eta, alpha, s2, beta, e2, st, d)
        if not grid_delta <= d2:
            raise UnreachableTargetError(
                f"the discrete output noise certifies delta2 = {grid_delta:.3g} > {d2:.3g} at "
                f"eps2 = {e2:g} (flag v of objpert.certify.qop): choose a smaller epsilon2"
            )
        plan.update(
            inexact=True,
            epsilon2=e2,
            delta2=d2,
            delta4=d4,
            tau=tau,
            eta=eta,
            beta=beta,
            sigma_tilde=st,
        )
    return QOPPlan(**plan)
