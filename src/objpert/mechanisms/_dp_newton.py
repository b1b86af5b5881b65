"""A differentially private Newton method (Avella-Medina, Bradshaw & Loh 2023).

Exactly K = plan.iterations steps from w_0 = 0 of

    w_{k+1} = w_k - eta H~_k^{-1} g~_k,   g~_k = grad F(w_k) + N(0, s_g^2 I),
    H~_k = floor_mu(sym(hess F(w_k)) + E_k),

E_k symmetric with its upper triangle (diagonal included) i.i.d. N(0, s_H^2), and
floor_mu the eigenvalues of the symmetric matrix raised to at least the public ridge mu
(post-processing, which keeps H~_k invertible); (s_g, s_H) are the certificate's noise
stds (:mod:`objpert.mechanisms._certificates.dp_newton`). The gradient and the dense d x d Hessian
come from the shared objective (:class:`objpert._engines.glm.GLMObjective`, dense or
sparse X; d Hessian-vector products per step, so small d). The release is the last
iterate w_K. The noise is continuous Gaussian for the reason given in
:mod:`objpert.mechanisms._dp_sgd` (the same floating-point caveat applies).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objpert._engines.glm import GLMObjective
from objpert.mechanisms._certificates.dp_newton import DPNewtonPlan, newton_sensitivities
from objpert.mechanisms._certificates.plan import PeerInputs
from objpert.mechanisms._dp_sgd import run_release, run_release_batch
from objpert.mechanisms._perturbed_gd import BatchRelease, Release
from objpert.mechanisms._progress import step_progress

__all__ = ["dp_newton_release", "dp_newton_release_batch", "floored_solve", "symmetric_noise"]


def symmetric_noise(generator: np.random.Generator, std: float, d: int) -> np.ndarray:
    """A symmetric d x d matrix whose upper triangle, diagonal included, is i.i.d.
    N(0, std^2) (d(d+1)/2 draws, row-major over the upper triangle), mirrored below."""
    E = np.zeros((d, d))
    rows, cols = np.triu_indices(d)
    E[rows, cols] = generator.normal(0.0, std, size=rows.size)
    return E + np.triu(E, 1).T


def floored_solve(H: np.ndarray, g: np.ndarray, floor: float) -> np.ndarray:
    """H^{-1} g after raising the eigenvalues of the symmetric H to at least ``floor``."""
    lam, V = np.linalg.eigh(0.5 * (H + H.T))
    return V @ ((V.T @ g) / np.maximum(lam, floor))


def _steps(
    objective: GLMObjective,
    plan: DPNewtonPlan,
    generator: np.random.Generator,
    verbose: bool | None = None,
    noise_multiplier: float | None = None,
) -> np.ndarray:
    """The K noisy Newton steps (``noise_multiplier`` overrides plan.sigma: for tests of the
    arithmetic only)."""
    d, K, eta, mu = plan.d, int(plan.iterations), float(plan.eta), float(plan.mu)
    z = plan.sigma if noise_multiplier is None else noise_multiplier
    inputs = PeerInputs(plan.loss_object(), plan.n, d, plan.zeta, plan.epsilon, plan.delta)
    sens_g, sens_h = newton_sensitivities(inputs)
    floor = max(mu, 2.0 * np.sqrt(d) * z * sens_h)  # public: the noise's typical spectral norm
    w = np.zeros(d)
    with step_progress("DP Newton", K, verbose) as tick:
        for k in range(K):
            g = objective.gradient(w) + generator.normal(0.0, z * sens_g, size=d)
            H = objective.hessian(w)
            H = 0.5 * (H + H.T) + symmetric_noise(generator, z * sens_h, d)
            w = w - eta * floored_solve(H, g, floor)
            tick(k)
    return w


def dp_newton_release(
    X: Any,
    y: Any,
    plan: DPNewtonPlan,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
) -> Release:
    """One DP Newton release (module docstring): the plan re-certified, the data checked
    (rows above zeta refused; ``clip=True`` scales them down), exactly K noisy Newton steps,
    the last iterate released."""

    def steps(M: Any, yy: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        objective = GLMObjective(M, yy, plan.loss_object(), plan.mu)
        return _steps(objective, plan, generator, verbose)

    return run_release(X, y, plan, DPNewtonPlan, "dp_newton", rng, clip, steps)


def dp_newton_release_batch(
    X: Any, y: Any, plan: DPNewtonPlan, draws: int, rng: Any = None, *, clip: bool = False
) -> BatchRelease:
    """``draws`` independent DP Newton releases on the same data (for audits), through the
    same steps."""

    def steps(M: Any, yy: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        return _steps(GLMObjective(M, yy, plan.loss_object(), plan.mu), plan, generator)

    return run_release_batch(X, y, plan, DPNewtonPlan, "dp_newton", draws, rng, clip, steps)
