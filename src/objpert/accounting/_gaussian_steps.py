"""Accounting for T composed continuous Gaussian mechanisms: noisy gradient descent's
steps, and DP-SGD's Poisson-subsampled steps (:func:`subsampled_gaussian_epsilon`).

T steps of a Gaussian mechanism with noise multiplier z (std / per-step l2 sensitivity),
adaptively composed, under the accountants of :data:`CONTINUOUS_ACCOUNTANTS`:
Gaussian DP (``gdp``: exact, Dong, Roth & Su 2022, Corollary 3.3), Renyi DP (``rdp``:
Mironov 2017, with the conversion of Canonne, Kamath & Steinke 2020, Proposition 12) and
dp-accounting's privacy loss distributions (``pld``). Continuous noise only: noisy GD's
release adds discrete noise on a grid and is certified by
:mod:`objpert.mechanisms._certificates.discrete`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from objpert._validation import numeric_guard
from objpert.accounting._bisection import smallest_passing
from objpert.accounting._conversions import linear_rdp_epsilon
from objpert.accounting._gaussian_mechanism import (
    calibrate_gaussian,
    gaussian_delta,
    gaussian_epsilon,
)
from objpert.accounting._pld_grid import (
    TRUNCATION,
    check_discretization,
    check_noise_multiplier,
    check_points,
    mechanism_points,
    self_composed_points,
)
from objpert.exceptions import ParameterError

__all__ = [
    "CONTINUOUS_ACCOUNTANTS",
    "SUBSAMPLED_DISCRETIZATION",
    "SUBSAMPLED_MAX_STEPS",
    "SUBSAMPLED_MIN_NOISE",
    "calibrate_noise_multiplier",
    "continuous_accountant",
    "gdp_mu",
    "noisy_gd_delta",
    "noisy_gd_epsilon",
    "pld_epsilon",
    "rdp_epsilon",
    "subsampled_gaussian_epsilon",
    "subsampled_gaussian_pld",
]

#: Accountants of T composed continuous Gaussian mechanisms: ``gdp``, Gaussian DP
#: (Dong, Roth & Su 2022, Corollary 3.3; exact); ``rdp``, Renyi DP (Mironov 2017);
#: ``pld``, dp-accounting's privacy loss distributions.
CONTINUOUS_ACCOUNTANTS = ("gdp", "rdp", "pld")


def continuous_accountant(value: str) -> str:
    """``value`` as one of :data:`CONTINUOUS_ACCOUNTANTS`."""
    if not isinstance(value, str) or value not in CONTINUOUS_ACCOUNTANTS:
        raise ParameterError(f"accountant must be one of {CONTINUOUS_ACCOUNTANTS}; got {value!r}")
    return value


def gdp_mu(iterations: int, noise_multiplier: float) -> float:
    """mu-GDP of T Gaussian mechanisms with noise multiplier z (std / sensitivity):
    sqrt(T) / z (Dong, Roth & Su 2022, Theorem 2.7 and Corollary 3.3; exact for the
    adaptive composition of Gaussian mechanisms)."""
    T = int(iterations)
    z = noise_multiplier
    return math.sqrt(T) / z


def noisy_gd_delta(epsilon: float, iterations: int, noise_multiplier: float) -> float:
    """Exact delta(epsilon) of T composed Gaussian mechanisms with multiplier z (``gdp``).

    Composing T Gaussian mechanisms of sensitivity G and std s is the Gaussian mechanism
    of sensitivity sqrt(T) G and std s (its privacy-loss random variable is the sum of T
    independent Gaussians; Dong et al. 2022, Corollary 3.3), so delta(epsilon) =
    delta_G(epsilon) with G/sigma = sqrt(T)/z. For T = 1 this is the single Gaussian
    mechanism's profile.
    """
    T = int(iterations)
    z = noise_multiplier
    return gaussian_delta(epsilon, math.sqrt(T), z)


def rdp_epsilon(
    delta: float,
    iterations: int,
    noise_multiplier: float,
    orders: Iterable[float] | None = None,
) -> tuple[float, float]:
    """(epsilon, order) from the RDP of T composed Gaussian mechanisms.

    The Gaussian mechanism with multiplier z is (alpha, alpha / (2 z^2))-RDP for all
    alpha > 1 (Mironov 2017, Proposition 7); T-fold composition adds (Proposition 1):
    rho(alpha) = T alpha / (2 z^2). Conversion to (epsilon, delta)-DP (Canonne, Kamath &
    Steinke 2020, Proposition 12; Balle et al. 2020, Theorem 21; Asoodeh et al. 2020):

        epsilon = min_alpha rho(alpha) + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1)

    (:func:`~objpert.accounting._conversions.linear_rdp_epsilon`; ``orders`` as there).
    """
    T = int(iterations)
    z = noise_multiplier
    zz = z * z  # underflows to 0 for z below ~1e-154: an infinite divergence
    return linear_rdp_epsilon(T / (2.0 * zz) if zz > 0.0 else math.inf, delta, orders)


def pld_epsilon(
    delta: float, iterations: int, noise_multiplier: float, discretization: float = 1e-4
) -> float:
    """epsilon from dp-accounting's PLD accountant (pessimistic discretisation) for T
    composed Gaussian mechanisms with multiplier z. Needs the optional package
    ``dp-accounting``."""
    T = int(iterations)
    z = check_noise_multiplier(noise_multiplier)
    disc = check_discretization(discretization)
    try:
        import dp_accounting
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:  # pragma: no cover - depends on the environment
        raise ParameterError(
            "accountant='pld' needs the optional package dp-accounting "
            "(pip install 'dp-accounting>=0.6'); use accountant='gdp'"
        ) from None
    # the accountant builds one Gaussian PLD of std z / sqrt(T) (Dong, Roth & Su 2022, Cor. 3.3)
    grid = mechanism_points("gaussian", z / math.sqrt(T), 1.0, disc)
    check_points(grid, f"{T} Gaussian mechanisms of noise multiplier {z:g}", disc)
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=disc)
    acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), T))
    return float(acc.get_epsilon(delta))


def noisy_gd_epsilon(
    delta: float, iterations: int, noise_multiplier: float, accountant: str = "gdp"
) -> float:
    """epsilon at ``delta`` for T composed Gaussian mechanisms under ``accountant``:
    ``gdp`` (the inverse of :func:`noisy_gd_delta`), ``rdp`` (:func:`rdp_epsilon`) or
    ``pld`` (:func:`pld_epsilon`)."""
    name = continuous_accountant(accountant)
    if name == "gdp":
        return gaussian_epsilon(delta, math.sqrt(iterations), noise_multiplier)
    if name == "rdp":
        return rdp_epsilon(delta, iterations, noise_multiplier)[0]
    return pld_epsilon(delta, iterations, noise_multiplier)


@numeric_guard
def calibrate_noise_multiplier(
    epsilon: float, delta: float, iterations: int, accountant: str = "gdp"
) -> float:
    """The smallest noise multiplier z (std / per-step sensitivity) for which T composed
    Gaussian mechanisms are (epsilon, delta)-DP under ``accountant`` (bisection; each
    accountant is monotone in z). ``gdp``: the analytic Gaussian calibration at
    sensitivity sqrt(T) (:func:`~objpert.accounting._gaussian_mechanism.calibrate_gaussian`)."""
    T = int(iterations)
    name = continuous_accountant(accountant)
    if name == "gdp":
        return calibrate_gaussian(math.sqrt(T), epsilon, delta)

    def ok(z: float) -> bool:
        try:
            return noisy_gd_epsilon(delta, T, z, name) <= epsilon
        except ParameterError:  # the arguments are valid: only a PLD too large to build
            return False  # is refused, at a z too small (more noise is never less private)

    rtol = 1e-12 if name == "rdp" else 1e-6  # the PLD accountant is slow and discretised
    return smallest_passing(ok, max(1.0, math.sqrt(T) / epsilon), limit=None, rtol=rtol)


#: The most subsampled steps accounted (the privacy loss distribution is composed T times).
SUBSAMPLED_MAX_STEPS = 10**6
#: Default discretisation interval of the privacy loss (pessimistic: an upper bound).
SUBSAMPLED_DISCRETIZATION = 1e-3
#: Noise multipliers below this are not accounted (their privacy loss distributions are
#: too large to evaluate; at z = 1/4 a single step already costs epsilon > 50).
SUBSAMPLED_MIN_NOISE = 0.25


def _dp_accounting() -> Any:
    try:
        import dp_accounting
    except ImportError:  # pragma: no cover - depends on the environment
        raise ParameterError(
            "this accountant needs the optional package dp-accounting "
            "(pip install 'dp-accounting>=0.6')"
        ) from None
    return dp_accounting


def subsampled_gaussian_epsilon(
    delta: float,
    iterations: int,
    sampling_rate: float,
    noise_multiplier: float,
    discretization: float = SUBSAMPLED_DISCRETIZATION,
) -> float:
    """epsilon at ``delta`` of T composed Poisson-subsampled Gaussian mechanisms (rate q,
    noise multiplier z) under replace-one neighbours: the T-fold self-composition of
    dp-accounting's privacy loss distribution (pessimistic connect-the-dots
    discretisation, an upper bound). Needs the optional package ``dp-accounting``."""
    T = int(iterations)
    if T > SUBSAMPLED_MAX_STEPS:  # a compute limit, not an argument check
        raise ParameterError(
            f"iterations must be at most {SUBSAMPLED_MAX_STEPS} (the steps accounted); got {T}"
        )
    disc = check_discretization(discretization)
    pld = subsampled_gaussian_pld(noise_multiplier, sampling_rate, disc)
    what = f"{T} steps of DP-SGD at noise multiplier {noise_multiplier:g}"
    check_points(self_composed_points(pld, T), what, disc)
    return float(pld.self_compose(T, TRUNCATION).get_epsilon_for_delta(delta))


def subsampled_gaussian_pld(
    noise_multiplier: float,
    sampling_rate: float,
    discretization: float = SUBSAMPLED_DISCRETIZATION,
) -> Any:
    """dp-accounting's pessimistic privacy loss distribution of one Poisson-subsampled
    Gaussian mechanism (rate q, noise multiplier z) under replace-one neighbours (Zhu, Dong
    & Wang 2022; ``NeighboringRelation.REPLACE_ONE``)."""
    q = sampling_rate
    if q > 1.0:
        raise ParameterError(f"sampling_rate must be in (0, 1]; got {q!r}")
    z = check_noise_multiplier(noise_multiplier, SUBSAMPLED_MIN_NOISE)
    disc = check_discretization(discretization)
    dpa = _dp_accounting()
    from dp_accounting.pld import privacy_loss_distribution

    # replace-one: a remove and an add loss, each within the unsubsampled Gaussian's range
    what = f"DP-SGD at noise multiplier {z:g}"
    check_points(2.0 * mechanism_points("gaussian", z, 1.0, disc), what, disc)
    return privacy_loss_distribution.from_gaussian_mechanism(
        z,
        sampling_prob=q,
        value_discretization_interval=disc,
        neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE,
    )
