"""The privacy profile of Gaussian objective perturbation's exact minimiser for GLMs.

Redberg, Koskela & Wang (2023, Section 3: the privacy-profile analysis of objective
perturbation; Example 3.4 for the linear loss). Sum form: release the exact minimiser of
J_S(theta) = sum_i l(<x_i, theta>, y_i) + (lambda/2) ||theta||^2 + <b, theta>,
b ~ N(0, s^2 I), unconstrained. The first-order condition b = -grad(J_S - <b, .>)(theta)
is a bijection, so the release has density phi_s(b_S(theta)) det(H_S(theta) + lambda I)
and the privacy loss at theta splits into a Gaussian ratio and a log-determinant ratio.

For objpert's replace-one neighbours (:mod:`objpert.certify._neighbours`)
S = S0 + {(x, y)}, S' = S0 + {(x', y')} with
||x||, ||x'|| <= zeta, |l'| <= g / zeta and 0 <= l'' <= beta / zeta^2:

* the log-determinant ratio is (1 + a x^T A^-1 x) / (1 + a' x'^T A^-1 x') with
  A >= lambda I (matrix determinant lemma), so its absolute log is at most
  c0 = log(1 + beta / lambda);
* with b = b_S(theta) ~ N(0, s^2 I) and the gradient difference
  v = l'(x) x - l'(x') x', the Gaussian ratio is (2 <b, v> + ||v||^2) / (2 s^2), convex in
  the two derivatives, so at most its largest value over the corners |l'| = g / zeta (a
  row shorter than zeta acts as a smaller box of derivatives at full norm). For
  collinear x, x' this is (Delta^2 + 2 Delta |W|) / (2 s^2), W ~ N(0, s^2), at the
  replace-one sensitivity Delta = 2 g
  (:func:`~objpert.certify.replace_one_sensitivity`):
  the folded Gaussian of Redberg et al. (2023); for x, x' at an angle it is the larger of
  two independent folded Gaussians with sensitivities Delta cos(psi/2), Delta sin(psi/2)
  (psi the angle between x and x'), whose
  profile :func:`pair_delta` evaluates: numerically never above the collinear one (checked
  on a grid of t, epsilon, c0 and angles in ``tests/certify/test_exact_lop.py``).

The pointwise bound on the privacy loss bounds the privacy profile (the hockey-stick
divergence of Balle, Barthe & Gaboardi 2018) written as an expectation under the first
dataset's release, delta(epsilon) = E[(1 - exp(epsilon - loss))_+], since the integrand
increases in the loss; so with t = Delta / s and Z ~ N(0, 1)

    delta(epsilon) = E[(1 - exp(epsilon - c0 - t^2/2 - t |Z|))_+]
                   = 2 delta_G(epsilon - c0; t)            if epsilon - c0 >= t^2 / 2,
                   = 1 - 2 exp(epsilon - c0) Q(t)           otherwise,

delta_G the Gaussian mechanism's profile at sensitivity t and unit noise (Dong, Roth & Su
2022, Corollary 2.13); the two branches are those of the reference implementation
``compute_delta`` of Redberg et al. In objpert's mean form F + <z, w>, z ~ N(0, sigma^2 I)
(the sum form divided by n): t = 2 g / (n sigma) = G / sigma and c0 = log(1 + L2 zeta^2 /
(n mu)), the same G and Jacobian term as Watkins & Arora (2026, Example 4.8).
"""

from __future__ import annotations

import itertools
import math
import warnings

from objpert._special import log_q
from objpert._validation import check_computed, numeric_guard
from objpert.accounting._bisection import smallest_passing
from objpert.accounting._gaussian_mechanism import gaussian_profile
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.exceptions import ParameterError, UnreachableTargetError

__all__ = [
    "calibrate_exact_lop",
    "exact_lop_constants",
    "exact_lop_delta",
    "exact_lop_epsilon",
    "folded_gaussian_delta",
    "pair_delta",
]


@numeric_guard
def folded_gaussian_delta(epsilon: float, ratio: float, log_det: float = 0.0) -> float:
    """delta(epsilon) = E[(1 - exp(epsilon - c0 - t^2/2 - t|Z|))_+], Z ~ N(0, 1), t =
    ``ratio`` (sensitivity over noise std), c0 = ``log_det`` (Redberg et al. 2023,
    Section 3; closed form in the module docstring)."""
    shifted = epsilon - log_det
    t = ratio
    if shifted >= 0.5 * t * t:
        return min(1.0, 2.0 * float(gaussian_profile(shifted, t, 1.0)))
    value = -math.expm1(math.log(2.0) + shifted + float(log_q(t)))
    return min(1.0, max(0.0, value))


def exact_lop_constants(
    n: int, grad_bound: float, smoothness: float, mu: float, sigma: float
) -> tuple[float, float]:
    """(t, c0) of the mean form: t = 2 g / (n sigma) (the replace-one gradient sensitivity
    G over sigma) and c0 = log(1 + L2 zeta^2 / (n mu)) (the log-determinant bound)."""
    g, beta = grad_bound, smoothness
    why = f"grad_bound {g:g} over n sigma = {n:g} x {sigma:g}"
    sens = replace_one_sensitivity(g)
    t = check_computed("the sensitivity ratio t = 2 g / (n sigma)", sens / (n * sigma), why)
    c0 = math.log1p(beta / (n * mu))
    if not math.isfinite(c0):
        raise ParameterError(
            f"c0 = log(1 + smoothness / (n mu)) is outside the float64 range: mu = {mu:g} is "
            f"too small for smoothness {beta:g} and n = {n}"
        )
    return t, c0


def exact_lop_delta(
    n: int, grad_bound: float, smoothness: float, mu: float, sigma: float, epsilon: float
) -> float:
    """delta(epsilon) of the exact minimiser of F + <z, w>, z ~ N(0, sigma^2 I), mean form,
    per-sample gradient bound g and Hessian bound L2 zeta^2 (Redberg et al. 2023, Section 3;
    :func:`folded_gaussian_delta` at :func:`exact_lop_constants`)."""
    t, c0 = exact_lop_constants(n, grad_bound, smoothness, mu, sigma)
    return folded_gaussian_delta(epsilon, t, c0)


@numeric_guard
def exact_lop_epsilon(
    n: int, grad_bound: float, smoothness: float, mu: float, sigma: float, delta: float
) -> float:
    """The smallest epsilon >= 0 with :func:`exact_lop_delta` <= delta (the profile
    decreases in epsilon; bisection, the returned epsilon passes as computed)."""

    def ok(e: float) -> bool:
        return exact_lop_delta(n, grad_bound, smoothness, mu, sigma, e) <= delta

    if ok(0.0):
        return 0.0
    return smallest_passing(ok, 1.0, limit=1e12, unreachable="no finite epsilon reaches this delta")


@numeric_guard
def calibrate_exact_lop(
    n: int, grad_bound: float, smoothness: float, mu: float, epsilon: float, delta: float
) -> float:
    """The smallest sigma (to rounding) with :func:`exact_lop_delta` <= delta at epsilon.

    The profile increases in t = G / sigma (the loss c0 + t^2/2 + t|Z| increases in t for
    every Z), so the test is monotone in sigma and bisection
    (:func:`~.bisection.smallest_passing`) is exact up to rounding. Unreachable when
    1 - exp(epsilon - c0) > delta (the limit sigma -> infinity).
    """
    _, c0 = exact_lop_constants(n, grad_bound, smoothness, mu, 1.0)
    if c0 > epsilon and -math.expm1(epsilon - c0) >= delta:
        raise UnreachableTargetError(
            f"log(1 + L2 zeta^2 / (n mu)) = {c0:.6g} leaves delta >= "
            f"{-math.expm1(epsilon - c0):.3g} at epsilon = {epsilon:g} for every sigma: raise mu"
        )

    def ok(s: float) -> bool:
        return exact_lop_delta(n, grad_bound, smoothness, mu, s, epsilon) <= delta

    start = replace_one_sensitivity(grad_bound) / n
    return smallest_passing(
        ok, start, unreachable=f"no sigma certifies (epsilon={epsilon:g}, delta={delta:g})"
    )


def pair_delta(epsilon: float, ratio: float, angle: float, log_det: float = 0.0) -> float:
    """The profile of the replace-one bound for two features at ``angle`` psi in [0, pi].

    The corners of the Gaussian ratio are +-(x + x') and +-(x - x'), along orthogonal
    directions of norms 2 zeta cos(psi/2) and 2 zeta sin(psi/2), so the bound on the loss
    is c0 + max(Y1, Y2), Y_i = t_i^2/2 + t_i |Z_i| independent, t_1 = t cos(psi/2),
    t_2 = t sin(psi/2) (psi = 0 or pi: collinear features, :func:`folded_gaussian_delta`).
    Evaluated as integral_epsilon^inf e^(epsilon - y) P(c0 + max(Y1, Y2) > y) dy by
    quadrature."""
    from scipy import integrate

    eps, t, c0, half = epsilon, ratio, log_det, 0.5 * angle
    parts = [p for p in (t * math.cos(half), t * math.sin(half)) if p > 0.0]

    def below(y: float, ti: float) -> float:  # P(c0 + t_i^2/2 + t_i |Z| <= y)
        r = (y - c0 - 0.5 * ti * ti) / ti
        return 0.0 if r <= 0.0 else 1.0 - 2.0 * math.exp(float(log_q(r)))

    def integrand(y: float) -> float:
        return math.exp(eps - y) * (1.0 - math.prod(below(y, ti) for ti in parts))

    # e^(epsilon - y) falls by e^-80 over [epsilon, epsilon + 80]: knots there, so that a
    # far second knot (t^2 / 2 of a large t) does not hide that mass from the quadrature
    near = (eps + 1.0, eps + 10.0, eps + 80.0)
    knots = sorted({eps, *near, *(max(eps, c0 + 0.5 * ti * ti) for ti in parts)})
    knots.append(knots[-1] + 80.0 + 40.0 * t * (t + 1.0))
    if not math.isfinite(knots[-1]):
        raise ParameterError(
            f"pair_delta: epsilon {eps:g} and ratio {t:g} put the privacy loss beyond the "
            "float64 range (t^2 / 2 overflows)"
        )
    with warnings.catch_warnings():  # roundoff notices where the tail is ~1e-300
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        total = sum(
            integrate.quad(integrand, a, b, limit=400, epsabs=0.0, epsrel=1e-10)[0]
            for a, b in itertools.pairwise(knots)
            if b > a
        )
    return min(1.0, max(0.0, float(total)))
