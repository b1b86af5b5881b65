"""Calibration: choose (sigma, mu, eta, N, u) from a target (epsilon, delta) and public constants.

Two methods:

- ``corollary413``: Corollary 4.13 of Watkins & Arora (2026) exactly as stated
  (0 < epsilon <= 1), certified by Theorem 4.1.
- ``tight``: numerical optimisation of the Theorem 4.7 bound over (mu, sigma, N and
  the split of delta between truncation and divergence) subject to the Theorem C.13
  certificate, with the exact chi-tail truncation mass, holding at the target.

Both return a :class:`Plan` whose certificate is recomputed from the plan's public
constants by the certificate functions; a plan that does not certify the target is
never returned.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from objpert.certify import theorem41, theorem_c13, utility
from objpert.certify.certificate import Certificate
from objpert.certify.constants import ProblemConstants, check_scale, problem
from objpert.certify.sequences import rho_power
from objpert.errors import (
    ParameterError,
    PrivacyError,
    UnreachableTargetError,
    check_choice,
    check_int,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_unit,
    numeric_guard,
    renamed_keyword,
)
from objpert.losses import get_loss, require_bounded_gradient
from objpert.special import chi_radius, log_over, q1, square

METHODS = ("tight", "corollary413")
DEFAULT_MAX_ITERATIONS = 100_000
_SAFETY = 1.0 - 1e-9  # tight plans aim at delta (1 - 1e-9): room for floating-point rounding


@dataclass(frozen=True)
class Plan:
    """Everything a release needs, chosen from public constants before touching data."""

    method: str
    loss: str
    n: int
    d: int
    zeta: float
    epsilon: float
    delta: float
    sigma: float
    mu: float
    eta: float
    iterations: int
    u: float
    radius: float
    radius_outer: float
    truncation: str
    delta_truncation: float
    delta_divergence: float
    comparator_radius: float
    delta_sample: float
    utility_bound: float  # Theorem 4.7 at the plan's values, comparators of norm <= W
    theorem410_bound: float  # d sigma^2/(2 mu) + E_opt(N)
    certificate: Certificate
    objective: str = "population"  # what the tight calibration minimised

    @property
    def constants(self) -> ProblemConstants:
        """The constants stored in the plan's certificate (see :meth:`rebuilt_constants`)."""
        return ProblemConstants.from_dict(self.certificate.constants)

    def rebuilt_constants(self) -> ProblemConstants:
        """The problem constants re-derived from the loss registry and the plan's public
        inputs (loss name and parameters, n, d, zeta, mu, eta) by :func:`problem`."""
        params = dict(tuple(p) for p in self.certificate.constants.get("loss_params", ()))
        return problem(
            self.loss, n=self.n, d=self.d, zeta=self.zeta, mu=self.mu, eta=self.eta, **params
        )

    def recertify(self) -> Certificate:
        """Recompute the certificate from the plan's public inputs, with the constants
        re-derived from the loss (:meth:`rebuilt_constants`), never the stored ones."""
        return certify_plan(
            self.rebuilt_constants(),
            self.sigma,
            self.iterations,
            self.epsilon,
            self.certificate.form,
            self.u,
            self.radius,
            self.radius_outer,
            self.truncation,
        )

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "certificate"}
        out["certificate"] = self.certificate.to_dict()
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


# ---------------------------------------------------------------- re-derivation

_REDERIVE_RTOL = 1e-12  # stored and re-derived constants may differ by rounding only


def _mismatch(what: str, stored: Any, derived: Any) -> PrivacyError:
    return PrivacyError(
        f"the plan's {what} = {stored!r} is not the value re-derived from the loss and the "
        f"plan's public inputs ({derived!r}); nothing was released"
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int):
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        return math.isclose(a, b, rel_tol=_REDERIVE_RTOL, abs_tol=0.0)
    return a == b


def rederive_plan(plan: Plan) -> Certificate:
    """Re-derive a plan's constants and certificate; refuse (:class:`PrivacyError`) any
    mismatch. Called before every release and at every load of a model file.

    The problem constants are rebuilt by :func:`~objpert.certify.constants.problem` (the
    constructor that calibrated the plan, which enforces 0 < eta <= 1/L and eta mu < 1 of
    Section 3.2) from the loss registry and the plan's public inputs (loss name and
    parameters, n, d, zeta, mu, eta); L1, L2, L3 come from the registered loss, never from
    the plan. Every constant the plan carries must equal the re-derived one, sigma, N and
    the truncation must be those of its certificate, and the certificate recomputed from
    the re-derived constants (Theorem 4.1 or C.13) must certify the plan's target and
    agree with the stored one. Returns the recomputed certificate.
    """
    if not isinstance(plan, Plan):
        raise PrivacyError(f"expected a Plan (objpert.certify.calibrate); got {type(plan)!r}")
    try:
        _check_fields(plan)
    except (ValueError, TypeError) as exc:
        raise PrivacyError(f"the plan is malformed: {exc}") from None
    try:
        derived = plan.rebuilt_constants()
        stored = plan.constants
    except (ValueError, TypeError, KeyError) as exc:
        raise PrivacyError(f"the plan's constants cannot be re-derived: {exc}") from None
    for name in ("loss", "L1", "L2", "L3", "n", "d", "zeta", "mu", "eta", "loss_params"):
        if not _same(getattr(stored, name), getattr(derived, name)):
            raise _mismatch(f"constant {name}", getattr(stored, name), getattr(derived, name))
    cert0 = plan.certificate
    for name, value, want in (
        ("method", plan.method, plan.method if plan.method in METHODS else METHODS),
        ("sigma", plan.sigma, cert0.sigma),
        ("iterations", plan.iterations, cert0.iterations),
        ("truncation", plan.truncation, cert0.truncation),
        ("epsilon", plan.epsilon, cert0.epsilon),
    ):
        if not _same(value, want):
            raise _mismatch(name, value, want)
    try:
        cert = plan.recertify()
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise PrivacyError(f"the plan cannot be certified: {exc}") from None
    if not cert.certified:
        raise PrivacyError(f"the plan does not certify: {'; '.join(cert.reasons)}")
    if cert.delta > plan.delta:
        raise PrivacyError(
            f"the plan certifies delta = {cert.delta:.3g} > its target {plan.delta:.3g}"
        )
    for key in ("epsilon", "delta", "truncation_mass", "divergence_term", "iterations"):
        if not _same(getattr(cert0, key), getattr(cert, key)):
            raise _mismatch(f"certificate's {key}", getattr(cert0, key), getattr(cert, key))
    _check_derived(plan, cert)
    return cert


#: The plan's numeric fields and the range each must lie in (checked before anything is
#: computed from them: a string, a bool, NaN or 5.0 where a probability belongs is refused).
_FIELD_CHECKS: tuple[tuple[str, Callable[[str, Any], Any]], ...] = (
    ("n", lambda k, v: check_int(k, v, 2)),
    ("d", lambda k, v: check_int(k, v, 1)),
    ("iterations", lambda k, v: check_int(k, v, 1)),
    ("zeta", check_positive),
    ("epsilon", check_positive),
    ("delta", check_open_unit),
    ("sigma", check_positive),
    ("mu", check_positive),
    ("eta", check_positive),
    ("u", check_nonnegative),
    ("radius", check_positive),
    ("radius_outer", check_positive),
    ("delta_truncation", check_unit),
    ("delta_divergence", check_unit),
    ("comparator_radius", check_positive),
    ("delta_sample", check_open_unit),
    ("utility_bound", lambda k, v: check_nonnegative(k, v, allow_inf=True)),
    ("theorem410_bound", lambda k, v: check_nonnegative(k, v, allow_inf=True)),
)


def _check_fields(plan: Plan) -> None:
    """Every numeric field of the plan a number in its range, its names known strings."""
    for name, check in _FIELD_CHECKS:
        check(f"the plan's {name}", getattr(plan, name))
    for name, allowed in (("truncation", ("paper", "exact")), ("objective", OBJECTIVES)):
        check_choice(f"the plan's {name}", getattr(plan, name), allowed)
    if not isinstance(plan.certificate, Certificate):
        raise ParameterError("the plan's certificate is not a Certificate")


def _check_derived(plan: Plan, cert: Certificate) -> None:
    """The plan's derived fields equal those recomputed from its public inputs: the split
    of delta (the certificate's truncation mass and divergence term) and the utility bounds
    (Theorems 4.7 and 4.10)."""
    pc = plan.rebuilt_constants()
    derived = {
        "delta_truncation": cert.truncation_mass,
        "delta_divergence": cert.divergence_term,
        "utility_bound": float(
            utility.theorem_47(
                pc, plan.sigma, plan.iterations, plan.comparator_radius, plan.delta_sample
            )
        ),
        "theorem410_bound": float(utility.theorem_410(pc, plan.sigma, plan.iterations)),
    }
    for name, want in derived.items():
        got = getattr(plan, name)
        if not (got == want or math.isclose(got, want, rel_tol=_DERIVED_RTOL, abs_tol=0.0)):
            raise _mismatch(name, got, want)


_DERIVED_RTOL = 1e-9  # derived fields may differ from the recomputed ones by rounding only


def certify_plan(
    pc: ProblemConstants,
    sigma: float,
    N: int,
    epsilon: float,
    form: str,
    u: float,
    r: float,
    r_outer: float,
    truncation: str,
) -> Certificate:
    if form == "theorem41":
        return theorem41.certify(pc, sigma, u, N, epsilon, truncation=truncation)
    return theorem_c13.certify(pc, sigma, N, epsilon, r=r, r_outer=r_outer, truncation=truncation)


def _check_targets(epsilon, delta, comparator_norm, delta_sample):
    return (
        check_positive("epsilon", epsilon),
        check_open_unit("delta", delta),
        check_positive("comparator_norm", comparator_norm),
        check_open_unit("delta_sample", delta_sample),
    )


def _finish(method, pc, sigma, N, epsilon, delta, cert, comparator_norm, delta_sample) -> Plan:
    if not (cert.certified and cert.delta <= delta):
        raise UnreachableTargetError(  # a bug guard: never hand out an uncertified plan
            f"internal error: the {method} plan does not certify (epsilon={epsilon}, "
            f"delta={delta}): {cert.reasons or cert.delta}"
        )
    d = cert.details
    return Plan(
        method=method,
        loss=pc.loss,
        n=pc.n,
        d=pc.d,
        zeta=pc.zeta,
        epsilon=epsilon,
        delta=delta,
        sigma=sigma,
        mu=pc.mu,
        eta=pc.eta,
        iterations=int(N),
        u=float(d["u"]),
        radius=float(d.get("radius", sigma * (math.sqrt(pc.d_star) + d["u"]))),
        radius_outer=float(d.get("radius_outer", theorem41.radii(pc, sigma, d["u"])[1])),
        truncation=cert.truncation,
        delta_truncation=cert.truncation_mass,
        delta_divergence=cert.divergence_term,
        comparator_radius=comparator_norm,
        delta_sample=delta_sample,
        utility_bound=float(utility.theorem_47(pc, sigma, N, comparator_norm, delta_sample)),
        theorem410_bound=float(utility.theorem_410(pc, sigma, N)),
        certificate=cert,
    )


# ---------------------------------------------------------------- Corollary 4.13


def corollary_413_c_n(pc: ProblemConstants, sigma: float, N) -> np.ndarray:
    """c_N of Corollary 4.13: (G/s) rho^(N/2) + G^2/(2 s^2)(2 rho^(N/2) + rho^N)
    + min{1, MG/L} (e eta mu / 2) N rho^(N/2)."""
    N = np.asarray(N, dtype=float)
    half = rho_power(pc, N / 2.0)
    g_s = pc.G / sigma
    return (
        g_s * half
        + 0.5 * g_s**2 * (2.0 * half + half * half)
        + pc.min_mg_l * (math.e * pc.eta * pc.mu / 2.0) * N * half
    )


@numeric_guard
@renamed_keyword("radius", "comparator_norm")
def corollary_413(
    loss: str,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
    **loss_params: float,
) -> Plan:
    """Corollary 4.13 exactly as stated: u = sqrt(2 log(2/delta)), sigma = 4 G u / epsilon,
    mu = max{sqrt(2A)/W, L2 zeta^2 / (n (e^(epsilon/4) - 1))}, eta = 1/L, and the smallest N
    satisfying eq. (7) and c_N <= epsilon / 4. Requires 0 < epsilon <= 1."""
    epsilon, delta, comparator_norm, delta_sample = _check_targets(
        epsilon, delta, comparator_norm, delta_sample
    )
    if epsilon > 1:
        raise ParameterError(
            f"epsilon must be in (0, 1] for Corollary 4.13; got {epsilon!r} "
            "(use method='tight' for larger epsilon)"
        )
    loss_obj = require_bounded_gradient(get_loss(loss, **loss_params), "Corollary 4.13")
    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    zeta = check_positive("zeta", zeta)
    check_scale(loss_obj, n, zeta)
    l_ell = loss_obj.L1 * zeta
    G = 2.0 * l_ell / n
    u = math.sqrt(2.0 * log_over(2.0, delta))
    sigma = 4.0 * G * u / epsilon
    mu_priv = loss_obj.L2 * zeta**2 / (n * math.expm1(epsilon / 4.0))
    A = d * sigma**2 + 16.0 * l_ell**2 * (32.0 + log_over(1.0, delta_sample)) / n
    mu_util = math.sqrt(2.0 * A) / comparator_norm
    pc = problem(loss_obj, n=n, d=d, zeta=zeta, mu=max(mu_util, mu_priv))
    start = theorem41.threshold_iterations(pc, sigma, u)
    if not math.isfinite(start):
        raise UnreachableTargetError(
            f"Corollary 4.13 has no iteration count at (epsilon={epsilon:g}, delta={delta:g}): "
            "the threshold of eq. (7) is beyond the float64 range"
        )
    N = start
    while True:  # c_N decreases past the threshold (Section 4.1); scan in blocks
        block = np.arange(N, N + 4096, dtype=float)
        ok = np.nonzero(corollary_413_c_n(pc, sigma, block) <= epsilon / 4.0)[0]
        if ok.size:
            N = int(block[ok[0]])
            break
        N += 4096
    cert = theorem41.certify(pc, sigma, u, N, epsilon)
    return _finish(
        "corollary413", pc, sigma, N, epsilon, delta, cert, comparator_norm, delta_sample
    )


def corollary_413_bound(plan: Plan) -> float:
    """The utility bound stated in Corollary 4.13: W sqrt(2A) + mu_priv W^2/2 + 2 E_opt(N)."""
    pc = plan.constants
    W = plan.comparator_radius
    A = (
        pc.d * square(plan.sigma)
        + 16.0 * pc.L_ell**2 * (32 + log_over(1.0, plan.delta_sample)) / pc.n
    )
    mu_priv = pc.L2 * pc.zeta**2 / (pc.n * math.expm1(plan.epsilon / 4.0))
    extra = 0.0 if math.sqrt(2 * A) / W >= mu_priv else mu_priv * square(W) / 2
    return W * math.sqrt(2 * A) + extra + 2 * float(utility.e_opt(pc, plan.sigma, plan.iterations))


# ---------------------------------------------------------------- tight


_SPLITS = np.geomspace(1e-4, 0.9, 28)  # candidate truncation shares of delta
_SIGMA_GRID = np.geomspace(1e-2, 1e7, 226)  # sigma / G candidates (10 per decade)


def _passes(pc, epsilon, delta, N, sigma, share, rfac):
    """Vectorised: does C.13 with exact truncation mass share*delta certify at sigma?

    ``rfac = chi_radius(share * delta, d_star)``, so r = sigma * rfac has that mass.
    """
    r = sigma * rfac
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    with np.errstate(invalid="ignore", over="ignore"):
        s_n = theorem_c13.c13_terms(pc, sigma, r, r_outer, N).s_n
        slack = epsilon - s_n
        div = 2.0 * pc.G / sigma * q1(np.where(slack > 0, sigma / pc.G * slack, 0.0))
    return (slack >= 0) & (div <= (1.0 - share) * delta * _SAFETY)


def _best_sigma(pc: ProblemConstants, epsilon: float, delta: float, N: int):
    """Smallest certifying sigma at N over the truncation shares: (sigma, share) or (inf, nan)."""
    shares = _SPLITS[:, None]
    rfac = chi_radius(shares * delta, pc.d_star)
    grid = pc.G * _SIGMA_GRID[None, :]
    ok = _passes(pc, epsilon, delta, N, grid, shares, rfac)
    has = ok.any(axis=1)
    if not has.any():
        return math.inf, math.nan
    first = np.argmax(ok, axis=1)
    rows = np.nonzero(has)[0]
    hi = grid[0, first[rows]]
    lo = np.where(first[rows] > 0, grid[0, np.maximum(first[rows] - 1, 0)], hi * 1e-3)
    sh, rf = _SPLITS[rows], rfac[rows, 0]
    for _ in range(45):  # bisection in log sigma, all shares at once
        mid = np.sqrt(lo * hi)
        good = _passes(pc, epsilon, delta, N, mid, sh, rf)
        hi = np.where(good, mid, hi)
        lo = np.where(good, lo, mid)
    k = int(np.argmin(hi))
    return float(hi[k]), float(sh[k])


OBJECTIVES = ("population", "empirical")


def _bound(pc, sigma, N, comparator_norm, delta_sample, objective="population") -> float:
    """The bound the tight calibration minimises.

    ``population``: Theorem 4.7 (unregularised population excess risk against comparators of
    norm <= W). ``empirical``: the unregularised *empirical* excess risk against the same
    comparators, F_0(w_N) - F_0(w) <= [F(w_N) - F(w*_S)] + (mu/2) W^2 <= Theorem 4.10 + mu W^2/2,
    free of the worst-case uniform-convergence term that drives mu up for small n.
    """
    if not math.isfinite(sigma):
        return math.inf
    if objective == "empirical":
        return float(utility.theorem_410(pc, sigma, N)) + 0.5 * pc.mu * comparator_norm**2
    return float(utility.theorem_47(pc, sigma, N, comparator_norm, delta_sample))


@numeric_guard
@renamed_keyword("radius", "comparator_norm")
def tight(
    loss: str,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    rtol: float = 0.01,
    objective: str = "population",
    mu: float | None = None,
    **loss_params: float,
) -> Plan:
    """Minimise the Theorem 4.7 bound subject to the Theorem C.13 certificate at the target.

    ``objective="empirical"`` minimises the empirical counterpart instead (see ``_bound``):
    for accuracy rather than for the worst-case population bound. A given ``mu`` (a public
    hyperparameter) is kept, and only sigma, the split and N are optimised.

    Over mu (a log grid refined by golden-section search), the truncation share of
    delta (exact chi tail) and sigma (bisection), at eta = 1/L and the paper's outer
    radius r' = r + 2LG/mu. The bounds only improve with N, so N is the smallest count
    whose Theorem 4.10 bound (d sigma^2/(2 mu) + E_opt, at the optimised sigma) is within
    ``rtol`` of its value at ``max_iterations``: a public compute budget, never a
    data-dependent stop. The Theorem 4.7 bound is then within ``rtol`` of its optimum too.
    """
    epsilon, delta, comparator_norm, delta_sample = _check_targets(
        epsilon, delta, comparator_norm, delta_sample
    )
    max_iterations = check_int("max_iterations", max_iterations, 1)
    rtol = check_positive("rtol", rtol)
    if objective not in OBJECTIVES:
        raise ParameterError(f"objective must be one of {OBJECTIVES}; got {objective!r}")
    loss_obj = require_bounded_gradient(get_loss(loss, **loss_params), "the tight calibration")
    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    zeta = check_positive("zeta", zeta)
    check_scale(loss_obj, n, zeta)

    def pc_for(mu: float) -> ProblemConstants:
        return problem(loss_obj, n=n, d=d, zeta=zeta, mu=mu)

    def bound_at(mu: float, N: int) -> float:
        pc = pc_for(mu)
        sigma, _ = _best_sigma(pc, epsilon, delta, N)
        return _bound(pc, sigma, N, comparator_norm, delta_sample, objective)

    def perturbation(mu: float, N: int) -> float:
        pc = pc_for(mu)
        sigma, _ = _best_sigma(pc, epsilon, delta, N)
        return float(utility.theorem_410(pc, sigma, N)) if math.isfinite(sigma) else math.inf

    if mu is not None:
        best_mu = check_positive("mu", mu)
        if not math.isfinite(bound_at(best_mu, max_iterations)):
            raise UnreachableTargetError(
                f"mu = {best_mu:g} cannot certify (epsilon={epsilon:g}, delta={delta:g}) within "
                f"{max_iterations} iterations; allow more iterations, a larger mu or epsilon"
            )
    else:
        best_mu = _search_mu(
            bound_at,
            loss_obj,
            n,
            d,
            zeta,
            epsilon,
            delta,
            comparator_norm,
            delta_sample,
            max_iterations,
        )
    return _tight_iterations(
        pc_for,
        perturbation,
        best_mu,
        epsilon,
        delta,
        comparator_norm,
        delta_sample,
        max_iterations,
        rtol,
        objective,
    )


def _search_mu(
    bound_at, loss_obj, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iterations
) -> float:
    """Steps 1-2 of :func:`tight`: the mu minimising ``bound_at(mu, max_iterations)``."""
    # 1. mu on a log grid at the full budget, plus Corollary 4.13's mu when it applies
    scale = loss_obj.L2 * zeta**2
    mus = list(np.geomspace(scale * 1e-8, scale * 1e2, 41))
    if epsilon <= 1:
        with contextlib.suppress(ParameterError):
            mus.append(
                corollary_413(
                    loss_obj,
                    n=n,
                    d=d,
                    zeta=zeta,
                    epsilon=epsilon,
                    delta=delta,
                    comparator_norm=comparator_norm,
                    delta_sample=delta_sample,
                ).mu
            )
    mus.sort()
    values = [bound_at(m, max_iterations) for m in mus]
    k = int(np.argmin(values))
    if not math.isfinite(values[k]):
        raise UnreachableTargetError(
            f"no plan with at most {max_iterations} iterations certifies (epsilon={epsilon:g}, "
            f"delta={delta:g}); allow more iterations or a larger epsilon"
        )
    # 2. golden-section refinement of log mu between the grid neighbours
    a = math.log(mus[max(k - 1, 0)])
    b = math.log(mus[min(k + 1, len(mus) - 1)])
    best_mu, best_val = mus[k], values[k]
    phi = (math.sqrt(5) - 1) / 2
    x1, x2 = b - phi * (b - a), a + phi * (b - a)
    f1, f2 = bound_at(math.exp(x1), max_iterations), bound_at(math.exp(x2), max_iterations)
    for _ in range(30):
        if f1 <= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - phi * (b - a)
            f1 = bound_at(math.exp(x1), max_iterations)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + phi * (b - a)
            f2 = bound_at(math.exp(x2), max_iterations)
    for x, f in ((x1, f1), (x2, f2)):
        if f < best_val:
            best_mu, best_val = math.exp(x), f
    return best_mu


def _tight_iterations(
    pc_for,
    perturbation,
    mu,
    epsilon,
    delta,
    comparator_norm,
    delta_sample,
    max_iterations,
    rtol,
    objective,
) -> Plan:
    """Step 3 of :func:`tight`: the smallest N whose Theorem 4.10 bound (at its optimised
    sigma) is within rtol of the full-budget one, and the plan at that N."""
    goal = perturbation(mu, max_iterations) * (1.0 + rtol)
    lo, hi = 0, max_iterations  # perturbation(hi) <= goal; find the smallest such N
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
    cert = theorem_c13.certify(pc, sigma, hi, epsilon, r=r, r_outer=r_outer, truncation="exact")
    plan = _finish("tight", pc, sigma, hi, epsilon, delta, cert, comparator_norm, delta_sample)
    return replace(plan, objective=objective)


def calibrate(loss: str, *, method: str = "tight", **kwargs: Any) -> Plan:
    """Dispatch to :func:`tight` or :func:`corollary_413` (an unknown keyword is a
    ParameterError)."""
    try:
        return _calibrate(loss, method, **kwargs)
    except TypeError as exc:
        raise ParameterError(f"calibrate: {exc}") from None


def _calibrate(loss: str, method: str, **kwargs: Any) -> Plan:
    if method == "tight":
        return tight(loss, **kwargs)
    if method == "corollary413":
        kwargs.pop("max_iterations", None)
        kwargs.pop("rtol", None)
        return corollary_413(loss, **kwargs)
    raise ParameterError(f"method must be one of {METHODS}; got {method!r}")


__all__ = [
    "Plan",
    "calibrate",
    "corollary_413",
    "corollary_413_bound",
    "rederive_plan",
    "tight",
]
