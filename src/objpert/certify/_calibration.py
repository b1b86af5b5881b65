"""Calibration: choose (sigma, mu, eta, N, u) from a target (epsilon, delta) and public constants.

Two methods:

- ``corollary413``: Corollary 4.13 of Watkins & Arora (2026) exactly as stated
  (0 < epsilon <= 1), certified by Theorem 4.1.
- ``tight``: numerical optimisation of the Theorem 4.7 bound over (mu, sigma, N and
  the split of delta between truncation and divergence) subject to the Theorem C.13
  certificate, with the exact chi-tail truncation mass, holding at the target.

Both return a :class:`WatkinsAroraPlan` whose certificate is recomputed from the plan's public
constants by the certificate functions; a plan that does not certify the target is
never returned.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from objpert._special import chi_radius
from objpert._validation import numeric_guard
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._corollary413 import _corollary_413, corollary_413_bound
from objpert.certify._knee import (
    KNEE_TOLERANCE,
    OPTION_RULES,
    TARGET_RULES,
    _inputs,
    _knee_cached,
    door,
)
from objpert.certify._plan import (
    CALIBRATIONS,
    OBJECTIVES,
    WatkinsAroraPlan,
    _finish,
    certify_plan,
    rederive_plan,
)
from objpert.certify._sigma_search import (
    DEFAULT_MAX_ITER,
    _best_sigma,
)
from objpert.exceptions import ParameterError

# ---------------------------------------------------------------- tight


def _tight(
    loss: str,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
    max_iter: int = DEFAULT_MAX_ITER,
    rtol: float = 0.01,
    objective: str = "population",
    mu: float | None = None,
    knee_tolerance: float = KNEE_TOLERANCE,
    **loss_params: float,
) -> WatkinsAroraPlan:
    """Minimise the Theorem 4.7 bound subject to the Theorem C.13 certificate at the target.

    ``objective="empirical"`` minimises the empirical counterpart instead (see ``_bound``):
    for accuracy rather than for the worst-case population bound. A given ``mu`` (a public
    hyperparameter) is kept, and only sigma, the split and N are optimised.

    Over mu (a log grid refined by golden-section search), the truncation share of
    delta (exact chi tail) and sigma (bisection), at eta = 1/L and the paper's outer
    radius r' = r + 2LG/mu. Let B*(N) be the minimised bound with at most N steps (mu
    re-chosen at each N unless given). Under Theorem C.13 B*(N) keeps falling with N: the
    smallest certifying sigma shrinks and, with mu free, a smaller mu becomes certifiable
    (about N L / mu steps are needed), so the regularisation term mu W^2/2 halves with
    each doubling. The step budget is the knee of B*: the smallest candidate
    N_k = round(max_iter 2^(-j/4)) >= ``KNEE_FLOOR`` (1,000; j = 0, 1, ...) with
    B*(N_k) <= (1 + ``knee_tolerance``) B*(max_iter) (relative; 0.05% by default), found by
    bisection as B* does not increase with N; N_k = max_iter when no smaller candidate
    is within it (whether a doubling of max_iter would still lower B* by more than the
    tolerance: :func:`objpert.certify._budget.ceiling`).
    The plan is calibrated at N_k: mu = the minimiser of B(mu, N_k), and N the smallest
    count whose Theorem 4.10 bound (d sigma^2/(2 mu) + E_opt, at the optimised sigma) is
    within ``rtol`` of its value at N_k. All of it is a public compute budget, never a
    data-dependent stop
    (:func:`knee` gives N_k and the bounds).
    """
    args = _inputs(
        loss, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iter,
        objective, mu, knee_tolerance, loss_params,
    )  # fmt: skip
    found, curve = _knee_cached(*args)
    epsilon, delta, comparator_norm, delta_sample = args[4:8]
    return _tight_iterations(
        curve.pc,
        curve.perturbation,
        found.mu,
        epsilon,
        delta,
        comparator_norm,
        delta_sample,
        found.budget,
        rtol,
        objective,
    )


def _tight_iterations(
    pc_for,
    perturbation,
    mu,
    epsilon,
    delta,
    comparator_norm,
    delta_sample,
    max_iter,
    rtol,
    objective,
) -> WatkinsAroraPlan:
    """Step 3 of :func:`tight`: the smallest N whose Theorem 4.10 bound (at its optimised
    sigma) is within rtol of the full-budget one, and the plan at that N."""
    goal = perturbation(mu, max_iter) * (1.0 + rtol)
    lo, hi = 0, max_iter  # perturbation(hi) <= goal; find the smallest such N
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if perturbation(mu, mid) <= goal:
            hi = mid
        else:
            lo = mid
    pc = pc_for(mu)
    sigma, share = _best_sigma(pc, epsilon, delta, hi)
    r = sigma * float(chi_radius(share * delta, pc.d_star))
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    cert = theorem_c13._certify(pc, sigma, hi, epsilon, r=r, r_outer=r_outer, truncation="exact")
    plan = _finish("tight", pc, sigma, hi, epsilon, delta, cert, comparator_norm, delta_sample)
    return replace(plan, objective=objective)


#: The tight calibration (its public door: the target, the constants and the options checked).
tight = numeric_guard(door(_tight, "tight", TARGET_RULES | OPTION_RULES))
#: The tight calibration of a plan whose target and constants ``objpert.plan`` checked (a
#: :class:`~objpert.accounting.Target`, :class:`~objpert.accounting.PublicConstants`): its
#: options are checked here.
planned_tight = numeric_guard(door(_tight, "tight", OPTION_RULES))
#: Corollary 4.13 (its public door) and for a plan (see :data:`planned_tight`).
corollary_413 = numeric_guard(door(_corollary_413, "corollary_413", TARGET_RULES | OPTION_RULES))
planned_corollary_413 = numeric_guard(door(_corollary_413, "corollary_413", OPTION_RULES))


def calibrate(loss: str, *, calibration: str = "tight", **kwargs: Any) -> WatkinsAroraPlan:
    """Dispatch to :func:`tight` or :func:`corollary_413` (an unknown keyword is a
    ParameterError)."""
    try:
        return _calibrate(loss, calibration, **kwargs)
    except TypeError as exc:
        raise ParameterError(f"calibrate: {exc}") from None


def _calibrate(loss: str, calibration: str, **kwargs: Any) -> WatkinsAroraPlan:
    if calibration == "tight":
        return tight(loss, **kwargs)
    if calibration == "corollary413":
        kwargs.pop("max_iter", None)
        kwargs.pop("rtol", None)
        kwargs.pop("knee_tolerance", None)
        return corollary_413(loss, **kwargs)
    raise ParameterError(f"calibration must be one of {CALIBRATIONS}; got {calibration!r}")


__all__ = [
    "CALIBRATIONS",
    "OBJECTIVES",
    "WatkinsAroraPlan",
    "calibrate",
    "certify_plan",
    "corollary_413",
    "corollary_413_bound",
    "planned_corollary_413",
    "planned_tight",
    "rederive_plan",
    "tight",
]
