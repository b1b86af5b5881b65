"""One multinomial (softmax) logistic release: approximate minima perturbation of the
softmax cross-entropy, certified by its exact-minimiser privacy profile.

The model is a weight matrix W in R^{d x K} (one column per class, intercept column
included in the d rows), trained on the mean form

    F(W; S) = (1/n) sum_i l(W; x_i, y_i) + (mu/2) ||W||_F^2 + <Z, W>,
    l(W; x, y) = log sum_k exp(<x, w_k>) - <x, w_y>,     ||x|| <= zeta,

Z ~ N(0, sigma^2 I_{dK}), n public, replace-one neighbours
(:mod:`objpert.certify._neighbours`). The constants are derived from the loss here:

* **gradient bound** ``sqrt(2) zeta``: grad_W l = x (p - e_y)^T with p = softmax(W^T x),
  so ||grad_W l||_F = ||x|| ||p - e_y|| and ||p - e_y||^2 = (1 - p_y)^2 + sum_{k != y}
  p_k^2 <= 2 (1 - p_y)^2 <= 2, approached when p concentrates on a wrong class (TF
  Privacy's ``multinomial_logistic.py`` takes the row bound zeta itself, which such a row
  exceeds); replace-one sensitivity G = 2 sqrt(2) zeta
  (:func:`~objpert.certify.replace_one_sensitivity`), 1/n of it in mean form.
* **Hessian** (diag(p) - p p^T) (x) x x^T: positive semi-definite, of rank at most K - 1
  (the vector of ones is in the kernel of diag(p) - p p^T), trace ||x||^2 (1 - ||p||^2)
  <= zeta^2 (1 - 1/K). The objective perturbation theorems for per-sample Hessians of
  rank <= r and eigenvalues <= lambda (Kifer, Smith & Thakurta 2012, Section 2; Iyengar
  et al. 2019, Theorem 1) bound the log-determinant ratio by r log(1 + lambda / Delta)
  (Delta the ridge of the sum form). Their argument, the identity det(A + H) / det(A) =
  prod_j (1 + nu_j) over the r eigenvalues nu_j of A^{-1/2} H A^{-1/2}, with the sum of
  the nu_j at most tr(H) / lambda_min(A) and the logarithm concave, gives with the trace
  the smaller bound used here:

      c0 = (K - 1) log(1 + zeta^2 / (K n mu))      (sum form: Delta = n mu).

  Both datasets' log-determinants lie in [log det A0, log det A0 + c0] for the shared
  rows' A0 >= n mu I, so the ratio's absolute log is at most c0.
* **Gaussian ratio** (Redberg, Koskela & Wang 2023, Section 3, for GLMs): at a released W
  the noise that produced it under S is b = -grad(J_S)(W) and under S' it is b + v with
  v = grad l(W; x, y) - grad l(W; x', y') of norm <= G. Every such v lies in the fixed
  subspace V = span{x, x'} (x) 1^perp of dimension m <= 2 (K - 1) (the columns of
  p - e_y sum to zero), so the Gaussian ratio (||v||^2 + 2 <b, v>) / (2 s^2) is at most
  t^2/2 + t R, t = G / s, R = ||P_V b|| / s ~ chi with m degrees of freedom (for a GLM,
  K = 2 with one weight vector, m = 2 gives the two-dimensional bound of
  :mod:`.kifer`). The privacy loss is at most c0 + t^2/2 + t R for every W, so the
  hockey-stick divergence (Balle, Barthe & Gaboardi 2018), E[(1 - exp(eps - loss))_+]
  under S, is at most

      delta(eps) = E[(1 - exp(eps - c0 - t^2/2 - t R))_+],   R ~ chi_m,       (*)

  :func:`chi_profile_delta`; the release map b -> W is a bijection (F is mu-strongly
  convex and smooth), as Redberg et al.'s change of variables needs. In mean form
  t = 2 sqrt(2) zeta / (n sigma).

The exact minimiser is never computed: as in AMP (Iyengar et al. 2019, Algorithm 1;
:mod:`.amp`) the solver stops at ||grad F(W)||_F <= gamma, within gamma / mu of the exact
minimiser (mu-strong convexity), and discrete Gaussian output noise on a grid
(:mod:`.discrete`) at sensitivity 2 gamma / mu (:func:`~objpert.certify._neighbours.two_radii`)
plus the grid's rounding, in d K coordinates, certifies the rest (Canonne, Kamath & Steinke
2020, Theorem 14 and Corollary 13); (eps1 + eps2, delta1 + delta2) by composition.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar

import numpy as np
from scipy import integrate, optimize, special

from objpert._validation import (
    check_computed,
    check_open_unit,
    check_positive,
    count,
    numeric_guard,
    optional,
    validated,
)
from objpert.accounting._bisection import smallest_passing
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._composition import basic, basic_profile
from objpert.accounting._conversions import cdp_delta
from objpert.accounting._plan import Plan
from objpert.certify._neighbours import REPLACE_ONE, replace_one_sensitivity, two_radii
from objpert.certify._plan import DEFAULT_COMPARATOR_NORM
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.mechanisms._certificates.amp import DEFAULT_OUTPUT_SHARE, _split
from objpert.mechanisms._certificates.discrete import GRID_BITS, grid_gaussian_sigma
from objpert.mechanisms._certificates.plan import (
    DEFAULT_MAX_ITER,
    DEFAULT_RELATIVE_TOLERANCE,
    MAX_NUDGES,
    at_least_two_rows,
    grid_details,
)
from objpert.mechanisms._certificates.rules import Rule, check_fields, target_delta
from objpert.mechanisms._certificates.rules import (
    grid_bits as grid_bits_rule,
)

__all__ = [
    "MULTINOMIAL",
    "MultinomialPlan",
    "certify_multinomial",
    "chi_profile_delta",
    "multinomial_profile",
    "multinomial_sigma",
    "plan_multinomial",
    "profile_dimension",
    "softmax_gradient_bound",
    "softmax_log_det",
]

#: The method name of the multinomial release (certificate ``form``, registry name).
MULTINOMIAL = "multinomial"
_NUDGE = 1.0 + 2.0**-40


def softmax_gradient_bound(zeta: float) -> float:
    """sqrt(2) zeta: the bound on ||grad_W l||_F = ||x|| ||softmax(W^T x) - e_y|| for rows
    of norm <= zeta (module docstring)."""
    return math.sqrt(2.0) * zeta


def softmax_log_det(n: int, zeta: float, mu: float, n_classes: int) -> float:
    """c0 = (K - 1) log(1 + zeta^2 / (K n mu)): the bound on the absolute log-determinant
    ratio of neighbouring softmax objectives (the rank-r argument of Kifer et al. 2012 and
    Iyengar et al. 2019, Theorem 1, at rank K - 1 with the trace bound zeta^2 (1 - 1/K) of
    the per-sample Hessian; module docstring)."""
    k = n_classes
    c0 = (k - 1) * math.log1p(zeta * zeta / (k * n * mu))
    return check_computed("the log-determinant bound c0", c0, f"mu = {mu:g} is too small")


def profile_dimension(d: int, n_classes: int) -> int:
    """m = min(d, 2) (K - 1): the dimension of the subspace span{x, x'} (x) 1^perp holding
    every replace-one gradient difference of the softmax loss."""
    return min(d, 2) * (n_classes - 1)


@numeric_guard
def chi_profile_delta(epsilon: float, ratio: float, log_det: float, dims: int) -> float:
    """delta(eps) = E[(1 - exp(eps - c0 - t^2/2 - t R))_+], R ~ chi_m (eq. (*) of the
    module docstring; m = 1 is the folded Gaussian of Redberg et al. 2023, Section 3).

    With a = eps - c0 - t^2/2 and r0 = max(0, a / t) the integrand is
    -expm1(a - t r) f_m(r) on r > r0 (no cancellation), integrated by quadrature; f_m is
    the chi density 2^{1 - m/2} r^{m-1} e^{-r^2/2} / Gamma(m/2)."""
    eps, t, c0, m = epsilon, ratio, log_det, dims
    a = eps - c0 - 0.5 * t * t
    r0 = max(0.0, a / t)
    log_c = (1.0 - 0.5 * m) * math.log(2.0) - special.gammaln(0.5 * m)

    def integrand(r: float) -> float:
        if r <= 0.0:
            return 0.0 if m > 1 else math.exp(log_c) * -math.expm1(a)
        log_f = log_c + (m - 1) * math.log(r) - 0.5 * r * r
        return math.exp(log_f) * -math.expm1(a - t * r)

    peak = math.sqrt(m - 1.0)
    width = 40.0 + 2.0 * math.sqrt(m)
    knots = sorted({r0, r0 + 0.5, r0 + 2.0, r0 + 8.0, max(r0, peak), max(r0, peak) + width})
    with warnings.catch_warnings():  # roundoff notices where the tail is ~1e-300
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        total = sum(
            integrate.quad(integrand, lo, hi, limit=400, epsabs=0.0, epsrel=1e-11)[0]
            for lo, hi in itertools.pairwise(knots)
            if hi > lo
        )
    return min(1.0, max(0.0, float(total)))


def multinomial_profile(plan: MultinomialPlan, epsilons: Any) -> np.ndarray:
    """delta(epsilon) of the plan's release at each epsilon: the objective part's profile
    (*) at epsilon - epsilon_output plus the output part's delta at epsilon_output (basic
    composition of the two parts), 1 below epsilon_output (where the output part's delta
    is not known from its point), capped by the certified point: the release's privacy
    loss event (:mod:`.events`, kind ``objective``)."""
    from objpert.accounting._pld import one_row_profile

    loss = certify_multinomial(plan).privacy_loss()
    return one_row_profile(loss)(np.atleast_1d(np.asarray(epsilons, dtype=float)))


def _objective_constants(
    n: int, d: int, n_classes: int, zeta: float, mu: float, sigma: float
) -> tuple[float, float, int]:
    """(t, c0, m) of the mean form: t = 2 sqrt(2) zeta / (n sigma), c0, m."""
    g = replace_one_sensitivity(softmax_gradient_bound(zeta))
    t = check_computed(
        "the sensitivity ratio t", g / (n * sigma),
        f"zeta {zeta:g} over n sigma = {n:g} x {sigma:g}",
    )  # fmt: skip
    return t, softmax_log_det(n, zeta, mu, n_classes), profile_dimension(d, n_classes)


@numeric_guard
def multinomial_sigma(
    n: int, d: int, n_classes: int, zeta: float, mu: float, epsilon: float, delta: float
) -> float:
    """The smallest objective noise sigma (to rounding) whose profile (*) meets delta at
    epsilon, by bisection (the profile increases in t = G / (n sigma)). Unreachable when
    1 - exp(epsilon - c0) >= delta (sigma -> infinity)."""
    c0 = softmax_log_det(n, zeta, mu, n_classes)
    if c0 > epsilon and -math.expm1(epsilon - c0) >= delta:
        raise UnreachableTargetError(
            f"the log-determinant bound c0 = {c0:.6g} leaves delta >= "
            f"{-math.expm1(epsilon - c0):.3g} at epsilon = {epsilon:g} for every sigma: raise mu"
        )

    def ok(s: float) -> bool:
        t, c, m = _objective_constants(n, d, n_classes, zeta, mu, s)
        return chi_profile_delta(epsilon, t, c, m) <= delta

    start = replace_one_sensitivity(softmax_gradient_bound(zeta)) / n
    return smallest_passing(
        ok, start, unreachable=f"no sigma certifies (epsilon={epsilon:g}, delta={delta:g})"
    )


@functools.lru_cache(maxsize=256)
def _auto_mu(
    n: int,
    d: int,
    n_classes: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float,
) -> float:
    """The "auto" ridge: the mu minimising the excess-risk bound p sigma(mu)^2 / (2 mu) +
    mu W^2 / 2 of the perturbed strongly convex objective (p = d K coordinates; the same
    criterion as the estimators' ``mu="auto"``, Watkins & Arora 2026), against a
    comparator whose K columns each have norm <= ``comparator_norm`` (W^2 = K comparator_norm^2).
    A pure function of public constants; golden-section search on log mu."""
    p = d * n_classes
    w2 = n_classes * comparator_norm**2
    floor = zeta * zeta / (n * max(epsilon, 1e-300))  # c0 <~ (K-1)/K eps below this

    def risk(log_mu: float) -> float:
        mu = math.exp(log_mu)
        try:
            sigma = multinomial_sigma(n, d, n_classes, zeta, mu, epsilon, delta)
        except UnreachableTargetError:
            return math.inf
        return p * sigma * sigma / (2.0 * mu) + 0.5 * mu * w2

    lo, hi = math.log(floor) - 2.0, math.log(floor) + 16.0
    res = optimize.minimize_scalar(risk, bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-3})  # fmt: skip
    if not math.isfinite(res.fun):
        raise UnreachableTargetError(
            f"no ridge mu certifies (epsilon={epsilon:g}, delta={delta:g}) for n = {n}"
        )
    return float(math.exp(res.x))


@dataclass(frozen=True)
class MultinomialPlan(Plan):
    """Everything a multinomial release needs, from public constants only.

    ``d`` counts the intercept column; the weights are a (d, n_classes) matrix. ``sigma``
    is the objective noise's std (continuous: it enters the objective), ``output_sigma``
    the output noise's (discrete, on the grid of ``grid_bits``), ``tolerance`` the solver's
    gradient-norm tolerance gamma (Frobenius norm), checked after the solve.
    """

    n: int
    d: int
    n_classes: int
    zeta: float
    epsilon: float  # target
    delta: float  # target
    mu: float
    sigma: float
    epsilon_objective: float
    delta_objective: float
    epsilon_output: float
    delta_output: float
    tolerance: float
    output_sigma: float
    max_iter: int
    grid_bits: int = GRID_BITS
    certificate: ReleaseCertificate | None = None

    loss = "softmax"

    #: The rule of each public field the certificate reads (:func:`~.rules.check_fields`).
    field_rules: ClassVar[dict[str, Rule]] = {
        "n": count(2),
        "d": count(1),
        "n_classes": count(2),
        "zeta": check_positive,
        "mu": check_positive,
        "sigma": check_positive,
        "epsilon": check_positive,
        "delta": target_delta,
        "epsilon_objective": check_positive,
        "epsilon_output": check_positive,
        "tolerance": check_positive,
        "output_sigma": check_positive,
        "grid_bits": grid_bits_rule,
    }

    mechanism = "multinomial"

    @property
    def iterations(self) -> int:
        """The solver's public iteration budget: what a fitted model records as its
        iteration count (the count the solver used depends on the private rows)."""
        return self.max_iter

    @property
    def dimension(self) -> int:
        """d K: the number of released coordinates."""
        return self.d * self.n_classes

    def recertify(self) -> ReleaseCertificate:
        """The certificate recomputed from the plan's public fields (the stored one ignored),
        after checking them (a plan may have been built by hand or read from a file)."""
        check_fields(self, self.field_rules)
        return certify_multinomial(self)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "certificate"}
        out["certificate"] = None if self.certificate is None else self.certificate.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MultinomialPlan:
        """Inverse of :meth:`to_dict`."""
        from objpert.accounting._certificate import certificate_from_dict

        fields = dict(data)
        cert = fields.get("certificate")
        fields["certificate"] = None if cert is None else certificate_from_dict(cert)
        return cls(**fields)


def certify_multinomial(plan: MultinomialPlan) -> ReleaseCertificate:
    """The certificate of ``plan`` from its public fields: the objective part's delta by
    the profile (*) at epsilon_objective, the output part's by the grid discrete Gaussian
    (Canonne, Kamath & Steinke 2020, Theorem 14 and Corollary 13), composed."""
    n, d, k, zeta, mu = plan.n, plan.d, plan.n_classes, plan.zeta, plan.mu
    eps1, eps2, gamma = plan.epsilon_objective, plan.epsilon_output, plan.tolerance
    t, c0, m = _objective_constants(n, d, k, zeta, mu, plan.sigma)
    delta1 = chi_profile_delta(eps1, t, c0, m)
    sens_out = two_radii(gamma / mu)
    grid = grid_details(sens_out, plan.output_sigma, d * k, plan.grid_bits)
    delta2 = cdp_delta(grid["rho"], eps2)
    epsilon, _ = basic([eps1, eps2], [0.0, 0.0])
    reasons = []
    if epsilon > plan.epsilon * (1.0 + 1e-12):
        reasons.append(f"epsilon_objective + epsilon_output = {epsilon:.6g} > {plan.epsilon:g}")
    details = {
        "neighbours": REPLACE_ONE,
        "n_classes": k,
        "sensitivity": replace_one_sensitivity(softmax_gradient_bound(zeta)) / n,
        "sensitivity_ratio": t,
        "log_det": c0,
        "profile_dimension": m,
        "epsilon_objective": eps1,
        "delta_objective": delta1,
        "epsilon_output": eps2,
        "delta_output": delta2,
        "gamma": gamma,
        "output_sensitivity": sens_out,
        "output_sigma": plan.output_sigma,
        **{f"output_{key}": v for key, v in grid.items()},
        "source": (
            "softmax objective perturbation: exact-minimiser privacy profile with a chi_m "
            "Gaussian ratio (Redberg, Koskela & Wang 2023, Section 3) and the rank-(K-1) "
            "log-determinant bound (Kifer, Smith & Thakurta 2012; Iyengar et al. 2019, "
            "Theorem 1); inexact "
            "solve by AMP's output noise (Iyengar et al. 2019, Algorithm 1) on the grid "
            "(Canonne, Kamath & Steinke 2020, Theorem 14 and Corollary 13)"
        ),
    }
    constants = {
        "loss": "softmax",
        "L1": math.sqrt(2.0),  # per-row gradient bound over zeta (module docstring)
        "n": n,
        "d": d,
        "n_classes": k,
        "zeta": zeta,
        "mu": mu,
        "gradient_bound": softmax_gradient_bound(zeta),
    }
    return ReleaseCertificate.conclude(
        MULTINOMIAL, float(epsilon), 0.0, float(basic_profile([delta1, delta2])), reasons,
        iterations=None, threshold_iterations=None, sigma=float(plan.sigma),
        truncation="none", constants=constants, details=details,
    )  # fmt: skip


@numeric_guard
@validated(
    n_classes=count(2),
    mu=optional(check_positive),
    comparator_norm=check_positive,
    gamma=optional(check_positive),
    output_share=check_open_unit,
    max_iter=count(1),
    grid_bits=grid_bits_rule,
)
def plan_multinomial(
    *,
    n: int,
    d: int,
    n_classes: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    comparator_norm: float = DEFAULT_COMPARATOR_NORM,
    gamma: float | None = None,
    output_share: float = DEFAULT_OUTPUT_SHARE,
    max_iter: int = DEFAULT_MAX_ITER,
    grid_bits: int = GRID_BITS,
) -> MultinomialPlan:
    """The plan of one multinomial release at (epsilon, delta) (module docstring).

    epsilon and delta are split as AMP splits them (``output_share`` to the output noise).
    ``mu`` None: the "auto" ridge (the excess-risk criterion against comparators whose
    class columns have norm <= ``comparator_norm``). sigma is the smallest whose profile (*)
    certifies (epsilon1, delta1); ``gamma`` (default 1e-9 sqrt(2) zeta) the solver's
    gradient-norm tolerance; the output noise the smallest on-grid std certifying
    (epsilon2, delta2) at sensitivity 2 gamma / mu. ``max_iter`` caps the solver
    (a public budget; a solve that misses gamma releases nothing).
    """
    n, k, bits = at_least_two_rows(n), n_classes, grid_bits
    eps1, eps2 = _split(epsilon, output_share)
    delta1, delta2 = _split(delta, output_share)
    mu_val = _auto_mu(n, d, k, zeta, eps1, delta1, comparator_norm) if mu is None else mu
    sigma = multinomial_sigma(n, d, k, zeta, mu_val, eps1, delta1)
    gamma_val = gamma
    if gamma is None:
        gamma_val = DEFAULT_RELATIVE_TOLERANCE * softmax_gradient_bound(zeta)
    out_sigma = grid_gaussian_sigma("analytic", two_radii(gamma_val / mu_val), d * k, eps2,
                                    delta2, bits)  # fmt: skip
    plan = MultinomialPlan(
        n=n, d=d, n_classes=k, zeta=zeta, epsilon=epsilon, delta=delta, mu=mu_val,
        sigma=sigma, epsilon_objective=eps1, delta_objective=delta1, epsilon_output=eps2,
        delta_output=delta2, tolerance=gamma_val, output_sigma=out_sigma,
        max_iter=max_iter, grid_bits=bits,
    )  # fmt: skip
    for _ in range(MAX_NUDGES):  # rounding may leave a part a hair above its share
        cert = certify_multinomial(plan)
        d1, d2 = cert.details["delta_objective"], cert.details["delta_output"]
        if cert.certified and d1 <= delta1 and d2 <= delta2 and cert.delta <= delta:
            return replace(plan, certificate=cert)
        if cert.reasons and not all(r.startswith("delta >= 1") for r in cert.reasons):
            break
        plan = replace(
            plan,
            sigma=plan.sigma * _NUDGE if d1 > delta1 else plan.sigma,
            output_sigma=(
                grid_gaussian_sigma("analytic", two_radii(gamma_val / mu_val) * _NUDGE, d * k,
                                    eps2, delta2, bits)
                if d2 > delta2 else plan.output_sigma
            ),
        )  # fmt: skip
    raise UnreachableTargetError(  # a bug guard: never hand out an uncertified plan
        f"internal error: the multinomial plan does not certify (epsilon={epsilon}, "
        f"delta={delta}): {cert.reasons or (cert.epsilon, cert.delta)}"
    )


def check_multinomial_plan(plan: Any) -> ReleaseCertificate:
    """Recompute ``plan``'s certificate; refuse (ParameterError) a plan that is not a
    :class:`MultinomialPlan`, does not certify, exceeds its target or whose stored
    certificate differs from the recomputed one."""
    if not isinstance(plan, MultinomialPlan):
        raise ParameterError(f"expected a MultinomialPlan; got {type(plan).__name__}")
    cert = plan.recertify()
    if not cert.certified:
        raise ParameterError(f"the plan does not certify: {'; '.join(cert.reasons)}")
    if plan.certificate is None or plan.certificate.to_dict() != cert.to_dict():
        raise ParameterError(
            "the plan's stored certificate differs from the one recomputed from its fields"
        )
    if cert.delta > plan.delta or cert.epsilon > plan.epsilon * (1.0 + 1e-12):
        raise ParameterError(
            f"the plan certifies ({cert.epsilon:.6g}, {cert.delta:.3g}) above its target "
            f"({plan.epsilon:g}, {plan.delta:.3g})"
        )
    return cert
