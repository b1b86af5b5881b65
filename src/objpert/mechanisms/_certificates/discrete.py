"""Discrete Gaussian noise on a power-of-two grid: the grid, its zCDP and its calibration.

Noise published added to a value f (output perturbation, AMP's output noise, noisy GD's
gradient noise) is discrete: f is rounded to the public grid gamma Z and gamma N_Z(0, s^2)
is added (:func:`grid_noise`; the sampler is :mod:`objpert.mechanisms._discrete_noise`), so
the output lies on the grid whatever f is and its low-order bits say nothing about f
(Mironov 2012; Jin et al. 2022). The certificate is the multivariate discrete Gaussian's
(Canonne, Kamath & Steinke 2020, arXiv:2004.00010): Theorem 14, rho-zCDP with
rho = (G / gamma)^2 / (2 s^2) for an integer query of l2 sensitivity G / gamma in grid
units, converted to (epsilon, delta) by Corollary 13 (:mod:`.zcdp`). The rounding moves
each coordinate by at most gamma / 2, so the sensitivity in the certificate is
G = Delta + gamma sqrt(d) (:func:`grid_sensitivity`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from objpert._validation import numeric_guard
from objpert.accounting._bisection import smallest_passing
from objpert.accounting._conversions import cdp_delta, cdp_epsilon, gaussian_zcdp
from objpert.accounting._gaussian_mechanism import calibrate_gaussian, classical_gaussian_sigma
from objpert.exceptions import ParameterError, UnreachableTargetError

__all__ = [
    "GRID_BITS",
    "GRID_BITS_RANGE",
    "calibrate_discrete_gaussian",
    "classical_grid_sigma",
    "discrete_gaussian_delta",
    "discrete_gaussian_epsilon",
    "discrete_gaussian_rho",
    "grid_gaussian_sigma",
    "grid_noise",
    "grid_sensitivity",
    "grid_sigma",
]

#: k: a discrete noise of std ~sigma lives on the grid gamma Z, gamma the power of two with
#: sigma 2^-(k+1) < gamma <= sigma 2^-k (:func:`grid_noise`). Public, part of every plan.
GRID_BITS = 20
#: The grid exponents a plan may use: up to 24 keeps every integer of the vectorised
#: discrete-Gaussian sampler below 2^62 (objpert.mechanisms._discrete_noise).
GRID_BITS_RANGE = (4, 24)


def grid_noise(sigma: float, bits: int = GRID_BITS) -> tuple[float, int]:
    """(gamma, s): the grid spacing and the integer noise scale for a requested std sigma.

    gamma = 2^(floor(log2 sigma) - k) (k = ``bits``) and s = ceil(sigma / gamma), an
    integer in [2^k, 2^(k+1)]: the noise is gamma N_Z(0, s^2), of scale gamma s, the
    smallest multiple of gamma that is >= sigma (:func:`grid_sigma`). Everything is exact
    (scaling by powers of two); when s = 2^(k+1) the spacing doubles and s = 2^k, so the
    map is idempotent: grid_noise(gamma s) has the same gamma and s. Public: a function
    of the plan's sigma and k alone (sigma > 0 finite and k in :data:`GRID_BITS_RANGE`,
    checked where they enter: the planner's options, a plan's fields).
    """
    s, k = sigma, bits
    _, e = math.frexp(s)  # s = m 2^e with 1/2 <= m < 1: floor(log2 s) = e - 1
    shift = e - 1 - k
    units = math.ceil(math.ldexp(s, -shift))
    if units == 2 ** (k + 1):
        shift, units = shift + 1, 2**k
    if shift < -1022:
        raise ParameterError(f"sigma = {sigma!r} is too small for a normal grid spacing")
    return math.ldexp(1.0, shift), units


def grid_sigma(sigma: float, bits: int = GRID_BITS) -> float:
    """The scale gamma s of the discrete noise a requested std sigma gets (>= sigma,
    within a factor 1 + 2^-k; :func:`grid_noise`)."""
    gamma, units = grid_noise(sigma, bits)
    return gamma * units


def grid_sensitivity(sensitivity: float, sigma: float, d: int, bits: int = GRID_BITS) -> float:
    """The l2 sensitivity after rounding to the grid: Delta + gamma sqrt(d).

    The released value is gamma (q(f) + Y), q(f) = rint(clip(f / gamma)) in Z^d, clip to
    a public box (coordinatewise, 1-Lipschitz). Write q(f) = f/gamma + r(f) with
    |r_j| <= 1/2; for neighbouring values f, f' (||f - f'|| <= Delta), each coordinate
    of r(f) - r(f') lies in [-1, 1], so by the triangle inequality
    ||q(f) - q(f')||_2 <= Delta / gamma + sqrt(d): l2 sensitivity Delta + gamma sqrt(d)
    in the units of f. ``gamma`` is the spacing of :func:`grid_noise` (sigma).
    """
    gamma, _ = grid_noise(sigma, bits)
    return sensitivity + gamma * math.sqrt(d)


def discrete_gaussian_rho(
    sensitivity: float, sigma: float, d: int, steps: int = 1, bits: int = GRID_BITS
) -> float:
    """rho-zCDP of ``steps`` adaptively composed grid-Gaussian releases of l2 sensitivity
    ``sensitivity`` each: T G^2 / (2 (gamma s)^2) with G = :func:`grid_sensitivity` and
    (gamma, s) = :func:`grid_noise` (sigma). In grid units the query is an integer vector
    of sensitivity G / gamma and the noise N_Z(0, s^2) per coordinate: Canonne, Kamath &
    Steinke (2020), Theorem 14 (rho = (G / gamma)^2 / (2 s^2)); adaptive composition adds
    rho (Bun & Steinke 2016, Lemma 2.3)."""
    gamma, units = grid_noise(sigma, bits)
    return gaussian_zcdp(grid_sensitivity(sensitivity, sigma, d, bits), gamma * units, steps)


def discrete_gaussian_delta(
    epsilon: float, sensitivity: float, sigma: float, d: int, steps: int = 1,
    bits: int = GRID_BITS,
) -> float:  # fmt: skip
    """delta(epsilon) of ``steps`` composed grid-Gaussian releases: :func:`cdp_delta` of
    :func:`discrete_gaussian_rho` (Canonne, Kamath & Steinke 2020, Theorem 14 and
    Corollary 13). Never below the continuous Gaussian's exact delta at the same sigma:
    Corollary 13 holds for the continuous Gaussian too, and the grid only adds to G."""
    return cdp_delta(discrete_gaussian_rho(sensitivity, sigma, d, steps, bits), epsilon)


def discrete_gaussian_epsilon(
    delta: float, sensitivity: float, sigma: float, d: int, steps: int = 1,
    bits: int = GRID_BITS,
) -> float:  # fmt: skip
    """epsilon(delta) of ``steps`` composed grid-Gaussian releases: :func:`cdp_epsilon` of
    :func:`discrete_gaussian_rho`."""
    return cdp_epsilon(discrete_gaussian_rho(sensitivity, sigma, d, steps, bits), delta)


@numeric_guard
def calibrate_discrete_gaussian(
    sensitivity: float, d: int, epsilon: float, delta: float, steps: int = 1,
    bits: int = GRID_BITS, *, report: str = "delta",
) -> float:  # fmt: skip
    """The smallest on-grid scale sigma (:func:`grid_sigma`) whose ``steps`` composed
    grid-Gaussian releases certify (epsilon, delta): :func:`discrete_gaussian_delta` <=
    delta at epsilon (``report="delta"``) or :func:`discrete_gaussian_epsilon` <= epsilon
    at delta (``report="epsilon"``), by bisection from the analytic continuous calibration
    (:func:`~objpert.accounting._gaussian_mechanism.calibrate_gaussian`, sensitivity sqrt(T) G).
    """
    g, T = sensitivity, steps
    ok: Callable[[float], bool]
    if report == "delta":

        def ok(s: float) -> bool:
            return discrete_gaussian_delta(epsilon, g, s, d, T, bits) <= delta

    elif report == "epsilon":

        def ok(s: float) -> bool:
            return discrete_gaussian_epsilon(delta, g, s, d, T, bits) <= epsilon

    else:
        raise ParameterError(f"report must be 'delta' or 'epsilon'; got {report!r}")
    start = calibrate_gaussian(math.sqrt(T) * g, epsilon, delta)
    return grid_sigma(smallest_passing(lambda s: ok(grid_sigma(s, bits)), start), bits)


@numeric_guard
def classical_grid_sigma(
    sensitivity: float, d: int, epsilon: float, delta: float, bits: int = GRID_BITS
) -> float:
    """The classical formula (Dwork & Roth 2014, Theorem A.1; epsilon < 1) at the grid
    sensitivity: an on-grid sigma >= c (Delta + gamma(sigma) sqrt(d)), c = sqrt(2 log(1.25
    / delta)) / epsilon, by fixed-point steps sigma <- grid_sigma(c (Delta + gamma(sigma)
    sqrt(d))) from grid_sigma(c Delta). As gamma <= sigma 2^-k, sigma = c Delta /
    (1 - c sqrt(d) 2^-k) always qualifies (the fallback). A choice of sigma only: its
    certificate is the discrete Gaussian's (:func:`discrete_gaussian_delta`)."""
    c = classical_gaussian_sigma(1.0, epsilon, delta)
    g = sensitivity
    sigma = grid_sigma(c * g, bits)
    for _ in range(4):
        need = c * grid_sensitivity(g, sigma, d, bits)
        if sigma >= need:
            return sigma
        sigma = grid_sigma(need, bits)
    room = 1.0 - c * math.sqrt(d) * 2.0**-bits
    if not room > 0.0:
        raise UnreachableTargetError(
            f"the grid 2^-{bits} sigma is too coarse for the classical calibration at d = {d}"
        )
    return grid_sigma(g * c / room, bits)


def grid_gaussian_sigma(
    calibration: str, sensitivity: float, d: int, epsilon: float, delta: float, bits: int
) -> float:
    """The on-grid std of published discrete noise of one release: the smallest certifying
    one (``analytic``: :func:`calibrate_discrete_gaussian`) or the classical formula at the
    grid sensitivity (``classical``: :func:`classical_grid_sigma`)."""
    if calibration == "analytic":
        return calibrate_discrete_gaussian(sensitivity, d, epsilon, delta, 1, bits)
    return classical_grid_sigma(sensitivity, d, epsilon, delta, bits)
