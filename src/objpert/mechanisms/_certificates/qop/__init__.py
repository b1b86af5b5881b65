"""Quadratic objective perturbation (QOP): the Wishart calibration of Cortild & Cartis (2026).

The mechanism (``objpert.mechanisms._qop``) releases the minimiser over a convex set C of

    sum_i l(theta; s_i) + r(theta) + (sigma^2 / 2) (theta - theta_ref)^T W (theta - theta_ref),

W = G G^T with G a d x m matrix of iid N(0, 1) entries (a Wishart W_d(m, I) matrix, m >= d).
This package computes sigma^2 and the other public constants from (epsilon, delta), the
dimension d, the Wishart degrees of freedom m, the per-sample smoothness L and the
per-sample Hessian rank rho. Pure mathematics: no data, no randomness.

Source: Cortild & Cartis (2026, arXiv:2605.05905), as their companion code
(``loss_constants.py``) implements it; docs/qop.md restates the formulas, and the
docstrings cite its section names:

* "Calibration of sigma^2": D_m, alpha, alpha1 (:mod:`.wishart`), f2, sigma^2
  (:mod:`.noise`) for (eps, delta1 + delta3)-DP;
* "Inexact solve (output noise)": beta (:mod:`.wishart`), sigma_tilde (:mod:`.noise`),
  total (eps1 + eps2, delta1..4)-DP;
* "Utility bound": expected empirical excess risk, exact and inexact (:mod:`.utility`);
* the plan and its certificate: :mod:`.plan`.

Notation: a = (m - d + 1)/2, P(a, x) the regularised lower incomplete gamma function,
gamma(a, x) = Gamma(a) P(a, x) the unregularised one and gamma^{-1}(y; a) its inverse in x.

Numerics: everything is evaluated in log space (:mod:`.wishart`), so that alpha and alpha1
are finite for d up to 1e4 and beyond. ``m`` may be real (the utility bound is minimised
over it); a plan for a release needs an integer m.

Flags about the authors' formulas
---------------------------------
(i)  alpha = 2 gamma^{-1}(delta3 / D_m; a) is defined on the scale lambda/2 (chi-square
     variables: P(lambda_min(W) < alpha) <= D_m gamma(a, alpha / 2), checked here against
     Monte Carlo in the tests), but the authors' alpha1 evaluates gamma(a, alpha), not
     gamma(a, alpha / 2). ``reading="authors"`` (the default) keeps their formula;
     ``reading="half"`` puts every argument of gamma on the lambda/2 scale,
         alpha1 = 2 gamma^{-1}(delta1 (1 - delta3) / D_m + gamma(a, alpha / 2); a) - alpha,
     i.e. D_m [gamma(a, (alpha + alpha1)/2) - gamma(a, alpha/2)] = delta1 (1 - delta3): the
     Wishart bound on P(alpha <= lambda_min(W) < alpha + alpha1) is exactly
     delta1 (1 - delta3). The authors' alpha1 is the smaller (their sigma^2 the larger,
     so their reading errs on the conservative side), and by far: gamma(a, alpha) dwarfs
     delta1 (1 - delta3) / D_m once d is moderate, so their alpha1 ~ exp(-c d) (about 2e-14
     at d = 100, m = 200, where it is at the level of double rounding in the authors'
     code) and sigma^2 = 2L / alpha1 leaves double range near d ~ 1000; computed here in
     log space (``log_sigma2``), and refused by :func:`qop_plan` when it overflows.
(ii) D_m overflows with Gamma directly (the authors' notebook warns); computed with
     log-gamma here.
(iii) The inexact utility bound carries sigma^2 m (D^2 + eta^2) where the exact one has
     sigma^2 m D^2 / 2: at tau = eta = 0 it does not reduce to the exact bound (factor 2).
     Kept as the authors wrote it.
(iv) sigma_tilde uses the classical Gaussian mechanism factor sqrt(2 log(1.25/delta2))/eps2,
     a theorem for eps2 < 1 only (Dwork & Roth 2014, Theorem A.1); the formula functions
     evaluate it for any eps2 (the authors' Figure 1 does), :func:`qop_plan` refuses
     eps2 >= 1 for a release.
(v)  The output noise is released as a discrete Gaussian on a grid
     (:mod:`objpert.mechanisms._discrete_noise`, scale
     :func:`objpert.mechanisms._certificates.discrete.grid_sigma` (sigma_tilde) >= sigma_tilde),
     not as the continuous Gaussian of the classical theorem: :func:`qop_plan` checks that it
     certifies delta2 at eps2 by Canonne, Kamath & Steinke (2020), Theorem 14 and
     Corollary 13, with sensitivity 2 radius + gamma sqrt(d) (the grid's rounding), and
     refuses the plan otherwise (:func:`output_noise_delta`). The classical factor leaves
     room: for eps2 < 1 the discrete Gaussian's delta is below 5% of delta2 at the
     default grid.
"""

from objpert.mechanisms._certificates.qop.baseline import ReferenceComparison, compare_to_reference
from objpert.mechanisms._certificates.qop.noise import (
    f2,
    log_sigma2,
    output_noise,
    output_noise_delta,
    sigma2,
)
from objpert.mechanisms._certificates.qop.plan import QOPCertificate, QOPPlan, plan_qop, qop_plan
from objpert.mechanisms._certificates.qop.utility import utility_exact, utility_inexact
from objpert.mechanisms._certificates.qop.wishart import (
    READINGS,
    alpha1,
    inverse_lower_gamma,
    log_alpha1,
    log_lower_gamma,
    log_wishart_constant,
    max_eigenvalue_bound,
    min_eigenvalue_bound,
    wishart_constant,
)

__all__ = [
    "READINGS",
    "QOPCertificate",
    "QOPPlan",
    "ReferenceComparison",
    "alpha1",
    "compare_to_reference",
    "f2",
    "inverse_lower_gamma",
    "log_alpha1",
    "log_lower_gamma",
    "log_sigma2",
    "log_wishart_constant",
    "max_eigenvalue_bound",
    "min_eigenvalue_bound",
    "output_noise",
    "output_noise_delta",
    "plan_qop",
    "qop_plan",
    "sigma2",
    "utility_exact",
    "utility_inexact",
    "wishart_constant",
]
