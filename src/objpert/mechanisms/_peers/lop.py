"""Gaussian LOP and LOP-Clip (Chaudhuri et al. 2011; Redberg, Koskela & Wang 2023): one
Gaussian objective noise vector, the exact minimiser to the plan's tolerance."""

from __future__ import annotations

import numpy as np

from objpert._engines.glm import GLMObjective
from objpert.mechanisms._certificates import PeerPlan
from objpert.mechanisms._peers.checks import solve_checked
from objpert.mechanisms._peers.noise import gaussian

__all__ = ["lop_core"]


def lop_core(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    z = gaussian(generator, plan.sigma, plan.d, draws)  # the one and only draw
    return solve_checked(objective, z, plan)
