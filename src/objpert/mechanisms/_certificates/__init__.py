"""Certificates and calibration for the peer mechanisms objpert compares against.

Every mechanism here trains a regularised GLM in objpert's *mean* form

    F(w; S) = (1/n) sum_i l(<x_i, w>, y_i) + (mu/2) ||w||^2,   ||x_i|| <= zeta,

with loss constants L1 >= |l'| and L2 >= l'' >= 0 (Assumption 2 of Watkins & Arora 2026),
under replace-one neighbours with n public (the multinomial release: its K-class softmax
analogue). Six mechanisms, each a pure function of public numbers (no data, no
randomness), one module each:

:mod:`.lop`
    Linear objective perturbation, exact minimiser (Chaudhuri, Monteleoni & Sarwate 2011)
    with Gaussian noise, certified by the exact-minimiser privacy profile (Redberg,
    Koskela & Wang 2023, Section 3; :mod:`.redberg`) or the closed form of Kifer, Smith &
    Thakurta (2012, Theorem 2; :mod:`.kifer`) at the replace-one sensitivity
    (:mod:`objpert.certify._neighbours`), by default the tighter of the two.
:mod:`.lop_clip`
    The same with per-sample gradients clipped to norm c (Redberg, Koskela & Wang 2023).
:mod:`.amp`
    Approximate Minima Perturbation (Iyengar et al. 2019, Algorithm 1): LOP solved only to
    gradient norm gamma, plus discrete Gaussian output noise.
:mod:`.output`
    Output perturbation of the regularised minimiser (Chaudhuri et al. 2011, Section 4)
    with discrete Gaussian noise.
:mod:`.multinomial`
    One multinomial (softmax) logistic release for K classes: AMP on the softmax
    cross-entropy, certified by its exact-minimiser profile (rank-(K-1) log-determinant,
    chi-distributed Gaussian ratio; docs/multiclass.md). Its plan is a
    :class:`~.multinomial.MultinomialPlan` (the weights are a matrix).
:mod:`.noisy_gd`
    Noisy full-batch gradient descent with discrete Gaussian gradient noise, accounted by
    zero-concentrated DP (Canonne, Kamath & Steinke 2020, Theorem 14; Bun & Steinke 2016).

The noise: :mod:`objpert.accounting._gaussian_mechanism` (the continuous Gaussian mechanism, Balle &
Wang 2018), :mod:`.discrete` (the grid and the discrete Gaussian); their composition and
conversions are in :mod:`objpert.accounting` (:mod:`~objpert.accounting._conversions`: zCDP
to (epsilon, delta); :mod:`~objpert.accounting._gaussian_steps`: GDP, RDP and PLD
composition of continuous Gaussian steps). The plan: :mod:`.plan` (:class:`PeerPlan`,
:func:`certify_peer` and the builder every planner uses), :mod:`.calibrate` (the dispatch
behind ``objpert.plan``), :mod:`.names` (the option names).

Plans are frozen :class:`PeerPlan` values whose
:class:`~objpert.accounting.Certificate`
is recomputed from the plan's public fields by :func:`certify_peer`; a plan that does not
certify its target is never returned. Each certificate reports the (epsilon, delta) it
actually certifies (at most the target). Noise published added to a value (output
perturbation, AMP's output noise, noisy GD's gradient noise) is discrete, on a public
grid; the objective noise of LOP, LOP-Clip and AMP enters the objective and is never
published added to a value: it stays continuous.
"""

# the peers' privacy-loss events (registered on import)
from objpert.mechanisms._certificates import events as _events  # noqa: F401
from objpert.mechanisms._certificates.amp import DEFAULT_OUTPUT_SHARE, plan_amp
from objpert.mechanisms._certificates.discrete import (
    GRID_BITS,
    GRID_BITS_RANGE,
    calibrate_discrete_gaussian,
    classical_grid_sigma,
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    discrete_gaussian_rho,
    grid_noise,
    grid_sensitivity,
    grid_sigma,
)
from objpert.mechanisms._certificates.kifer import (
    lop_delta,
    lop_mean_form,
    lop_noise,
    lop_regulariser,
)
from objpert.mechanisms._certificates.lop import plan_lop
from objpert.mechanisms._certificates.lop_clip import plan_lop_clip
from objpert.mechanisms._certificates.multinomial import (
    MultinomialPlan,
    chi_profile_delta,
    multinomial_profile,
    plan_multinomial,
)
from objpert.mechanisms._certificates.names import (
    ACCOUNTANTS,
    GAUSSIAN_CALIBRATIONS,
    LOP_ACCOUNTANTS,
    METHODS,
)
from objpert.mechanisms._certificates.noisy_gd import (
    DEFAULT_NOISY_GD_ITERATIONS,
    NOISY_GD_MAX_ITERATIONS,
    plan_noisy_gd,
)
from objpert.mechanisms._certificates.output import (
    default_output_mu,
    output_sensitivity,
    plan_output_perturbation,
)
from objpert.mechanisms._certificates.plan import (
    DEFAULT_MAX_ITER,
    DEFAULT_RELATIVE_TOLERANCE,
    DISCRETE_NOISE,
    PLAN_TYPES,
    AMPPlan,
    LOPClipPlan,
    LOPPlan,
    NoisyGDPlan,
    OutputPerturbationPlan,
    PeerPlan,
    certify_peer,
)
from objpert.mechanisms._certificates.redberg import (
    calibrate_exact_lop,
    exact_lop_constants,
    exact_lop_delta,
    exact_lop_epsilon,
    folded_gaussian_delta,
    pair_delta,
)

__all__ = [
    "ACCOUNTANTS",
    "DEFAULT_MAX_ITER",
    "DEFAULT_NOISY_GD_ITERATIONS",
    "DEFAULT_OUTPUT_SHARE",
    "DEFAULT_RELATIVE_TOLERANCE",
    "DISCRETE_NOISE",
    "GAUSSIAN_CALIBRATIONS",
    "GRID_BITS",
    "GRID_BITS_RANGE",
    "LOP_ACCOUNTANTS",
    "METHODS",
    "NOISY_GD_MAX_ITERATIONS",
    "PLAN_TYPES",
    "AMPPlan",
    "LOPClipPlan",
    "LOPPlan",
    "MultinomialPlan",
    "NoisyGDPlan",
    "OutputPerturbationPlan",
    "PeerPlan",
    "calibrate_discrete_gaussian",
    "calibrate_exact_lop",
    "certify_peer",
    "chi_profile_delta",
    "classical_grid_sigma",
    "default_output_mu",
    "discrete_gaussian_delta",
    "discrete_gaussian_epsilon",
    "discrete_gaussian_rho",
    "exact_lop_constants",
    "exact_lop_delta",
    "exact_lop_epsilon",
    "folded_gaussian_delta",
    "grid_noise",
    "grid_sensitivity",
    "grid_sigma",
    "lop_delta",
    "lop_mean_form",
    "lop_noise",
    "lop_regulariser",
    "multinomial_profile",
    "output_sensitivity",
    "pair_delta",
    "plan_amp",
    "plan_lop",
    "plan_lop_clip",
    "plan_multinomial",
    "plan_noisy_gd",
    "plan_output_perturbation",
]
