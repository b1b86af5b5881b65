"""Damped Newton to a gradient-norm tolerance: the exact-minimiser solves of the peers.

LOP, LOP-Clip, AMP and output perturbation release (a noisy function of) the minimiser of
the mu-strongly convex GLM objective F(w) + <z, w> (Chaudhuri, Monteleoni & Sarwate 2011;
Kifer, Smith & Thakurta 2012; Iyengar et al. 2019). Their certificates take the solver's
stopping accuracy as a public tolerance on ||grad F(w) + z||; the functions here run a
deterministic solver until that tolerance is met or a public iteration budget is spent,
and report the gradient norm reached (the caller checks it). Newton's method on
grad F(w) + z = 0 with the merit function ||grad F(w) + z||^2 / 2 and a backtracking step
(Nocedal & Wright 2006, Chapter 11) finishes what L-BFGS (Liu & Nocedal 1989) cannot
resolve in double precision.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import optimize

from objpert._engines.blocked import single_threaded_blas
from objpert._engines.glm import GLMObjective

__all__ = ["DENSE_NEWTON_MAX_D", "solve_batch_to_tolerance", "solve_to_tolerance"]

#: Newton directions for a (d, B) batch: (W, G) -> P with P[:, b] = -H(W[:, b])^{-1} G[:, b].
Directions = Callable[[np.ndarray, np.ndarray], np.ndarray]

#: Batches with d at most this use dense d x d Newton systems (:func:`solve_batch_to_tolerance`).
DENSE_NEWTON_MAX_D = 64


def _cg_directions(objective: GLMObjective) -> Directions:
    """Newton directions -H(w_b)^{-1} g_b column by column, by conjugate gradients on the
    objective's Hessian-vector products (any d)."""
    from scipy.sparse.linalg import LinearOperator, cg

    def direction(W: np.ndarray, G: np.ndarray) -> np.ndarray:
        d = W.shape[0]
        P = np.empty_like(G)
        for b in range(W.shape[1]):
            w = W[:, b]
            H = LinearOperator((d, d), matvec=lambda v, w=w: objective.hvp(w, np.ravel(v)))
            P[:, b], _ = cg(H, -G[:, b], rtol=1e-12, maxiter=10 * d)
        return P

    return direction


def _dense_directions(objective: GLMObjective) -> Directions:
    """Newton directions for a (d, B) batch at once: the B Hessians are assembled from d
    batched Hessian-vector products (column j: H(w_b) e_j for every b) and solved densely
    (small d)."""

    def direction(W: np.ndarray, G: np.ndarray) -> np.ndarray:
        d, B = W.shape
        H = np.empty((B, d, d))
        for j in range(d):
            E = np.zeros((d, B))
            E[j] = 1.0
            H[:, :, j] = objective.hvp(W, E).T
        return -np.linalg.solve(H, G.T[:, :, None])[:, :, 0].T

    return direction


def _damped_newton(
    objective: GLMObjective,
    Z: np.ndarray,
    W: np.ndarray,
    norms: np.ndarray,
    tolerance: float,
    budget: int,
    direction: Directions,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Damped Newton steps on grad F(w) + z = 0 for every column of the (d, B) arrays ``Z``
    (noise) and ``W`` (start; ``norms`` its gradient norms), the gradient norm as merit.

    The Newton direction p = -H^{-1} g is a descent direction for ||g||^2 / 2, which, unlike
    F, is computed to full relative accuracy near the minimiser. Per column, the step is
    halved from 1 until the gradient norm decreases (down to 1e-12); a column stops once its
    norm is <= ``tolerance`` or no step decreases it. At most ``budget`` Newton steps.
    Returns (W, norms, steps)."""
    W, norms = W.copy(), norms.copy()
    active = norms > tolerance
    steps = 0
    while active.any() and steps < budget:
        idx = np.flatnonzero(active)
        Wa, Za = W[:, idx], Z[:, idx]
        Ga = objective.gradient(Wa)
        Ga += Za
        P = direction(Wa, Ga)
        t = np.ones(idx.size)
        accepted = np.zeros(idx.size, dtype=bool)
        todo = np.ones(idx.size, dtype=bool)
        while todo.any():
            j = np.flatnonzero(todo)
            W_new = Wa[:, j] + t[j] * P[:, j]
            G_new = objective.gradient(W_new)
            G_new += Za[:, j]
            n_new = np.linalg.norm(G_new, axis=0)
            better = n_new < norms[idx[j]]
            won = j[better]
            W[:, idx[won]] = W_new[:, better]
            norms[idx[won]] = n_new[better]
            accepted[won] = True
            todo[won] = False
            t[j[~better]] *= 0.5
            todo &= t > 1e-12
        steps += 1
        active[idx] = accepted & (norms[idx] > tolerance)
    return W, norms, steps


def _newton_polish(
    objective: GLMObjective,
    z: np.ndarray,
    w: np.ndarray,
    norm: float,
    tolerance: float,
    budget: int,
) -> tuple[np.ndarray, float, int]:
    """:func:`_damped_newton` for one point, directions by conjugate gradients (any d).
    Returns (w, norm, steps)."""
    W, norms, steps = _damped_newton(
        objective,
        z[:, None],
        w[:, None],
        np.array([norm]),
        tolerance,
        budget,
        _cg_directions(objective),
    )
    return W[:, 0], float(norms[0]), steps


def solve_to_tolerance(
    objective: GLMObjective, z: np.ndarray, tolerance: float, max_iter: int
) -> tuple[np.ndarray, float, int]:
    """Minimise F(w) + <z, w> from w = 0 until ||grad|| <= tolerance (Euclidean norm).

    L-BFGS (scipy.optimize.minimize, method L-BFGS-B, unconstrained) on the objective's
    value and gradient; it stalls once function values stop resolving progress (gradient
    norms near sqrt(machine epsilon)), so it is followed, if needed, by damped Newton steps
    (:func:`_newton_polish`) on the gradient with the objective's Hessian-vector products.
    Deterministic in (data, z). Returns (w, ||grad F(w) + z||, iterations); the caller
    checks the tolerance.
    """

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        g = objective.gradient(w)
        g += z
        return float(objective.value(w)) + float(z @ w), g

    d = z.shape[0]
    with single_threaded_blas():  # L-BFGS's small products: one BLAS thread is fastest
        res = optimize.minimize(
            fun,
            np.zeros(d),
            jac=True,
            method="L-BFGS-B",
            options={
                "maxiter": max_iter,
                "gtol": tolerance / (10.0 * np.sqrt(d)),
                "ftol": 0.0,
                "maxcor": 20,
            },
        )
        w, used = np.asarray(res.x, dtype=float), int(res.nit)
        norm = float(np.linalg.norm(fun(w)[1]))
        if norm > tolerance and used < max_iter:
            w, norm, steps = _newton_polish(objective, z, w, norm, tolerance, max_iter - used)
            used += steps
    return w, norm, used


def solve_batch_to_tolerance(
    objective: GLMObjective, Z: np.ndarray, tolerance: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimise F(w) + <z_b, w> for every column z_b of Z (d, B), each until its gradient
    norm is <= tolerance: the B problems of a batch of releases at once.

    For d <= :data:`DENSE_NEWTON_MAX_D`: :func:`_damped_newton` from w = 0 on the whole
    batch, with dense Newton systems assembled from batched Hessian-vector products. The
    minimiser is unique (F is mu-strongly convex), so each column agrees with
    :func:`solve_to_tolerance` on the same z to within 2 tolerance / mu. Larger d:
    :func:`solve_to_tolerance` column by column. Returns (W, the gradient norms (B,), the
    largest iteration count); the caller checks the tolerance.
    """
    d, B = Z.shape
    if d > DENSE_NEWTON_MAX_D:
        runs = [solve_to_tolerance(objective, Z[:, b], tolerance, max_iter) for b in range(B)]
        W = np.column_stack([r[0] for r in runs])
        return W, np.array([r[1] for r in runs]), max(r[2] for r in runs)
    W = np.zeros((d, B))
    G = objective.gradient(W)
    G += Z
    norms = np.linalg.norm(G, axis=0)
    direction = _dense_directions(objective)
    return _damped_newton(objective, Z, W, norms, tolerance, max_iter, direction)
