"""The smallest noise scale that passes a monotone test.

Every calibration of the peers asks for the smallest scale s > 0 at which a certificate
holds, the certificate holding at every larger s (its delta decreases in s: Balle & Wang
2018, Theorem 8, for the Gaussian mechanism; Canonne, Kamath & Steinke 2020, Theorem 14,
for the discrete one). The search doubles until the test passes, halves while it passes,
then bisects geometrically; it only ever returns a scale at which the test passed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from objpert.exceptions import UnreachableTargetError

__all__ = ["smallest_passing"]


def smallest_passing(
    ok: Callable[[float], bool],
    start: float,
    *,
    limit: float | None = 1e15,
    rtol: float | None = None,
    unreachable: str = "no noise level certifies this target",
) -> float:
    """The smallest s (up to rounding) with ok(s), ok false below a threshold, true above.

    Doubles from ``start`` until ok (raising :class:`UnreachableTargetError` with message
    ``unreachable`` past ``limit`` times ``start``; ``limit=None``: no bound), halves while
    ok, then bisects at geometric midpoints: until the midpoint is no longer strictly
    between the two ends (at most 200 steps; ``rtol=None``) or until hi / lo - 1 <= rtol.
    ok(result) is true.
    """
    hi = start
    while not ok(hi):
        hi *= 2.0
        if not math.isfinite(hi) or (limit is not None and hi > start * limit):
            raise UnreachableTargetError(unreachable)
    lo = hi / 2.0
    while ok(lo):
        hi, lo = lo, lo / 2.0
    if rtol is None:
        for _ in range(200):
            mid = math.sqrt(lo * hi)
            if not lo < mid < hi:
                break
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
