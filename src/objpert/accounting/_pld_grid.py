"""The size of a dp-accounting privacy-loss distribution (PLD), known before it is built.

A PLD is a dense array over the grid of privacy losses i * discretization, so its size
follows from public numbers: the width of the mechanism's privacy-loss range over the
discretization, and for a T-fold self-composition the Chernoff truncation bounds
dp-accounting itself uses. Every PLD built here or in :mod:`objpert.accounting` is first
checked against :data:`MAX_POINTS`, so that a large sensitivity, a fine discretization or
a huge number of compositions is refused with a :class:`ParameterError` instead of an
allocation of many gigabytes.
"""

from __future__ import annotations

from typing import Any

from objpert._validation import check_positive
from objpert.exceptions import ParameterError

__all__ = [
    "MAX_NOISE_MULTIPLIER",
    "MAX_POINTS",
    "TRUNCATION",
    "check_discretization",
    "check_noise_multiplier",
    "check_points",
    "infinity_mass",
    "mechanism_points",
    "points",
    "self_composed_points",
]

#: The most grid points a PLD may have, single or composed (each point costs about 160
#: bytes while it is built; a larger one is refused before anything is allocated).
MAX_POINTS = 2_000_000
#: dp-accounting's tail mass dropped by a self-composition (its default).
TRUNCATION = 1e-15
_LOG_MASS_TRUNCATION = -50.0  # dp-accounting's default for Gaussian mechanisms


def check_discretization(value: Any) -> float:
    """A PLD grid step in [1e-6, 0.1] (finer grids are slow, coarser ones loose)."""
    value = check_positive("discretization", value)
    if not 1e-6 <= value <= 0.1:
        raise ParameterError(f"discretization must be in [1e-6, 0.1]; got {value!r}")
    return value


#: The largest noise multiplier (noise std / sensitivity) a PLD is built for: beyond it the
#: privacy losses are below double-precision resolution and dp-accounting overflows.
MAX_NOISE_MULTIPLIER = 1e6


def check_noise_multiplier(value: Any, minimum: float = 0.0) -> float:
    """A noise multiplier in (minimum, MAX_NOISE_MULTIPLIER] (ParameterError otherwise)."""
    z = check_positive("noise_multiplier", value)
    if z < minimum or z > MAX_NOISE_MULTIPLIER:
        raise ParameterError(
            f"noise_multiplier must be in [{minimum:g}, {MAX_NOISE_MULTIPLIER:g}] for a PLD "
            f"accountant; got {z!r}"
        )
    return z


def check_points(points: float, what: str, discretization: float) -> None:
    """Refuse a PLD of more than :data:`MAX_POINTS` grid points (NaN and inf included)."""
    if not points <= MAX_POINTS:
        raise ParameterError(
            f"the PLD of {what} would need {points:.3g} grid points at discretization "
            f"{discretization:g}, more than the {MAX_POINTS} allowed; use a coarser "
            "discretization or a release that loses less privacy"
        )


def points(pld: Any) -> int:
    """The grid points of a dp-accounting PLD (the larger of its two adjacencies)."""
    parts = (pld._pmf_remove, pld._pmf_add)  # dp-accounting keeps the two PMFs here
    return max(part.to_dense_pmf().size for part in parts)


def infinity_mass(pld: Any) -> float:
    """The mass a dp-accounting PLD puts at +infinity (its delta at every epsilon)."""
    return max(pld._pmf_remove._infinity_mass, pld._pmf_add._infinity_mass)


def self_composed_points(single: Any, count: int) -> int:
    """The grid points of ``count`` self-compositions of the PLD ``single``:
    dp-accounting's own Chernoff truncation bounds (``common.compute_self_convolve_bounds``),
    computed before the convolution is allocated."""
    from dp_accounting.pld import common

    worst = 0
    for part in (single._pmf_remove, single._pmf_add):
        probs = part.to_dense_pmf()._probs
        lo, hi = common.compute_self_convolve_bounds(probs, count, TRUNCATION)
        worst = max(worst, hi - lo + 1, len(probs))
    return worst


def mechanism_points(
    kind: str, parameter: float, sensitivity: float, discretization: float
) -> float:
    """The grid points of dp-accounting's connect-the-dots PLD of a Gaussian (``parameter``:
    its standard deviation) or Laplace (its scale) mechanism: the width of its privacy-loss
    range (dp-accounting's own ``connect_dots_bounds``) over the discretization. Subsampling
    only narrows the range, so this bounds the subsampled mechanism's too."""
    from dp_accounting.pld import privacy_loss_mechanism as plm

    if not parameter > 0.0:  # a standard deviation or scale that underflowed
        return float("inf")
    widths = []
    for adjacency in (plm.AdjacencyType.REMOVE, plm.AdjacencyType.ADD):
        if kind == "gaussian":
            loss = plm.GaussianPrivacyLoss(
                parameter, sensitivity=sensitivity, adjacency_type=adjacency,
                log_mass_truncation_bound=_LOG_MASS_TRUNCATION,
            )  # fmt: skip
        else:
            loss = plm.LaplacePrivacyLoss(
                parameter, sensitivity=sensitivity, adjacency_type=adjacency
            )
        b = loss.connect_dots_bounds()
        widths.append((b.epsilon_upper - b.epsilon_lower) / discretization + 2)
    return max(widths)
