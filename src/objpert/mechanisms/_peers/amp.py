"""Approximate minima perturbation (Iyengar et al. 2019, Algorithm 1): Gaussian objective
noise, then discrete Gaussian output noise on the plan's grid.

One release is solved as a batch of one (:func:`objpert._solvers.newton.
solve_batch_to_tolerance`: damped Newton from w = 0 with dense d x d systems for
d <= 64), the solver of a batch of releases and of the Spark release
(:mod:`objpert.spark._newton`): for the same data and seed the three are the same
computation, equal to rounding, not merely each within the tolerance gamma."""

from __future__ import annotations

import numpy as np

from objpert._engines.glm import GLMObjective
from objpert.mechanisms._certificates import PeerPlan, grid_noise
from objpert.mechanisms._peers.checks import solve_checked
from objpert.mechanisms._peers.noise import discrete, gaussian, on_grid

__all__ = ["amp_core"]


def amp_core(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    gamma, scale = grid_noise(plan.output_sigma, plan.grid_bits)
    b1 = gaussian(generator, plan.sigma, plan.d, draws)  # objective noise, drawn once
    b2 = discrete(generator, scale, plan.d, draws)  # output noise on the grid, drawn once
    w, used = solve_checked(objective, b1 if draws else b1[:, None], plan)
    return on_grid(w if draws else w[:, 0], b2, gamma), used
