"""The tight dominating pair of a privacy profile: the PLD built from a profile keeps the
negative privacy losses (the symmetric extension of the profile) and stays pessimistic.

References computed independently here: the Gaussian mechanism's exact hockey-stick curve
in mpmath (Balle & Wang 2018, Theorem 8; K Gaussians of ratio mu are one of ratio
mu sqrt(K)), dp-accounting's own Laplace PLDs (a finer pessimistic grid bounds the exact
composition from above, an optimistic one from below), and a numpy convolution of
privacy-loss masses derived here from the profile's piecewise-linear hockey-stick curve.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.signal import fftconvolve
from scipy.special import ndtr

pytest.importorskip("dp_accounting")

from dp_accounting.pld import privacy_loss_distribution as dpl

from objpert.accounting import _pld as pldlib
from objpert.accounting import _profiles as profiles
from objpert.accounting import delta_for_epsilon, from_plan, zcdp
from objpert.accounting._conversions import cdp_delta
from objpert.accounting._pld import distribution as pld_distribution
from objpert.certify import _profile as wa_profile
from objpert.exceptions import ParameterError

STEP = 1e-3
KS = (1, 2, 10, 50)
#: How far above the exact composed delta the profile-built PLD may be (relative): the
#: measured worst case over the Gaussian and Laplace cases below is 1.2e-5.
RTOL = 1e-4
#: The same against dp-accounting's optimistic Laplace PLD on a 10x finer grid, a lower
#: bound on the exact composition (measured worst case 1.8e-4: K = 10, b = 2, epsilon = 4).
LAPLACE_RTOL = 5e-4


def _gaussian_profile(mu: float, eps: np.ndarray) -> np.ndarray:
    """delta(epsilon) of a Gaussian mechanism of sensitivity / sigma = mu (scipy)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = ndtr(-eps / mu + mu / 2) - np.exp(eps) * ndtr(-eps / mu - mu / 2)
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


def _exact_gaussian(mu: float, eps: float) -> float:
    """The exact hockey-stick divergence of N(mu, 1) from N(0, 1) at any real epsilon
    (Balle & Wang 2018, Theorem 8), in 40-digit arithmetic."""
    with mpmath.workdps(40):
        e, m = mpmath.mpf(eps), mpmath.mpf(mu)
        return float(mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2))


def _grid(end: float) -> np.ndarray:
    return np.arange(round(end / STEP) + 1) * STEP


def _gaussian_end(mu: float) -> float:
    """An epsilon beyond which the Gaussian profile is below 1e-17 (mu^2/2 + 9 mu)."""
    return mu * (mu / 2 + 9.0)


def _gaussian_pld(mu: float):
    eps = _grid(_gaussian_end(mu))
    return pldlib._profile_pld(eps, _gaussian_profile(mu, eps), STEP)


def _laplace_profile(scale: float, eps: np.ndarray) -> np.ndarray:
    """delta(epsilon) of a Laplace mechanism of sensitivity 1 and scale b: 1 - e^{(epsilon
    - 1/b)/2} below 1/b, 0 above."""
    return np.clip(-np.expm1((eps - 1.0 / scale) / 2.0), 0.0, 1.0)


def _composed(pld, k: int):
    return pld if k == 1 else pld.self_compose(k)


@pytest.mark.parametrize("mu", [0.3, 1.0])
@pytest.mark.parametrize("k", KS)
def test_gaussian_profile_composes_to_the_exact_gaussian(mu, k):
    composed = _composed(_gaussian_pld(mu), k)
    for eps in (0.0, 0.25, 0.5, 1.0, 2.0, 3.0):
        exact = _exact_gaussian(mu * math.sqrt(k), eps)
        got = delta_for_epsilon(composed, eps)
        assert got >= exact * (1 - 1e-12) - 1e-15, (eps, got, exact)  # pessimistic
        assert got <= exact * (1 + RTOL) + 1e-13, (eps, got, exact)  # and tight


def test_ten_gaussians_at_epsilon_one_are_near_the_exact_value():
    """mu = 0.3, K = 10, epsilon = 1: exact 0.10924; the construction on epsilon >= 0 alone
    (all negative losses moved to 0) gave 0.328."""
    got = delta_for_epsilon(_composed(_gaussian_pld(0.3), 10), 1.0)
    exact = _exact_gaussian(0.3 * math.sqrt(10), 1.0)
    assert exact == pytest.approx(0.10924, abs=1e-5)
    assert exact <= got <= exact + 1e-6


def test_the_single_pld_is_the_profile_on_both_sides_of_zero():
    """At every grid epsilon, negative ones included, one release's PLD has the exact
    Gaussian curve (connect-the-dots interpolates the exact values; its symmetric mirror
    is the exact curve at -epsilon)."""
    mu = 0.5
    pld = _gaussian_pld(mu)
    for eps in (-3.0, -1.0, -0.2, -STEP, 0.0, 0.2, 1.0, 3.0):
        exact = _exact_gaussian(mu, eps)
        assert float(pld.get_delta_for_epsilon(eps)) == pytest.approx(exact, rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("scale", [1.0, 2.0])
@pytest.mark.parametrize("k", KS)
def test_laplace_profile_composes_between_dp_accountings_bounds(scale, k):
    eps_grid = _grid(1.0 / scale)
    ours = _composed(pldlib._profile_pld(eps_grid, _laplace_profile(scale, eps_grid), STEP), k)
    # dp-accounting's Laplace PLDs from the exact Laplace curve: the same grid (the same
    # pessimistic construction), a finer pessimistic one (>= the exact composition) and a
    # finer optimistic one (<= the exact composition)
    same = _composed(dpl.from_laplace_mechanism(scale, value_discretization_interval=STEP), k)
    fine = 1e-4
    upper = _composed(dpl.from_laplace_mechanism(scale, value_discretization_interval=fine), k)
    lower = _composed(
        dpl.from_laplace_mechanism(
            scale, pessimistic_estimate=False, value_discretization_interval=fine
        ),
        k,
    )
    for eps in (0.0, 0.3, 1.0, 2.0, 4.0):
        got = delta_for_epsilon(ours, eps)
        assert got == pytest.approx(float(same.get_delta_for_epsilon(eps)), rel=1e-9, abs=1e-13)
        assert got >= float(upper.get_delta_for_epsilon(eps)) * (1 - 1e-9) - 1e-13
        low = float(lower.get_delta_for_epsilon(eps))
        assert got <= low * (1 + LAPLACE_RTOL) + 1e-12, (eps, got, low)


def test_one_laplace_release_is_exact():
    scale = 2.0
    eps_grid = _grid(1.0 / scale)
    pld = pldlib._profile_pld(eps_grid, _laplace_profile(scale, eps_grid), STEP)
    for eps in (-0.4, -0.1, 0.0, 0.1, 0.4):
        e = mpmath.mpf(eps)
        pos = lambda x: 1 - mpmath.exp((x - 1 / mpmath.mpf(scale)) / 2)  # noqa: E731
        exact = pos(e) if eps >= 0 else 1 - mpmath.exp(e) + mpmath.exp(e) * pos(-e)
        assert float(pld.get_delta_for_epsilon(eps)) == pytest.approx(float(exact), rel=1e-9)


def test_zcdp_releases_compose_above_the_gaussian_they_bound():
    """A Gaussian of ratio mu is mu^2/2-zCDP, so the K-fold composition of the zCDP
    profile's pair (the non-uniform grid) is never below K exact Gaussians."""
    mu = 0.4
    single = pld_distribution(zcdp(mu**2 / 2), STEP)
    for eps in (0.2, 0.5, 1.0):
        assert delta_for_epsilon(single, eps) >= cdp_delta(mu**2 / 2, eps) * (1 - 1e-9)
    for k in (2, 10):
        composed = pld_distribution(zcdp(mu**2 / 2, count=k), STEP)
        for eps in (0.5, 1.0, 2.0):
            assert delta_for_epsilon(composed, eps) >= _exact_gaussian(mu * math.sqrt(k), eps)


# --- the Watkins & Arora profile ------------------------------------------------------


def _wa_grid(plan):
    """The Theorem C.13 profile on the PLD's own grid and its symmetric convex envelope."""
    pc = plan.rebuilt_constants()
    pt = plan.certificate.epsilon, plan.certificate.delta

    def profile(e):
        val = wa_profile.watkins_arora_profile(
            pc, plan.sigma, plan.iterations, e, radius=(plan.radius, plan.radius_outer)
        )
        return np.where(np.asarray(e) >= pt[0], np.minimum(val, pt[1]), val)

    eps = np.arange(math.ceil(pldlib._grid_end(profile, STEP) / STEP) + 1) * STEP
    prof = profile(eps)
    grid, mirrored = profiles.symmetric_extension(eps, prof)
    return eps, prof, grid, mirrored, profiles.convex_envelope(grid, mirrored)


def _masses(grid: np.ndarray, hull: np.ndarray) -> tuple[np.ndarray, float]:
    """The privacy-loss masses of the piecewise-linear hockey-stick curve through
    (0, 1), (e^grid_j, hull_j), flat after the last point: at each kink alpha_j the mass
    is alpha_j times the slope's jump, and the flat end's value is the mass at +infinity."""
    alpha = np.exp(grid)
    xs, ys = np.concatenate([[0.0], alpha]), np.concatenate([[1.0], hull])
    slopes = np.diff(ys) / np.diff(xs)
    right = np.append(slopes[1:], 0.0)
    return alpha * (right - slopes), float(hull[-1])


def _delta(masses: np.ndarray, losses: np.ndarray, inf_mass: float, eps: float) -> float:
    return float(np.sum(masses * np.maximum(-np.expm1(eps - losses), 0.0))) + inf_mass


def test_wa_pld_is_above_its_profile_on_both_sides(plan):
    eps, prof, grid, mirrored, hull = _wa_grid(plan)
    pld = pld_distribution(from_plan(plan), STEP)
    got = np.asarray(pld.get_delta_for_epsilon(grid[::7]), dtype=float)
    # never below the symmetric convex envelope, which bounds the release at every epsilon
    assert np.all(got >= hull[::7] * (1 - 1e-9) - 1e-15)
    # never above the profile (nor its mirror), and below it where the mirror is tighter:
    # near epsilon = 0, where the envelope's chord joins negative and positive epsilons
    assert np.all(got <= mirrored[::7] * (1 + 1e-9) + 1e-15)
    zero = eps.size - 1
    assert float(pld.get_delta_for_epsilon(0.0)) < 0.9 * prof[0]
    assert hull[zero] < prof[0]


def test_wa_pair_attains_its_envelope(plan):
    """The pair built from one release's profile is itself a mechanism with that (convex)
    profile: its hockey-stick curve equals the envelope at every grid epsilon, negative
    ones included. So any bound valid for every release with this profile holds for K
    copies of the pair, and the pair's composition cannot be improved from the profile."""
    _, _, grid, _, hull = _wa_grid(plan)
    pld = pld_distribution(from_plan(plan), STEP)
    got = np.asarray(pld.get_delta_for_epsilon(grid[::5]), dtype=float)
    np.testing.assert_allclose(got, hull[::5], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("k", [2, 10])
def test_wa_composition_matches_an_independent_convolution(plan, k):
    _, _, grid, _, hull = _wa_grid(plan)
    masses, inf_mass = _masses(grid, hull)
    assert np.all(masses >= -1e-12) and abs(masses.sum() + inf_mass - 1.0) < 1e-9
    assert np.sum(masses * np.exp(-grid)) <= 1.0 + 1e-9  # a pair exists: E[e^-L] <= 1
    conv = masses
    for _ in range(k - 1):
        conv = np.maximum(fftconvolve(conv, masses), 0.0)
    losses = (np.arange(conv.size) + k * round(grid[0] / STEP)) * STEP
    inf_k = 1.0 - (1.0 - inf_mass) ** k
    ours = pld_distribution(from_plan(plan).times(k), STEP)
    old = _old_construction(plan, k)
    tighter = 0
    for eps in (0.0, 0.25, 0.5, 1.0, 1.5, 2.5):
        ref = _delta(conv, losses, inf_k, eps)
        got = delta_for_epsilon(ours, eps)
        assert got >= ref * (1 - 1e-7) - 1e-14, (eps, got, ref)
        assert got <= ref * (1 + 1e-6) + 1e-13, (eps, got, ref)
        before = delta_for_epsilon(old, eps)
        assert got <= before * (1 + 1e-9) + 1e-15
        tighter += got < 0.9 * before
    assert tighter >= (
        2 if k == 2 else 4
    )  # much tighter than the construction on epsilon >= 0 alone


def _nonnegative_profile_pld(epsilons, deltas, discretization):
    """The construction on epsilon >= 0 alone: connect-the-dots on the profile's convex
    minorant, every negative privacy loss at 0 (pessimistic, not tight)."""
    env = profiles.convex_envelope(epsilons, deltas)
    return dpl.PrivacyLossDistribution(pldlib._connect_dots(epsilons, env, discretization))


def _old_construction(plan, k):
    eps, prof, *_ = _wa_grid(plan)
    return _composed(_nonnegative_profile_pld(eps, prof, STEP), k)


# --- the symmetric extension ----------------------------------------------------------


def test_symmetric_extension_refuses_a_bad_grid():
    with pytest.raises(ParameterError):
        profiles.symmetric_extension([0.1, 0.2], [0.5, 0.4])  # does not start at 0
    with pytest.raises(ParameterError):
        profiles.symmetric_extension([0.0, 0.2, 0.1], [0.5, 0.4, 0.3])


@settings(max_examples=15, deadline=None)
@given(
    kind=st.sampled_from(["gaussian", "laplace"]),
    parameter=st.floats(0.1, 3.0),
    eps=st.lists(st.floats(-4.0, 4.0), min_size=1, max_size=5),
)
def test_profile_pld_dominates_the_exact_curve_everywhere(kind, parameter, eps):
    """For Gaussian (mu) and Laplace (1/b) profiles, the PLD's delta is at least the exact
    hockey-stick divergence at every real epsilon, and the extension is a curve of one:
    within [max(0, 1 - e^epsilon), 1], non-increasing, equal to the profile at epsilon >= 0."""
    if kind == "gaussian":
        grid = _grid(_gaussian_end(parameter))
        prof = _gaussian_profile(parameter, grid)
    else:
        grid = _grid(round(parameter / STEP) * STEP)
        prof = _laplace_profile(1.0 / grid[-1], grid)
    full, ext = profiles.symmetric_extension(grid, prof)
    assert np.all(ext >= np.maximum(-np.expm1(full), 0.0) - 1e-15) and np.all(ext <= 1.0)
    assert np.all(np.diff(ext) <= 1e-15)
    np.testing.assert_array_equal(ext[grid.size - 1 :], np.minimum.accumulate(prof))
    pld = pldlib._profile_pld(grid, prof, STEP)
    for e in eps:
        if kind == "gaussian":
            exact = _exact_gaussian(parameter, e)
        else:
            pos = max(-math.expm1((abs(e) - grid[-1]) / 2), 0.0)
            exact = pos if e >= 0 else -math.expm1(e) + math.exp(e) * pos
        assert float(pld.get_delta_for_epsilon(e)) >= exact * (1 - 1e-9) - 1e-14


def test_the_accountant_and_the_joint_calibration_compose_the_tight_pair(plan, monkeypatch):
    """The accountant's ledger and the one-vs-rest calibration's composed delta are the
    tight pair's composition, below the construction on epsilon >= 0 alone."""
    from objpert.accounting import PrivacyAccountant, compose, epsilon_for_delta
    from objpert.certify import _multiclass as multiclass

    loss = from_plan(plan)
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-6, discretization=STEP)
    acc.spend(loss.times(10), name="ten releases")
    tight_eps = epsilon_for_delta(compose([loss.times(10)], STEP), 1e-6)
    assert acc.spent == pytest.approx(tight_eps, rel=1e-12)
    joint = multiclass.composed_delta(plan, 10, 1.0, STEP)
    assert joint == pytest.approx(
        delta_for_epsilon(pld_distribution(loss.times(10), STEP), 1.0), rel=1e-12
    )

    monkeypatch.setattr(pldlib, "_profile_pld", _nonnegative_profile_pld)
    pldlib._single_pld.cache_clear()
    try:
        before = PrivacyAccountant(epsilon=5.0, delta=1e-6, discretization=STEP)
        before.spend(loss.times(10), name="ten releases")
        assert acc.spent < before.spent - 0.02
        assert joint < 0.5 * multiclass.composed_delta(plan, 10, 1.0, STEP)
    finally:
        monkeypatch.undo()
        pldlib._single_pld.cache_clear()
