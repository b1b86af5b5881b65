"""The kernels' branch-free exp and its constants (the only place they are defined).

:func:`exp` is Cody-Waite reduction, a degree-13 Taylor polynomial in Estrin's scheme and
2^k built from the exponent bits: within 1 ulp of ``np.exp`` (tested) and free of the
branches of libm's scalar ``exp``, so loops over it vectorise. :data:`CONSTANTS` hands the
same constants to the vector-code logistic derivative of :mod:`.simd`.

Everything here is plain Python: :func:`f2i` and :func:`i2f` are the bit casts written
with numpy, which the compiled kernel set replaces with one-instruction LLVM bit casts
(:mod:`.build`); the other functions are compiled as they are.
"""

from __future__ import annotations

import math
import types

import numpy as np

__all__ = ["CONSTANTS", "exp", "exp_array", "exp_parts", "f2i", "i2f"]

#: log2(e)
LOG2E = 1.4426950408889634
#: 1.5 * 2^52: adding it rounds x log2(e) to an integer held in the low mantissa bits
SHIFTER = 6755399441055744.0
SHIFTER_BITS = int(np.float64(SHIFTER).view(np.int64))
#: ln 2 split so that k * LN2_HI is exact for |k| < 2^11 (fdlibm's split)
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
#: 1/j!, j = 2..13: the Taylor coefficients of exp(r)
TAYLOR = tuple(1.0 / math.factorial(j) for j in range(2, 14))
C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13 = TAYLOR
#: exp's clamps: exp(-746) rounds to 0 and exp(710) overflows to inf, as in np.exp
EXP_LO, EXP_HI = -746.0, 710.0
#: the logistic derivative's lower clamp: exp(-708) > 2^-1022 is normal
LOGISTIC_LO = -708.0

#: The constants of the vector-code logistic derivative (its clamps, the shifter, the
#: Cody-Waite split, the Taylor coefficients c2..c13), taken from the names above.
CONSTANTS = types.MappingProxyType(
    {
        "lo": LOGISTIC_LO,
        "hi": EXP_HI,
        "log2e": LOG2E,
        "shifter": SHIFTER,
        "shifter_bits": SHIFTER_BITS,
        "ln2_hi": LN2_HI,
        "ln2_lo": LN2_LO,
        **{f"c{j}": c for j, c in enumerate(TAYLOR, start=2)},
    }
)

_MASK64 = (1 << 64) - 1


def f2i(x: float) -> int:
    """The bits of the float64 x as an int64."""
    return int(np.float64(x).view(np.int64))


def i2f(i: int) -> float:
    """The float64 whose bits are the low 64 bits of i (wrapping like an int64 shift)."""
    return float(np.uint64(i & _MASK64).view(np.float64))


def exp_parts(x):
    """(p, k) with exp(x) = p 2^k, p = exp(r) in [0.7, 1.42]: x = k ln2 + r, |r| <= ln2/2
    (Cody-Waite, k rounded by the 1.5 * 2^52 shifter), exp(r) by its Taylor polynomial of
    degree 13 (truncation < 5e-18) in Estrin's scheme. Branch-free, for |x| <= 746."""
    kd = x * LOG2E + SHIFTER
    k = f2i(kd) - SHIFTER_BITS
    kf = kd - SHIFTER
    r = (x - kf * LN2_HI) - kf * LN2_LO
    r2 = r * r
    r4 = r2 * r2
    a = (C2 + C3 * r) + r2 * (C4 + C5 * r)
    b = (C6 + C7 * r) + r2 * (C8 + C9 * r)
    c = (C10 + C11 * r) + r2 * (C12 + C13 * r)
    return 1.0 + (r + r2 * (a + r4 * (b + r4 * c))), k


def exp(x):
    """exp(x), branch-free so that loops over it vectorise: p 2^k from :func:`exp_parts`,
    2^k applied as two factors 2^h 2^(k-h), h = floor(k/2), each a normal number over the
    whole clamped range (so subnormal and overflowing results are rounded once, by the
    last product, like np.exp). NaN propagates; x is clamped to [-746, 710] (exp = 0 and
    inf there)."""
    x = EXP_LO if x < EXP_LO else x
    x = EXP_HI if x > EXP_HI else x
    p, k = exp_parts(x)
    h = k >> 1
    return (p * i2f((h + 1023) << 52)) * i2f((k - h + 1023) << 52)


def exp_array(x, out):
    """out[i] = exp(x[i])."""
    for i in range(x.shape[0]):
        out[i] = exp(x[i])
