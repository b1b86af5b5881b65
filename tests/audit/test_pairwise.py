"""The exact pairwise audit: eq. (6) privacy loss by Newton preimages, its
Monte Carlo profile against the exact Gaussian profile of Section C.5, the Jacobian checks of
Theorems A.12-A.13, the worst-pair search and the pairwise check. Small, seeded configurations."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import optimize

from objpert._engines import GLMObjective
from objpert.accounting._gaussian_mechanism import gaussian_profile
from objpert.audit._jacobian import check_jacobian
from objpert.audit._maps import (
    GradientDescentMap,
    LinearLoss,
    gradient_descent_jacobian,
    linear_plan,
)
from objpert.audit._pair_check import check_pairs
from objpert.audit._pairwise import (
    PairwiseProfile,
    certified_delta,
    pairwise_profile,
    preimage,
    privacy_loss,
)
from objpert.audit._planted import ExtraStepMap, NoiseScaledMap
from objpert.audit._worst_pair import sphere_angles, sphere_point, worst_pair
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._calibration import calibrate
from objpert.exceptions import ParameterError
from objpert.mechanisms._perturbed_gd import run_gradient_descent

EPS = np.array([0.0, 0.1, 0.3, 0.6, 1.0])


def unit_rows(rng: np.random.Generator, n: int, d: int, shrink: float = 1.0) -> np.ndarray:
    X = rng.normal(size=(n, d))
    return X / (shrink * np.linalg.norm(X, axis=1, keepdims=True))


@pytest.fixture(scope="module")
def lin():
    """Linear loss (Section C.5), n = 10, d = 2: a certified plan and a neighbouring pair."""
    plan = linear_plan(
        n=10, d=2, zeta=1.0, mu=0.5, eta=1.0, sigma=0.6, iterations=20, epsilon=1.0, u=3.0
    )
    rng = np.random.default_rng(1)
    X = unit_rows(rng, 10, 2, 1.1)
    y = rng.choice([-1.0, 1.0], 10)
    Xp, yp = X.copy(), y.copy()
    Xp[-1], yp[-1] = [0.0, 1.0], -1.0
    G = np.linalg.norm(y[-1] * X[-1] - yp[-1] * Xp[-1]) / 10  # ||b_S - b_S'||
    return plan, X, y, Xp, yp, G


@pytest.fixture(scope="module")
def logi():
    """Logistic, n = 10, d = 2, mu = 0.5: the tight plan and a neighbouring pair."""
    plan = calibrate("logistic", n=10, d=2, zeta=1.0, epsilon=1.0, delta=1e-5, mu=0.5)
    rng = np.random.default_rng(4)
    X = unit_rows(rng, 10, 2)
    y = rng.choice([-1.0, 1.0], 10)
    Xp, yp = X.copy(), y.copy()
    Xp[-1], yp[-1] = -X[-1], y[-1]
    return plan, X, y, Xp, yp


# ---------------------------------------------------------------- eqs. (4)-(5)


def test_forward_and_jacobian_match_gradient_descent_and_finite_differences():
    rng = np.random.default_rng(0)
    X, y = unit_rows(rng, 15, 3), rng.choice([-1.0, 1.0], 15)
    f = GLMObjective(X, y, "logistic", 0.2)
    eta, N, h = 1.0 / 0.45, 12, 1e-6
    Z = rng.normal(scale=0.8, size=(3, 4))
    W, J = gradient_descent_jacobian(f, Z, eta, N)
    for b in range(4):
        z = Z[:, b]
        assert np.allclose(W[:, b], run_gradient_descent(f, z.copy(), eta, N), rtol=0, atol=1e-13)
        fd = np.column_stack(
            [
                (
                    run_gradient_descent(f, z + h * e, eta, N)
                    - run_gradient_descent(f, z - h * e, eta, N)
                )
                / (2 * h)
                for e in np.eye(3)
            ]
        )
        np.testing.assert_allclose(J[b], fd, rtol=0, atol=1e-7 * np.abs(J[b]).max())


@pytest.mark.parametrize("cls", [NoiseScaledMap, ExtraStepMap])
def test_bug_map_jacobians_match_finite_differences(logi, cls):
    plan, X, y, _, _ = logi
    base = GradientDescentMap.from_plan(plan)
    release = cls(**base.__dict__)
    Z = np.random.default_rng(2).normal(scale=plan.sigma, size=(2, 3))
    _, J = release.forward(X, y, Z)
    h = 1e-6
    for b in range(3):
        cols = []
        for e in np.eye(2):
            plus, _ = release.forward(X, y, (Z[:, b] + h * e)[:, None], jacobian=False)
            minus, _ = release.forward(X, y, (Z[:, b] - h * e)[:, None], jacobian=False)
            cols.append((plus - minus)[:, 0] / (2 * h))
        np.testing.assert_allclose(J[b], np.column_stack(cols), rtol=0, atol=1e-7)


# ---------------------------------------------------------------- eq. (6)


def test_preimage_solves_the_release_equation(logi):
    plan, X, y, Xp, yp = logi
    release = GradientDescentMap.from_plan(plan)
    Z = np.random.default_rng(3).normal(scale=plan.sigma, size=(2, 50))
    W, _ = release.forward(X, y, Z)
    pre = preimage(release, Xp, yp, W, Z)
    assert pre.converged.all()
    f = GLMObjective(Xp, yp, "logistic", plan.mu)
    for b in range(0, 50, 7):  # the mechanism's own gradient descent at z'
        w = run_gradient_descent(f, pre.Z[:, b].copy(), plan.eta, plan.iterations)
        assert np.linalg.norm(w - W[:, b]) <= 1e-9 * (1 + np.linalg.norm(W[:, b]))


def test_privacy_loss_against_an_independent_computation(logi):
    """eq. (6) with z' from scipy's root finder on run_gradient_descent and the Jacobian
    determinants from central finite differences."""
    plan, X, y, Xp, yp = logi
    release = GradientDescentMap.from_plan(plan)
    fS = GLMObjective(X, y, "logistic", plan.mu)
    fP = GLMObjective(Xp, yp, "logistic", plan.mu)

    def M(f, z):
        return run_gradient_descent(f, np.array(z, dtype=float), plan.eta, plan.iterations)

    def fd_logdet(f, z, h=1e-6):
        J = np.column_stack([(M(f, z + h * e) - M(f, z - h * e)) / (2 * h) for e in np.eye(2)])
        return math.log(abs(np.linalg.det(J)))

    Z = np.random.default_rng(5).normal(scale=plan.sigma, size=(2, 4))
    ours = privacy_loss(release, (X, y), (Xp, yp), Z).loss
    for b in range(4):
        z = Z[:, b]
        target = M(fS, z)
        zp = optimize.root(lambda v, t=target: M(fP, v) - t, z, tol=1e-14).x
        s2 = plan.sigma**2
        ref = (zp @ zp - z @ z) / (2 * s2) + fd_logdet(fP, zp) - fd_logdet(fS, z)
        assert ours[b] == pytest.approx(ref, abs=1e-6)


def test_linear_profile_matches_the_exact_gaussian_profile(lin):
    """Section C.5: the release is a rescaled Gaussian mechanism with sensitivity
    ||b_S - b_S'||; the simultaneous 95% intervals cover the exact profile in both orders."""
    plan, X, y, Xp, yp, G = lin
    prof = pairwise_profile(X, y, Xp, yp, plan, EPS, samples=6000, rng=11)
    exact_delta = gaussian_profile(EPS, G, plan.sigma)
    for lo, hi in ((prof.lower, prof.upper), (prof.lower_reverse, prof.upper_reverse)):
        assert np.all(np.asarray(lo) <= exact_delta) and np.all(exact_delta <= np.asarray(hi))
    np.testing.assert_allclose(prof.delta[:3], exact_delta[:3], rtol=0.25)
    assert prof.newton_failures == (0, 0) and max(prof.max_residual) < 1e-10
    assert not prof.flagged  # the certificate holds: Section C.5
    assert np.all(np.asarray(prof.certified) >= exact_delta)
    json.dumps(prof.to_dict())


def test_logistic_antipodal_pair_is_an_exact_gaussian_mechanism(logi):
    """Logistic loss, x' = -x, equal labels y: l(-t, y) = log(1 + e^{yt}) = l(t, y) + y t
    gives F_S'(w) = F_S(w) + <y x/n, w>, so M_S'(z) = M_S(z + y x/n) for every N: the
    preimage is z' = z - y x/n, the log-determinants of eq. (6) cancel, and delta_pair is
    exactly the Gaussian profile at sensitivity ||x||/n (Section C.5), through a nonlinear
    release."""
    plan, X, y, Xp, yp = logi
    n = plan.n
    release = GradientDescentMap.from_plan(plan)
    Z = np.random.default_rng(8).normal(scale=plan.sigma, size=(2, 200))
    ls = privacy_loss(release, (X, y), (Xp, yp), Z)
    shift = y[-1] * X[-1][:, None] / n
    np.testing.assert_allclose(ls.preimage, Z - shift, rtol=0, atol=1e-9)
    prof = pairwise_profile(X, y, Xp, yp, plan, EPS, samples=4000, rng=13)
    exact_delta = gaussian_profile(EPS, np.linalg.norm(X[-1]) / n, plan.sigma)
    for lo, hi in ((prof.lower, prof.upper), (prof.lower_reverse, prof.upper_reverse)):
        assert np.all(np.asarray(lo) <= exact_delta) and np.all(exact_delta <= np.asarray(hi))
    np.testing.assert_allclose(prof.delta[:2], exact_delta[:2], rtol=0.05)


def test_tilted_proposal_measures_small_deltas(lin):
    plan, X, y, Xp, yp, G = lin
    eps = np.array([0.3, 0.6, 1.0, 1.5])
    prof = pairwise_profile(X, y, Xp, yp, plan, eps, samples=3000, rng=12, proposal="tilted")
    exact_delta = gaussian_profile(eps, G, plan.sigma)  # down to 2.5e-17
    for d, lo, hi in (
        (prof.delta, prof.lower, prof.upper),
        (prof.delta_reverse, prof.lower_reverse, prof.upper_reverse),
    ):
        np.testing.assert_allclose(d, exact_delta, rtol=0.25)
        assert np.all(np.asarray(lo) <= exact_delta) and np.all(exact_delta <= np.asarray(hi))
    assert prof.interval == "normal"


class _HalfRange:
    """A toy release: M(z) = 2z on datasets whose last label is +1, tanh(z) otherwise, so
    outputs with a coordinate beyond (-1, 1) have no preimage under the second."""

    name = "toy"
    sigma = 1.0

    def forward(self, X, y, Z, *, jacobian=True):
        Z = np.asarray(Z, dtype=float)
        if y[-1] > 0:
            W, D = 2.0 * Z, np.full_like(Z, 2.0)
        else:
            W, D = np.tanh(Z), 1.0 / np.cosh(np.clip(Z, -300, 300)) ** 2
        J = np.stack([np.diag(col) for col in D.T]) if jacobian else None
        return W, J


def test_newton_failures_are_counted_as_the_worst_case(lin):
    plan, X, y, _, _, _ = lin
    Xp, yp = X.copy(), y.copy()
    y = y.copy()
    y[-1], yp[-1] = 1.0, -1.0
    prof = pairwise_profile(
        X, y, Xp, yp, plan, [0.5], samples=2000, rng=3, release_map=_HalfRange()
    )
    Z = np.random.default_rng(3).standard_normal((2, 2000))  # the same draws
    outside = np.mean(np.any(np.abs(2 * Z) >= 1 - 1e-6, axis=0))
    assert prof.newton_failures[0] >= outside * 2000 * 0.99
    assert prof.delta[0] >= outside  # failures count as 1 in the estimate...
    assert prof.lower[0] <= 1 - outside + 1e-12  # ...and as 0 in the lower bound
    assert prof.upper[0] >= outside


def test_certified_delta_is_the_plans_certificate(logi):
    plan = logi[0]
    at_target = float(certified_delta(plan, [plan.epsilon])[0])
    assert at_target == pytest.approx(plan.certificate.delta, rel=1e-12)
    pc = plan.constants
    ref = theorem_c13.delta_n(
        pc, plan.sigma, plan.radius, plan.radius_outer, plan.iterations, EPS, "exact"
    )
    np.testing.assert_array_equal(certified_delta(plan, EPS), ref)


def test_refuses_non_neighbours_and_wrong_shapes(logi):
    plan, X, y, Xp, yp = logi
    X2 = Xp.copy()
    X2[0] = -X2[0]
    with pytest.raises(ParameterError, match="at most one row"):
        pairwise_profile(X, y, X2, yp, plan, [1.0], samples=10)
    with pytest.raises(ParameterError, match="shape"):
        pairwise_profile(X[:-1], y[:-1], Xp[:-1], yp[:-1], plan, [1.0], samples=10)


def test_flagged_and_looseness_logic():
    base = dict(
        epsilons=(0.5, 1.0),
        delta=(0.02, 0.0),
        lower=(0.011, 0.0),
        upper=(0.03, 0.001),
        delta_reverse=(0.01, 0.0),
        lower_reverse=(0.0, 0.0),
        upper_reverse=(0.02, 0.001),
        certified=(0.01, 1e-5),
        newton_failures=(0, 0),
        samples=100,
        confidence=0.95,
    )
    prof = PairwiseProfile(**base)
    assert prof.flagged and not prof.below_certified
    assert prof.looseness == (0.5, math.inf)
    assert not PairwiseProfile(**{**base, "lower": (0.009, 0.0)}).flagged
    assert json.loads(json.dumps(prof.to_dict()))["looseness"] == [0.5, None]


# ---------------------------------------------------------------- Theorems A.12-A.13


def test_check_jacobian_clean_release_and_a_planted_bug(logi):
    plan, X, y, _, _ = logi
    rep = check_jacobian(X, y, plan, samples=64, rng=1)
    assert rep.violations == [] and rep.clean
    assert rep.min_sigma_min >= rep.alpha_bar > 0
    assert rep.max_sym_eigenvalue <= -rep.alpha_bar and rep.fd_max_error < 1e-6
    base = GradientDescentMap.from_plan(plan)
    bad = check_jacobian(X, y, plan, samples=64, rng=1, release_map=NoiseScaledMap(**base.__dict__))
    assert any("A.12" in v for v in bad.violations)
    json.dumps(rep.to_dict())


# ---------------------------------------------------------------- worst pair


def test_sphere_parametrisation_round_trips():
    rng = np.random.default_rng(0)
    for d in (2, 3, 4):
        for x in rng.normal(size=(5, d)):
            x /= np.linalg.norm(x)
            np.testing.assert_allclose(sphere_point(sphere_angles(x), 2.0), 2.0 * x, atol=1e-12)


def test_worst_pair_for_the_linear_loss_is_antipodal():
    """Linear loss: delta_pair is the Gaussian profile at G = ||x - x'|| / n (labels +1),
    maximal at x' = -x (G = 2 zeta / n); the search must find it and its profile."""
    n = 8
    plan = linear_plan(
        n=n, d=2, zeta=1.0, mu=0.5, eta=1.0, sigma=0.8, iterations=10, epsilon=1.0, u=3.0
    )
    rng = np.random.default_rng(7)
    Xs, ys = unit_rows(rng, n - 1, 2, 1.3), rng.choice([-1.0, 1.0], n - 1)
    wp = worst_pair(
        Xs,
        ys,
        plan,
        epsilon=0.3,
        samples=400,
        grid=8,
        starts=1,
        maxfev=15,
        final_samples=3000,
        rng=1,
        epsilons=[0.1],
    )
    # every antipodal pair is worst; with common random numbers the search may settle on
    # any near-antipodal one: ||x - x'|| = n G must be within 0.1% of its maximum 2 zeta
    assert np.linalg.norm(np.subtract(wp.x, wp.x_prime)) > 2.0 * (1 - 1e-3)
    assert np.linalg.norm(wp.x) == pytest.approx(1.0)
    exact_delta = gaussian_profile(np.asarray(wp.profile.epsilons), 2.0 / n, plan.sigma)
    assert np.all(np.asarray(wp.profile.lower) <= exact_delta)
    assert np.all(exact_delta <= np.asarray(wp.profile.upper))
    assert wp.trace[0]["stage"] == "grid" and wp.evaluations >= 56
    X, _, Xp, _ = wp.datasets(Xs, ys)
    assert X.shape == (n, 2) and np.array_equal(X[:-1], Xp[:-1])
    json.dumps(wp.to_dict())


# ---------------------------------------------------------------- the pairwise check


def test_pairwise_check_small_logistic_pairs_below_certificate(logi):
    plan, X, _, _, _ = logi
    rng = np.random.default_rng(9)
    Xs, ys = X[:-1], rng.choice([-1.0, 1.0], 9)
    wp = worst_pair(
        Xs,
        ys,
        plan,
        epsilon=0.3,
        samples=200,
        grid=6,
        starts=1,
        maxfev=8,
        final_samples=200,
        rng=2,
    )
    e = np.eye(2)
    pairs = {
        "antipodal": (e[0], 1.0, -e[0], 1.0),
        "orthogonal": (e[0], 1.0, e[1], 1.0),
        "worst": (np.array(wp.x), wp.label, np.array(wp.x_prime), wp.label_prime),
    }
    report = check_pairs(Xs, ys, plan, pairs, [0.2, 0.5, 1.0], samples=1500, rng=3)
    assert len(report.rows) == 3 and report.passed
    for row in report.rows:
        assert all(np.isfinite(row.profile.looseness) | (np.asarray(row.profile.measured) == 0))
        assert all(c >= 1 for c in row.profile.looseness)
    assert "| worst |" in report.table()
    json.dumps(report.to_dict())


def test_linear_loss_constants():
    loss = LinearLoss()
    assert (loss.L1, loss.L2, loss.L3) == (1.0, 0.0, 0.0)
    t, y = np.array([0.5, -2.0]), np.array([1.0, -1.0])
    np.testing.assert_array_equal(loss.value(t, y), -y * t)
    np.testing.assert_array_equal(loss.d1(t, y), -y)
    np.testing.assert_array_equal(loss.d2(t, y), 0.0)
