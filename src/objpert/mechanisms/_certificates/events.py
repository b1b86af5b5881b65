"""The privacy-loss events of the peer mechanisms: each release composes (and is grouped
over one person's k rows, :func:`objpert.accounting.group_privacy`) as what its analysis
proves, not as its (epsilon, delta) point.

- **DP Newton**: 2K Gaussian mechanisms of noise multiplier z (sensitivity 1 in units of
  the noise's scale; :mod:`.dp_newton`).
- **DP-SGD**: T Poisson-subsampled Gaussian steps (rate q, multiplier z; :mod:`.dp_sgd`).
- **Output perturbation** and **noisy GD**: rho-zCDP, the rho of their certificates
  (discrete Gaussian on the grid, Canonne, Kamath & Steinke 2020, Theorem 14; T steps
  compose to T rho, Bun & Steinke 2016, Lemma 2.3).
- **LOP, LOP-Clip, AMP and the multinomial release** under the ``profile`` accountant:
  the exact-minimiser profile (Redberg, Koskela & Wang 2023, Section 3; eq. (*) of
  :mod:`.multinomial` for a chi ratio of m > 1 degrees of freedom) at the certificate's
  constants t = G / sigma and c0, for AMP and the multinomial release composed with the
  output noise's (epsilon_2, delta_2) by basic composition, as their certificates are:
  delta(epsilon) = delta_obj(epsilon - epsilon_2) + delta_2 at epsilon >= epsilon_2, 1
  below (kind ``objective``), capped by the certified point. Kifer's closed form
  (accountant ``kifer``) is known by its point only.

An uncertified certificate keeps its point (:func:`~objpert.accounting._events.certified_point`),
which accounting then refuses.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from objpert._validation import check_nonnegative, check_positive, check_unit, validated
from objpert._validation import count as count_rule
from objpert.accounting import _pld as pld
from objpert.accounting._composition import basic_profile
from objpert.accounting._events import (
    PrivacyLoss,
    certified_point,
    gaussian,
    register_event,
    subsampled_gaussian,
    zcdp,
)
from objpert.accounting._group import point_profile
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates.multinomial import MULTINOMIAL, chi_profile_delta
from objpert.mechanisms._certificates.redberg import exact_lop_constants, folded_gaussian_delta

__all__ = ["objective_loss", "objective_profile"]

_NEGLIGIBLE = 1e-6  # an objective part this small next to delta_output ends the quadratures
_FAR = 64.0  # ... or this far beyond epsilon_output


def _objective(cert: Any, _radius: Any = None) -> PrivacyLoss:
    """LOP, LOP-Clip, AMP and the multinomial release: their profile (kind ``objective``)."""
    d, c = cert.details, cert.constants
    if not cert.certified or d.get("accountant", "profile") != "profile":
        return certified_point(cert)
    if cert.form == MULTINOMIAL:
        t, c0, dims = d["sensitivity_ratio"], d["log_det"], int(d["profile_dimension"])
    else:  # t and c0 re-derived from the certificate's public constants
        t, c0 = exact_lop_constants(
            c["n"], c["gradient_bound"], c["smoothness"], c["mu"], cert.sigma
        )
        dims = 1
    params = {
        "ratio": t, "log_det": c0, "dims": dims,
        "epsilon_output": d.get("epsilon_output", 0.0), "delta_output": d.get("delta_output", 0.0),
        "point": (cert.epsilon, cert.delta),
    }  # fmt: skip
    return replace(objective_loss(**params), certificate=cert)


def _point(name: str, value: Any) -> tuple[float, float]:
    """The certified (epsilon, delta) of an objective release: epsilon >= 0, delta in [0, 1)."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ParameterError(f"{name} must be (epsilon, delta); got {value!r}")
    eps, delta = (
        check_nonnegative(f"{name} epsilon", value[0]),
        _below_one(f"{name} delta", value[1]),
    )
    return eps, delta


def _below_one(name: str, value: Any) -> float:
    """A delta in [0, 1): a release with delta = 1 has no guarantee."""
    v = check_unit(name, value)
    if v >= 1.0:
        raise ParameterError(f"{name} must be < 1: a release with delta = 1 has no guarantee")
    return v


@validated(
    ratio=check_positive, log_det=check_nonnegative, dims=count_rule(1),
    epsilon_output=check_nonnegative, delta_output=_below_one, point=_point, count=count_rule(1),
)  # fmt: skip
def objective_loss(
    *,
    ratio: float,
    log_det: float,
    dims: int,
    epsilon_output: float,
    delta_output: float,
    point: tuple[float, float],
    count: int = 1,
) -> PrivacyLoss:
    """An ``objective`` event from its public numbers, checked here (they may come from a
    ledger file): ``ratio`` t > 0, ``log_det`` c0 >= 0, ``dims`` m >= 1, ``epsilon_output``
    >= 0, ``delta_output`` in [0, 1) and the certified ``point`` (epsilon, delta)."""
    values = (
        ("ratio", ratio), ("log_det", log_det), ("dims", dims),
        ("epsilon_output", epsilon_output), ("delta_output", delta_output), ("point", point),
    )  # fmt: skip
    return PrivacyLoss("objective", values, point[0], point[1], count)


def objective_profile(p: dict[str, Any]) -> Any:
    """delta(epsilon) of an ``objective`` event: the exact-minimiser profile at
    epsilon - epsilon_output plus delta_output, at most 1 (basic composition of the two
    parts, the output part at its own epsilon_output, Dwork & Roth 2014, Theorem 3.16);
    1 below epsilon_output, where the output part's delta is not known from its point.
    Capped by the tight pair of the certified point
    (:func:`~objpert.accounting._group.point_profile`): both bound the release."""
    profile = _uncapped(p)
    eps, delta = p["point"]
    return lambda e: np.minimum(profile(e), point_profile(eps, delta, e))


def _uncapped(p: dict[str, Any]) -> Any:
    t, c0, dims = p["ratio"], p["log_det"], p["dims"]
    eps2, delta2 = p["epsilon_output"], p["delta_output"]

    def objective(shifted: float) -> float:
        if dims == 1:
            return folded_gaussian_delta(shifted, t, c0)
        return chi_profile_delta(shifted, t, c0, dims)

    # beyond the shift where the objective part is negligible next to delta_output, its
    # value there bounds it (a profile is non-increasing): no quadrature out there
    far, at_far = math.inf, 0.0
    if dims > 1 and delta2 > 0.0:
        far = 1.0
        while (at_far := objective(far)) > _NEGLIGIBLE * delta2 and far < _FAR:
            far *= 2.0

    def one(e: float) -> float:
        if e < eps2:
            return 1.0
        shifted = e - eps2
        return at_far if shifted >= far else objective(shifted)

    def profile(epsilons: Any) -> np.ndarray:
        e = np.atleast_1d(np.asarray(epsilons, dtype=float))
        return basic_profile([np.array([one(float(x)) for x in e]), delta2])

    return profile


def _attached(loss: PrivacyLoss, cert: Any) -> PrivacyLoss:
    return replace(loss, certificate=cert)


def _zcdp(cert: Any, _radius: Any = None) -> PrivacyLoss:
    """Output perturbation (``rho``) and noisy GD (``rho_total``): rho-zCDP."""
    if not cert.certified:
        return certified_point(cert)
    rho = cert.details.get("rho_total", cert.details.get("rho"))
    return _attached(zcdp(float(rho)), cert)


def _newton(cert: Any, _radius: Any = None) -> PrivacyLoss:
    """DP Newton: 2K Gaussian mechanisms of noise multiplier z."""
    if not cert.certified:
        return certified_point(cert)
    z, count = cert.details["noise_multiplier"], int(cert.details["mechanisms"])
    return _attached(gaussian(float(z), 1.0, count), cert)


def _dp_sgd(cert: Any, _radius: Any = None) -> PrivacyLoss:
    """DP-SGD: T Poisson-subsampled Gaussian steps."""
    if not cert.certified:
        return certified_point(cert)
    z, q = cert.details["noise_multiplier"], cert.details["sampling_rate"]
    return _attached(subsampled_gaussian(float(z), float(q), int(cert.iterations)), cert)


pld.register_profile(
    "objective", ("lop", "lop_clip", "amp", MULTINOMIAL), _objective, objective_profile
)
register_event(("output_perturbation", "noisy_gd"), _zcdp)
register_event(("dp_newton",), _newton)
register_event(("dp_sgd",), _dp_sgd)
