"""Three-operator splitting (Davis & Yin 2017) for smooth + l1 + box problems.

Minimise f(theta) + r(theta) + i_C(theta), with f smooth (its gradient given), r the
weighted l1 norm lambda ||theta||_1 (optional) and C the box ||theta||_inf <= kappa
(optional). From x_0, for k = 0, ..., K - 1 (qop-notes, "Solver: stochastic three-operator
splitting (Davis-Yin)"):

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

from objpert.errors import ParameterError, check_int, check_nonnegative, check_positive

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
    t = check_nonnegative("threshold", threshold)
    x = np.asarray(x, dtype=float)
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def project_box(x: np.ndarray, kappa: float) -> np.ndarray:
    """Euclidean projection onto the box {theta : ||theta||_inf <= kappa}."""
    k = check_positive("kappa", kappa)
    return np.clip(np.asarray(x, dtype=float), -k, k)


def authors_relaxation(k: int) -> float:
    """lambda_k = (k + 1)^(-1/2 - 0.002), the authors' stochastic schedule (qop-notes)."""
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
    weight = 0.0 if l1 is None else check_nonnegative("l1", l1)
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
        k = check_positive("box", box)

        def proj(x: np.ndarray) -> np.ndarray:  # project_box(x, k), without np.clip's overhead
            return np.minimum(np.maximum(x, -k), k)

    return prox, proj


def _relaxation(relaxation: Any, default: Callable[[int], float]) -> Callable[[int], float]:
    if relaxation is None:
        return default
    if callable(relaxation):
        return relaxation
    lam = check_positive("relaxation", relaxation)
    return lambda k: lam


def _start(x0: Any) -> np.ndarray:
    x = np.array(x0, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ParameterError(f"x0 must be a non-empty 1-D array; got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ParameterError("x0 must be finite")
    return x


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
    step = check_positive("step", step)
    iterations = check_int("iterations", iterations, 0)
    prox, proj = _operators(l1, box, step)
    lam = _relaxation(relaxation, lambda k: 1.0)
    x = _start(x0)
    theta = prox(x)
    for k in range(iterations):
        theta = prox(x)
        g = gradient(theta)
        z = proj(2.0 * theta - x - step * g)
        x += lam(k) * (z - theta)
    return DavisYinResult(theta, x, iterations)


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
    n = check_int("n", n, 1)
    step = check_positive("step", step)
    iterations = check_int("iterations", iterations, 0)
    prox, proj = _operators(l1, box, step)
    lam = _relaxation(relaxation, authors_relaxation)
    if rng is None:
        rng = np.random.default_rng()
    elif not isinstance(rng, np.random.Generator):
        raise ParameterError(f"rng must be a numpy Generator or None; got {type(rng).__name__}")
    x = _start(x0)
    theta = prox(x)
    indices = rng.integers(0, n, size=iterations)
    for k in range(iterations):
        theta = prox(x)
        g = sample_gradient(theta, int(indices[k]))
        z = proj(2.0 * theta - x - step * g)
        x += lam(k) * (z - theta)
    return DavisYinResult(theta, x, iterations)
