"""The tight calibration's search: the smallest noise sigma that certifies a target at a
step budget N (Theorem C.13 of Watkins & Arora 2026, with the exact chi-tail truncation
mass, over a grid of splits of delta between truncation and divergence), and the bound
(Theorem 4.7) the calibration minimises at that sigma.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from objpert._special import chi_radius, q1
from objpert._validation import NUMERIC_FAILURES
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _utility as utility
from objpert.certify._constants import ProblemConstants
from objpert.certify._corollary413 import _corollary_413
from objpert.exceptions import ParameterError, UnreachableTargetError

__all__ = ["DEFAULT_MAX_ITER"]

DEFAULT_MAX_ITER = 100_000
_SAFETY = 1.0 - 1e-9  # tight plans aim at delta (1 - 1e-9): room for floating-point rounding
_GOLDEN_STEPS = 24  # golden-section steps of log mu between grid neighbours (a decade apart)

_SPLITS = np.geomspace(1e-4, 0.9, 28)  # candidate truncation shares of delta
_SIGMA_GRID = np.geomspace(1e-2, 1e7, 226)  # sigma / G candidates (10 per decade)


def _passes(pc, epsilon, delta, N, sigma, share, rfac, steps=None):
    """Vectorised: does C.13 with exact truncation mass share*delta certify at sigma?

    ``rfac = chi_radius(share * delta, d_star)``, so r = sigma * rfac has that mass. The
    divergence term (2G/sigma) Q1((sigma/G)(epsilon - s_N)) is evaluated where
    epsilon >= s_N only (elementwise, so each value is the one the full array would give).
    """
    r = sigma * rfac
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    if steps is None:
        steps = theorem_c13.step_terms(pc, N)
    with np.errstate(invalid="ignore", over="ignore"):  # sigma, r, r' > 0 by construction
        s_n = theorem_c13.checked_c13_terms(pc, sigma, r, r_outer, steps).s_n
        slack = epsilon - s_n
        ok = slack >= 0
        sig = np.broadcast_to(sigma, ok.shape)[ok]
        sl = slack[ok]
        div = 2.0 * pc.G / sig * q1(np.where(sl > 0, sig / pc.G * sl, 0.0))
        budget = np.broadcast_to((1.0 - share) * delta * _SAFETY, ok.shape)[ok]
    ok[ok] = div <= budget
    return ok


def _best_sigma(pc: ProblemConstants, epsilon: float, delta: float, N: int):
    """Smallest certifying sigma at N over the truncation shares: (sigma, share) or (inf, nan).

    Each share's first passing grid point is bisected down (``_bisect``'s steps), keeping
    only the shares that can still give the smallest sigma (:func:`_smallest_passing`)."""
    shares = _SPLITS[:, None]
    rfac = chi_radius(shares * delta, pc.d_star)
    grid = pc.G * _SIGMA_GRID[None, :]
    steps = theorem_c13.step_terms(pc, N)
    ok = _passes(pc, epsilon, delta, N, grid, shares, rfac, steps)
    has = ok.any(axis=1)
    if not has.any():
        return math.inf, math.nan
    first = np.argmax(ok, axis=1)
    rows = np.nonzero(has)[0]
    hi = grid[0, first[rows]]
    lo = np.where(first[rows] > 0, grid[0, np.maximum(first[rows] - 1, 0)], hi * 1e-3)
    sh, rf = _SPLITS[rows], rfac[rows, 0]

    def passes(s, active):
        return _passes(pc, epsilon, delta, N, s, sh[active, None], rf[active, None], steps)

    sigma, k = _smallest_passing(passes, lo, hi)
    return sigma, float(sh[k])


_BISECTIONS = 45  # halvings of the log-sigma bracket (from one grid step to ~1e-14)
_LEVELS = 5  # bisection levels decided by one vectorised evaluation


def _bisect(passes, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bisection in log sigma (mid = sqrt(lo hi); hi = mid where it passes, else lo = mid),
    ``_BISECTIONS`` steps for every row at once.

    The midpoints of the next ``_LEVELS`` steps form a binary tree (a passing midpoint
    leads to the bracket (lo, mid), a failing one to (mid, hi)); all of them are computed
    as the plain bisection would compute them and tested in one call of ``passes``, and
    the tree is then walked, so the result equals the step-by-step bisection bit for bit.
    """
    done = 0
    while done < _BISECTIONS:
        levels = min(_LEVELS, _BISECTIONS - done)
        lo, hi = _tree(passes, lo, hi, levels)
        done += levels
    return lo, hi


def _tree(passes, lo: np.ndarray, hi: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """``levels`` bisection steps of every row decided by one call of ``passes`` (see
    :func:`_bisect`)."""
    rows = np.arange(lo.size)
    size = 2**levels - 1
    lows, highs = np.empty((lo.size, size)), np.empty((lo.size, size))
    lows[:, 0], highs[:, 0] = lo, hi
    mids = np.empty((lo.size, size))
    for first in (2**j - 1 for j in range(levels)):  # the nodes of one level
        nodes = slice(first, 2 * first + 1)
        mids[:, nodes] = np.sqrt(lows[:, nodes] * highs[:, nodes])
        if 2 * first + 1 < size:  # children: (lo, mid) after a pass, (mid, hi) after a fail
            kids = slice(2 * first + 1, 4 * first + 3)
            lows[:, kids.start : kids.stop : 2] = lows[:, nodes]
            highs[:, kids.start : kids.stop : 2] = mids[:, nodes]
            lows[:, kids.start + 1 : kids.stop : 2] = mids[:, nodes]
            highs[:, kids.start + 1 : kids.stop : 2] = highs[:, nodes]
    good = passes(mids)
    node = np.zeros(lo.size, dtype=np.intp)
    for _ in range(levels):
        g = good[rows, node]
        mid = mids[rows, node]
        hi = np.where(g, mid, hi)
        lo = np.where(g, lo, mid)
        node = 2 * node + np.where(g, 1, 2)
    return lo, hi


_TREE_WIDTH = 1024  # midpoints per evaluation in :func:`_smallest_passing`


def _smallest_passing(passes, lo: np.ndarray, hi: np.ndarray) -> tuple[float, int]:
    """(min over rows of hi after ``_BISECTIONS`` steps of :func:`_bisect`, its row), with
    ``passes(mids, rows)`` testing the given rows only.

    Before each evaluation the rows whose lo has reached the smallest hi are dropped: their
    final hi exceeds their lo (mid = sqrt(lo hi) > lo), so it exceeds that smallest hi and
    the final smallest hi, and they can neither win nor tie. Fewer rows let one evaluation
    decide more levels (up to ``_TREE_WIDTH`` midpoints). Each kept row's steps are those
    of the plain bisection, so the result equals ``min`` of :func:`_bisect`'s hi (first
    row among equals) bit for bit.
    """
    active = np.arange(lo.size)
    done = 0
    while done < _BISECTIONS:
        keep = lo < hi.min()
        keep[np.argmin(hi)] = True
        active, lo, hi = active[keep], lo[keep], hi[keep]
        width = max(_TREE_WIDTH // active.size, 2)
        levels = min(max(int(math.log2(width)), _LEVELS), _BISECTIONS - done)
        lo, hi = _tree(lambda m: passes(m, active), lo, hi, levels)  # noqa: B023
        done += levels
    k = int(np.argmin(hi))
    return float(hi[k]), int(active[k])


def _bound(pc, sigma, N, comparator_norm, delta_sample, objective="population") -> float:
    """The bound the tight calibration minimises.

    ``population``: Theorem 4.7 (unregularised population excess risk against comparators of
    norm <= W). ``empirical``: the unregularised *empirical* excess risk against the same
    comparators, F_0(w_N) - F_0(w) <= [F(w_N) - F(w*_S)] + (mu/2) W^2 <= Theorem 4.10 + mu W^2/2,
    free of the worst-case uniform-convergence term that drives mu up for small n.
    """
    if not math.isfinite(sigma):
        return math.inf
    if objective == "empirical":
        return float(utility._theorem_410(pc, sigma, N)) + 0.5 * pc.mu * comparator_norm**2
    return float(utility._theorem_47(pc, sigma, N, comparator_norm, delta_sample))


def _golden(f, a: float, b: float, steps: int) -> tuple[float, float]:
    """Golden-section search for the minimum of f on [a, b]: (x, f(x)), the best point
    evaluated. Where both inner points are +inf (no certificate: mu too small) it moves
    right."""
    phi = (math.sqrt(5) - 1) / 2
    x1, x2 = b - phi * (b - a), a + phi * (b - a)
    f1, f2 = f(x1), f(x2)
    best = min((f1, x1), (f2, x2))
    for _ in range(steps):
        if f1 <= f2 and math.isfinite(f1):
            b, x2, f2 = x2, x1, f1
            x1 = b - phi * (b - a)
            f1 = f(x1)
            best = min(best, (f1, x1))
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + phi * (b - a)
            f2 = f(x2)
            best = min(best, (f2, x2))
    return best[1], best[0]


def _search_mu(
    bound_at,
    loss_obj,
    n,
    d,
    zeta,
    epsilon,
    delta,
    comparator_norm,
    delta_sample,
    max_iter,
    strict=True,
) -> float | None:
    """The mu minimising ``bound_at(mu, max_iter)``: a log grid, then golden-section
    search between the best grid point's neighbours (None where nothing certifies and not
    ``strict``)."""
    # 1. mu on a log grid at the full budget, plus Corollary 4.13's mu when it applies
    scale = loss_obj.L2 * zeta**2
    mus = list(np.geomspace(scale * 1e-8, scale * 1e2, 11))
    if epsilon <= 1:
        with contextlib.suppress(ParameterError, *NUMERIC_FAILURES):  # no Corollary 4.13 mu
            mus.append(
                _corollary_413(
                    loss_obj,
                    n=n,
                    d=d,
                    zeta=zeta,
                    epsilon=epsilon,
                    delta=delta,
                    comparator_norm=comparator_norm,
                    delta_sample=delta_sample,
                ).mu
            )
    mus.sort()
    values = [bound_at(m, max_iter) for m in mus]
    k = int(np.argmin(values))
    if not math.isfinite(values[k]):
        if not strict:
            return None
        raise UnreachableTargetError(
            f"no plan with at most {max_iter} iterations certifies (epsilon={epsilon:g}, "
            f"delta={delta:g}); allow more iterations or a larger epsilon"
        )
    # 2. golden-section refinement of log mu between the grid neighbours
    a = math.log(mus[max(k - 1, 0)])
    b = math.log(mus[min(k + 1, len(mus) - 1)])
    x, f = _golden(lambda x: bound_at(math.exp(x), max_iter), a, b, _GOLDEN_STEPS)
    return math.exp(x) if f < values[k] else mus[k]
