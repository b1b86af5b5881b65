"""Three-operator splitting (Davis & Yin 2017) for smooth + l1 + box problems.

Minimise f(theta) + r(theta) + i_C(theta), with f smooth (its gradient given), r the
weighted l1 norm lambda ||theta||_1 (optional) and C the box ||theta||_inf <= kappa
(optional). From x_0, for k = 0, ..., K - 1 (docs/qop.md, "Solver", restating the
solver of Cortild & Cartis 2026, arXiv:2605.05905):

    theta = prox_{omega r}(x)                 (soft-thresholding at omega lambda)
    g     = grad f(theta)                     (stochastic: an unbiased estimate)
    z     = Proj_C(2 theta - x - omega g)
    x     = x + lambda_k (z - theta)

and theta is returned: the prox point of the last iteration, prox(x_{K-1}), the point the
gradient was last evaluated at (as the authors' code; ``x`` of the result is x_K). The
iteration count K is fixed by the caller: no stopping rule
depends on the data (a data-dependent stopping time would leak). With f beta-smooth, a
step omega in (0, 2/beta) and constant lambda_k in (0, 2 - omega beta / 2), the
deterministic iteration converges to a minimiser (Davis & Yin 2017, Theorem 1.1); the
default relaxation is 1. The stochastic variant follows the authors' schedule
lambda_k = (k + 1)^(-1/2 - 0.002) and draws the sample index i uniformly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert.exceptions import ParameterError

__all__ = [
    "DavisYinResult",
    "authors_relaxation",
    "davis_yin",
    "project_box",
    "soft_threshold",
    "stochastic_davis_yin",
]


def soft_threshold(x: np.ndarray, threshold: float) -> np.ndarray:
    """prox of threshold * ||.||_1: sign(x) max(|x| - threshold, 0), elementwise."""
    t = threshold
    x = np.asarray(x, dtype=float)
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def project_box(x: np.ndarray, kappa: float) -> np.ndarray:
    """Euclidean projection onto the box {theta : ||theta||_inf <= kappa}."""
    k = kappa
    return np.clip(np.asarray(x, dtype=float), -k, k)


def authors_relaxation(k: int) -> float:
    """lambda_k = (k + 1)^(-1/2 - 0.002), the stochastic schedule of Cortild & Cartis (2026)
    (docs/qop.md, "Solver")."""
    return float((k + 1) ** (-0.5 - 0.002))


@dataclass(frozen=True)
class DavisYinResult:
    """theta = prox(x_{K-1}) (the released point; prox(x_0) when K = 0), x = x_K, and K."""

    theta: np.ndarray
    x: np.ndarray
    iterations: int


def _operators(
    l1: float | None, box: float | None, step: float
) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    weight = 0.0 if l1 is None else float(l1)
    if weight == 0.0:

        def prox(x: np.ndarray) -> np.ndarray:
            return x.copy()

    else:
        t = step * weight

        def prox(x: np.ndarray) -> np.ndarray:  # soft_threshold(x, t), fewer passes
            return x - np.minimum(np.maximum(x, -t), t)

    if box is None:

        def proj(x: np.ndarray) -> np.ndarray:
            return x

    else:
        k = float(box)

        def proj(x: np.ndarray) -> np.ndarray:  # project_box(x, k), without np.clip's overhead
            return np.minimum(np.maximum(x, -k), k)

    return prox, proj


def _relaxation(relaxation: Any, default: Callable[[int], float]) -> Callable[[int], float]:
    if relaxation is None:
        return default
    if callable(relaxation):
        return relaxation
    lam = float(relaxation)
    return lambda k: lam


def _unit(k: int) -> float:
    """The default relaxation lambda_k = 1 of the deterministic iteration."""
    return 1.0


def _setup(
    step: Any,
    iterations: Any,
    l1: float | None,
    box: float | None,
    relaxation: float | Callable[[int], float] | None,
    default: Callable[[int], float],
) -> tuple[
    float,
    int,
    Callable[[np.ndarray], np.ndarray],
    Callable[[np.ndarray], np.ndarray],
    Callable[[int], float],
]:
    """The checked step omega and count K, prox_{omega r}, Proj_C and the schedule lambda_k."""
    iterations = int(iterations)
    prox, proj = _operators(l1, box, step)
    return step, iterations, prox, proj, _relaxation(relaxation, default)


def _start(x0: Any) -> np.ndarray:
    x = np.array(x0, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ParameterError(f"x0 must be a non-empty 1-D array; got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ParameterError("x0 must be finite")
    return x


def _iterate(
    gradient: Callable[[np.ndarray, int], np.ndarray],
    x: np.ndarray,
    prox: Callable[[np.ndarray], np.ndarray],
    proj: Callable[[np.ndarray], np.ndarray],
    lam: Callable[[int], float],
    step: float,
    iterations: int,
) -> DavisYinResult:
    """The K = ``iterations`` Davis-Yin steps of the module docstring from x (updated in
    place); ``gradient(theta, k)`` is the (estimated) gradient of f at step k."""
    theta = prox(x)
    for k in range(iterations):
        theta = prox(x)
        g = gradient(theta, k)
        z = proj(2.0 * theta - x - step * g)
        x += lam(k) * (z - theta)
    return DavisYinResult(theta, x, iterations)


def davis_yin(
    gradient: Callable[[np.ndarray], np.ndarray],
    x0: Any,
    step: float,
    iterations: int,
    *,
    l1: float | None = None,
    box: float | None = None,
    relaxation: float | Callable[[int], float] | None = None,
) -> DavisYinResult:
    """Exactly ``iterations`` Davis-Yin steps with the full gradient of f.

    ``gradient(theta)`` returns grad f(theta); ``step`` is omega (take 1/beta for a
    beta-smooth f); ``l1`` the weight lambda of lambda ||.||_1 and ``box`` the radius kappa
    (``None``: absent); ``relaxation`` a constant or a schedule k -> lambda_k (default 1).
    """
    step, iterations, prox, proj, lam = _setup(step, iterations, l1, box, relaxation, _unit)
    x = _start(x0)
    return _iterate(lambda theta, k: gradient(theta), x, prox, proj, lam, step, iterations)


def stochastic_davis_yin(
    sample_gradient: Callable[[np.ndarray, int], np.ndarray],
    n: int,
    x0: Any,
    step: float,
    iterations: int,
    *,
    l1: float | None = None,
    box: float | None = None,
    relaxation: float | Callable[[int], float] | None = None,
    rng: np.random.Generator | None = None,
) -> DavisYinResult:
    """The stochastic variant: ``sample_gradient(theta, i)`` is an unbiased estimate of
    grad f(theta) built from sample i, drawn uniformly from {0, ..., n-1} at each step
    (for a sum objective: n grad l(theta; s_i) + the gradient of the non-sample terms).

    ``relaxation`` defaults to the authors' (k + 1)^(-1/2 - 0.002). ``rng``: a numpy
    Generator for the indices (``None``: a fresh OS-seeded one; the indices are not privacy
    noise).
    """
    n = int(n)
    step, iterations, prox, proj, lam = _setup(
        step, iterations, l1, box, relaxation, authors_relaxation
    )
    if rng is None:
        rng = np.random.default_rng()
    elif not isinstance(rng, np.random.Generator):
        raise ParameterError(f"rng must be a numpy Generator or None; got {type(rng).__name__}")
    x = _start(x0)
    indices = rng.integers(0, n, size=iterations)

    def gradient(theta: np.ndarray, k: int) -> np.ndarray:
        return sample_gradient(theta, int(indices[k]))

    return _iterate(gradient, x, prox, proj, lam, step, iterations)
