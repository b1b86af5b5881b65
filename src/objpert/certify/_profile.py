"""The privacy profile of a Watkins & Arora release, as the event accounting composes.

For a release with noise sigma, ridge mu, step eta and N steps, every truncation radius r
(with the outer radius r' = r + 2 L G / mu of Section C.4) gives delta_N(epsilon) =
Pr(||Pi_C Z|| > r) + (2G/sigma) Q1((sigma/G)(epsilon - s_N(r))) (Watkins & Arora 2026,
Theorem C.13, eq. 50). The radius is free at each epsilon, so the profile is the minimum
over radii, taken here over a geometric grid of truncation masses (exact chi tails,
:mod:`objpert.certify._truncation`) and the plan's own radius. The exact-minimiser limit
(Remark C.16) has no truncation term. Every value is an upper bound on the hockey-stick
divergence of the release at epsilon, for every ordered pair of neighbouring datasets
(replace-one, :mod:`objpert.certify._neighbours`).

Importing this module registers the profiles with :mod:`objpert.accounting._pld`
(:func:`~objpert.accounting._pld.register_profile`): a certificate of form ``c13`` or
``theorem41`` composes as its ``watkins_arora`` profile, one of form ``limit`` as its
``limit`` profile; accounting turns them into privacy-loss distributions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from objpert._special import chi_radius, chi_tail
from objpert._validation import check_array, check_positive, count, validated
from objpert.accounting import _pld as pld
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._profiles import monotone
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._constants import ProblemConstants, problem
from objpert.certify._theorem41 import _divergence
from objpert.exceptions import ParameterError

__all__ = [
    "TRUNCATION_MASSES",
    "constants_from_certificate",
    "limit_profile",
    "profile_kind",
    "watkins_arora_profile",
]

#: The truncation masses whose radii the Theorem C.13 profile is minimised over.
TRUNCATION_MASSES = np.geomspace(1e-40, 0.5, 96)

_CHUNK = 4096  # epsilons evaluated at once (bounds the memory of the radius grid)


def constants_from_certificate(cert: ReleaseCertificate) -> ProblemConstants:
    """The problem constants of a Watkins & Arora certificate re-derived from the loss
    registry and its public inputs (loss, n, d, zeta, mu, eta, loss parameters): L1, L2,
    L3 come from the registered loss, never from the stored constants."""
    if not isinstance(cert, ReleaseCertificate):
        raise ParameterError(f"expected a ReleaseCertificate; got {type(cert).__name__}")
    c = cert.constants
    try:
        params = dict(tuple(p) for p in c.get("loss_params", ()))
        return problem(
            c["loss"], n=c["n"], d=c["d"], zeta=c["zeta"], mu=c["mu"], eta=c["eta"],
            rows=c.get("rows", 1), **params,
        )  # fmt: skip
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


@validated(sigma=check_positive, iterations=count(1))
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
    eps = check_array("epsilon", epsilons, minimum=0.0, allow_inf=True)
    mass, s_n = _c13_grid(pc, sigma, iterations, radius)
    flat = np.atleast_1d(eps).ravel()
    out = np.empty(flat.shape)
    for start in range(0, flat.size, _CHUNK):
        e = flat[start : start + _CHUNK, None]
        with np.errstate(invalid="ignore", over="ignore"):
            val = mass[None, :] + _divergence(pc, sigma, e - s_n[None, :])
        val = np.where(np.isfinite(val), val, 1.0)
        out[start : start + _CHUNK] = np.minimum(val.min(axis=1), 1.0)
    return monotone(out, flat).reshape(np.shape(eps))


def limit_profile(pc: ProblemConstants, sigma: float, epsilons: ArrayLike) -> np.ndarray:
    """delta(epsilon) of the exact minimiser of the perturbed objective (Watkins & Arora
    2026, Remark C.16): (2G/sigma) Q1((sigma/G)(epsilon - s_inf)), no truncation mass."""
    return np.asarray(theorem_c13.limit_delta(pc, sigma, epsilons), dtype=float)


def profile_kind(cert: Any) -> str:
    """``"c13"``, ``"theorem41"`` or ``"limit"`` for a Watkins & Arora certificate, else
    ``""`` (a certificate whose profile is not known here: its one point is used)."""
    form = getattr(cert, "form", "")
    return form if form in ("c13", "theorem41", "limit") else ""


_CONSTANT_KEYS = ("loss", "n", "d", "zeta", "mu", "eta")


def _event(cert: ReleaseCertificate, radius: tuple[float, float] | None) -> pld.PrivacyLoss:
    """The privacy loss of a certified Watkins & Arora release: its whole profile, from
    constants re-derived from the loss registry; its own radius is read from the
    certificate (or ``radius``)."""
    kind = profile_kind(cert)
    pc = constants_from_certificate(cert)
    params: list[tuple[str, Any]] = [(k, getattr(pc, k)) for k in _CONSTANT_KEYS]
    params.append(("loss_params", tuple(tuple(p) for p in pc.loss_params)))
    if pc.rows != 1:  # neighbours that differ in up to k rows
        params.append(("rows", pc.rows))
    params.append(("sigma", float(cert.sigma)))
    if kind == "limit":
        return pld.PrivacyLoss("limit", tuple(params), cert.epsilon, cert.delta, 1, cert, pc.rows)
    if radius is None:
        r, r_outer = cert.details.get("radius"), cert.details.get("radius_outer")
        radius = None if r is None or r_outer is None else (float(r), float(r_outer))
    params.append(("iterations", int(cert.iterations)))
    params.append(("radius", radius))
    point = _certified_point(cert, pc, radius)
    params.append(("point", point))
    return pld.PrivacyLoss("watkins_arora", tuple(params), *point, 1, cert, pc.rows)


def _certified_point(
    cert: ReleaseCertificate, pc: ProblemConstants, radius: tuple[float, float] | None
) -> tuple[float, float]:
    """The release's (epsilon, delta) recomputed from its public inputs (Theorem 4.1 or
    C.13 at its sigma, N, u and radii), never the stored one: the profile is capped there,
    so a point edited in a dictionary would understate every composition."""
    from objpert.certify._plan import certify_plan

    d = cert.details
    r, r_outer = (
        radius if radius is not None else (d.get("radius", 0.0), d.get("radius_outer", 0.0))
    )
    fresh = certify_plan(
        pc, float(cert.sigma), int(cert.iterations), float(cert.epsilon), cert.form,
        d.get("u", 0.0), r, r_outer, cert.truncation,
    )  # fmt: skip
    return (float(fresh.epsilon), float(fresh.delta) if fresh.certified else 1.0)


def _constants(p: dict[str, Any]) -> ProblemConstants:
    return problem(
        p["loss"], n=p["n"], d=p["d"], zeta=p["zeta"], mu=p["mu"], eta=p["eta"],
        rows=p.get("rows", 1), **dict(p["loss_params"]),
    )  # fmt: skip


def _c13_profile(p: dict[str, Any]) -> Any:
    """delta(epsilon) of a ``watkins_arora`` event, capped at its certified point."""
    pc, sigma, pt = _constants(p), p["sigma"], p["point"]

    def profile(e: np.ndarray) -> np.ndarray:
        val = watkins_arora_profile(pc, sigma, p["iterations"], e, radius=p["radius"])
        return np.where(np.asarray(e) >= pt[0], np.minimum(val, pt[1]), val)

    return profile


def _limit_profile(p: dict[str, Any]) -> Any:
    """delta(epsilon) of a ``limit`` event."""
    pc, sigma = _constants(p), p["sigma"]
    return lambda e: limit_profile(pc, sigma, e)


pld.register_profile("watkins_arora", ("c13", "theorem41"), _event, _c13_profile)
pld.register_profile("limit", ("limit",), _event, _limit_profile)
