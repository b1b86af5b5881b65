"""LOP-Clip: Gaussian LOP with per-sample gradients clipped to norm c.

Redberg, Koskela & Wang (2023): the clipped objective is again a convex GLM with
per-sample gradients of norm <= c and rank-one per-sample Hessians of norm <= L2 zeta^2,
so both accountants of :mod:`.lop` (the exact-minimiser profile of Redberg et al. 2023,
Section 3, and Kifer et al. 2012, Theorem 2) hold with c in place of L1 zeta: replace-one
sensitivity 2 c (:func:`~objpert.certify.replace_one_sensitivity`), and the
loss need not have a bounded l'.
"""

from __future__ import annotations

from objpert._losses import Loss
from objpert._validation import check_positive, numeric_guard, optional, validated
from objpert.accounting._certificate import ReleaseCertificate
from objpert.mechanisms._certificates.lop import SOURCES, certify_objective, objective_plan
from objpert.mechanisms._certificates.plan import (
    DEFAULT_MAX_ITER,
    SOLVER_RULES,
    PeerInputs,
    PeerMethod,
    PeerPlan,
    register_method,
)

__all__ = ["plan_lop_clip"]


@numeric_guard
@validated(clip=check_positive, mu=optional(check_positive), **SOLVER_RULES)
def plan_lop_clip(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    clip: float,
    mu: float | None = None,
    tolerance: float | None = None,
    max_iter: int = DEFAULT_MAX_ITER,
    loss_params: dict | None = None,
    accountant: str = "tightest",
) -> PeerPlan:
    """LOP with per-sample gradient clipping at level c (Redberg, Koskela & Wang 2023).

    Each per-sample gradient l'(<x_i,w>, y_i) x_i is clipped to norm <= c, i.e. l' to
    [-c/||x_i||, c/||x_i||]: the objective whose gradient is the clipped one is again a
    convex GLM (a nondecreasing l' stays nondecreasing when clipped) with per-sample
    gradients of norm <= c and rank-one Hessians of norm <= L2 zeta^2. Both accountants of
    :func:`~.lop.plan_lop` then hold with c in place of L1 zeta (``accountant="profile"``,
    the exact privacy profile; ``"kifer"``: mu_min = 2 L2 zeta^2/(n epsilon),
    sigma = 2 c sqrt(8 log(2/delta) + 4 epsilon)/(n epsilon) at the replace-one
    sensitivity 2 c; ``"tightest"``, the default, the smaller sigma of the two). The loss
    need not have a
    bounded l' (the squared loss is accepted). The released point is the exact minimiser of
    the *clipped* objective (a different estimator from LOP's unless nothing is clipped).
    """
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params, bounded=False)
    return objective_plan("lop_clip", inputs, clip, mu, tolerance, max_iter, accountant, clip=clip)


def _certify(plan: PeerPlan, loss: Loss) -> ReleaseCertificate:
    return certify_objective(
        plan,
        loss,
        plan.clip,
        "Redberg et al. 2023 (clipped LOP); " + SOURCES.get(plan.accountant, "?"),
    )


register_method(PeerMethod("lop_clip", _certify, bounded_gradient=False))
