"""Noisy full-batch gradient descent: T steps, each published gradient rounded to the plan's
grid plus fresh discrete Gaussian noise, summed exactly in int64."""

from __future__ import annotations

import numpy as np

from objpert._engines.glm import GLMObjective
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates import NOISY_GD_MAX_ITERATIONS, PeerPlan, grid_noise
from objpert.mechanisms._discrete_noise import GRID_CLIP, to_grid
from objpert.mechanisms._peers.noise import discrete
from objpert.mechanisms._progress import step_progress

__all__ = ["NOISE_BLOCK", "noisy_gd_clip", "noisy_gd_core"]


def noisy_gd_core(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    T, d = int(plan.iterations), plan.d
    gamma, scale = grid_noise(plan.sigma, plan.grid_bits)
    step = float(plan.eta) * gamma  # exact: gamma is a power of two
    bound = noisy_gd_clip(T)
    total = np.zeros(d if draws is None else (d, draws), dtype=np.int64)  # sum of the g_t
    w = np.zeros(total.shape)
    block = max(1, NOISE_BLOCK // (d * (draws or 1)))
    with step_progress("noisy gradient descent", T, verbose) as tick:
        for k in range(T):
            if k % block == 0:  # the next steps' noise, drawn before they run
                noise = discrete(generator, scale, d, draws, min(block, T - k))
                if np.abs(noise).max() >= _NOISE_BOUND:  # pragma: no cover - P < e^-(2^29)
                    raise RuntimeError("discrete noise out of range: the generator is broken")
            total += to_grid(objective.gradient(w), gamma, bound)
            total += noise[k % block]
            w = -step * total.astype(float)  # w_{k+1} = -eta gamma (q_1 + Y_1 + ... )
            tick(k)
    return w, T


#: Noisy GD draws the noise of this many numbers at a time (a block of steps).
NOISE_BLOCK = 2**18
_NOISE_BOUND = 2**40


def noisy_gd_clip(iterations: int) -> int:
    """The public box of noisy GD's gradients on the grid: |q| <= B = min(2^52,
    floor(2^62 / T) - 2^40) grid units per coordinate, so the int64 sum of T steps
    (|q + Y| <= B + 2^40 each: |Y| < 2^40 is checked, and fails with probability below
    e^-(2^29) for s <= 2^25) stays below 2^62. A 1-Lipschitz clip: the sensitivity bound
    holds. T <= 2^21."""
    T = iterations
    if T > NOISY_GD_MAX_ITERATIONS:
        raise ParameterError(f"noisy GD with T = {T} > 2^21 steps is not supported")
    return min(GRID_CLIP, 2**62 // T - 2**40)
