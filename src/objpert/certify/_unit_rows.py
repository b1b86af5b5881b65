"""Theorem C.13 of Watkins & Arora (2026) for neighbours that differ in up to k rows.

When the privacy unit is a person who contributes up to k rows, replacing one unit
replaces up to k rows: datasets S, S' of the same n rows that differ in a set K of at
most k indices. The proof of Theorem C.13 uses the neighbouring relation only through
four facts; each is re-derived here for |K| <= k (equation numbers are the paper's).

1. **Gradient sensitivity (Lemma B.5, Assumption 6).** The per-sample gradients agree
   outside K, so g(w) = grad F_S(w) - grad F_S'(w) = (1/n) sum_{i in K} [l'(<x_i, w>, y_i)
   x_i - l'(<x'_i, w>, y'_i) x'_i], and the triangle inequality with |l'| <= L1,
   ||x|| <= zeta gives ||g(w)|| <= 2 k L1 zeta / n =: G_k = k G. Every use of
   Assumption 6 (Lemma A.7's trajectory separation, Corollary C.2's ||g(y)|| <= G, the
   path-lifting radius of (47), and the G of Theorem C.4 (34)) holds with G_k.
2. **Projection factor (Proposition C.3, eqs. 30-33; Lemma C.12, eqs. 44-46).**
   |<Z, g(Y)>| <= (L1 / n) sum_{i in K} (|<Z, x_i>| + |<Z, x'_i>|) = G_k sigma T_k with
   T_k = (1 / 2k) sum_{i in K} (|U_i| + |U'_i|) / zeta, U_i = <Z, x_i> / sigma: an
   average of at most 2k folded Gaussians of scales ||x|| / zeta <= 1. Lemma C.12's proof
   uses only the convexity of (x - t)_+ over the average and one marginal at a time, so
   E[(1 - e^{-lambda (T_k - t)})_+] <= 2 lambda Q1(t) (45) holds for any such average;
   with lambda = G_k / sigma the divergence term of (50) is (2 G_k / sigma) Q1(t), and
   Term (A) is bounded by (G_k / sigma) T_k + G_k^2 / (2 sigma^2) (31).
3. **Log-determinant (Lemma C.6, eq. 37).** At the shared output w both Hessians are
   updates of the common H_0 = (1/n) sum_{i not in K} l''_i x_i x_i^T + mu I by |K|
   rank-one terms: H_S* = H_0 + sum_{j <= |K|} u_j u_j^T. Along the chain H_j = H_0 +
   sum_{i <= j} u_i u_i^T (each between H_0 and H_S*, so with spectrum in [mu, L]),
   item 2 of Lemma E.9 (60) gives -g_bar_N log(1 + u_j^T H_{j-1}^{-1} u_j) <=
   tr phi_N(H_j) - tr phi_N(H_{j-1}) <= 0 with u_j^T H_{j-1}^{-1} u_j <= ||u_j||^2 / mu
   <= Delta_H / (2 n mu); summing, tr phi_N(H_S*) - tr phi_N(H_0) lies in
   [-k g_bar_N log(1 + Delta_H / (2 n mu)), 0], and the same for S'. So tau^(0) of (41)
   becomes k g_bar_N log(1 + Delta_H / (2 n mu)).
4. **Feature span (eq. 2, Lemma B.6).** C = span{x_1..x_n, x'_i (i in K)} has dimension
   at most d_star,k = min(d, n + k); Lemma B.6 holds for it verbatim, and the truncation
   mass of Theorem C.13 is read at d_star,k.

Nothing else changes: mu, L, M and the trajectory scale R-bar = (r' + L1 zeta) / mu
(Lemma A.6, which bounds ||grad F_T(0)|| per dataset) are per-dataset constants, so
alpha-bar (47), Delta_xi and the finite-N correction of tau (48) and the Jacobian-error
bounds (Lemma B.4, eq. 39) are those of one row. Theorem C.13 for k rows is therefore
eqs. (47)-(50) with G -> k G, d_star -> min(d, n + k) and tau^(0) -> k tau^(0); the
paper's outer radius r' = r + 2 L G / mu becomes r + 2 L G_k / mu, Remark C.16's limit
is s_inf = (k G)^2 / (2 sigma^2) + k log(1 + Delta_H / (2 n mu)), and Theorem 4.1's proof
(which reads the relation only through G and Lemma C.6) holds with the same
substitutions. :class:`~objpert.certify._constants.ProblemConstants` with ``rows = k``
carries them, so every certificate function of :mod:`objpert.certify` evaluates the
k-row theorem unchanged.

:func:`unit_plan` calibrates a release to a target for k rows (the *direct route*);
:mod:`objpert.accounting._group` gives the other route, group privacy of the one-row
profile, and :func:`unit_routes` evaluates both on the same release.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from objpert._special import chi_radius
from objpert._validation import count, optional, validated
from objpert.accounting import _pld as pld
from objpert.accounting._group import crude_row_target, group_privacy
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._calibration import planned_tight
from objpert.certify._constants import problem
from objpert.certify._plan import WatkinsAroraPlan, _finish
from objpert.certify._sigma_search import _best_sigma, _bound, _golden
from objpert.exceptions import ParameterError, UnreachableTargetError

__all__ = [
    "group_route_certificate",
    "group_route_plan",
    "one_row_constants",
    "unit_plan",
    "unit_routes",
]

_MU_DECADES = 1.0  # the ridge is searched within this many decades of the row plan's
_MU_STEPS = 18  # golden-section steps of log mu


@validated(rows=count(1))
def unit_plan(
    loss: str,
    *,
    rows: int,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
    max_iter: int = 100_000,
    objective: str = "population",
    **loss_params: float,
) -> WatkinsAroraPlan:
    """A plan that certifies (epsilon, delta) for neighbours differing in up to ``rows``
    rows by Theorem C.13 for k rows (module docstring).

    The step budget N (and the ridge, unless ``mu`` is given, as a starting point) is the
    tight one-row calibration's at the classical group target (epsilon / k, delta /
    (k e^{(k-1) epsilon / k})) (:func:`objpert.accounting._group.crude_row_target`): a
    public choice. At that N the ridge is then refined by golden-section search of the
    calibration's bound over a decade either side, with the smallest certifying sigma of
    the k-row theorem at each (:func:`objpert.certify._sigma_search._best_sigma`).
    UnreachableTargetError when no sigma certifies.
    """
    row_eps, row_delta = crude_row_target(epsilon, delta, rows)
    start = planned_tight(  # the options checked here, the target by the caller's door
        loss, n=n, d=d, zeta=zeta, epsilon=row_eps, delta=row_delta, mu=mu,
        comparator_norm=comparator_norm, delta_sample=delta_sample, max_iter=max_iter,
        objective=objective, **loss_params,
    )  # fmt: skip
    if rows == 1:
        return start
    N = start.iterations

    def constants(m: float):
        return problem(loss, n=n, d=d, zeta=zeta, mu=m, rows=rows, **loss_params)

    def bound(log_mu: float) -> float:
        pc = constants(math.exp(log_mu))
        sigma = _best_sigma(pc, epsilon, delta, N)[0]
        return _bound(pc, sigma, N, comparator_norm, delta_sample, objective)

    if mu is None:
        x0 = math.log(start.mu)
        spread = _MU_DECADES * math.log(10.0)
        x, value = _golden(bound, x0 - spread, x0 + spread, _MU_STEPS)
        if not math.isfinite(value):
            raise UnreachableTargetError(
                f"no plan with {N} iterations certifies (epsilon={epsilon:g}, "
                f"delta={delta:g}) for {rows} rows per unit; allow a larger epsilon, "
                "fewer rows per unit or more rows"
            )
        mu = math.exp(x)
    pc = constants(mu)
    sigma, share = _best_sigma(pc, epsilon, delta, N)
    if not math.isfinite(sigma):
        raise UnreachableTargetError(
            f"no sigma certifies (epsilon={epsilon:g}, delta={delta:g}) for {rows} rows per "
            f"unit at mu = {mu:.4g} and {N} iterations"
        )
    r = sigma * float(chi_radius(share * delta, pc.d_star))
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    cert = theorem_c13._certify(pc, sigma, N, epsilon, r=r, r_outer=r_outer, truncation="exact")
    plan = _finish("tight", pc, sigma, N, epsilon, delta, cert, comparator_norm, delta_sample)
    return replace(plan, objective=objective)


def one_row_constants(plan: WatkinsAroraPlan) -> Any:
    """The plan's release read under replace-one neighbours (rows = 1): the constants of
    its one-row profile, which group privacy turns into a k-row one."""
    return replace(plan.rebuilt_constants(), rows=1)


def group_route_certificate(plan: WatkinsAroraPlan, epsilon: float | None = None) -> Any:
    """The release of ``plan`` certified for one row (Theorem C.13 at its sigma, N and
    inner radius, at ``epsilon``, default the plan's epsilon over its rows): the
    certificate whose whole profile group privacy turns into the unit's."""
    epsilon = plan.epsilon / plan.rows if epsilon is None else float(epsilon)
    return theorem_c13._certify(
        one_row_constants(plan), plan.sigma, plan.iterations, epsilon, r=plan.radius,
        truncation=plan.truncation,
    )  # fmt: skip


@validated(rows=optional(count(1)))
def unit_routes(
    plan: WatkinsAroraPlan, rows: int | None = None, epsilon: float | None = None
) -> dict[str, float]:
    """delta at ``epsilon`` (default: the plan's) for ``rows`` rows (default: the plan's
    own) by both routes on the same release: ``direct`` (Theorem C.13 for k rows at the
    plan's sigma, N and inner radius) and ``group`` (the chain bound on the release's
    one-row profile, :func:`objpert.accounting.group_privacy`)."""
    rows = plan.rows if rows is None else rows
    epsilon = plan.epsilon if epsilon is None else float(epsilon)
    if plan.rows not in (1, rows):
        raise ParameterError(f"a plan for {plan.rows} rows cannot be read for {rows} rows")
    pc_k = replace(plan.rebuilt_constants(), rows=rows)
    r_outer = plan.radius_outer
    if rows != plan.rows:  # the k-row theorem needs the wider path-lifting radius
        r_outer = plan.radius + 2.0 * pc_k.L * pc_k.G / pc_k.mu
    direct = theorem_c13._certify(
        pc_k, plan.sigma, plan.iterations, epsilon, r=plan.radius, r_outer=r_outer,
        truncation=plan.truncation,
    )  # fmt: skip
    one = group_route_certificate(plan, epsilon / rows)
    group = 1.0
    if one.certified:
        dist = pld.distribution(group_privacy(one.privacy_loss(), rows))
        group = pld._delta_for_epsilon(dist, epsilon)
    return {"direct": float(direct.delta), "group": float(group)}


@validated(rows=count(1))
def group_route_plan(
    plan_at: Any, rows: int, epsilon: float, delta: float, steps: int = 8
) -> tuple[WatkinsAroraPlan, float]:
    """The group route's calibration: a one-row plan ``plan_at(epsilon / k, delta_1)``
    whose group-privacy guarantee for k = ``rows`` rows at ``epsilon`` (the chain bound on
    its one-row profile) is at most ``delta``, with delta_1 as large as a bisection of
    log delta_1 over [classical target, delta] finds in ``steps`` steps; returns the plan
    and its k-row delta. The classical target (:func:`crude_row_target`) always
    qualifies: the chain bound is at most the classical one."""
    eps_1, lo = crude_row_target(epsilon, delta, rows)

    def k_row_delta(delta_1: float) -> tuple[WatkinsAroraPlan, float]:
        plan = plan_at(eps_1, delta_1)
        dist = pld.distribution(group_privacy(plan.privacy_loss(), rows))
        return plan, pld._delta_for_epsilon(dist, epsilon)

    best = k_row_delta(lo)
    if best[1] > delta:  # never: the chain bound's equal split is the classical bound
        raise UnreachableTargetError(f"the group route does not reach delta = {delta:g}")
    a, b = math.log(lo), math.log(delta)
    for _ in range(steps):
        mid = (a + b) / 2.0
        found = k_row_delta(math.exp(mid))
        if found[1] <= delta:
            best, a = found, mid
        else:
            b = mid
    return best
