"""The Wishart tail bounds of QOP: incomplete gamma functions in log space, D_m, alpha,
alpha1 and beta (Cortild & Cartis 2026, arXiv:2605.05905; docs/qop.md, "Calibration of
sigma^2" and "Inexact solve (output noise)").

W = G G^T with G a d x m matrix of iid N(0, 1) entries is a Wishart W_d(m, I) matrix
(m >= d). With a = (m - d + 1)/2, P(a, x) the regularised lower incomplete gamma
function, gamma(a, x) = Gamma(a) P(a, x) the unregularised one and gamma^{-1}(y; a) its
inverse in x: P(lambda_min(W) < alpha) <= D_m gamma(a, alpha / 2) and
P(lambda_max(W) > beta) <= delta4 (Davidson & Szarek 2001).

Numerics. Everything is evaluated in log space: D_m with log-gamma (it underflows, and
Gamma overflows, for d beyond ~170: flag (ii) of :mod:`objpert.mechanisms._certificates.qop`), and
gamma(a, x) through log P(a, x) (a series once P underflows), so that alpha and alpha1
are finite for d up to 1e4 and beyond. ``m`` may be real (the utility bound is minimised
over it).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammainc, gammaincc, gammainccinv, gammaincinv, gammaln

from objpert._validation import (
    check_finite,
    numeric_guard,
)
from objpert.exceptions import ParameterError

__all__ = [
    "READINGS",
    "alpha1",
    "inverse_lower_gamma",
    "log_alpha1",
    "log_lower_gamma",
    "log_wishart_constant",
    "max_eigenvalue_bound",
    "min_eigenvalue_bound",
    "wishart_constant",
]

#: The two readings of alpha1 (flag (i) of :mod:`objpert.mechanisms._certificates.qop`): the
#: authors' code,
#: or gamma's argument on the lambda/2 scale of alpha.
READINGS: tuple[str, ...] = ("authors", "half")

_TINY_LOG = math.log(1e-280)  # below this, P(a, x) is handled in log space
_SMALL_INCREMENT = math.log(1e-6)  # relative increment below which an integral is used
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


# --------------------------------------------------------------------------- validation


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

    # x = e^u within the positive doubles: below, the answer underflows to 0.0; above, no
    # representable x reaches the mass
    if f(_LOG_TINY_X) >= 0.0:
        return 0.0
    if f(_LOG_HUGE_X) < 0.0:
        raise ParameterError(
            f"the incomplete gamma function reaches log P = {log_target!r} only beyond the "
            "float64 range (a larger m, or smaller deltas, are needed)"
        )
    lo, hi = max(u0 - 1.0, _LOG_TINY_X), min(u0 + 1.0, _LOG_HUGE_X)
    while f(lo) > 0.0:
        lo = max(lo - 2.0 * (hi - lo), _LOG_TINY_X)
    while f(hi) < 0.0:
        hi = min(hi + 2.0 * (hi - lo), _LOG_HUGE_X)
    return math.exp(brentq(f, lo, hi, xtol=1e-15, rtol=4.0 * np.finfo(float).eps, maxiter=500))


_LOG_TINY_X = math.log(5e-324)
_LOG_HUGE_X = math.log(1e308)


@numeric_guard
def log_lower_gamma(a: float, x: float) -> float:
    """log gamma(a, x) = log Gamma(a) + log P(a, x), the unregularised lower incomplete gamma
    function of docs/qop.md ("Calibration of sigma^2"), finite where gamma(a, x) under- or
    overflows."""
    if x == 0.0:
        return -math.inf  # gamma(a, 0) = 0
    return _log_gamma(a) + _log_p(a, x)


def _log_gamma(a: float) -> float:
    """log Gamma(a), finite for every a > 0 (scipy's gammaln overflows for a below ~1e-308,
    where log Gamma(a) = -log a - Euler's gamma a + O(a^2))."""
    value = float(gammaln(a))
    return value if math.isfinite(value) else -math.log(a)


@numeric_guard
def inverse_lower_gamma(log_y: float, a: float) -> float:
    """gamma^{-1}(y; a): the x >= 0 with gamma(a, x) = y, from log y (docs/qop.md, "Calibration of
    sigma^2"). Requires y < Gamma(a) (ParameterError otherwise)."""
    if isinstance(log_y, float | np.floating) and log_y == -math.inf:
        return 0.0  # y = 0
    log_y = check_finite("log_y", log_y)
    return _inv_log_p(a, log_y - _log_gamma(a))


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
    # the mass above x0 must exceed y (else no h exists: P would pass 1)
    upper = float(gammaincc(a, x0))
    if not (upper > 0.0 and log_y < math.log(upper)):
        raise ParameterError(
            "delta1 (1 - delta3) / D_m + gamma(a, x0) >= Gamma(a): no alpha1 exists; "
            "take smaller deltas or another m"
        )
    # tiny increment: h = y / (mean density over [x0, x0 + h]), a contraction from h = y/p(x0)
    lp_x0 = _log_density(a, x0)
    log_h = log_y - lp_x0
    for _ in range(50):
        h = math.exp(min(log_h, _LOG_HUGE_X))
        s = x0 + 0.5 * h * (_GL_NODES + 1.0)
        rel = (a - 1.0) * np.log(s / x0) - (s - x0)
        log_mean = float(np.log(0.5 * np.sum(_GL_WEIGHTS * np.exp(rel))))
        new = log_y - lp_x0 - log_mean
        if not math.isfinite(new):
            break
        if abs(new - log_h) < 1e-14:
            return new
        log_h = new
    if not math.isfinite(log_h):
        raise ParameterError(
            f"alpha1 cannot be evaluated in double precision at a = {a:g}, x0 = {x0:g}: take "
            "another m or other deltas"
        )
    return log_h


# ------------------------------------------------------------------------- the formulas


def log_wishart_constant(d: int, m: float) -> float:
    """log D_m (docs/qop.md, "Calibration of sigma^2"), with log-gamma (flag ii of
    :mod:`objpert.mechanisms._certificates.qop`):

    D_m = d Gamma(3/2) Gamma((m+1)/2) / (Gamma(d/2 + 1) Gamma((m-d+1)/2) Gamma((m-d+2)/2)).
    """
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


@numeric_guard
def min_eigenvalue_bound(d: int, m: float, delta3: float) -> float:
    """alpha = 2 gamma^{-1}(delta3 / D_m; a): P(lambda_min(W) < alpha) <= delta3
    (docs/qop.md, "Calibration of sigma^2"; Wishart bound D_m gamma(a, alpha/2))."""
    a = _shape(d, m)
    log_y = math.log(delta3) - log_wishart_constant(d, m)
    return 2.0 * inverse_lower_gamma(log_y, a)


@numeric_guard
def log_alpha1(
    d: int, m: float, delta1: float, delta3: float, *, reading: str = "authors"
) -> float:
    """log alpha1 (docs/qop.md, "Calibration of sigma^2"; flag (i) of
    :mod:`objpert.mechanisms._certificates.qop`).

    ``authors``: alpha1 = gamma^{-1}(delta1 (1 - delta3) / D_m + gamma(a, alpha); a) - alpha.
    ``half``:    alpha1 = 2 gamma^{-1}(delta1 (1 - delta3) / D_m + gamma(a, alpha/2); a) - alpha.
    """
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


def max_eigenvalue_bound(d: int, m: float, delta3: float, delta4: float) -> float:
    """beta = (sqrt(2 log(2 / (delta4 (1 - delta3)))) + sqrt(m) + sqrt(d))^2:
    P(lambda_max(W) > beta) <= delta4 (docs/qop.md, "Inexact solve"; Davidson & Szarek 2001)."""
    t = math.sqrt(2.0 * math.log(2.0 / (delta4 * (1.0 - delta3))))
    return (t + math.sqrt(m) + math.sqrt(d)) ** 2
