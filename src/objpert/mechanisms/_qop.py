"""The quadratic objective perturbation (QOP) release of Cortild & Cartis (2026).

Draw W = G G^T once (G a d x m matrix of iid N(0, 1) entries), then minimise the SUM
objective

    sum_i l(<x_i, theta>, y_i) + l1 ||theta||_1
        + (sigma^2 / 2) (theta - theta_ref)^T W (theta - theta_ref)

over the box ||theta||_inf <= kappa (or all of R^d) with exactly K Davis-Yin iterations
(:mod:`objpert._solvers.splitting`), step omega = 1 / (n L + sigma^2 lambda_max(W))
(Cortild & Cartis 2026, arXiv:2605.05905; docs/qop.md, "Solver").
The inexact variant publishes the result plus output noise of scale sigma_tilde, as a
discrete Gaussian on a grid (:func:`objpert.mechanisms._discrete_noise.grid_gaussian`;
flag v of :mod:`objpert.mechanisms._certificates.qop`): the released point lies on the grid.
sigma^2 and
sigma_tilde come from a :class:`~objpert.mechanisms.QOPPlan`, which is re-derived
from
its public constants before any data are touched. W's Gaussian entries enter the
objective and stay continuous.

Audit finding (docs/audit.md, ``objpert audit --mechanism qop --pair canonical``): when
theta_ref minimises every sample loss of one dataset, the exact release is theta_ref for
every W on that dataset but continuous on its neighbour, so delta = 1 at every epsilon
although every listed assumption holds. QOP is shipped to compare and reproduce the
paper, not as a certified release for practitioners.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from objpert._data import as_feature_matrix, as_targets, bound_rows, encode_binary
from objpert._engines.glm import GLMObjective
from objpert._losses import Loss, SquaredLoss, get_loss
from objpert._randomness import make_rng
from objpert._solvers import davis_yin, stochastic_davis_yin
from objpert._validation import check_nonnegative, check_positive, count, optional, validated
from objpert.exceptions import DataError, ParameterError, PrivacyError
from objpert.mechanisms._certificates.qop import QOPCertificate, QOPPlan
from objpert.mechanisms._discrete_noise import grid_gaussian
from objpert.mechanisms._perturbed_gd import BatchRelease, Release

__all__ = ["SOLVERS", "QOPBatchRelease", "QOPRelease", "qop_release", "qop_release_batch"]

#: The solvers :func:`qop_release` accepts.
SOLVERS: tuple[str, ...] = ("deterministic", "stochastic")


@dataclass(frozen=True)
class QOPRelease(Release):
    """The released weights and what certifies them (W itself is never kept): a
    :class:`~objpert.mechanisms.Release` with a QOP plan and certificate, and
    the solver used."""

    solver: str = "deterministic"

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "solver": self.solver}


@dataclass(frozen=True)
class QOPBatchRelease(BatchRelease):
    """``draws`` independent QOP releases on the same data (:func:`qop_release_batch`):
    row b of ``weights`` (draws, d) is a release with its own W_b; the solver used."""

    solver: str = "deterministic"


def check_qop_plan(plan: Any) -> QOPCertificate:
    """Re-derive the plan from its public inputs; refuse one whose numbers do not follow."""
    if not isinstance(plan, QOPPlan):
        raise ParameterError(
            f"plan must be a QOPPlan (objpert.plan('qop', ...)); got {type(plan).__name__}"
        )
    again = plan.recompute()
    for name in ("sigma2", "sigma_tilde", "alpha", "log_alpha1"):
        mine, theirs = getattr(plan, name), getattr(again, name)
        if not math.isclose(mine, theirs, rel_tol=1e-12, abs_tol=0.0):
            raise PrivacyError(
                f"the plan's {name} = {mine!r} does not follow from its constants ({theirs!r})"
            )
    return again.certificate


def _same(name: str, given: Any, planned: Any) -> None:
    if given is not None and given != planned:
        raise ParameterError(
            f"{name} = {given!r} disagrees with the plan ({planned!r}): build the plan with "
            "qop_plan(..., inexact=True, tau=..., eta=...) instead"
        )


def _sample_gradient(M: Any, y: np.ndarray, loss: Loss, n: int, quad):
    """i -> n grad l(<x_i, theta>, y_i) + quad(theta), for dense or CSR rows."""
    if sparse.issparse(M):
        indptr, indices, data = M.indptr, M.indices, M.data

        def g(theta: np.ndarray, i: int) -> np.ndarray:
            lo, hi = indptr[i], indptr[i + 1]
            cols, vals = indices[lo:hi], data[lo:hi]
            t = float(vals @ theta[cols])
            out = quad(theta)
            out[cols] += n * float(loss.d1(t, y[i])) * vals
            return out

        return g

    if isinstance(loss, SquaredLoss):  # l'(t, y) = t - y, without the array machinery

        def g(theta: np.ndarray, i: int) -> np.ndarray:
            row = M[i]
            return quad(theta) + (n * (float(row @ theta) - y[i])) * row

        return g

    def g(theta: np.ndarray, i: int) -> np.ndarray:
        row = M[i]
        return quad(theta) + (n * float(loss.d1(float(row @ theta), y[i]))) * row

    return g


def _check_release(
    X, y, plan, theta_ref, loss, l1, box, solver, iterations, inexact, tau, eta, clip
):
    """Every check of a QOP release, before any randomness: (certificate, rows, labels,
    loss, theta_ref, l1, kappa, iterations, rows clipped)."""
    cert = check_qop_plan(plan)
    _same("inexact", inexact, plan.inexact)
    if plan.inexact:
        _same("tau", tau, plan.tau)
        _same("eta", eta, plan.eta)
    elif tau is not None or eta is not None:
        _same("inexact", True, plan.inexact)
    if solver not in SOLVERS:
        raise ParameterError(f"solver must be one of {SOLVERS}; got {solver!r}")
    kappa = box
    loss_obj = get_loss(loss)
    M = as_feature_matrix(X)
    n, d = M.shape
    if d != plan.d:
        raise DataError(f"the plan is for d = {plan.d} features; X has {d}")
    yy = encode_binary(y)[0] if loss_obj.label_kind == "binary" else as_targets(y)
    if yy.shape[0] != n:
        raise DataError(f"X has {n} rows but y has {yy.shape[0]} labels")
    ref = np.array(theta_ref, dtype=float)
    if ref.shape != (d,):
        raise ParameterError(f"theta_ref must be a vector of length d = {d}; got shape {ref.shape}")
    if not np.all(np.isfinite(ref)):
        raise ParameterError("theta_ref must be finite")
    row_bound = math.sqrt(plan.smoothness / loss_obj.L2)
    M, clipped = bound_rows(M, row_bound, clip=clip)
    return cert, M, yy, loss_obj, ref, l1, kappa, iterations, clipped


def _davis_yin_batch(M, yy, loss_obj, W, s2, ref, steps, iterations, l1, kappa) -> np.ndarray:
    """The deterministic solver for B draws at once: theta (d, B), draw b with its own W_b
    (W: (B, d, d)) and step omega_b. One Davis-Yin run on the stacked vector: with a common
    step omega (omega_0 for one draw, 1 otherwise) and draw b's gradient scaled by
    omega_b / omega, each block takes exactly draw b's iteration (the prox of l1 = 0 and the
    box projection do not depend on the step; for l1 > 0 only one draw at a time)."""
    B, d, _ = W.shape
    n = M.shape[0]
    objective = GLMObjective(M, yy, loss_obj, 0.0)
    step = float(steps[0]) if B == 1 else 1.0
    scale = steps / step

    def gradient(flat: np.ndarray) -> np.ndarray:
        theta = flat.reshape(B, d).T
        g = objective.gradient(theta)
        g *= n
        g += s2 * np.einsum("bij,jb->ib", W, theta - ref[:, None])
        g *= scale
        return g.T.ravel()

    result = davis_yin(gradient, np.zeros(B * d), step, iterations, l1=l1, box=kappa)
    return result.theta.reshape(B, d).T


def _stochastic(M, yy, loss_obj, W, s2, ref, step, iterations, l1, kappa, generator):
    """The stochastic solver for one draw of W."""
    n, d = M.shape

    def quad(theta: np.ndarray) -> np.ndarray:
        return s2 * (W @ (theta - ref))

    return stochastic_davis_yin(
        _sample_gradient(M, yy, loss_obj, n, quad),
        n,
        np.zeros(d),
        step,
        iterations,
        l1=l1,
        box=kappa,
        rng=generator,
    ).theta


def _run(
    X, y, plan, theta_ref, draws, *, loss, l1, box, solver, iterations, rng, inexact, tau, eta, clip
):
    """The one code path of a QOP release (``draws`` None: weights (d,)) and of a batch of
    independent releases (weights (draws, d)): checks, then W_b = G_b G_b^T for every draw
    (G_b d x m iid N(0, 1), drawn first, in draw order), the solves, the output noise."""
    cert, M, yy, loss_obj, ref, l1, kappa, iterations, clipped = _check_release(
        X, y, plan, theta_ref, loss, l1, box, solver, iterations, inexact, tau, eta, clip
    )
    B = 1 if draws is None else draws
    n, d = M.shape
    generator, seeded = make_rng(rng)
    start = time.perf_counter()
    shape = (d, plan.m) if draws is None else (B, d, plan.m)
    G = generator.standard_normal(shape).reshape(B, d, plan.m)  # the one draw of each W
    W = G @ G.transpose(0, 2, 1)
    del G
    s2 = plan.sigma2
    steps = 1.0 / (n * plan.smoothness + s2 * np.linalg.eigvalsh(W)[:, -1])
    if solver == "deterministic" and (l1 == 0.0 or B == 1):
        theta = _davis_yin_batch(M, yy, loss_obj, W, s2, ref, steps, iterations, l1, kappa)
    elif solver == "deterministic":
        theta = np.column_stack(
            [
                _davis_yin_batch(
                    M, yy, loss_obj, W[b : b + 1], s2, ref, steps[b : b + 1], iterations, l1, kappa
                )[:, 0]
                for b in range(B)
            ]
        )
    else:
        theta = np.column_stack(
            [
                _stochastic(
                    M, yy, loss_obj, W[b], s2, ref, steps[b], iterations, l1, kappa, generator
                )
                for b in range(B)
            ]
        )
    weights = theta[:, 0].copy() if draws is None else np.ascontiguousarray(theta.T)
    if plan.inexact and plan.sigma_tilde > 0.0:  # on the grid (flag v of certify.qop)
        weights = grid_gaussian(generator, weights, plan.sigma_tilde)
    return dict(
        weights=weights,
        plan=plan,
        certificate=cert,
        iterations=iterations,
        seconds=time.perf_counter() - start,
        n_clipped=clipped,
        seeded=seeded,
        solver=solver,
    )


@validated(iterations=count(1), l1=check_nonnegative, box=optional(check_positive))
def qop_release(
    X: Any,
    y: Any,
    plan: QOPPlan,
    theta_ref: Any,
    *,
    loss: str | Loss = "squared",
    l1: float = 0.0,
    box: float | None = None,
    solver: str = "deterministic",
    iterations: int = 1000,
    rng: Any = None,
    inexact: bool | None = None,
    tau: float | None = None,
    eta: float | None = None,
    clip: bool = False,
) -> QOPRelease:
    """Release theta for data (X, y) under the QOP ``plan`` (Cortild & Cartis 2026).

    The guarantee of the exact variant (``plan.inexact`` False) is the paper's for the
    *exact* minimiser: it assumes the solve is exact. K = ``iterations`` Davis-Yin steps
    only approximate it, and the finite solver is what the inexact variant (a plan built
    with ``inexact=True``, accuracies tau and eta, output noise sigma_tilde) accounts for.
    The authors' experiments release the K-step iterate with the exact-solve sigma^2, as
    the exact variant here does; whether K steps reach (tau, eta) is not checked (that
    would touch the data).

    Public inputs: the plan (d, m, L, rho, the epsilon/delta split), ``theta_ref`` (a
    data-independent reference point, d-vector), ``l1`` (weight of the l1 regulariser),
    ``box`` (kappa of the constraint ||theta||_inf <= kappa; ``None``: unconstrained), the
    loss, the solver (``"deterministic"`` full-gradient or ``"stochastic"`` one-sample
    Davis-Yin) and ``iterations``; n = the number of rows is treated as public. The
    interpolation assumption of the paper (a common minimiser of the per-sample losses)
    is the caller's to vouch for. Rows must satisfy L2 ||x_i||^2 <= L (the per-sample
    smoothness of a GLM): refused, or scaled down with ``clip=True``.

    ``inexact``, ``tau``, ``eta`` may be given to state the intent; they must agree with
    the plan. ``rng``: ``None`` (OS entropy) or a seed/Generator for testing (warns). W is
    drawn exactly once, after every check has passed; the sample indices of the
    stochastic solver and the output noise come from the same generator.
    """
    return QOPRelease(
        **_run(
            X,
            y,
            plan,
            theta_ref,
            None,
            loss=loss,
            l1=l1,
            box=box,
            solver=solver,
            iterations=iterations,
            rng=rng,
            inexact=inexact,
            tau=tau,
            eta=eta,
            clip=clip,
        )
    )


def qop_release_batch(
    X: Any,
    y: Any,
    plan: QOPPlan,
    theta_ref: Any,
    draws: int,
    *,
    loss: str | Loss = "squared",
    l1: float = 0.0,
    box: float | None = None,
    solver: str = "deterministic",
    iterations: int = 1000,
    rng: Any = None,
    inexact: bool | None = None,
    tau: float | None = None,
    eta: float | None = None,
    clip: bool = False,
) -> QOPBatchRelease:
    """``draws`` independent releases of :func:`qop_release` on the same data (same
    arguments, checks and refusals; for audits: Jagielski et al. 2020, Nasr et al. 2021).
    Every W_b is drawn first, in draw order, then the solves, then the output noise (draws,
    d), so a batch of one with a seed equals the single release with that seed. The
    deterministic solver runs all draws in one stacked Davis-Yin iteration when l1 = 0
    (one draw at a time otherwise); the stochastic solver one draw at a time."""
    return QOPBatchRelease(
        **_run(
            X,
            y,
            plan,
            theta_ref,
            draws,
            loss=loss,
            l1=l1,
            box=box,
            solver=solver,
            iterations=iterations,
            rng=rng,
            inexact=inexact,
            tau=tau,
            eta=eta,
            clip=clip,
        )
    )
