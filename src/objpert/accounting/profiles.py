"""Privacy profiles delta(epsilon) of single releases, from public constants alone.

A release that is (epsilon, delta(epsilon))-DP for every epsilon >= 0 has the privacy
profile delta(.) (Balle, Barthe & Gaboardi 2018). The profile, not one (epsilon, delta)
point, is what composes tightly (:mod:`objpert.accounting.pld`).

- **Watkins & Arora (2026), Theorem C.13.** For a release with noise sigma, ridge mu,
  step eta and N steps, every truncation radius r (with the outer radius
  r' = r + 2 L G / mu of Section C.4) gives delta_N(epsilon) = Pr(||Pi_C Z|| > r)
  + (2G/sigma) Q1((sigma/G)(epsilon - s_N(r))) (eq. 50). The radius is free at each
  epsilon, so the profile is the minimum over radii, taken here over a geometric grid of
  truncation masses (exact chi tails, :mod:`objpert.certify.truncation`) and the plan's
  own radius. The exact-minimiser limit (Remark C.16) has no truncation term.
- **zCDP.** rho-zCDP gives delta(epsilon) by Corollary 13 of Canonne, Kamath & Steinke
  (2020) (:func:`objpert.accounting.conversions.cdp_delta`).

Every value is an upper bound on the hockey-stick divergence of the release at epsilon,
for every ordered pair of neighbouring datasets. The relation (replace-one,
:mod:`objpert.certify.neighbours`) is symmetric, so the profile also bounds the
divergence at negative epsilon (:func:`symmetric_extension`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from objpert.certify import theorem_c13
from objpert.certify.certificate import Certificate
from objpert.certify.constants import ProblemConstants, problem
from objpert.certify.theorem41 import divergence
from objpert.exceptions import ParameterError
from objpert.special import chi_radius, chi_tail
from objpert.validation import check_array, check_int, check_positive

__all__ = [
    "TRUNCATION_MASSES",
    "constants_from_certificate",
    "convex_envelope",
    "limit_profile",
    "profile_kind",
    "symmetric_extension",
    "watkins_arora_profile",
    "zcdp_profile",
]

#: The truncation masses whose radii the Theorem C.13 profile is minimised over.
TRUNCATION_MASSES = np.geomspace(1e-40, 0.5, 96)

_CHUNK = 4096  # epsilons evaluated at once (bounds the memory of the radius grid)


def constants_from_certificate(cert: Certificate) -> ProblemConstants:
    """The problem constants of a Watkins & Arora certificate re-derived from the loss
    registry and its public inputs (loss, n, d, zeta, mu, eta, loss parameters): L1, L2,
    L3 come from the registered loss, never from the stored constants."""
    if not isinstance(cert, Certificate):
        raise ParameterError(f"expected a Certificate; got {type(cert).__name__}")
    c = cert.constants
    try:
        params = dict(tuple(p) for p in c.get("loss_params", ()))
        return problem(
            c["loss"], n=c["n"], d=c["d"], zeta=c["zeta"], mu=c["mu"], eta=c["eta"], **params
        )
    except (KeyError, TypeError) as exc:
        raise ParameterError(f"the certificate's constants cannot be re-derived: {exc}") from None


def _c13_grid(
    pc: ProblemConstants, sigma: float, iterations: int, extra: tuple[float, float] | None
) -> tuple[np.ndarray, np.ndarray]:
    """(truncation mass, s_N) over the radius grid; s_N is +inf where (47) fails."""
    radius = sigma * chi_radius(TRUNCATION_MASSES, pc.d_star)
    outer = radius + 2.0 * pc.L * pc.G / pc.mu
    if extra is not None:
        radius, outer = np.append(radius, extra[0]), np.append(outer, extra[1])
    mass = chi_tail(radius / sigma, pc.d_star)  # the mass of the radius actually used
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        s_n = theorem_c13.c13_terms(pc, sigma, radius, outer, iterations).s_n
    return np.asarray(mass, dtype=float), np.asarray(s_n, dtype=float)


def watkins_arora_profile(
    pc: ProblemConstants,
    sigma: float,
    iterations: int,
    epsilons: ArrayLike,
    *,
    radius: tuple[float, float] | None = None,
) -> np.ndarray:
    """delta(epsilon) of N steps of gradient descent on the perturbed objective
    (Watkins & Arora 2026, Theorem C.13, eq. 50), minimised over the truncation radius.

    ``radius`` = (r, r') adds one more radius pair (a plan's own, so that the profile at
    the plan's epsilon is at most its certified delta). Values in [0, 1], non-increasing
    in epsilon (a release that is (e, d)-DP is (e', d)-DP for every e' >= e).
    """
    sigma = check_positive("sigma", sigma)
    iterations = check_int("iterations", iterations, 1)
    eps = check_array("epsilon", epsilons, minimum=0.0, allow_inf=True)
    mass, s_n = _c13_grid(pc, sigma, iterations, radius)
    flat = np.atleast_1d(eps).ravel()
    out = np.empty(flat.shape)
    for start in range(0, flat.size, _CHUNK):
        e = flat[start : start + _CHUNK, None]
        with np.errstate(invalid="ignore", over="ignore"):
            val = mass[None, :] + divergence(pc, sigma, e - s_n[None, :])
        val = np.where(np.isfinite(val), val, 1.0)
        out[start : start + _CHUNK] = np.minimum(val.min(axis=1), 1.0)
    return _monotone(out, flat).reshape(np.shape(eps))


def limit_profile(pc: ProblemConstants, sigma: float, epsilons: ArrayLike) -> np.ndarray:
    """delta(epsilon) of the exact minimiser of the perturbed objective (Watkins & Arora
    2026, Remark C.16): (2G/sigma) Q1((sigma/G)(epsilon - s_inf)), no truncation mass."""
    return np.asarray(theorem_c13.limit_delta(pc, sigma, epsilons), dtype=float)


def zcdp_profile(rho: float, epsilons: ArrayLike) -> np.ndarray:
    """delta(epsilon) implied by rho-zCDP (Canonne, Kamath & Steinke 2020, Corollary 13)."""
    from objpert.accounting.conversions import cdp_delta  # the peers' package: loaded on use

    eps = check_array("epsilon", epsilons, minimum=0.0, allow_inf=True)
    flat = np.atleast_1d(eps).ravel()
    out = np.array([cdp_delta(rho, float(e)) if np.isfinite(e) else 0.0 for e in flat])
    return _monotone(out, flat).reshape(np.shape(eps))


def _monotone(values: np.ndarray, eps: np.ndarray) -> np.ndarray:
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
    eps = check_array("epsilon", epsilons, minimum=0.0)
    dlt = check_array("delta", deltas, minimum=0.0, maximum=1.0)
    if eps.ndim != 1 or eps.size == 0 or eps.shape != dlt.shape:
        raise ParameterError("epsilons and deltas must be 1-d arrays of one length")
    if eps[0] != 0.0 or np.any(np.diff(eps) <= 0.0):
        raise ParameterError("epsilons must increase strictly from 0")
    dlt = np.minimum.accumulate(dlt)
    e, d = eps[:0:-1], dlt[:0:-1]
    mirrored = np.minimum(-np.expm1(-e) + np.exp(-e) * d, 1.0)
    return np.concatenate([-e, eps]), np.concatenate([mirrored, dlt])


def profile_kind(cert: Any) -> str:
    """``"c13"``, ``"theorem41"`` or ``"limit"`` for a Watkins & Arora certificate, else
    ``""`` (a certificate whose profile is not known here: its one point is used)."""
    form = getattr(cert, "form", "")
    return form if form in ("c13", "theorem41", "limit") else ""
