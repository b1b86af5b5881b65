"""One entry point for every peer planner: :func:`calibrate_peer`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from objpert._losses import Loss
from objpert._validation import numeric_guard
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates.amp import plan_amp
from objpert.mechanisms._certificates.lop import plan_lop
from objpert.mechanisms._certificates.lop_clip import plan_lop_clip
from objpert.mechanisms._certificates.names import METHODS
from objpert.mechanisms._certificates.noisy_gd import plan_noisy_gd
from objpert.mechanisms._certificates.output import plan_output_perturbation
from objpert.mechanisms._certificates.plan import PeerPlan

__all__ = ["PLANNERS", "calibrate_peer"]

#: method -> its planner, called as planner(loss, n=, d=, zeta=, epsilon=, delta=, **options).
PLANNERS: dict[str, Callable[..., PeerPlan]] = {
    "lop": plan_lop,
    "lop_clip": plan_lop_clip,
    "amp": plan_amp,
    "output_perturbation": plan_output_perturbation,
    "noisy_gd": plan_noisy_gd,
}


@numeric_guard
def calibrate_peer(
    method: str,
    n: int,
    d: int,
    zeta: float,
    loss: str | Loss,
    epsilon: float,
    delta: float,
    **opts: Any,
) -> PeerPlan:
    """The :class:`~.plan.PeerPlan` of ``method`` (one of :data:`~.names.METHODS`) for
    target (epsilon, delta).

    ``opts`` are the planner's keyword options (see :func:`~.lop.plan_lop`,
    :func:`~.lop_clip.plan_lop_clip`, :func:`~.amp.plan_amp`,
    :func:`~.output.plan_output_perturbation`, :func:`~.noisy_gd.plan_noisy_gd`), e.g.
    ``mu``, ``tolerance``/``gamma``, ``clip``, ``iterations``, ``accountant``,
    ``calibration``, ``grid_bits`` (the k of the published noise's grid),
    ``loss_params={"scale": 1.0}``. Unknown options are refused.
    """
    planner = PLANNERS.get(method)
    if planner is None:
        raise ParameterError(f"method must be one of {METHODS}; got {method!r}")
    try:
        return planner(loss, n=n, d=d, zeta=zeta, epsilon=epsilon, delta=delta, **opts)
    except TypeError as exc:
        raise ParameterError(f"bad option for method {method!r}: {exc}") from None
