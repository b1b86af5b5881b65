"""The knee of the tight calibration: its step budget against a brute-force evaluation of
the bound over the candidate budgets, its plans certify, and the budget warning appears
exactly when the rule says (the knee beyond the budget and a doubling gaining more than
NOTABLE_GAIN)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from objpert._losses import get_loss
from objpert.certify import _calibration as cal
from objpert.certify import _knee as knee_mod
from objpert.certify import _sigma_search as sigma_search
from objpert.certify._budget import NOTABLE_GAIN, ceiling
from objpert.certify._constants import problem
from objpert.exceptions import UnreachableTargetError

W = 3.0
# TV16-like public constants (the demo's split): 28,193 rows, 25 features + intercept
TV16 = dict(n=28193, d=26, zeta=6.0, delta=1e-6, comparator_norm=W, objective="empirical")
# a tenth of its rows: at epsilon 0.3 the bound flattens inside the budget of 5,000
SMALL = {**TV16, "n": 3000}


def _brute_bound(mu: float, N: int, epsilon: float) -> float:
    """The empirical bound at (mu, N): the smallest certifying sigma, then
    d sigma^2/(2 mu) + E_opt(N) + mu W^2/2 (Theorem 4.10 plus the regulariser)."""
    pc = problem(get_loss("logistic"), n=TV16["n"], d=TV16["d"], zeta=TV16["zeta"], mu=mu)
    sigma, _ = sigma_search._best_sigma(pc, epsilon, TV16["delta"], N)
    return sigma_search._bound(pc, sigma, N, W, 0.01, "empirical")


def test_knee_equals_a_brute_force_scan_of_the_bound():
    """B*(N) by a dense log grid of mu (40 per decade, no golden section, no warm start)
    at every candidate budget; the knee is the smallest candidate at or above the floor
    whose B* is within the (relative) tolerance of B*(max_iter)."""
    budget, tol = 2000, 0.45
    grid = [N for N in knee_mod._grid(budget) if knee_mod.KNEE_FLOOR <= N <= budget]
    mus = np.geomspace(0.02, 0.4, 53)
    best = {N: min(_brute_bound(m, N, 1.0) for m in mus) for N in grid}
    expected = budget
    for N in grid:  # downwards from max_iter
        excess = best[N] / best[budget] - 1.0
        assert abs(excess - tol) > 0.05  # the brute force's grid error cannot flip the decision
        if excess > tol:
            break
        expected = N
    assert 1000 < expected < budget  # the case is inside the budget, above the floor
    found = knee_mod.knee("logistic", **TV16, epsilon=1.0, max_iter=budget, knee_tolerance=tol)
    assert found.budget == expected
    # the searched B* is at least as good as the brute force's, and close to it
    assert found.bound <= best[expected] * (1 + 1e-9)
    assert found.bound == pytest.approx(best[expected], rel=0.02)
    plan = cal.tight("logistic", **TV16, epsilon=1.0, max_iter=budget, knee_tolerance=tol)
    assert plan.iterations <= expected and plan.mu == found.mu
    cert = plan.recertify()  # recomputed from the loss, never the stored constants
    assert cert.certified and cert.epsilon <= 1.0 and cert.delta <= 1e-6


def test_warm_started_plan_is_at_least_as_good_as_a_full_search_at_its_budget():
    """The knee's budget is searched near the neighbouring budget's mu; a full search of mu
    at that budget (knee_tolerance=0: the budget itself) is the reference."""
    fast = knee_mod.knee("logistic", **SMALL, epsilon=0.3, max_iter=5000)
    assert knee_mod.KNEE_FLOOR < fast.budget < 5000
    ref = cal.tight("logistic", **SMALL, epsilon=0.3, max_iter=fast.budget,
                    knee_tolerance=0.0)  # fmt: skip
    ref_bound = ref.theorem410_bound + 0.5 * ref.mu * W**2
    plan = cal.tight("logistic", **SMALL, epsilon=0.3, max_iter=5000)
    bound = plan.theorem410_bound + 0.5 * plan.mu * W**2
    assert bound <= ref_bound * (1 + 1e-6)
    assert plan.recertify().certified


@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 3.0])
def test_demo_sized_settings_do_not_warn(epsilon):
    """The demo's tv16 settings at the estimators' budget of 5,000 steps: the knee may lie
    at or beyond the budget, but a doubled budget lowers the bound by less than
    NOTABLE_GAIN, so fit does not warn."""
    plan = cal.tight("logistic", **TV16, epsilon=epsilon, max_iter=5000)
    found = knee_mod.knee("logistic", **TV16, epsilon=epsilon, max_iter=5000)
    assert knee_mod.KNEE_FLOOR <= found.budget <= 5000 and plan.iterations <= found.budget
    assert found.binds == (found.gain_at_max > knee_mod.KNEE_TOLERANCE * found.bound_at_double)
    assert found.gain_at_max <= NOTABLE_GAIN
    report = ceiling(plan, 5000)
    assert report.at_ceiling == found.binds and not report.notable and report.advice() == ""
    # with all its rows the bound falls by more than the tolerance up to the budget: the
    # plan keeps its whole budget; with a tenth of them the flat bound at epsilon 0.1
    # stops at the floor
    assert found.budget == 5000
    small = knee_mod.knee("logistic", **SMALL, epsilon=epsilon, max_iter=5000)
    assert small.bound <= small.bound_at_max * (1 + knee_mod.KNEE_TOLERANCE)
    if epsilon == 0.1:
        assert small.budget == 1051 and not small.binds


def test_the_warning_fires_exactly_when_the_knee_lies_beyond_the_budget():
    """At 1,000 steps the doubling lowers B* by more than the tolerance (independently:
    the full-search plans at 1,000 and 2,000 steps, no knee), so the budget binds; at
    5,000 it does not."""
    small = cal.tight("logistic", **TV16, epsilon=1.0, max_iter=1000)
    report = ceiling(small, 1000)
    at = {
        N: cal.tight("logistic", **TV16, epsilon=1.0, max_iter=N, knee_tolerance=0.0)
        for N in (1000, 2000)
    }
    bounds = {N: p.theorem410_bound + 0.5 * p.mu * W**2 for N, p in at.items()}
    assert bounds[1000] - bounds[2000] > NOTABLE_GAIN
    assert small.iterations <= 1000 and report.at_ceiling and report.notable
    assert report.bound_now == pytest.approx(bounds[1000], rel=0.02)
    assert report.bound_with_double_budget == pytest.approx(bounds[2000], rel=0.02)
    assert report.iterations_with_double_budget > 1000 and "max_iter=2000" in report.advice()
    assert ceiling(small, 1000) == report  # pure and cached
    big = cal.tight("logistic", **TV16, epsilon=1.0, max_iter=5000)
    assert not ceiling(big, 5000).notable


def test_a_fixed_mu_is_judged_at_that_mu():
    """A given mu: the doubled budget keeps mu, whose bound gains little."""
    plan = cal.tight("logistic", **TV16, epsilon=1.0, max_iter=1000, mu=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = ceiling(plan, 1000, mu_fixed=True)
    assert not report.at_ceiling
    gain = report.bound_now - report.bound_with_double_budget
    assert gain <= knee_mod.KNEE_TOLERANCE * report.bound_with_double_budget
    assert math.isfinite(report.bound_now)


@pytest.mark.parametrize("bad", [-0.1, math.nan])
def test_knee_tolerance_is_checked(bad):
    from objpert.exceptions import ParameterError

    with pytest.raises(ParameterError, match="knee_tolerance"):
        knee_mod.knee("logistic", **TV16, epsilon=1.0, knee_tolerance=bad)


def _reference_best_sigma(pc, epsilon, delta, N):
    """The smallest certifying sigma by the plain algorithm: every share's first passing
    grid point, every share bisected step by step (``_BISECTIONS`` halvings of log sigma),
    the divergence evaluated on the whole array."""
    from objpert._special import chi_radius, q1
    from objpert.certify import _theorem_c13 as theorem_c13

    def passes(sigma, share, rfac):
        r = sigma * rfac
        r_outer = r + 2.0 * pc.L * pc.G / pc.mu
        with np.errstate(invalid="ignore", over="ignore"):
            s_n = theorem_c13.c13_terms(pc, sigma, r, r_outer, N).s_n
            slack = epsilon - s_n
            div = 2.0 * pc.G / sigma * q1(np.where(slack > 0, sigma / pc.G * slack, 0.0))
        return (slack >= 0) & (div <= (1.0 - share) * delta * sigma_search._SAFETY)

    shares = sigma_search._SPLITS[:, None]
    rfac = chi_radius(shares * delta, pc.d_star)
    grid = pc.G * sigma_search._SIGMA_GRID[None, :]
    ok = passes(grid, shares, rfac)
    if not ok.any():
        return math.inf, math.nan
    rows = np.nonzero(ok.any(axis=1))[0]
    first = np.argmax(ok, axis=1)[rows]
    hi = grid[0, first]
    lo = np.where(first > 0, grid[0, np.maximum(first - 1, 0)], hi * 1e-3)
    sh, rf = sigma_search._SPLITS[rows], rfac[rows, 0]
    for _ in range(sigma_search._BISECTIONS):
        mid = np.sqrt(lo * hi)
        good = passes(mid, sh, rf)
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid)
    k = int(np.argmin(hi))
    return float(hi[k]), float(sh[k])


def test_smallest_sigma_equals_the_plain_search_bit_for_bit():
    """The calibration's sigma search (shares that cannot win dropped, wider trees, the
    divergence evaluated where the slack is >= 0 only) against the plain one."""
    rng = np.random.default_rng(7)
    checked = finite = 0
    while checked < 25:
        n, d = int(10 ** rng.uniform(2.5, 6)), int(rng.integers(1, 200))
        zeta, mu = 10 ** rng.uniform(-0.5, 1), 10 ** rng.uniform(-4, 0.5)
        eps, delta = 10 ** rng.uniform(-1.5, 0.7), 10 ** rng.uniform(-9, -4)
        N = int(10 ** rng.uniform(0.5, 4.5))
        loss = get_loss("logistic") if checked % 3 else get_loss("robust", scale=2.0)
        try:
            pc = problem(loss, n=n, d=d, zeta=zeta, mu=mu)
        except Exception:  # a scale the constants refuse
            continue
        got, want = (
            sigma_search._best_sigma(pc, eps, delta, N),
            _reference_best_sigma(pc, eps, delta, N),
        )
        assert got[0] == want[0] and (
            got[1] == want[1] or (math.isnan(got[1]) and math.isnan(want[1]))
        )
        checked += 1
        finite += math.isfinite(got[0])
    assert finite >= 8  # most cases certify at some sigma


@settings(max_examples=6, deadline=None, derandomize=True)
@given(
    n=st.integers(500, 10**6),
    d=st.integers(1, 60),
    epsilon=st.floats(0.1, 4.0),
    budget=st.integers(1, 6000),
    tol=st.sampled_from([0.0, 0.01, 0.02, 0.2, 1.0]),
)
def test_knee_properties(n, d, epsilon, budget, tol):
    """The knee is a candidate budget within max_iter (at least the floor unless max_iter
    is below it) whose bound is within the relative tolerance of the bound at max_iter,
    binds exactly when a doubling gains more than the tolerance (relative to the doubled
    budget's bound), and the plan runs at most it."""
    public = dict(n=n, d=d, zeta=1.0, epsilon=epsilon, delta=1e-6, comparator_norm=W,
                  objective="empirical", max_iter=budget, knee_tolerance=tol)  # fmt: skip
    try:
        found = knee_mod.knee("logistic", **public)
    except UnreachableTargetError:
        return
    assert found.budget in knee_mod._grid(budget) and found.budget <= budget
    assert found.binds == (not found.gain_at_max <= tol * found.bound_at_double)
    if budget < knee_mod.KNEE_FLOOR:
        assert found.budget == budget
    else:
        assert found.budget >= knee_mod.KNEE_FLOOR
    assert found.bound <= found.bound_at_max * (1 + tol) * (1 + 1e-9)
    assert found.bound_at_double <= found.bound_at_max * (1 + 1e-9) + 1e-12
    plan = cal.tight("logistic", **public)
    assert plan.iterations <= found.budget and plan.mu == found.mu
    assert plan.recertify().certified


@pytest.mark.parametrize("n", [455, 2600, 10_000, 32_000])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_a_fresh_binary_shape_calibrates_in_few_sigma_searches(monkeypatch, n, epsilon):
    """The calibration's cost is its smallest-sigma searches (about 2 ms of CPU each,
    benchmarks/calibration_speed.py): at the estimators' settings (empirical objective,
    W = 3, an intercept column, 5,000 steps) a fresh shape needs at most 130 of them, the
    knee's bisection included, which keeps it under 0.3 s of CPU."""
    count = 0
    plain = cal._best_sigma

    def counted(*args):
        nonlocal count
        count += 1
        return plain(*args)

    for module in (cal, knee_mod, sigma_search):
        monkeypatch.setattr(module, "_best_sigma", counted)
    knee_mod._knee_cached.cache_clear()
    plan = cal.tight("logistic", n=n, d=21, zeta=math.sqrt(2), epsilon=epsilon, delta=1e-6,
                     comparator_norm=W, objective="empirical", max_iter=5000)  # fmt: skip
    assert 0 < count <= 130 and plan.iterations <= 5000
