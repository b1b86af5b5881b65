"""The quadratic objective perturbation (QOP) release of Cortild & Cartis (2026).

Draw W = G G^T once (G a d x m matrix of iid N(0, 1) entries), then minimise the SUM
objective

    sum_i l(<x_i, theta>, y_i) + l1 ||theta||_1
        + (sigma^2 / 2) (theta - theta_ref)^T W (theta - theta_ref)

over the box ||theta||_inf <= kappa (or all of R^d) with exactly K Davis-Yin iterations
(``objpert.solvers``), step omega = 1 / (n L + sigma^2 lambda_max(W)) (qop-notes, "Solver").
The inexact variant adds N(0, sigma_tilde^2 I) to the result. sigma^2 and sigma_tilde come
from a :class:`~objpert.certify.qop.QOPPlan`, which is re-derived from its public constants
before any data are touched.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg, sparse

from objpert.certify.qop import QOPCertificate, QOPPlan
from objpert.data import DataError, as_feature_matrix, as_targets, bound_rows, encode_binary
from objpert.engines.glm import GLMObjective
from objpert.errors import ParameterError, check_int, check_nonnegative, check_positive
from objpert.losses import Loss, SquaredLoss, get_loss
from objpert.mechanisms.perturbed_gd import PrivacyError, Release
from objpert.randomness import make_rng
from objpert.solvers import davis_yin, stochastic_davis_yin

__all__ = ["SOLVERS", "QOPRelease", "qop_release"]

#: The solvers :func:`qop_release` accepts.
SOLVERS: tuple[str, ...] = ("deterministic", "stochastic")


@dataclass(frozen=True)
class QOPRelease(Release):
    """The released weights and what certifies them (W itself is never kept): a
    :class:`~objpert.mechanisms.perturbed_gd.Release` with a QOP plan and certificate, and
    the solver used."""

    solver: str = "deterministic"

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "solver": self.solver}


def check_qop_plan(plan: Any) -> QOPCertificate:
    """Re-derive the plan from its public inputs; refuse one whose numbers do not follow."""
    if not isinstance(plan, QOPPlan):
        raise ParameterError(
            f"plan must be a QOPPlan (objpert.certify.qop.qop_plan); got {type(plan).__name__}"
        )
    again = plan.recompute()
    for name in ("sigma2", "sigma_tilde", "alpha", "log_alpha1"):
        mine, theirs = getattr(plan, name), getattr(again, name)
        if not math.isclose(mine, theirs, rel_tol=1e-12, abs_tol=0.0):
            raise PrivacyError(
                f"the plan's {name} = {mine!r} does not follow from its constants ({theirs!r})"
            )
    return again.certificate()


def _same(name: str, given: Any, planned: Any) -> None:
    if given is not None and given != planned:
        raise ParameterError(
            f"{name} = {given!r} disagrees with the plan ({planned!r}): build the plan with "
            "qop_plan(..., inexact=True, tau=..., eta=...) instead"
        )


def _lambda_max(W: np.ndarray) -> float:
    return float(linalg.eigvalsh(W)[-1])


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
    cert = check_qop_plan(plan)
    _same("inexact", inexact, plan.inexact)
    if plan.inexact:
        _same("tau", tau, plan.tau)
        _same("eta", eta, plan.eta)
    elif tau is not None or eta is not None:
        _same("inexact", True, plan.inexact)
    if solver not in SOLVERS:
        raise ParameterError(f"solver must be one of {SOLVERS}; got {solver!r}")
    iterations = check_int("iterations", iterations, 1)
    l1 = check_nonnegative("l1", l1)
    kappa = None if box is None else check_positive("box", box)
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

    generator, seeded = make_rng(rng)
    start = time.perf_counter()
    G = generator.standard_normal((d, plan.m))  # the one and only draw of W
    W = G @ G.T
    del G
    s2 = plan.sigma2
    step = 1.0 / (n * plan.smoothness + s2 * _lambda_max(W))

    def quad(theta: np.ndarray) -> np.ndarray:
        return s2 * (W @ (theta - ref))

    x0 = np.zeros(d)
    if solver == "deterministic":
        objective = GLMObjective(M, yy, loss_obj, 0.0)

        def gradient(theta: np.ndarray) -> np.ndarray:
            g = objective.gradient(theta)
            g *= n
            g += quad(theta)
            return g

        result = davis_yin(gradient, x0, step, iterations, l1=l1, box=kappa)
    else:
        result = stochastic_davis_yin(
            _sample_gradient(M, yy, loss_obj, n, quad),
            n,
            x0,
            step,
            iterations,
            l1=l1,
            box=kappa,
            rng=generator,
        )
    weights = result.theta
    if plan.inexact and plan.sigma_tilde > 0.0:
        weights = weights + generator.normal(0.0, plan.sigma_tilde, size=d)
    return QOPRelease(
        weights=weights,
        plan=plan,
        certificate=cert,
        iterations=iterations,
        seconds=time.perf_counter() - start,
        n_clipped=clipped,
        seeded=seeded,
        solver=solver,
    )
