"""Privacy profiles delta(epsilon) of single releases, from public constants alone.

A release that is (epsilon, delta(epsilon))-DP for every epsilon >= 0 has the privacy
profile delta(.) (Balle, Barthe & Gaboardi 2018). The profile, not one (epsilon, delta)
point, is what composes tightly (:mod:`objpert.accounting._pld`).

- **Watkins & Arora (2026), Theorem C.13.** For a release with noise sigma, ridge mu,
  step eta and N steps, every truncation radius r (with the outer radius
  r' = r + 2 L G / mu of Section C.4) gives delta_N(epsilon) = Pr(||Pi_C Z|| > r)
  + (2G/sigma) Q1((sigma/G)(epsilon - s_N(r))) (eq. 50). The radius is free at each
  epsilon, so the profile is the minimum over radii, taken here over a geometric grid of
  truncation masses (exact chi tails, :mod:`objpert.certify._truncation`) and the plan's
  own radius. The exact-minimiser limit (Remark C.16) has no truncation term.
- **zCDP.** rho-zCDP gives delta(epsilon) by Corollary 13 of Canonne, Kamath & Steinke
  (2020) (:func:`objpert.accounting._conversions.cdp_delta`).

Every value is an upper bound on the hockey-stick divergence of the release at epsilon,
for every ordered pair of neighbouring datasets. The relation (replace-one,
:mod:`objpert.certify._neighbours`) is symmetric, so the profile also bounds the
divergence at negative epsilon (:func:`symmetric_extension`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from objpert.exceptions import ParameterError

__all__ = ["convex_envelope", "monotone", "symmetric_extension", "zcdp_profile"]


def zcdp_profile(rho: float, epsilons: ArrayLike) -> np.ndarray:
    """delta(epsilon) implied by rho-zCDP (Canonne, Kamath & Steinke 2020, Corollary 13)."""
    from objpert.accounting._conversions import cdp_delta  # the peers' package: loaded on use

    eps = np.asarray(epsilons, dtype=np.float64)
    flat = np.atleast_1d(eps).ravel()
    out = np.array([cdp_delta(rho, float(e)) if np.isfinite(e) else 0.0 for e in flat])
    return monotone(out, flat).reshape(np.shape(eps))


def monotone(values: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """The running minimum in increasing epsilon (valid: (e, d)-DP implies (e', d)-DP)."""
    order = np.argsort(eps, kind="stable")
    out = np.empty_like(values)
    out[order] = np.minimum.accumulate(np.clip(values[order], 0.0, 1.0))
    return out


def convex_envelope(epsilons: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """The greatest convex minorant, as a function of alpha = e^epsilon, of the points
    (e^epsilon_i, delta_i) and (0, 1), evaluated at the epsilon_i (increasing).

    The hockey-stick divergence H(alpha) of any pair of distributions is convex in alpha
    with H(0) = 1 (Zhu, Dong & Wang 2022), so a convex function of alpha that is
    below upper bounds of H at the grid points and above H is still an upper bound: the
    minorant is a valid, tighter profile, and its connect-the-dots masses are >= 0.
    """
    alpha = np.exp(np.asarray(epsilons, dtype=float))
    xs = np.concatenate([[0.0], alpha])
    ys = np.concatenate([[1.0], np.asarray(deltas, dtype=float)])
    hull: list[int] = []
    for i in range(xs.size):  # Andrew's monotone chain, lower hull
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (xs[b] - xs[a]) * (ys[i] - ys[a]) - (ys[b] - ys[a]) * (xs[i] - xs[a])
            if cross <= 0.0:
                hull.pop()
            else:
                break
        hull.append(i)
    env = np.interp(alpha, xs[hull], ys[hull])
    return np.minimum(env, ys[1:])


def symmetric_extension(epsilons: ArrayLike, deltas: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The profile at the negative epsilons -epsilon_i too: (epsilons, deltas) on the grid
    -epsilon_n < ... < -epsilon_1 < 0 = epsilon_0 < ... < epsilon_n.

    For any two distributions and alpha > 0, P(S) - alpha Q(S) = (1 - alpha)
    + alpha (Q(S^c) - P(S^c) / alpha), so H_alpha(P || Q) = 1 - alpha
    + alpha H_{1/alpha}(Q || P) (the hockey-stick divergence H_alpha(P || Q) =
    sup_S P(S) - alpha Q(S), as in Zhu, Dong & Wang 2022, Section 3). Under a symmetric
    neighbouring relation the swapped pair (M(D'), M(D)) is also a pair of neighbours, so
    a profile delta(.) of the release bounds every ordered pair at negative epsilon by

        delta(-e) = 1 - e^-e + e^-e delta(e),   e >= 0.

    ``epsilons`` must increase from 0; ``deltas`` are made non-increasing first (valid: an
    (e, d)-DP release is (e', d)-DP for every e' >= e).
    """
    eps = np.asarray(epsilons, dtype=np.float64)
    dlt = np.asarray(deltas, dtype=np.float64)
    if eps.ndim != 1 or eps.size == 0 or eps.shape != dlt.shape:
        raise ParameterError("epsilons and deltas must be 1-d arrays of one length")
    if eps[0] != 0.0 or np.any(np.diff(eps) <= 0.0):
        raise ParameterError("epsilons must increase strictly from 0")
    dlt = np.minimum.accumulate(dlt)
    e, d = eps[:0:-1], dlt[:0:-1]
    mirrored = np.minimum(-np.expm1(-e) + np.exp(-e) * d, 1.0)
    return np.concatenate([-e, eps]), np.concatenate([mirrored, dlt])
