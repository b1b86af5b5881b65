"""Privacy-loss distributions (PLDs) of single releases, and their composition.

Each release becomes a *pessimistic* PLD of dp-accounting (Google's ``dp-accounting``,
the optional extra ``objpert[accounting]``): a discrete distribution whose hockey-stick
divergence is at least the release's at every epsilon, so that composing PLDs (the
convolution of Koskela, Jaelkoe & Honkela 2020; Meiser & Mohammadi 2018) over-states the
joint privacy loss, never under-states it.

- Watkins & Arora (2026) releases and zCDP releases: the tight dominating pair of their
  privacy profile (:mod:`objpert.accounting._profiles`): the profile extended to negative
  epsilon by the symmetry of the replace-one relation (Zhu, Dong & Wang 2022), made
  convex in e^epsilon (:func:`~objpert.accounting._profiles.convex_envelope`), discretised
  by pessimistic connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
  Algorithm 1) on the grid epsilon_i = i * discretization, negative privacy losses
  included (:func:`_profile_pld`); the mass left at the grid's end (delta <= :data:`TAIL`)
  is put at +infinity.
- Gaussian and Laplace mechanisms, and DP-SGD's Poisson-subsampled Gaussian steps:
  dp-accounting's own PLDs (connect-the-dots, pessimistic).
- Any other (epsilon, delta)-DP release: the pessimistic PLD of the point (Koskela et al.
  2020; dp-accounting's ``from_privacy_parameters``), which composes like the optimal
  composition of (epsilon, delta)-DP releases.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from objpert._validation import check_nonnegative, check_open_unit, validated
from objpert.accounting import _profiles as profiles
from objpert.accounting._certificate import Certificate
from objpert.accounting._events import (
    PrivacyLoss,
    gaussian,
    laplace,
    point,
    register_event,
    zcdp,
)
from objpert.accounting._plan import Plan
from objpert.accounting._pld_grid import (
    MAX_NOISE_MULTIPLIER,
    MAX_POINTS,
    TRUNCATION,
    check_discretization,
    check_points,
    infinity_mass,
    mechanism_points,
    self_composed_points,
)
from objpert.accounting._pld_grid import points as pld_points
from objpert.exceptions import ParameterError, PrivacyError

__all__ = [
    "DEFAULT_DISCRETIZATION",
    "KINDS",
    "MAX_POINTS",
    "TAIL",
    "PrivacyLoss",
    "available",
    "check_discretization",
    "check_same_unit",
    "compose",
    "delta_for_epsilon",
    "distribution",
    "epsilon_for_delta",
    "from_certificate",
    "from_plan",
    "gaussian",
    "laplace",
    "one_row_profile",
    "point",
    "register_profile",
    "zcdp",
]

#: The privacy-loss grid step of every PLD (PLDs compose only on a common grid).
DEFAULT_DISCRETIZATION = 1e-3
#: A profile's grid ends where delta(epsilon) <= TAIL; that mass goes to +infinity.
TAIL = 1e-16
_MAX_EPSILON = 64.0  # nor beyond this epsilon (the rest of the profile goes to +infinity)
#: The largest epsilon of a point's PLD (dp-accounting's construction computes exp(epsilon),
#: which overflows beyond 709.78).
_MAX_POINT_EPSILON = 700.0
_ZCDP_POINTS = 8192  # zCDP profiles: delta at up to this many grid points (vectorised)
_ROUNDING = 1e-13  # per grid point: the rounding a dominating pair's mass at 0 may show

KINDS = (
    "watkins_arora", "limit", "objective", "gaussian", "laplace", "subsampled_gaussian", "zcdp",
    "point", "group",
)  # fmt: skip


def available() -> bool:
    """Whether dp-accounting can be imported (the ``accounting`` extra)."""
    try:
        import dp_accounting.pld  # noqa: F401
    except ImportError:
        return False
    return True


def _dp():
    try:
        from dp_accounting import pld
        from dp_accounting.pld import common, pld_pmf, privacy_loss_distribution
    except ImportError:  # pragma: no cover - depends on the environment
        raise ParameterError(
            "PLD accounting needs the optional package dp-accounting: "
            "pip install 'objpert[accounting]'"
        ) from None
    del pld
    return privacy_loss_distribution, pld_pmf, common


#: Event kind -> its profile delta(epsilon) from the event's public parameters, registered
#: by the layer that proves it (:mod:`objpert.certify._profile`). Accounting turns the
#: profiles into numbers; it proves none of them.
_PROFILES: dict[str, Callable[[dict[str, Any]], Callable[[np.ndarray], np.ndarray]]] = {}


def register_profile(
    kind: str,
    forms: tuple[str, ...],
    event: Callable[[Any, Any], PrivacyLoss],
    profile: Callable[[dict[str, Any]], Callable[[np.ndarray], np.ndarray]],
) -> None:
    """Register the privacy profile of the releases whose certificates have one of
    ``forms``: ``event(certificate, radius)`` their privacy loss of kind ``kind``,
    ``profile(parameters)`` its delta(epsilon), non-increasing, in [0, 1]."""
    register_event(forms, event)
    _PROFILES[kind] = profile


def distribution(loss: PrivacyLoss, discretization: float = DEFAULT_DISCRETIZATION) -> Any:
    """The pessimistic PLD of all ``count`` copies (a dp-accounting object): K Gaussian
    mechanisms of std sigma are one of std sigma / sqrt(K) (Dong, Roth & Su 2022,
    Corollary 3.3), any other release is self-composed."""
    step = check_discretization(discretization)
    if loss.kind == "gaussian" and loss.count > 1:  # K Gaussians are one (exactly)
        p = dict(loss.parameters)
        merged = (
            ("sigma", p["sigma"] / math.sqrt(loss.count)),
            ("sensitivity", p["sensitivity"]),
        )
        return _single_pld("gaussian", merged, step)
    single = _single_pld(loss.kind, loss.parameters, step)
    if loss.count == 1 or infinity_mass(single) >= 1.0:
        return single  # a release with no guarantee composes to one with none
    if 1.0 - infinity_mass(single) <= TRUNCATION:  # dp-accounting's truncation would drop
        return _single_pld("point", (("epsilon", 0.0), ("delta", 1.0)), step)  # all of it
    what = f"{loss.count} {loss.kind} releases"
    check_points(self_composed_points(single, loss.count), what, step)
    return single.self_compose(loss.count, TRUNCATION)


def from_certificate(cert: Any, *, radius: tuple[float, float] | None = None) -> PrivacyLoss:
    """The privacy loss of a release from its certificate (:meth:`Certificate.privacy_loss`).

    A Watkins & Arora certificate (forms ``c13``, ``theorem41``, ``limit``) gives its
    whole profile, from constants re-derived from the loss registry; its own radius is
    read from the certificate (or ``radius``). Another certified certificate (a peer's)
    gives its (epsilon, delta) point. An uncertified one is refused (:class:`PrivacyError`).
    """
    if not isinstance(cert, Certificate):
        raise ParameterError(f"expected a certificate; got {type(cert).__name__}")
    if not cert.certified:
        raise PrivacyError("an uncertified release has no privacy guarantee to account for")
    return cert.privacy_loss() if radius is None else cert.privacy_loss(radius=radius)


def from_plan(plan: Any) -> PrivacyLoss:
    """The privacy loss of a plan's release (:meth:`Plan.privacy_loss`: a Watkins & Arora
    plan is re-derived first, constants from the loss and certificate recomputed)."""
    if not isinstance(plan, Plan):
        raise ParameterError(f"expected a plan or a certificate; got {type(plan).__name__}")
    return plan.privacy_loss()


def _connect_dots(epsilons: np.ndarray, deltas: np.ndarray, discretization: float) -> Any:
    """dp-accounting's pessimistic connect-the-dots PMF (Doroshenko et al. 2022,
    Algorithm 1) of a convex, non-increasing hockey-stick curve given at grid points
    (multiples of the discretization, increasing): masses at the epsilons and the last
    delta at +infinity; its delta interpolates the curve linearly in e^epsilon."""
    _, pmf, _ = _dp()
    rounded = np.rint(np.asarray(epsilons) / discretization).astype(np.int64)
    if rounded.size == 1 or np.all(np.diff(rounded) == 1):
        return pmf.create_pmf_pessimistic_connect_dots_fixed_gap(
            discretization, int(rounded[0]), int(rounded[-1]), deltas
        )
    return pmf.create_pmf_pessimistic_connect_dots(discretization, rounded, deltas)


def _profile_pld(epsilons: np.ndarray, deltas: np.ndarray, discretization: float) -> Any:
    """The tight dominating pair of a profile given on grid points (multiples of the
    discretization, increasing from 0), as a pessimistic PLD with negative privacy losses.

    1. The profile is extended to -epsilon_i by the symmetry of the neighbouring relation
       (:func:`~objpert.accounting._profiles.symmetric_extension`) and its greatest convex
       minorant in e^epsilon is taken over the whole grid
       (:func:`~objpert.accounting._profiles.convex_envelope`): a curve H with H(0) = 1,
       convex, H(alpha) = 1 - alpha + alpha H(1/alpha), above the release's hockey-stick
       divergence at every alpha = e^epsilon > 0.
    2. Connect-the-dots on epsilon_i >= 0 (Doroshenko et al. 2022, Algorithm 1) gives the
       masses w_i at epsilon_i > 0 and w_inf = H(e^epsilon_n) at +infinity, the PLD whose
       delta is H interpolated linearly in e^epsilon at every epsilon >= 0.
    3. The negative losses mirror them, w(-epsilon_i) = e^-epsilon_i w_i (the PLD of a
       symmetric pair: P(L = -l) = e^-l P(L = l)), and w_0 = 1 - w_inf - sum_i w_i
       (1 + e^-epsilon_i) >= 0 (convexity of H at alpha = 1) is the mass at 0. Then
       E[e^-L] = 1 - w_inf <= 1, so w is the privacy-loss distribution of a pair (P, Q)
       (Q puts w_inf where P is 0), and its delta at -e is 1 - e^-e + e^-e delta(e): the
       mirror of step 1, above the release's divergence at every negative epsilon too.

    So (P, Q) dominates the release at every alpha >= 0 (Zhu, Dong & Wang 2022, Section 3),
    and K dominating pairs compose to a dominating pair of the K-fold (adaptive)
    composition (their Theorem 10), whose PLD is the convolution of the w
    (docs/accounting.md has the argument). The mirrored masses are computed from the
    positive ones, never as differences of deltas near 1, so E[e^-L] <= 1 holds in floating
    point too.
    """
    dist, pmf, _ = _dp()
    grid, mirrored = profiles.symmetric_extension(epsilons, deltas)
    env = profiles.convex_envelope(grid, mirrored)[epsilons.size - 1 :]  # epsilon >= 0
    dense = _connect_dots(epsilons, env, discretization).to_dense_pmf()
    # dp-accounting keeps its arrays in these attributes
    positive, inf_mass = np.asarray(dense._probs, dtype=float), float(dense._infinity_mass)
    if dense._lower_loss != 0:
        raise ParameterError("a profile's grid must start at epsilon = 0")
    weights = np.exp(-discretization * np.arange(positive.size))  # e^-epsilon on the grid
    at_zero = 1.0 - inf_mass - float(np.sum(positive[1:] * (1.0 + weights[1:])))
    # H is convex at alpha = 1 by step 1: only rounding can get here, which grows with the
    # grid's points (a group's profile near 1 up to epsilon ~ 40: alpha spans e^40)
    if at_zero < -max(1e-9, _ROUNDING * positive.size):
        raise PrivacyError(
            f"the profile's dominating pair has mass {at_zero:.3g} at privacy loss 0; the "
            "profile is not a hockey-stick curve"
        )
    probs = np.concatenate([positive[:0:-1] * weights[:0:-1], [max(at_zero, 0.0)], positive[1:]])
    return dist.PrivacyLossDistribution(
        pmf.DensePLDPmf(discretization, 1 - positive.size, probs, inf_mass, True)
    )


def _grid_end(profile: Any, discretization: float) -> float:
    """The smallest grid epsilon (doubling) with profile <= TAIL, at most _MAX_EPSILON."""
    eps = max(discretization, 1e-2)
    while eps < _MAX_EPSILON and float(profile(np.array([eps]))[0]) > TAIL:
        eps *= 2.0
    return min(eps, _MAX_EPSILON)


@functools.lru_cache(maxsize=128)
def _single_pld(kind: str, parameters: tuple[tuple[str, Any], ...], discretization: float):
    dist, _, common = _dp()
    p = dict(parameters)
    if kind in ("gaussian", "laplace"):
        what = f"a {kind} mechanism of sensitivity {p['sensitivity']:g}"
        # the privacy loss depends on noise / sensitivity alone: built at sensitivity 1, so
        # that neither is squared past the float64 range inside dp-accounting
        z = (p["sigma"] if kind == "gaussian" else p["scale"]) / p["sensitivity"]
        if not z <= MAX_NOISE_MULTIPLIER:
            raise ParameterError(
                f"the PLD of {what}: noise / sensitivity = {z:g} exceeds "
                f"{MAX_NOISE_MULTIPLIER:g} (privacy losses below double-precision resolution)"
            )
        check_points(mechanism_points(kind, z, 1.0, discretization), what, discretization)
        build = dist.from_gaussian_mechanism if kind == "gaussian" else dist.from_laplace_mechanism
        return build(z, sensitivity=1.0, value_discretization_interval=discretization)
    if kind == "subsampled_gaussian":
        from objpert.accounting._gaussian_steps import subsampled_gaussian_pld

        return subsampled_gaussian_pld(p["noise_multiplier"], p["sampling_rate"], discretization)
    if kind == "point":
        eps, what = p["epsilon"], f"an ({p['epsilon']:g}, {p['delta']:.3g})-DP release"
        if eps > _MAX_POINT_EPSILON:
            raise ParameterError(
                f"the PLD of {what} needs epsilon <= {_MAX_POINT_EPSILON:g} (dp-accounting "
                "computes exp(epsilon)); a larger epsilon is no meaningful guarantee"
            )
        check_points(2 * math.ceil(eps / discretization) + 1, what, discretization)
        params = common.DifferentialPrivacyParameters(p["epsilon"], p["delta"])
        return dist.from_privacy_parameters(params, value_discretization_interval=discretization)
    if kind == "zcdp":
        end = _grid_end(lambda e: profiles.zcdp_profile(p["rho"], e), discretization)
        steps = math.ceil(end / discretization)
        check_points(2 * steps + 1, f"a {p['rho']:g}-zCDP release", discretization)
        idx = np.unique(np.rint(np.linspace(0, steps, _ZCDP_POINTS)).astype(np.int64))
        eps = idx * discretization
        return _profile_pld(eps, profiles.zcdp_profile(p["rho"], eps), discretization)
    if kind == "group":  # the chain bound on the base release's profile (_group)
        profile = _group_profile(p["base"], p["rows"], discretization)
    elif kind not in _PROFILES:
        raise ParameterError(f"unknown privacy-loss kind {kind!r}; expected one of {KINDS}")
    else:
        profile = _PROFILES[kind](p)
    end = _grid_end(profile, discretization)
    check_points(2 * math.ceil(end / discretization) + 1, f"a {kind} release", discretization)
    eps = np.arange(math.ceil(end / discretization) + 1) * discretization
    return _profile_pld(eps, profile(eps), discretization)


def one_row_profile(loss: PrivacyLoss) -> Callable[[np.ndarray], np.ndarray]:
    """delta(epsilon) of one release of ``loss`` (its count ignored): a registered profile,
    zCDP's, a subsampled Gaussian step's (its PLD's), or the tight pair of an (epsilon,
    delta) point."""
    from objpert.accounting._group import point_profile

    p = dict(loss.parameters)
    if loss.kind == "point":
        return lambda e: point_profile(p["epsilon"], p["delta"], e)
    if loss.kind == "zcdp":
        return lambda e: profiles.zcdp_profile(p["rho"], e)
    if loss.kind == "subsampled_gaussian":
        one = _single_pld(loss.kind, loss.parameters, DEFAULT_DISCRETIZATION)

        def step(e: Any) -> np.ndarray:  # dp-accounting reads sorted epsilons only
            e = np.asarray(e, dtype=float)
            order = np.argsort(e.ravel(), kind="stable")
            out = np.empty(e.size)
            out[order] = one.get_delta_for_epsilon(e.ravel()[order])
            return np.minimum(out, 1.0).reshape(e.shape)

        return step
    if loss.kind not in _PROFILES:
        raise ParameterError(f"no privacy profile is known for a {loss.kind!r} release")
    return _PROFILES[loss.kind](p)


def _group_profile(base: PrivacyLoss, rows: int, discretization: float) -> Any:
    """The chain bound of ``rows`` rows on the profile of ``base``
    (:func:`objpert.accounting._group.group_profile_function`), up to where the base's
    profile is below :data:`TAIL`."""
    from objpert.accounting._group import group_profile_function

    profile = one_row_profile(base)
    if base.kind == "point":  # flat beyond its epsilon: the chain's best split is there
        point_epsilon = dict(base.parameters)["epsilon"]
        return group_profile_function(rows, profile, max(point_epsilon, discretization))
    end = _grid_end(profile, discretization)
    probe = np.linspace(0.0, end, 4097)  # where the profile stops falling (a point's: at e)
    values = profile(probe)
    flat = int(np.argmax(values <= values[-1] * (1.0 + 1e-12)))
    return group_profile_function(rows, profile, float(probe[max(flat, 1)]))


def check_same_unit(losses: Any) -> int:
    """The rows per privacy unit all ``losses`` are certified for; ParameterError when they
    differ (a release for one row and one for a person of k rows do not compose: group the
    one-row release first, :func:`objpert.accounting.group_privacy`)."""
    units = sorted({getattr(x, "rows", 1) for x in losses})
    if len(units) > 1:
        raise ParameterError(
            "releases certified for different privacy units do not compose (rows per unit "
            f"{units}); certify each for the same unit (objpert.accounting.group_privacy)"
        )
    return units[0] if units else 1


def compose(losses: Any, discretization: float = DEFAULT_DISCRETIZATION) -> Any:
    """The PLD of all ``losses`` released on the same data (a dp-accounting object);
    identical losses are self-composed once. One PrivacyLoss is a list of one."""
    try:
        items = [losses] if isinstance(losses, PrivacyLoss) else list(losses)
    except TypeError:
        raise ParameterError(
            f"compose takes a list of PrivacyLoss values; got {type(losses).__name__}"
        ) from None
    if not items:
        raise ParameterError("composition needs at least one release; got none")
    check_same_unit(items)
    counts: dict[PrivacyLoss, int] = {}
    for loss in items:
        if not isinstance(loss, PrivacyLoss):
            raise ParameterError(f"expected PrivacyLoss values; got {type(loss).__name__}")
        key = PrivacyLoss(loss.kind, loss.parameters, loss.epsilon, loss.delta)
        counts[key] = counts.get(key, 0) + loss.count
    total, size = None, 0
    for key, count in counts.items():
        pld = distribution(key.times(count), discretization)
        size += pld_points(pld)
        check_points(size, f"{len(items)} releases composed", discretization)
        total = pld if total is None else total.compose(pld)
    return total


def _lost_mass(pld: Any) -> float:
    """The probability a dp-accounting PLD lost (1 - its finite and infinite mass; a
    self-composition of millions of releases loses ~1e-10), counted as mass at +infinity
    so that deltas stay pessimistic."""
    lost = 0.0
    for part in (pld._pmf_remove, pld._pmf_add):  # dp-accounting keeps the two PMFs here
        dense = part.to_dense_pmf()
        lost = max(lost, 1.0 - float(np.sum(dense._probs)) - float(dense._infinity_mass))
    return lost


def _composed(name: str, value: Any) -> Any:
    """The rule of a composed distribution argument: what :func:`compose` returns."""
    if not (hasattr(value, "get_delta_for_epsilon") and hasattr(value, "_pmf_remove")):
        raise ParameterError(
            f"{name} must be a distribution from objpert.accounting.compose; got "
            f"{type(value).__name__} (compose([...]) it first)"
        )
    return value


@validated(pld=_composed, epsilon=check_nonnegative)
def delta_for_epsilon(pld: Any, epsilon: float) -> float:
    """The composed delta at ``epsilon`` (capped at 1), mass the PLD lost included."""
    return _delta_for_epsilon(pld, epsilon)


def _delta_for_epsilon(pld: Any, epsilon: float) -> float:
    """:func:`delta_for_epsilon` at a checked epsilon (the library's own callers)."""
    return min(float(pld.get_delta_for_epsilon(epsilon)) + _lost_mass(pld), 1.0)


@validated(pld=_composed, delta=check_open_unit)
def epsilon_for_delta(pld: Any, delta: float) -> float:
    """The smallest composed epsilon at ``delta`` (+inf when no epsilon reaches it), mass
    the PLD lost counted at +infinity."""
    delta = delta - _lost_mass(pld)
    return float(pld.get_epsilon_for_delta(delta)) if delta > 0.0 else math.inf
