"""Exact discrete Gaussian noise, and released values on a public grid.

The sampler is that of Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020 (arXiv:2004.00010), Section 5: Algorithm 1 (Bernoulli(exp(-gamma))
for rational gamma), Algorithm 2 (discrete Laplace), Algorithm 3 (discrete Gaussian by
rejection from the discrete Laplace). Every probability is a ratio of integers and every
coin is a uniform integer from the given numpy ``Generator`` (numpy's bounded integers are
exact: rejection on the generator's words); no floating-point number enters a probability.

Two implementations of the same algorithms:

* :func:`bernoulli_exp`, :func:`discrete_laplace`, :func:`discrete_gaussian`: one sample,
  Python integers and :class:`fractions.Fraction` (any rational parameter, no overflow);
* :func:`discrete_gaussian_array`: many samples of N_Z(0, s^2) for an integer scale
  1 <= s <= 2^26, vectorised over int64 numpy arrays, each sample an independent run of
  the algorithms (a rejected sample restarts with fresh coins, as in the scalar code).
  No int64 overflows (every bound is below 2^62; proofs at each step): the rare inputs
  beyond a bound (probability at most 2 e^-32 per candidate, e^-1024 at the default
  scale s ~ 2^20) are handed to the exact scalar code.

:func:`grid_gaussian` releases a real vector f as gamma (q + Y), q = rint(clip(f / gamma))
and Y ~ N_Z(0, s^2)^d, with (gamma, s) = :func:`objpert.mechanisms._certificates.grid_noise`
(sigma):
gamma is a power of two, so f / gamma, the rounding and gamma (q + Y) are exact in
floating point, the output lies on the grid gamma Z whatever f is, and it depends on f
only through the integer vector q. Its certificate is in :mod:`objpert.mechanisms._certificates`
(sensitivity + gamma sqrt(d), Canonne et al. 2020, Theorem 14).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from objpert.mechanisms._certificates import GRID_BITS, grid_noise

__all__ = [
    "MAX_SCALE_BITS",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_gaussian_array",
    "discrete_laplace",
    "from_grid",
    "grid_gaussian",
    "to_grid",
    "uniform_below",
]

#: The vectorised sampler takes integer scales s <= 2^MAX_SCALE_BITS.
MAX_SCALE_BITS = 26
#: Every int64 intermediate of the vectorised sampler stays below this.
_INT64_BOUND = 2**62
#: |(|Y| - s)| below this has a square below 2^62 (the acceptance numerator).
_SQUARE_BOUND = 2**31
#: A geometric count above this (probability e^-2^30) would be a failure of the generator.
_GEOMETRIC_BOUND = 2**30
#: Released grid integers are clipped to +-2^52 (so gamma (q + Y) is exact when |Y| < 2^52).
GRID_CLIP = 2**52


# ---------------------------------------------------------------- exact scalar algorithms


def uniform_below(generator: np.random.Generator, high: int) -> int:
    """A uniform integer in [0, high) for any Python int high >= 1: numpy's bounded
    integers up to 2^62, beyond that whole random bytes with rejection (exact)."""
    if high < 1:
        raise ValueError(f"high must be >= 1; got {high!r}")
    if high <= _INT64_BOUND:
        return int(generator.integers(0, high, dtype=np.int64))
    bits = (high - 1).bit_length()
    nbytes = (bits + 7) // 8
    while True:
        v = int.from_bytes(generator.bytes(nbytes), "little") >> (8 * nbytes - bits)
        if v < high:
            return v


def _bernoulli(generator: np.random.Generator, p: Fraction) -> bool:
    """Bernoulli(p) for rational p in [0, 1]: U < numerator, U uniform below the
    denominator."""
    return uniform_below(generator, p.denominator) < p.numerator


def _bernoulli_exp_unit(generator: np.random.Generator, gamma: Fraction) -> bool:
    """Algorithm 1 for gamma in [0, 1]: K = 1, 2, ... while Bernoulli(gamma / K) succeeds;
    return K odd. P(K > k) = gamma^k / k!, so P(K odd) = sum_j (-gamma)^j / j! = e^-gamma."""
    k = 1
    while _bernoulli(generator, gamma / k):
        k += 1
    return k % 2 == 1


def bernoulli_exp(generator: np.random.Generator, gamma: Any) -> bool:
    """Bernoulli(exp(-gamma)) for rational gamma >= 0, exactly (Canonne, Kamath & Steinke
    2020, Algorithm 1): floor(gamma) independent Bernoulli(exp(-1)) coins, then one
    Bernoulli(exp(-(gamma - floor(gamma)))), all of which must succeed."""
    gamma = Fraction(gamma)
    if gamma < 0:
        raise ValueError(f"gamma must be >= 0; got {gamma!r}")
    one = Fraction(1)
    while gamma > 1:
        if not _bernoulli_exp_unit(generator, one):
            return False
        gamma -= 1
    return _bernoulli_exp_unit(generator, gamma)


def discrete_laplace(generator: np.random.Generator, scale: Any) -> int:
    """A sample of P(Z = z) proportional to exp(-|z| / scale) for rational scale t/s > 0
    (Canonne, Kamath & Steinke 2020, Algorithm 2): U uniform below t accepted with
    probability exp(-U/t), V geometric (Bernoulli(exp(-1)) successes before the first
    failure), Y = floor((U + t V) / s), a fair sign B, rejecting (B = 1, Y = 0)."""
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError(f"scale must be > 0; got {scale!r}")
    t, s = scale.numerator, scale.denominator
    while True:
        u = uniform_below(generator, t)
        if not bernoulli_exp(generator, Fraction(u, t)):
            continue
        v = 0
        while bernoulli_exp(generator, 1):
            v += 1
        y = (u + t * v) // s
        b = uniform_below(generator, 2)
        if b == 1 and y == 0:
            continue
        return -y if b else y


def discrete_gaussian(generator: np.random.Generator, sigma2: Any) -> int:
    """A sample of N_Z(0, sigma^2), P(Y = y) proportional to exp(-y^2 / (2 sigma^2)), for
    rational sigma^2 > 0 (Canonne, Kamath & Steinke 2020, Algorithm 3): t = floor(sigma) + 1,
    Y discrete Laplace of scale t, accepted with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))."""
    sigma2 = Fraction(sigma2)
    if sigma2 <= 0:
        raise ValueError(f"sigma^2 must be > 0; got {sigma2!r}")
    t = math.isqrt(sigma2.numerator * sigma2.denominator) // sigma2.denominator + 1
    while True:
        y = discrete_laplace(generator, t)
        if bernoulli_exp(generator, (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)):
            return y


# ---------------------------------------------------------------- vectorised (int64)


def _coins(generator: np.random.Generator, num: np.ndarray, den: int, k: int) -> np.ndarray:
    """Bernoulli(num / (den k)) elementwise for 0 <= num <= den <= 2^62: one uniform
    integer below den k when den k <= 2^62, else Bernoulli(num/den) and Bernoulli(1/k)
    (independent; their conjunction has the product probability)."""
    if den * k <= _INT64_BOUND:
        return generator.integers(0, den * k, size=num.size) < num
    first = generator.integers(0, den, size=num.size) < num
    return first & (generator.integers(0, k, size=num.size) == 0)


def _bernoulli_exp_unit_array(
    generator: np.random.Generator, num: np.ndarray, den: int
) -> np.ndarray:
    """Algorithm 1 for gamma = num / den in [0, 1], elementwise: every sample still looping
    has the same K, so round K draws Bernoulli(gamma / K) for all of them at once."""
    out = np.empty(num.size, dtype=bool)
    alive = np.arange(num.size)
    k = 1
    while alive.size:
        a = _coins(generator, num[alive], den, k)
        out[alive[~a]] = k % 2 == 1
        alive = alive[a]
        k += 1
    return out


def _bernoulli_exp_one(generator: np.random.Generator, size: int) -> np.ndarray:
    """Bernoulli(exp(-1)) ``size`` times (Algorithm 1 at gamma = 1; its first coin,
    Bernoulli(1), always succeeds and is skipped)."""
    out = np.empty(size, dtype=bool)
    alive = np.arange(size)
    k = 2
    while alive.size:
        a = generator.integers(0, k, size=alive.size) == 0
        out[alive[~a]] = k % 2 == 1
        alive = alive[a]
        k += 1
    return out


def _bernoulli_exp_array(generator: np.random.Generator, num: np.ndarray, den: int) -> np.ndarray:
    """Bernoulli(exp(-num/den)) elementwise, 0 <= num < 2^62, 1 <= den <= 2^62 (Algorithm
    1): floor(num/den) coins Bernoulli(exp(-1)) (a sample stops at its first failure), then
    Bernoulli(exp(-(num mod den)/den)) for the survivors."""
    whole = num // den
    ok = np.ones(num.size, dtype=bool)
    idx = np.flatnonzero(whole > 0)
    j = 0
    while idx.size:
        coin = _bernoulli_exp_one(generator, idx.size)
        ok[idx[~coin]] = False
        j += 1
        idx = idx[coin]
        idx = idx[whole[idx] > j]
    idx = np.flatnonzero(ok)
    if idx.size:
        ok[idx] = _bernoulli_exp_unit_array(generator, num[idx] - whole[idx] * den, den)
    return ok


def _geometric_exp_one(generator: np.random.Generator, size: int) -> np.ndarray:
    """V = the number of Bernoulli(exp(-1)) successes before the first failure, ``size``
    times: P(V >= v) = e^-v. Bounded by the number of rounds run (< 2^30, checked)."""
    v = np.zeros(size, dtype=np.int64)
    alive = np.arange(size)
    rounds = 0
    while alive.size:
        alive = alive[_bernoulli_exp_one(generator, alive.size)]
        v[alive] += 1
        rounds += 1
        if rounds > _GEOMETRIC_BOUND:  # pragma: no cover - probability e^-(2^30)
            raise RuntimeError("geometric sample out of range: the generator is broken")
    return v


def _discrete_laplace_array(generator: np.random.Generator, t: int, size: int) -> np.ndarray:
    """``size`` samples of Algorithm 2 with s = 1, integer scale t <= 2^26: P(Z = z)
    proportional to exp(-|z|/t). int64: U < t <= 2^26, V < 2^30, so U + t V < 2^57."""
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        u = generator.integers(0, t, size=todo.size)
        keep = _bernoulli_exp_array(generator, u, t)  # u < t: no whole part
        retry = todo[~keep]
        idx, u = todo[keep], u[keep]
        x = u + t * _geometric_exp_one(generator, idx.size)
        negative = generator.integers(0, 2, size=idx.size) == 1
        bad = negative & (x == 0)
        good = ~bad
        out[idx[good]] = np.where(negative, -x, x)[good]
        todo = np.concatenate([retry, idx[bad]])
    return out


def discrete_gaussian_array(
    generator: np.random.Generator, scale: int, shape: int | tuple[int, ...]
) -> np.ndarray:
    """Independent samples of N_Z(0, s^2), s = ``scale`` an integer in [1, 2^26], as an int64
    array of ``shape`` (Canonne, Kamath & Steinke 2020, Algorithm 3, vectorised).

    The candidate is discrete Laplace of scale t = s (Algorithm 3 takes t = floor(sigma) + 1
    to make t an integer; s is one already) and is accepted with probability
    exp(-(|Y| - s)^2 / (2 s^2)): for every t > 0, exp(-(|y| - s^2/t)^2 / (2 s^2)) times
    the Laplace weight exp(-|y|/t) is exp(-y^2 / (2 s^2)) exp(-s^2 / (2 t^2)), so an
    accepted Y has P(Y = y) proportional to exp(-y^2 / (2 s^2)) (the proof of Algorithm 3).
    The acceptance is Bernoulli(exp(-a^2 / (2 s^2))), a = |Y| - s, in int64 for
    |a| < 2^31 (a^2 < 2^62, 2 s^2 <= 2^53), by the scalar code otherwise (a candidate has
    P(|Y| >= 2^31) <= 2 e^(-2^31 / s): 2 e^-32 at s = 2^26, 2 e^-1024 at s = 2^21).
    """
    s = int(scale)
    if s != scale or not 1 <= s <= 2**MAX_SCALE_BITS:
        raise ValueError(f"scale must be an integer in [1, 2^{MAX_SCALE_BITS}]; got {scale!r}")
    size = math.prod(shape) if isinstance(shape, tuple) else int(shape)
    den = 2 * s * s
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    while todo.size:
        y = _discrete_laplace_array(generator, s, todo.size)
        a = np.abs(y) - s
        small = np.abs(a) < _SQUARE_BOUND
        accept = np.zeros(todo.size, dtype=bool)
        ii = np.flatnonzero(small)
        accept[ii] = _bernoulli_exp_array(generator, a[ii] * a[ii], den)
        for i in np.flatnonzero(~small):  # exact, Python integers
            accept[i] = bernoulli_exp(generator, Fraction(int(a[i]) ** 2, den))
        out[todo[accept]] = y[accept]
        todo = todo[~accept]
    return out.reshape(shape)


# ---------------------------------------------------------------- the grid


def to_grid(values: Any, gamma: float, bound: int = GRID_CLIP) -> np.ndarray:
    """q = rint(clip(f / gamma, -bound, bound)) as int64: the grid point nearest to f, in
    units of the power of two gamma. f / gamma is exact (a power-of-two scaling), rint
    rounds to nearest (|q - f/gamma| <= 1/2 inside the box), and the clip is 1-Lipschitz in
    each coordinate, so ||q(f) - q(f')|| <= ||f - f'|| / gamma + sqrt(d)
    (:func:`objpert.mechanisms._certificates.grid_sensitivity`). NaN is refused."""
    f = np.asarray(values, dtype=float)
    if np.isnan(f).any():
        raise ValueError("cannot round NaN to the grid")
    if not 0 < bound <= GRID_CLIP:
        raise ValueError(f"bound must be in (0, 2^52]; got {bound!r}")
    with np.errstate(over="ignore"):
        x = f / gamma
    return np.rint(np.clip(x, -bound, bound)).astype(np.int64)


def from_grid(units: np.ndarray, gamma: float) -> np.ndarray:
    """gamma q as floats: exact for |q| <= 2^53 (a power-of-two scaling of an exactly
    converted integer), and a fixed function of the integers q in any case."""
    return np.asarray(units, dtype=np.int64).astype(float) * gamma


def grid_gaussian(
    generator: np.random.Generator, values: Any, sigma: float, bits: int = GRID_BITS
) -> np.ndarray:
    """gamma (rint(f / gamma) + Y) with Y ~ N_Z(0, s^2) iid per coordinate and
    (gamma, s) = grid_noise(sigma, bits): ``values`` f (any shape) released on the grid
    gamma Z with discrete Gaussian noise of scale gamma s (= sigma for an on-grid sigma).
    f is clipped to +-2^52 gamma first (see :func:`to_grid`); the output is exactly an
    integer multiple of gamma unless |Y| >= 2^52 (probability below e^-(2^60))."""
    gamma, scale = grid_noise(sigma, bits)
    q = to_grid(values, gamma)
    return from_grid(q + discrete_gaussian_array(generator, scale, q.shape), gamma)
