"""The peers' noise: continuous Gaussian noise that enters an objective, and the exact
discrete Gaussian on a public grid for noise published added to a value
(:mod:`objpert.mechanisms._discrete_noise`). A batch of one draws exactly the numbers of
one release."""

from __future__ import annotations

import numpy as np

from objpert.mechanisms._discrete_noise import discrete_gaussian_array, from_grid, to_grid

__all__ = ["discrete", "gaussian", "on_grid"]


def gaussian(generator: np.random.Generator, sigma: float, d: int, draws: int | None) -> np.ndarray:
    """N(0, sigma^2 I_d) objective noise (continuous: it enters the objective and is never
    published added to a value): shape (d,) for one release (``draws`` None), else
    (d, draws), one column per release. A batch of one draws exactly the numbers of one
    release."""
    if draws is None:
        return generator.normal(0.0, sigma, size=d)
    return generator.normal(0.0, sigma, size=(draws, d)).T


def discrete(
    generator: np.random.Generator, scale: int, d: int, draws: int | None, steps: int = 0
) -> np.ndarray:
    """N_Z(0, scale^2) integers: shape (d,) for one release (``draws`` None), else (d, draws),
    one column per release; with ``steps`` > 0, that many such vectors stacked in front
    (steps, d) or (steps, d, draws). Drawn row-major over (steps, draws, d), so a batch of
    one draws exactly the numbers of one release."""
    shape = (d,) if draws is None else (draws, d)
    if steps:
        shape = (steps, *shape)
    y = discrete_gaussian_array(generator, scale, shape)
    return y if draws is None else np.swapaxes(y, -1, -2)


def on_grid(w: np.ndarray, units: np.ndarray, gamma: float) -> np.ndarray:
    """gamma (rint(w / gamma) + Y): w (d,) or (d, B), Y (d,) or (d, B) (one minimiser may be
    shared by a batch). The result lies on the grid gamma Z."""
    q = to_grid(w, gamma)
    return from_grid((q[:, None] if q.ndim < units.ndim else q) + units, gamma)
