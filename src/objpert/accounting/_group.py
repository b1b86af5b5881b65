"""Group privacy: the guarantee of a release for k rows (one person's rows) at once.

Two datasets are *k-neighbours* when they have the same number of rows and differ in at
most k of them (replace up to k rows: one privacy unit of up to k rows replaced by
another). A release known by its privacy profile delta(.) for replace-one neighbours is
certified for k-neighbours by :func:`group_privacy`, computed from the profile:

- **Gaussian and Laplace mechanisms.** k rows move a query of l2 (l1) sensitivity G by
  at most k G (triangle inequality over the k replaced rows), so the release for
  k-neighbours is the same mechanism at sensitivity k G: exact, no slack.
- **zCDP.** rho-zCDP for one row gives k^2 rho-zCDP for k rows (Bun & Steinke 2016,
  Proposition 27).
- **Any other profile (chain bound).** Let D_0, D_1, ..., D_k be a chain from D to D'
  with D_{i-1}, D_i neighbours (replace the k rows one at a time), and P_i the law of the
  release on D_i. For any event S and epsilons e_1, ..., e_k >= 0 the profile gives
  P_{i-1}(S) <= e^{e_i} P_i(S) + delta(e_i); substituting each inequality into the one
  before,

      P_0(S) <= e^{e_1 + ... + e_k} P_k(S) + sum_i e^{e_1 + ... + e_{i-1}} delta(e_i),

  so delta_k(E) = min over e_1 + ... + e_k <= E of sum_i e^{e_1 + ... + e_{i-1}}
  delta(e_i) bounds the hockey-stick divergence of every pair of k-neighbours at E
  (the group-privacy argument of Dwork & Roth 2014, Theorem 2.2, kept in the profile's terms
  instead of one (epsilon, delta) point; equivalently the weak triangle inequality
  H_{ab}(P || R) <= H_a(P || Q) + a H_b(Q || R) of the hockey-stick divergence, applied
  k - 1 times). The minimum is taken by dynamic programming on a uniform epsilon grid
  e_j = j h: the groups of a and b rows combine as delta_{a+b}(e_j) = min_i delta_a(e_i)
  + e^{e_i} delta_b(e_{j-i}) (the chain of a rows, then the chain of b rows), and k is
  reached by binary splitting. Every candidate is a valid split, so the result is an
  upper bound at the grid points; between them it is read at the grid point below
  (a profile is non-increasing). At one split e_i = epsilon for all i it is the classical
  (k epsilon, delta sum_{i<k} e^{i epsilon}) <= (k epsilon, k e^{(k-1) epsilon} delta).

The k-neighbour relation is symmetric, so the grouped profile becomes a dominating pair
and a privacy-loss distribution exactly as a single release's does
(:func:`objpert.accounting._pld._profile_pld`); k-row releases compose with each other
like any releases (the composition theorem holds for any fixed neighbouring relation),
never with releases certified for another unit (:mod:`objpert.accounting._unit`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from objpert._validation import count, validated
from objpert.accounting._events import PrivacyLoss, gaussian, laplace, zcdp
from objpert.exceptions import ParameterError

__all__ = [
    "GROUP_GRID",
    "chain_profile",
    "crude_row_target",
    "group_privacy",
    "point_profile",
]

#: The most points of the chain bound's epsilon grid (its cost grows with their square).
GROUP_GRID = 3000
_MAX_GROUP_EPSILON = 700.0  # e^epsilon overflows beyond 709.78


@validated(rows=count(1))
def group_privacy(release: Any, rows: int) -> PrivacyLoss:
    """The privacy loss of ``release`` (a :class:`PrivacyLoss` or a certified certificate)
    for datasets that differ in up to ``rows`` rows (module docstring): Gaussian and Laplace
    mechanisms at ``rows`` times their sensitivity, zCDP at ``rows``^2 rho, any other
    release by the chain bound on its privacy profile (kind ``"group"``); ``count``
    identical releases are each grouped, then composed. ``rows = 1`` returns it unchanged.
    """
    loss = release if isinstance(release, PrivacyLoss) else _loss_of(release)
    if rows == 1:
        return loss
    if loss.rows != 1:
        raise ParameterError(
            f"this release is already certified for units of {loss.rows} rows: group "
            "privacy starts from a release certified for one row"
        )
    p = dict(loss.parameters)
    if loss.kind == "gaussian":
        out = gaussian(p["sigma"], rows * p["sensitivity"], loss.count)
    elif loss.kind == "laplace":
        out = laplace(p["scale"], rows * p["sensitivity"], loss.count)
    elif loss.kind == "zcdp":
        out = zcdp(rows * rows * p["rho"], loss.count)
    else:
        base = PrivacyLoss(loss.kind, loss.parameters, loss.epsilon, loss.delta)
        params = (("base", base), ("rows", rows))
        out = PrivacyLoss("group", params, count=loss.count)
    return replace(out, rows=rows, certificate=loss.certificate)


def _loss_of(cert: Any) -> PrivacyLoss:
    from objpert.accounting._certificate import Certificate

    if not isinstance(cert, Certificate):
        raise ParameterError(
            f"group_privacy needs a PrivacyLoss or a certificate; got {type(cert).__name__}"
        )
    losses = cert.privacy_losses()  # PrivacyError when not certified
    if len(losses) != 1:
        raise ParameterError(
            "group_privacy groups one release at a time: group each of a composed "
            "certificate's privacy_losses()"
        )
    return losses[0]


def point_profile(epsilon: float, delta: float, epsilons: Any) -> np.ndarray:
    """The profile of the tightest (epsilon, delta)-DP pair (Kairouz, Oh & Viswanath 2015,
    Theorem 2.1: delta with probability delta, else randomized response at epsilon):
    delta + (1 - delta) (e^epsilon - e^e)_+ / (1 + e^epsilon) at e >= 0."""
    e = np.asarray(epsilons, dtype=float)
    with np.errstate(over="ignore"):
        gap = np.clip(-np.expm1(e - epsilon), 0.0, None) / (1.0 + np.exp(-epsilon))
    return np.minimum(delta + (1.0 - delta) * gap, 1.0)


def _combine(first: np.ndarray, second: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """delta_{a+b}(e_j) = min_{i <= j} delta_a(e_i) + e^{e_i} delta_b(e_{j-i}) (a chain of
    a rows then b rows; ``weight`` = e^{e_i}), capped at 1."""
    size = first.size
    out = np.empty(size)
    with np.errstate(over="ignore", invalid="ignore"):
        for j in range(size):
            terms = first[: j + 1] + weight[: j + 1] * second[j::-1]
            out[j] = np.nanmin(terms)
    return np.minimum(out, 1.0)


def chain_profile(deltas: Any, step: float, rows: int) -> np.ndarray:
    """The chain bound delta_k on the uniform grid e_j = j * ``step`` (module docstring),
    from the profile ``deltas`` of one row on that grid (made non-increasing first)."""
    rows = int(rows)
    base = np.minimum.accumulate(np.clip(np.asarray(deltas, dtype=float), 0.0, 1.0))
    if base.ndim != 1 or base.size == 0 or not step > 0.0:
        raise ParameterError("the chain bound needs a 1-d profile on a grid of positive step")
    weight = np.exp(np.minimum(np.arange(base.size) * step, _MAX_GROUP_EPSILON))
    result, power, k = None, base, rows
    while k:  # binary splitting: combine the chains of the powers of two in k
        if k & 1:
            result = power if result is None else _combine(result, power, weight)
        k >>= 1
        if k:
            power = _combine(power, power, weight)
    return np.minimum.accumulate(result)


def group_profile_function(rows: int, profile: Any, end: float) -> Any:
    """delta_k(.) of ``rows`` rows from the one-row profile ``profile`` (valid on
    [0, ``end``]): the chain bound on a grid of at most :data:`GROUP_GRID` points over
    [0, min(rows * end, 700)], read at the grid point below each epsilon."""
    if rows > GROUP_GRID:  # the grid would need rows + 1 points, the chain rows^2 work
        raise ParameterError(
            f"group privacy by the chain bound takes at most {GROUP_GRID} rows per unit; "
            f"got {rows} (a Gaussian or Laplace release is grouped exactly, for any rows)"
        )
    top = min(rows * end, _MAX_GROUP_EPSILON)
    # rows * m intervals: end (and each multiple of top / rows) is a grid point
    grid = np.linspace(0.0, top, rows * max((GROUP_GRID - 1) // rows, 1) + 1)
    step = float(grid[1] - grid[0])
    values = chain_profile(profile(grid), step, rows)

    def grouped(epsilons: np.ndarray) -> np.ndarray:
        e = np.asarray(epsilons, dtype=float)
        idx = np.clip(np.floor(e / step + 1e-9).astype(np.int64), 0, grid.size - 1)
        return values[idx]

    return grouped


def crude_row_target(epsilon: float, delta: float, rows: int) -> tuple[float, float]:
    """The row-level target whose classical group-privacy bound is (epsilon, delta) for
    ``rows`` rows: (epsilon / k, delta / (k e^{(k-1) epsilon / k})), since (e, d)-DP for one
    row gives (k e, k e^{(k-1) e} d) for k rows (Dwork & Roth 2014, Section 2.3, group
    privacy). The baseline the profile-based routes are compared against."""
    rows = int(rows)
    e = epsilon / rows
    return e, delta / (rows * math.exp((rows - 1) * e))
