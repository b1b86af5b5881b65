"""Certificates and calibration for the peer mechanisms objpert compares against.

Every mechanism here trains a regularised GLM in objpert's *mean* form

    F(w; S) = (1/n) sum_i l(<x_i, w>, y_i) + (mu/2) ||w||^2,   ||x_i|| <= zeta,

with loss constants L1 >= |l'| and L2 >= l'' >= 0 (Assumption 2 of Watkins & Arora 2026),
under replace-one neighbours with n public. Five mechanisms, each a pure function of
public numbers here (no data, no randomness):

``lop``
    Linear objective perturbation, exact minimiser (Chaudhuri, Monteleoni & Sarwate 2011)
    with Gaussian noise (Kifer, Smith & Thakurta 2012, Theorem 2), through
    :func:`objpert.certify.lop.lop_mean_form` with gradient bound L1 zeta and smoothness
    L2 zeta^2: mu >= 2 L2 zeta^2 / (n epsilon), z ~ N(0, sigma^2 I) with
    sigma = L1 zeta sqrt(8 log(2/delta) + 4 epsilon) / (n epsilon).
``lop_clip``
    The same with per-sample gradients clipped to norm c (Redberg, Koskela & Wang 2023):
    the clipped objective is again a convex GLM with per-sample gradients of norm <= c and
    rank-one per-sample Hessians of norm <= L2 zeta^2, so c replaces L1 zeta.
``amp``
    Approximate Minima Perturbation (Iyengar, Near, Song, Thakkar, Thakurta & Wang 2019,
    Algorithm 1): LOP at (epsilon1, delta1) solved only to gradient norm gamma, plus
    Gaussian output noise at (epsilon2, delta2) for the optimisation error.
``output_perturbation``
    Gaussian output perturbation of the regularised minimiser (Chaudhuri et al. 2011,
    Section 4, with Gaussian noise): L2 sensitivity 2 L1 zeta / (n mu).
``noisy_gd``
    Noisy full-batch gradient descent, T steps of w <- w - eta (grad F(w) + N(0, s^2 I)):
    T adaptively composed Gaussian mechanisms on the mean gradient (sensitivity
    2 L1 zeta / n), accounted exactly by Gaussian-DP composition (Dong, Roth & Su 2022),
    by RDP (Mironov 2017) with the Canonne-Kamath-Steinke / Balle et al. conversion, or by
    dp-accounting's PLD accountant.

Plans are frozen :class:`PeerPlan` values whose :class:`~objpert.certify.certificate.Certificate`
is recomputed from the plan's public fields by :func:`certify_peer`; a plan that does not
certify its target is never returned. Each certificate reports the (epsilon, delta) it
actually certifies (at most the target).

Exact Gaussian calibration uses the exact privacy profile of the Gaussian mechanism,
:func:`objpert.certify.gaussian.gaussian_profile` (Dong et al. 2022, Corollary 2.13;
Balle & Wang 2018, Theorem 8), and bisection for the smallest admissible sigma.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy import optimize

from objpert.certify.certificate import Certificate
from objpert.certify.gaussian import gaussian_profile
from objpert.certify.lop import lop_mean_form
from objpert.errors import (
    ParameterError,
    UnreachableTargetError,
    check_int,
    check_nonnegative,
    check_open_unit,
    check_positive,
)
from objpert.losses import Loss, get_loss, require_bounded_gradient

METHODS = ("lop", "lop_clip", "amp", "output_perturbation", "noisy_gd")
GAUSSIAN_CALIBRATIONS = ("exact", "classical")
ACCOUNTANTS = ("exact", "rdp", "pld")

#: Default solver tolerance (gradient norm), relative to the per-sample gradient bound.
DEFAULT_RELATIVE_TOLERANCE = 1e-9
#: Default cap on solver iterations (a public compute budget; the tolerance is checked).
DEFAULT_MAX_ITERATIONS = 2000
#: Default share of (epsilon, delta) AMP spends on its output noise (Iyengar et al.'s code).
DEFAULT_OUTPUT_SHARE = 0.01
#: Default number of noisy gradient-descent steps.
DEFAULT_NOISY_GD_ITERATIONS = 100

_NUDGE = 1.0 + 2.0**-40  # sigma is raised by this factor until rounding cannot break a target
_MAX_NUDGES = 200


# ---------------------------------------------------------------- the Gaussian mechanism


def gaussian_delta(epsilon: float, sensitivity: float, sigma: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism with L2 sensitivity G and std sigma.

    delta_G(epsilon) = Phi(G/(2 sigma) - epsilon sigma/G) - e^epsilon Phi(-G/(2 sigma)
    - epsilon sigma/G) (Dong et al. 2022, Corollary 2.13), via
    :func:`objpert.certify.gaussian.gaussian_profile`.
    """
    check_nonnegative("epsilon", epsilon)
    return float(gaussian_profile(epsilon, sensitivity, sigma))


def gaussian_epsilon(delta: float, sensitivity: float, sigma: float) -> float:
    """Smallest epsilon >= 0 with delta_G(epsilon) <= delta (bisection; the profile is
    decreasing in epsilon). The returned epsilon satisfies the bound exactly as computed."""
    delta = check_open_unit("delta", delta)
    if gaussian_delta(0.0, sensitivity, sigma) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, sensitivity, sigma) > delta:
        hi *= 2.0
        if hi > 1e12:
            raise UnreachableTargetError("no finite epsilon reaches this delta")
    lo = hi / 2.0 if hi > 1.0 else 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if gaussian_delta(mid, sensitivity, sigma) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """sigma = G sqrt(2 log(1.25/delta)) / epsilon (Dwork & Roth 2014, Theorem A.1).

    That theorem needs epsilon < 1; larger epsilon is refused (use the exact calibration).
    """
    g = check_positive("sensitivity", sensitivity)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    if epsilon >= 1.0:
        raise ParameterError(
            f"the classical Gaussian calibration (Dwork & Roth 2014, Theorem A.1) needs "
            f"epsilon < 1; got {epsilon!r}: use calibration='exact'"
        )
    return g * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def calibrate_gaussian(sensitivity: float, epsilon: float, delta: float) -> float:
    """The smallest sigma (to ~1e-15 relative) with delta_G(epsilon) <= delta.

    delta_G is decreasing in sigma, so bisection on sigma is exact up to rounding; the
    returned value always satisfies ``gaussian_delta(epsilon, sensitivity, sigma) <= delta``.
    """
    g = check_positive("sensitivity", sensitivity)
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_open_unit("delta", delta)

    def ok(s: float) -> bool:
        return gaussian_delta(epsilon, g, s) <= delta

    hi = g
    while not ok(hi):
        hi *= 2.0
        if hi > g * 1e15:
            raise UnreachableTargetError(
                f"no sigma certifies (epsilon={epsilon:g}, delta={delta:g})"
            )
    lo = hi / 2.0
    while ok(lo):
        hi, lo = lo, lo / 2.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _gaussian_sigma(calibration: str, sensitivity: float, epsilon: float, delta: float):
    if calibration == "exact":
        return calibrate_gaussian(sensitivity, epsilon, delta)
    if calibration == "classical":
        return classical_gaussian_sigma(sensitivity, epsilon, delta)
    raise ParameterError(f"calibration must be one of {GAUSSIAN_CALIBRATIONS}; got {calibration!r}")


# ---------------------------------------------------------------- LOP (Kifer et al. 2012)


def lop_delta(n: int, grad_bound: float, sigma: float, epsilon: float) -> float:
    """The delta the Gaussian LOP noise sigma certifies at epsilon (mean form).

    Inverts s = zeta_g sqrt(8 log(2/delta) + 4 epsilon) / epsilon (Kifer et al. 2012,
    Theorem 2; :func:`objpert.certify.lop.lop_noise`) with s = n sigma:
    delta = 2 exp(-((s epsilon / zeta_g)^2 - 4 epsilon) / 8). Values >= 1 certify nothing.
    """
    s = n * check_positive("sigma", sigma)
    g = check_positive("grad_bound", grad_bound)
    epsilon = check_positive("epsilon", epsilon)
    exponent = ((s * epsilon / g) ** 2 - 4.0 * epsilon) / 8.0
    return min(1.0, 2.0 * math.exp(-exponent))


# ---------------------------------------------------------------- noisy GD accounting


def gdp_mu(iterations: int, noise_multiplier: float) -> float:
    """mu-GDP of T Gaussian mechanisms with noise multiplier z (std / sensitivity):
    sqrt(T) / z (Dong, Roth & Su 2022, Theorem 2.7 and Corollary 3.3; exact for the
    adaptive composition of Gaussian mechanisms)."""
    T = check_int("iterations", iterations, 1)
    z = check_positive("noise_multiplier", noise_multiplier)
    return math.sqrt(T) / z


def noisy_gd_delta(epsilon: float, iterations: int, noise_multiplier: float) -> float:
    """Exact delta(epsilon) of T composed Gaussian mechanisms with multiplier z.

    Composing T Gaussian mechanisms of sensitivity G and std s is the Gaussian mechanism
    of sensitivity sqrt(T) G and std s (its privacy-loss random variable is the sum of T
    independent Gaussians), so delta(epsilon) = delta_G(epsilon) with G/sigma = sqrt(T)/z.
    For T = 1 this is the single Gaussian mechanism's profile.
    """
    T = check_int("iterations", iterations, 1)
    z = check_positive("noise_multiplier", noise_multiplier)
    return gaussian_delta(epsilon, math.sqrt(T), z)


def rdp_epsilon(
    delta: float,
    iterations: int,
    noise_multiplier: float,
    orders: Any = None,
) -> tuple[float, float]:
    """(epsilon, order) from the RDP of T composed Gaussian mechanisms.

    The Gaussian mechanism with multiplier z is (alpha, alpha / (2 z^2))-RDP for all
    alpha > 1 (Mironov 2017, Proposition 7); T-fold composition adds (Proposition 1):
    rho(alpha) = T alpha / (2 z^2). Conversion to (epsilon, delta)-DP (Canonne, Kamath &
    Steinke 2020, Proposition 12; Balle et al. 2020, Theorem 21; Asoodeh et al. 2020):

        epsilon = min_alpha rho(alpha) + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1).

    ``orders=None`` minimises over continuous alpha > 1 (a grid refined by a bounded
    scalar search); otherwise over the given orders (> 1), as dp-accounting does. Any
    alpha gives a valid bound, so the search only affects tightness.
    """
    delta = check_open_unit("delta", delta)
    T = check_int("iterations", iterations, 1)
    z = check_positive("noise_multiplier", noise_multiplier)
    c = T / (2.0 * z * z)
    log_delta = math.log(delta)

    def eps(alpha):
        alpha = np.asarray(alpha, dtype=float)
        return c * alpha + np.log1p(-1.0 / alpha) - (log_delta + np.log(alpha)) / (alpha - 1.0)

    if orders is not None:
        a = np.asarray(orders, dtype=float).ravel()
        if a.size == 0 or np.any(~np.isfinite(a)) or np.any(a <= 1.0):
            raise ParameterError("orders must be finite numbers > 1")
        values = eps(a)
        k = int(np.argmin(values))
        return max(0.0, float(values[k])), float(a[k])
    grid = 1.0 + np.geomspace(1e-6, 1e8, 3001)
    values = eps(grid)
    k = int(np.argmin(values))
    lo, hi = np.log(grid[max(k - 1, 0)] - 1.0), np.log(grid[min(k + 1, grid.size - 1)] - 1.0)
    res = optimize.minimize_scalar(
        lambda u: float(eps(1.0 + math.exp(u))),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    best_alpha, best = float(grid[k]), float(values[k])
    if res.success and float(res.fun) < best:
        best_alpha, best = 1.0 + math.exp(float(res.x)), float(res.fun)
    return max(0.0, best), best_alpha


def pld_epsilon(
    delta: float, iterations: int, noise_multiplier: float, discretization: float = 1e-4
) -> float:
    """epsilon from dp-accounting's PLD accountant (pessimistic discretisation) for T
    composed Gaussian mechanisms with multiplier z. Needs the optional package
    ``dp-accounting``."""
    delta = check_open_unit("delta", delta)
    T = check_int("iterations", iterations, 1)
    z = check_positive("noise_multiplier", noise_multiplier)
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:  # pragma: no cover - depends on the environment
        raise ParameterError(
            "accountant='pld' needs the optional package dp-accounting "
            "(pip install 'dp-accounting>=0.6'); use accountant='exact'"
        ) from None
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=discretization)
    acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), T))
    return float(acc.get_epsilon(delta))


def noisy_gd_epsilon(
    delta: float, iterations: int, noise_multiplier: float, accountant: str = "exact"
) -> float:
    """epsilon at ``delta`` for T composed Gaussian mechanisms under ``accountant``:
    ``exact`` (Gaussian DP; the inverse of :func:`noisy_gd_delta`), ``rdp`` or ``pld``."""
    if accountant == "exact":
        T = check_int("iterations", iterations, 1)
        z = check_positive("noise_multiplier", noise_multiplier)
        return gaussian_epsilon(delta, math.sqrt(T), z)
    if accountant == "rdp":
        return rdp_epsilon(delta, iterations, noise_multiplier)[0]
    if accountant == "pld":
        return pld_epsilon(delta, iterations, noise_multiplier)
    raise ParameterError(f"accountant must be one of {ACCOUNTANTS}; got {accountant!r}")


def calibrate_noise_multiplier(
    epsilon: float, delta: float, iterations: int, accountant: str = "exact"
) -> float:
    """The smallest noise multiplier z (std / per-step sensitivity) for which T composed
    Gaussian mechanisms are (epsilon, delta)-DP under ``accountant`` (bisection; each
    accountant is monotone in z)."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    T = check_int("iterations", iterations, 1)
    if accountant == "exact":
        return calibrate_gaussian(math.sqrt(T), epsilon, delta)
    if accountant not in ACCOUNTANTS:
        raise ParameterError(f"accountant must be one of {ACCOUNTANTS}; got {accountant!r}")

    def ok(z: float) -> bool:
        return noisy_gd_epsilon(delta, T, z, accountant) <= epsilon

    hi = max(1.0, math.sqrt(T) / epsilon)
    while not ok(hi):
        hi *= 2.0
    lo = hi / 2.0
    while ok(lo):
        hi, lo = lo, lo / 2.0
    rtol = 1e-12 if accountant == "rdp" else 1e-6  # the PLD accountant is slow and discretised
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# ---------------------------------------------------------------- plans


@dataclass(frozen=True)
class PeerPlan:
    """Everything a peer release needs, chosen from public constants before touching data.

    ``sigma`` is the mechanism's Gaussian std: of the objective perturbation z (``lop``,
    ``lop_clip``, ``amp``), of the output noise (``output_perturbation``), of the per-step
    gradient noise (``noisy_gd``). ``output_sigma`` is AMP's output noise. ``tolerance``
    is the solver's gradient-norm tolerance ||grad F_priv(w)|| <= tolerance (AMP's gamma).
    ``calibration`` is the Gaussian calibration (``exact``/``classical``), the accountant
    of ``noisy_gd`` (``exact``/``rdp``/``pld``) or ``kifer`` for LOP.
    """

    method: str
    loss: str
    n: int
    d: int
    zeta: float
    epsilon: float  # target
    delta: float  # target
    mu: float
    sigma: float
    certificate: Certificate | None
    loss_params: tuple[tuple[str, float], ...] = ()
    calibration: str = "exact"
    tolerance: float | None = None
    max_iterations: int | None = None
    clip: float | None = None
    epsilon_objective: float | None = None
    delta_objective: float | None = None
    epsilon_output: float | None = None
    delta_output: float | None = None
    output_sigma: float | None = None
    iterations: int | None = None
    eta: float | None = None

    def loss_object(self) -> Loss:
        return get_loss(self.loss, **dict(self.loss_params))

    def recertify(self) -> Certificate:
        """Recompute the certificate from the plan's public fields alone."""
        return certify_peer(self)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "certificate"}
        out["loss_params"] = [list(p) for p in self.loss_params]
        out["certificate"] = None if self.certificate is None else self.certificate.to_dict()
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PeerPlan:
        """Inverse of :meth:`to_dict`."""
        from objpert.certify.composition import certificate_from_dict

        fields = dict(data)
        fields["loss_params"] = tuple(tuple(p) for p in fields.get("loss_params", ()))
        cert = fields.get("certificate")
        fields["certificate"] = None if cert is None else certificate_from_dict(cert)
        return cls(**fields)


def _loss_constants(plan: PeerPlan, loss: Loss) -> dict[str, Any]:
    return {
        "loss": plan.loss,
        "loss_params": [list(p) for p in plan.loss_params],
        "L1": None if loss.L1 is None else float(loss.L1),
        "L2": float(loss.L2),
        "n": plan.n,
        "d": plan.d,
        "zeta": plan.zeta,
        "mu": plan.mu,
    }


def _conclude(plan, epsilon, delta, reasons, constants, details, *, iterations=None):
    return Certificate.conclude(
        plan.method,
        float(epsilon),
        0.0,
        float(delta),
        reasons,
        iterations=iterations,
        threshold_iterations=None,
        sigma=float(plan.sigma),
        truncation="none",
        constants=constants,
        details=details,
    )


def _certify_lop(plan: PeerPlan, loss: Loss) -> Certificate:
    clipped = plan.method == "lop_clip"
    reasons: list[str] = []
    if clipped:
        g = check_positive("clip", plan.clip)
        source = "Redberg et al. 2023 (clipped LOP); Kifer et al. 2012, Theorem 2"
    else:
        g = float(loss.L1) * plan.zeta
        source = "Chaudhuri et al. 2011; Kifer et al. 2012, Theorem 2 (Gaussian LOP)"
    smooth = float(loss.L2) * plan.zeta**2
    mu_min, sigma_req = lop_mean_form(plan.n, g, smooth, plan.epsilon, plan.delta)
    if not plan.mu >= mu_min:
        reasons.append(
            f"mu = {plan.mu:.6g} < 2 L2 zeta^2 / (n epsilon) = {mu_min:.6g} (Kifer et al. 2012)"
        )
    delta = lop_delta(plan.n, g, plan.sigma, plan.epsilon)
    constants = _loss_constants(plan, loss)
    constants.update(gradient_bound=g, smoothness=smooth)
    details = {
        "mu_min": mu_min,
        "sigma_required": sigma_req,
        "tolerance": plan.tolerance,
        "clip": plan.clip,
        "guarantee": (
            "exact minimiser of F + <z, w>; the solver's gradient-norm tolerance is an "
            "approximation outside the guarantee"
        ),
        "source": source,
    }
    return _conclude(plan, plan.epsilon, delta, reasons, constants, details)


def _certify_amp(plan: PeerPlan, loss: Loss) -> Certificate:
    reasons: list[str] = []
    g = float(loss.L1) * plan.zeta
    smooth = float(loss.L2) * plan.zeta**2
    eps1 = check_positive("epsilon_objective", plan.epsilon_objective)
    eps2 = check_positive("epsilon_output", plan.epsilon_output)
    gamma = check_positive("tolerance", plan.tolerance)
    out_sigma = check_positive("output_sigma", plan.output_sigma)
    mu_min, _ = lop_mean_form(plan.n, g, smooth, eps1, plan.delta_objective)
    if not plan.mu >= mu_min:
        reasons.append(
            f"mu = {plan.mu:.6g} < 2 L2 zeta^2 / (n epsilon1) = {mu_min:.6g} (Kifer et al. 2012)"
        )
    delta1 = lop_delta(plan.n, g, plan.sigma, eps1)
    sens_out = 2.0 * gamma / plan.mu
    delta2 = gaussian_delta(eps2, sens_out, out_sigma)
    constants = _loss_constants(plan, loss)
    constants.update(gradient_bound=g, smoothness=smooth)
    details = {
        "mu_min": mu_min,
        "epsilon_objective": eps1,
        "delta_objective": delta1,
        "epsilon_output": eps2,
        "delta_output": delta2,
        "gamma": gamma,
        "output_sensitivity": sens_out,
        "output_sigma": out_sigma,
        "source": "Iyengar et al. 2019, Algorithm 1 (AMP); Kifer et al. 2012, Theorem 2",
    }
    return _conclude(plan, eps1 + eps2, delta1 + delta2, reasons, constants, details)


def output_sensitivity(n: int, grad_bound: float, mu: float, tolerance: float = 0.0) -> float:
    """L2 sensitivity of an approximate minimiser of the mean-form objective.

    Exact minimisers of neighbouring objectives differ by at most 2 L1 zeta / (n mu)
    (Chaudhuri et al. 2011, Corollary 8, in mean form: the objectives differ by a
    (2 L1 zeta / n)-Lipschitz function and F is mu-strongly convex). A deterministic solver
    stopped at ||grad F(w)|| <= tolerance is within tolerance / mu of the exact minimiser,
    so its output has sensitivity (2 L1 zeta / n + 2 tolerance) / mu.
    """
    return (2.0 * grad_bound / n + 2.0 * tolerance) / mu


def _certify_output(plan: PeerPlan, loss: Loss) -> Certificate:
    g = float(loss.L1) * plan.zeta
    tol = check_nonnegative("tolerance", plan.tolerance)
    sens = output_sensitivity(plan.n, g, plan.mu, tol)
    delta = gaussian_delta(plan.epsilon, sens, plan.sigma)
    constants = _loss_constants(plan, loss)
    constants.update(gradient_bound=g)
    details = {
        "sensitivity": sens,
        "tolerance": tol,
        "source": "Chaudhuri et al. 2011 (output perturbation), Gaussian mechanism, exact profile",
    }
    return _conclude(plan, plan.epsilon, delta, [], constants, details)


def _certify_noisy_gd(plan: PeerPlan, loss: Loss) -> Certificate:
    g = float(loss.L1) * plan.zeta
    T = check_int("iterations", plan.iterations, 1)
    check_positive("eta", plan.eta)
    sens = 2.0 * g / plan.n
    z = plan.sigma / sens
    if plan.calibration == "exact":
        epsilon = plan.epsilon
        delta = gaussian_delta(epsilon, math.sqrt(T) * sens, plan.sigma)
    elif plan.calibration in ("rdp", "pld"):
        delta = plan.delta
        epsilon = noisy_gd_epsilon(delta, T, z, plan.calibration)
    else:
        raise ParameterError(f"accountant must be one of {ACCOUNTANTS}; got {plan.calibration!r}")
    constants = _loss_constants(plan, loss)
    constants.update(gradient_bound=g)
    details = {
        "accountant": plan.calibration,
        "sensitivity": sens,
        "noise_multiplier": z,
        "gdp_mu": math.sqrt(T) / z,
        "eta": plan.eta,
        "source": (
            "T adaptively composed Gaussian mechanisms: Dong, Roth & Su 2022 (GDP, exact); "
            "Mironov 2017 + Canonne et al. 2020 (RDP); dp-accounting (PLD)"
        ),
    }
    return _conclude(plan, epsilon, delta, [], constants, details, iterations=T)


def certify_peer(plan: PeerPlan) -> Certificate:
    """The certificate of ``plan`` from its public fields (its stored one is ignored)."""
    if plan.method not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}; got {plan.method!r}")
    loss = plan.loss_object()
    check_int("n", plan.n, 2)
    check_int("d", plan.d, 1)
    check_positive("zeta", plan.zeta)
    check_positive("epsilon", plan.epsilon)
    check_open_unit("delta", plan.delta)
    check_positive("sigma", plan.sigma)
    if plan.method == "noisy_gd":
        check_nonnegative("mu", plan.mu)
    else:
        check_positive("mu", plan.mu)
    if plan.method != "lop_clip":
        require_bounded_gradient(loss, f"the {plan.method} certificate")
    if plan.method in ("lop", "lop_clip"):
        return _certify_lop(plan, loss)
    if plan.method == "amp":
        return _certify_amp(plan, loss)
    if plan.method == "output_perturbation":
        return _certify_output(plan, loss)
    return _certify_noisy_gd(plan, loss)


def _finish(plan: PeerPlan, bump: str = "sigma") -> PeerPlan:
    """Attach the recomputed certificate, raising ``bump`` (a noise std) by ~1e-12 steps if
    rounding left the certificate a hair above the target; refuse if it still fails."""
    for _ in range(_MAX_NUDGES):
        cert = certify_peer(plan)
        if cert.certified and cert.delta <= plan.delta and cert.epsilon <= plan.epsilon:
            return replace(plan, certificate=cert)
        if cert.reasons and not all(r.startswith("delta >= 1") for r in cert.reasons):
            break
        plan = replace(plan, **{bump: getattr(plan, bump) * _NUDGE})
    raise UnreachableTargetError(  # a bug guard: never hand out an uncertified plan
        f"internal error: the {plan.method} plan does not certify (epsilon={plan.epsilon}, "
        f"delta={plan.delta}): {cert.reasons or (cert.epsilon, cert.delta)}"
    )


def _common(loss, n, d, zeta, epsilon, delta, loss_params, *, bounded: bool = True):
    loss_obj = get_loss(loss, **(loss_params or {}))
    if bounded:
        require_bounded_gradient(loss_obj, "this mechanism's sensitivity")
    return (
        loss_obj,
        check_int("n", n, 2),
        check_int("d", d, 1),
        check_positive("zeta", zeta),
        check_positive("epsilon", epsilon),
        check_open_unit("delta", delta),
    )


def _public(loss_obj: Loss, n, d, zeta, epsilon, delta) -> dict[str, Any]:
    """The public fields every :class:`PeerPlan` carries (its certificate comes later)."""
    return {
        "loss": loss_obj.name,
        "loss_params": _params(loss_obj),
        "n": n,
        "d": d,
        "zeta": zeta,
        "epsilon": epsilon,
        "delta": delta,
        "certificate": None,
    }


def _params(loss_obj: Loss) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(loss_obj.params().items()))


def _tolerance(tolerance, grad_bound: float) -> float:
    if tolerance is None:
        return DEFAULT_RELATIVE_TOLERANCE * grad_bound
    return check_positive("tolerance", tolerance)


def _mu(mu, mu_min: float) -> float:
    return mu_min if mu is None else max(check_positive("mu", mu), mu_min)


def plan_lop(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    tolerance: float | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    loss_params: dict | None = None,
) -> PeerPlan:
    """Gaussian LOP, exact minimiser (Chaudhuri et al. 2011; Kifer et al. 2012, Theorem 2).

    (mu_min, sigma) = lop_mean_form(n, L1 zeta, L2 zeta^2, epsilon, delta); the plan uses
    mu = max(mu, mu_min) (mu_min when ``mu`` is None). The guarantee is for the *exact*
    minimiser of F + <z, w>; ``tolerance`` (gradient norm, default 1e-9 L1 zeta) is the
    solver's stopping accuracy, reported but not covered: a finite tolerance is an
    approximation, the gap AMP (Iyengar et al. 2019) and Watkins & Arora (2026) close.
    """
    loss_obj, n, d, zeta, epsilon, delta = _common(loss, n, d, zeta, epsilon, delta, loss_params)
    g, smooth = float(loss_obj.L1) * zeta, float(loss_obj.L2) * zeta**2
    mu_min, sigma = lop_mean_form(n, g, smooth, epsilon, delta)
    plan = PeerPlan(
        method="lop",
        **_public(loss_obj, n, d, zeta, epsilon, delta),
        mu=_mu(mu, mu_min),
        sigma=sigma,
        calibration="kifer",
        tolerance=_tolerance(tolerance, g),
        max_iterations=check_int("max_iterations", max_iterations, 1),
    )
    return _finish(plan)


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
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    loss_params: dict | None = None,
) -> PeerPlan:
    """LOP with per-sample gradient clipping at level c (Redberg, Koskela & Wang 2023).

    Each per-sample gradient l'(<x_i,w>, y_i) x_i is clipped to norm <= c, i.e. l' to
    [-c/||x_i||, c/||x_i||]: the objective whose gradient is the clipped one is again a
    convex GLM (a nondecreasing l' stays nondecreasing when clipped) with per-sample
    gradients of norm <= c and rank-one Hessians of norm <= L2 zeta^2. The Kifer et al.
    constants then hold with c in place of L1 zeta: mu_min = 2 L2 zeta^2/(n epsilon),
    sigma = c sqrt(8 log(2/delta) + 4 epsilon)/(n epsilon). The loss need not have a
    bounded l' (the squared loss is accepted). The released point is the exact minimiser of
    the *clipped* objective (a different estimator from LOP's unless nothing is clipped).
    """
    loss_obj, n, d, zeta, epsilon, delta = _common(
        loss, n, d, zeta, epsilon, delta, loss_params, bounded=False
    )
    c = check_positive("clip", clip)
    mu_min, sigma = lop_mean_form(n, c, float(loss_obj.L2) * zeta**2, epsilon, delta)
    plan = PeerPlan(
        method="lop_clip",
        **_public(loss_obj, n, d, zeta, epsilon, delta),
        mu=_mu(mu, mu_min),
        sigma=sigma,
        calibration="kifer",
        tolerance=_tolerance(tolerance, c),
        max_iterations=check_int("max_iterations", max_iterations, 1),
        clip=c,
    )
    return _finish(plan)


def _split(total: float, share: float, name: str) -> tuple[float, float]:
    """(first, second) with second = share * total and first + second <= total exactly."""
    share = check_open_unit(name, share)
    second = share * total
    first = total - second
    while first + second > total:
        first = math.nextafter(first, 0.0)
    return first, second


def plan_amp(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    gamma: float | None = None,
    output_share: float = DEFAULT_OUTPUT_SHARE,
    output_delta_share: float | None = None,
    calibration: str = "exact",
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    loss_params: dict | None = None,
) -> PeerPlan:
    """Approximate Minima Perturbation (Iyengar et al. 2019, Algorithm 1), mean form.

    Split epsilon = epsilon1 + epsilon2 and delta = delta1 + delta2 (epsilon2 =
    ``output_share`` epsilon, delta2 = ``output_delta_share`` delta, default the same
    share). Objective part: Gaussian LOP at (epsilon1, delta1) (Kifer et al. 2012,
    Theorem 2, via lop_mean_form), mu = max(mu, mu_min(epsilon1)). The solver stops at
    ||grad F_priv(w)|| <= gamma (default 1e-9 L1 zeta; Iyengar et al. use 1/n^2), so
    ||w - w*|| <= gamma / mu by mu-strong convexity.

    Output part: the exact minimiser w* is (epsilon1, delta1)-DP; given w* (and the data),
    the noise b = -grad F(w*; S) and hence the deterministic solver's output are fixed, and
    for neighbours sharing w* the two approximate minimisers lie within gamma/mu of w*:
    sensitivity 2 gamma / mu. Gaussian output noise with delta_G(epsilon2) <= delta2
    (exact profile, or the classical formula for epsilon2 < 1) then gives, by adaptive
    composition and post-processing, (epsilon1 + epsilon2, delta1 + delta2)-DP.
    """
    loss_obj, n, d, zeta, epsilon, delta = _common(loss, n, d, zeta, epsilon, delta, loss_params)
    if calibration not in GAUSSIAN_CALIBRATIONS:
        raise ParameterError(
            f"calibration must be one of {GAUSSIAN_CALIBRATIONS}; got {calibration!r}"
        )
    eps1, eps2 = _split(epsilon, output_share, "output_share")
    d_share = output_share if output_delta_share is None else output_delta_share
    delta1, delta2 = _split(delta, d_share, "output_delta_share")
    g, smooth = float(loss_obj.L1) * zeta, float(loss_obj.L2) * zeta**2
    mu_min, sigma1 = lop_mean_form(n, g, smooth, eps1, delta1)
    mu_val = _mu(mu, mu_min)
    gamma_val = _tolerance(gamma, g)
    sigma2 = _gaussian_sigma(calibration, 2.0 * gamma_val / mu_val, eps2, delta2)
    plan = PeerPlan(
        method="amp",
        **_public(loss_obj, n, d, zeta, epsilon, delta),
        mu=mu_val,
        sigma=sigma1,
        calibration=calibration,
        tolerance=gamma_val,
        max_iterations=check_int("max_iterations", max_iterations, 1),
        epsilon_objective=eps1,
        delta_objective=delta1,
        epsilon_output=eps2,
        delta_output=delta2,
        output_sigma=sigma2,
    )
    # nudge both noises together: each part's delta must fall below its own share
    for _ in range(_MAX_NUDGES):
        cert = certify_peer(plan)
        d1, d2 = cert.details["delta_objective"], cert.details["delta_output"]
        if cert.certified and d1 <= delta1 and d2 <= delta2 and cert.delta <= delta:
            break
        plan = replace(
            plan,
            sigma=plan.sigma * (_NUDGE if d1 > delta1 else 1.0),
            output_sigma=plan.output_sigma * (_NUDGE if d2 > delta2 else 1.0),
        )
    return _finish(plan)


def default_output_mu(
    n: int, d: int, grad_bound: float, epsilon: float, delta: float, radius: float = 1.0
) -> float:
    """A public default ridge for output perturbation: the mu balancing the regularisation
    bias (mu/2) W^2 against the noise term L1 zeta sigma sqrt(d), with sigma ~
    2 L1 zeta sqrt(2 log(1.25/delta)) / (n mu epsilon): mu = 2 L1 zeta sqrt(c sqrt(d)/(n eps))/W,
    c = sqrt(2 log(1.25/delta)). A heuristic from public values only; pass ``mu`` to override."""
    c = math.sqrt(2.0 * math.log(1.25 / delta))
    return 2.0 * grad_bound * math.sqrt(c * math.sqrt(d) / (n * epsilon)) / radius


def plan_output_perturbation(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    radius: float = 1.0,
    tolerance: float | None = None,
    calibration: str = "exact",
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    loss_params: dict | None = None,
) -> PeerPlan:
    """Gaussian output perturbation (Chaudhuri et al. 2011, Section 4; Gaussian noise).

    Release argmin F + N(0, sigma^2 I) with sensitivity (2 L1 zeta / n + 2 tolerance)/mu
    (:func:`output_sensitivity`: the tolerance term covers the solver's stopping error, so
    the guarantee holds for the approximate minimiser) and sigma the smallest with
    delta_G(epsilon) <= delta (exact profile) or the classical formula (epsilon < 1).
    ``mu`` defaults to :func:`default_output_mu` (comparator radius ``radius``).
    """
    loss_obj, n, d, zeta, epsilon, delta = _common(loss, n, d, zeta, epsilon, delta, loss_params)
    g = float(loss_obj.L1) * zeta
    if mu is None:
        mu_val = default_output_mu(n, d, g, epsilon, delta, check_positive("radius", radius))
    else:
        mu_val = check_positive("mu", mu)
    tol = _tolerance(tolerance, g)
    sigma = _gaussian_sigma(calibration, output_sensitivity(n, g, mu_val, tol), epsilon, delta)
    plan = PeerPlan(
        method="output_perturbation",
        **_public(loss_obj, n, d, zeta, epsilon, delta),
        mu=mu_val,
        sigma=sigma,
        calibration=calibration,
        tolerance=tol,
        max_iterations=check_int("max_iterations", max_iterations, 1),
    )
    return _finish(plan)


def plan_noisy_gd(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    iterations: int = DEFAULT_NOISY_GD_ITERATIONS,
    mu: float = 0.0,
    eta: float | None = None,
    accountant: str = "exact",
    loss_params: dict | None = None,
) -> PeerPlan:
    """Noisy full-batch gradient descent: T steps of w <- w - eta (grad F(w) + xi_t),
    xi_t ~ N(0, s^2 I) independent, from w_0 = 0; release w_T.

    Each step is the Gaussian mechanism on the mean gradient, whose replace-one
    sensitivity is 2 L1 zeta / n (the ridge term is data-independent given w); the
    release is post-processing of their adaptive composition. s = z (2 L1 zeta / n) with z
    from :func:`calibrate_noise_multiplier` under ``accountant``: ``exact`` (Gaussian DP,
    exact for the composition; the certificate reports delta(epsilon)), ``rdp`` or ``pld``
    (the certificate reports epsilon(delta)). ``eta`` defaults to 1/(mu + L2 zeta^2).
    No last-iterate amplification is claimed.
    """
    loss_obj, n, d, zeta, epsilon, delta = _common(loss, n, d, zeta, epsilon, delta, loss_params)
    T = check_int("iterations", iterations, 1)
    mu_val = check_nonnegative("mu", mu)
    if eta is None:
        eta_val = 1.0 / (mu_val + float(loss_obj.L2) * zeta**2)
    else:
        eta_val = check_positive("eta", eta)
    if accountant not in ACCOUNTANTS:
        raise ParameterError(f"accountant must be one of {ACCOUNTANTS}; got {accountant!r}")
    sens = 2.0 * float(loss_obj.L1) * zeta / n
    z = calibrate_noise_multiplier(epsilon, delta, T, accountant)
    plan = PeerPlan(
        method="noisy_gd",
        **_public(loss_obj, n, d, zeta, epsilon, delta),
        mu=mu_val,
        sigma=z * sens,
        calibration=accountant,
        iterations=T,
        eta=eta_val,
    )
    return _finish(plan)


_PLANNERS = {
    "lop": plan_lop,
    "lop_clip": plan_lop_clip,
    "amp": plan_amp,
    "output_perturbation": plan_output_perturbation,
    "noisy_gd": plan_noisy_gd,
}


def calibrate_peer(
    method: str,
    n: int,
    d: int,
    zeta: float,
    loss: str | Loss,
    epsilon: float,
    delta: float,
    **opts: Any,
) -> PeerPlan:
    """The :class:`PeerPlan` of ``method`` (one of :data:`METHODS`) for target (epsilon, delta).

    ``opts`` are the planner's keyword options (see :func:`plan_lop`, :func:`plan_lop_clip`,
    :func:`plan_amp`, :func:`plan_output_perturbation`, :func:`plan_noisy_gd`), e.g.
    ``mu``, ``tolerance``/``gamma``, ``clip``, ``iterations``, ``accountant``,
    ``calibration``, ``loss_params={"scale": 1.0}``. Unknown options are refused.
    """
    planner = _PLANNERS.get(method)
    if planner is None:
        raise ParameterError(f"method must be one of {METHODS}; got {method!r}")
    try:
        return planner(loss, n=n, d=d, zeta=zeta, epsilon=epsilon, delta=delta, **opts)
    except TypeError as exc:
        raise ParameterError(f"bad option for method {method!r}: {exc}") from None


__all__ = [
    "ACCOUNTANTS",
    "GAUSSIAN_CALIBRATIONS",
    "METHODS",
    "PeerPlan",
    "calibrate_gaussian",
    "calibrate_noise_multiplier",
    "calibrate_peer",
    "certify_peer",
    "classical_gaussian_sigma",
    "default_output_mu",
    "gaussian_delta",
    "gaussian_epsilon",
    "gdp_mu",
    "lop_delta",
    "noisy_gd_delta",
    "noisy_gd_epsilon",
    "output_sensitivity",
    "plan_amp",
    "plan_lop",
    "plan_lop_clip",
    "plan_noisy_gd",
    "plan_output_perturbation",
    "pld_epsilon",
    "rdp_epsilon",
]
