"""Output perturbation (Chaudhuri et al. 2011) with discrete Gaussian noise on the plan's
grid."""

from __future__ import annotations

import numpy as np

from objpert._engines.glm import GLMObjective
from objpert.mechanisms._certificates import PeerPlan, grid_noise
from objpert.mechanisms._peers.checks import solve_checked
from objpert.mechanisms._peers.noise import discrete, on_grid

__all__ = ["output_perturbation_core"]


def output_perturbation_core(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    gamma, scale = grid_noise(plan.sigma, plan.grid_bits)
    noise = discrete(generator, scale, plan.d, draws)  # the one and only draw
    w, used = solve_checked(objective, np.zeros(plan.d), plan)  # one solve for a batch
    return on_grid(w, noise, gamma), used
