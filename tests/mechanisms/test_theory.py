"""Numerical checks of the lemmas behind the Watkins & Arora (2026) certificate.

Small regularised logistic regressions (d in {2, 3, 5}, n of 60-150, rows of norm <= zeta = 1,
eta = 1/L) run through objpert's own objective and gradient descent; every bound is evaluated
from its displayed formula, independently of objpert.certify except where the test compares
with it:

(a) the Jacobian recursion (5), J_{k+1} = A_k J_k - eta I, against central finite differences
    of z -> w_N;
(b) Theorem A.12 on the ball ||z|| <= r' at Theorem C.13's alpha-bar (47): sigma_min(J_N) >=
    alpha-bar and J_N^sym <= -alpha-bar I; Theorem A.13 and Proposition A.11 alongside;
(c) Lemma A.7: ||M_S(z) - M_S'(z)|| <= G (1 - rho^N) / mu on neighbouring datasets;
(d) Lemmas A.4 / A.6: ||w_k - w*(z)|| <= rho^k R(z), w*(z) from scipy.optimize;
(e) Lemma A.6 item 2 and (16): ||w_{k+1} - w_k|| <= eta mu rho^k R(z).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import optimize

from objpert._engines import GLMObjective
from objpert.certify import _calibration as calibration
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import problem
from objpert.certify._sequences import gamma_n, nu_tilde_n
from objpert.mechanisms._perturbed_gd import run_gradient_descent

ZETA = 1.0
L1, L2, L3 = 1.0, 0.25, 1.0 / (6.0 * math.sqrt(3.0))  # logistic loss constants (Assumption 2-3)


# ----------------------------------------------------------------- problems


def make_data(n: int, d: int, seed: int, kind: str = "generic"):
    """Rows of norm <= zeta. ``aligned``: rows near +-e_1 of norm zeta, so that the Hessian's
    top eigenvalue near w = 0 approaches L = mu + L2 zeta^2 (where the floors are tight)."""
    rng = np.random.default_rng(seed)
    if kind == "aligned":
        X = np.zeros((n, d))
        X[:, 0] = 1.0
        X += 0.05 * rng.normal(size=(n, d))
        X *= (ZETA / np.linalg.norm(X, axis=1))[:, None]
        X *= rng.choice([-1.0, 1.0], size=n)[:, None]
        y = rng.choice([-1.0, 1.0], size=n)
        return X, y
    X = rng.normal(size=(n, d))
    norms = rng.uniform(0.3, 1.0, size=n)
    norms[: n // 5] = 1.0  # some rows exactly on the bound
    X *= (ZETA * norms / np.linalg.norm(X, axis=1))[:, None]
    w_true = rng.normal(scale=3.0, size=d)
    y = np.where(rng.random(n) < 1.0 / (1.0 + np.exp(-X @ w_true)), 1.0, -1.0)
    return X, y


def constants(mu: float):
    L = mu + L2 * ZETA**2
    eta = 1.0 / L
    return L, eta, 1.0 - eta * mu


def trajectory(f: GLMObjective, z: np.ndarray, eta: float, N: int) -> np.ndarray:
    """w_0 = 0, ..., w_N of eq. (4), rows of the returned array."""
    ws = np.zeros((N + 1, z.size))
    for k in range(N):
        ws[k + 1] = ws[k] - eta * (f.gradient(ws[k]) + z)
    return ws


def jacobian(f: GLMObjective, z: np.ndarray, eta: float, N: int):
    """J_N by eq. (5) along the trajectory, and the trajectory."""
    d = z.size
    ws = trajectory(f, z, eta, N)
    J = np.zeros((d, d))
    eye = np.eye(d)
    for k in range(N):
        A = eye - eta * f.hessian(ws[k])
        J = A @ J - eta * eye
    return J, ws


def uniform_ball(rng, k: int, d: int, radius: float) -> np.ndarray:
    u = rng.normal(size=(k, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u * (radius * rng.random(k) ** (1.0 / d))[:, None]


def sphere(rng, k: int, d: int, radius: float) -> np.ndarray:
    u = rng.normal(size=(k, d))
    return radius * u / np.linalg.norm(u, axis=1, keepdims=True)


def nu_tilde_by_sum(rho: float, N: int) -> float:
    """eq. (22) as its defining sum."""
    return sum((1.0 - rho ** (N - k)) * (1.0 - rho**k) for k in range(N))


def alpha_bar_by_hand(mu: float, r_outer: float, N: int) -> float:
    """eq. (47): gamma_N - eta M R-bar B nu~_N rho^(N-1), R-bar = (r' + L1 zeta)/mu, B = 1/mu."""
    L, eta, rho = constants(mu)
    gamma = (1.0 - (1.0 - eta * L) ** N) / L
    M = L3 * ZETA**3
    r_bar = (r_outer + L1 * ZETA) / mu
    return gamma - eta * M * r_bar * (1.0 / mu) * nu_tilde_by_sum(rho, N) * rho ** (N - 1)


# ----------------------------------------------------------------- (a) the Jacobian recursion


@pytest.mark.parametrize(
    ("n", "d", "mu", "N"),
    [(60, 2, 0.5, 1), (60, 2, 0.5, 6), (100, 3, 0.3, 2), (100, 3, 0.3, 25), (150, 5, 0.1, 40)],
)
def test_jacobian_recursion_matches_finite_differences(n, d, mu, N):
    X, y = make_data(n, d, seed=10 + d)
    f = GLMObjective(X, y, "logistic", mu)
    _, eta, _ = constants(mu)
    rng = np.random.default_rng(d * 7 + N)
    h = 1e-5
    for z in [np.zeros(d), *rng.normal(scale=1.5, size=(3, d))]:
        J, ws = jacobian(f, z, eta, N)
        assert np.array_equal(ws[-1], run_gradient_descent(f, z, eta, N))
        fd = np.column_stack(
            [
                (
                    run_gradient_descent(f, z + h * e, eta, N)
                    - run_gradient_descent(f, z - h * e, eta, N)
                )
                / (2 * h)
                for e in np.eye(d)
            ]
        )
        np.testing.assert_allclose(J, fd, rtol=0, atol=1e-8 * max(1.0, np.abs(J).max()))
        if N == 1:
            np.testing.assert_allclose(J, -eta * np.eye(d), rtol=1e-15)


def test_jacobian_tends_to_the_exact_minimizer_jacobian():
    """Implicit function theorem: dw*/dz = -Hess F(w*)^-1; J_N reaches it at rate ~ rho^N."""
    X, y = make_data(100, 3, seed=5)
    mu = 0.3
    _, eta, _ = constants(mu)
    f = GLMObjective(X, y, "logistic", mu)
    z = np.array([0.4, -0.3, 0.2])
    J, ws = jacobian(f, z, eta, 80)
    target = -np.linalg.inv(f.hessian(ws[-1]))
    np.testing.assert_allclose(J, target, rtol=0, atol=1e-10)


# ----------------------------------------------------------------- (b) Theorem A.12 on the ball


@functools.cache
def small_plan():
    return calibration.tight(
        "logistic",
        n=100,
        d=3,
        zeta=ZETA,
        epsilon=8.0,
        delta=1e-5,
        mu=0.3,
        max_iter=2000,
        objective="empirical",
    )


def test_alpha_bar_by_hand_matches_objpert():
    for mu, r_outer, N in [(0.3, 3.0, 2), (0.3, 3.0, 5), (0.1, 1.0, 20), (0.5, 10.0, 3)]:
        pc = problem("logistic", n=100, d=3, zeta=ZETA, mu=mu)
        got = float(theorem_c13.c13_terms(pc, 0.05, 0.05, r_outer, N).alpha_bar)
        assert got == pytest.approx(alpha_bar_by_hand(mu, r_outer, N), rel=1e-12)
        _, _, rho = constants(mu)
        assert float(nu_tilde_n(pc, N)) == pytest.approx(nu_tilde_by_sum(rho, N), rel=1e-12)
        assert float(gamma_n(pc, N)) == pytest.approx(1.0 / pc.L, rel=1e-15)


def _check_theorem_a12(n, d, mu, N, r_outer, alpha, seed, kinds=("generic", "aligned")):
    assert alpha > 0
    _, eta, rho = constants(mu)
    M = L3 * ZETA**3
    rng = np.random.default_rng(seed)
    worst = math.inf
    for kind in kinds:
        X, y = make_data(n, d, seed=seed, kind=kind)
        assert np.all(np.linalg.norm(X, axis=1) <= ZETA * (1 + 1e-12))
        f = GLMObjective(X, y, "logistic", mu)
        zs = np.vstack(
            [np.zeros((1, d)), uniform_ball(rng, 40, d, r_outer), sphere(rng, 10, d, r_outer)]
        )
        outs = []
        for z in zs:
            J, ws = jacobian(f, z, eta, N)
            outs.append(ws[-1])
            smin = np.linalg.svd(J, compute_uv=False).min()
            top = np.linalg.eigvalsh(0.5 * (J + J.T)).max()
            assert smin >= alpha * (1 - 1e-12)
            assert top <= -alpha * (1 - 1e-12)
            worst = min(worst, smin, -top)
            # Proposition A.11: ||J_N - J~_N|| <= eta M R(z) B nu~_N rho^(N-1), operator and
            # nuclear norms, with J~_N = -H*^-1 (I - A*^N) frozen at H* = Hess F(w_N)
            H = f.hessian(ws[-1])
            A = np.eye(d) - eta * H
            frozen = -np.linalg.solve(H, np.eye(d) - np.linalg.matrix_power(A, N))
            R = np.linalg.norm(f.gradient(np.zeros(d)) + z) / mu
            bound = eta * M * R / mu * nu_tilde_by_sum(rho, N) * rho ** (N - 1)
            sv = np.linalg.svd(J - frozen, compute_uv=False)
            assert sv.max() <= bound * (1 + 1e-9) + 1e-13
            assert sv.sum() <= bound * (1 + 1e-9) + 1e-13
        # Theorem A.13: <M(z1) - M(z2), z1 - z2> <= -alpha ||z1 - z2||^2 on the convex ball
        outs = np.array(outs)
        i, j = np.triu_indices(len(zs), 1)
        dz, dw = zs[i] - zs[j], outs[i] - outs[j]
        inner = np.einsum("ij,ij->i", dw, dz)
        assert np.all(inner <= -alpha * np.einsum("ij,ij->i", dz, dz) * (1 - 1e-9))
    return worst


def test_theorem_a12_at_a_tight_plans_radii():
    plan = small_plan()
    pc = plan.constants
    assert pc.eta == pytest.approx(1.0 / pc.L, rel=1e-15)
    N, r, r_outer = plan.iterations, plan.radius, plan.radius_outer
    alpha = float(theorem_c13.c13_terms(pc, plan.sigma, r, r_outer, N).alpha_bar)
    assert alpha == pytest.approx(plan.certificate.details["alpha_bar"], rel=1e-15)
    assert alpha == pytest.approx(alpha_bar_by_hand(pc.mu, r_outer, N), rel=1e-12)
    cert = theorem_c13.certify(pc, plan.sigma, N, plan.epsilon, r=r, r_outer=r_outer)
    assert cert.details["alpha_bar"] == pytest.approx(alpha, rel=1e-15)
    _check_theorem_a12(pc.n, pc.d, pc.mu, N, r_outer, alpha, seed=21)


@pytest.mark.parametrize(
    ("n", "d", "mu", "N", "r_outer"),
    [
        (100, 3, 0.3, 2, 3.0),
        (100, 3, 0.3, 3, 3.0),
        (100, 3, 0.3, 8, 10.0),
        (150, 5, 0.1, 20, 3.0),
        (60, 2, 0.5, 2, 10.0),
        (60, 2, 0.5, 5, 30.0),
    ],
)
def test_theorem_a12_on_wide_balls(n, d, mu, N, r_outer):
    """Radii far beyond a plan's, at N where alpha-bar is well below gamma_N = 1/L."""
    pc = problem("logistic", n=n, d=d, zeta=ZETA, mu=mu)
    alpha = float(theorem_c13.c13_terms(pc, 0.05, 0.05, r_outer, N).alpha_bar)
    assert alpha == pytest.approx(alpha_bar_by_hand(mu, r_outer, N), rel=1e-12)
    assert 0 < alpha < 0.9 / pc.L
    worst = _check_theorem_a12(n, d, mu, N, r_outer, alpha, seed=100 + N)
    # the floor of the frozen model, gamma_N = 1/L, is nearly attained on the aligned data:
    # the test probes the bound where it matters
    assert worst <= 1.05 / pc.L


# ----------------------------------------------------------------- (c) Lemma A.7


def neighbour(X, y, rng):
    """Replace the last sample by a random row of norm <= zeta and a random label."""
    Xp, yp = X.copy(), y.copy()
    x = rng.normal(size=X.shape[1])
    Xp[-1] = x * (ZETA * rng.uniform(0.5, 1.0) / np.linalg.norm(x))
    yp[-1] = rng.choice([-1.0, 1.0])
    return Xp, yp


@pytest.mark.parametrize(
    ("n", "d", "mu", "N"), [(60, 2, 0.5, 15), (100, 3, 0.3, 30), (150, 5, 0.1, 60)]
)
def test_lemma_a7_map_sensitivity(n, d, mu, N):
    _, eta, rho = constants(mu)
    G = 2.0 * L1 * ZETA / n
    rng = np.random.default_rng(n + d)
    largest = 0.0
    for trial in range(12):
        X, y = make_data(n, d, seed=200 + trial, kind="aligned" if trial % 3 == 0 else "generic")
        Xp, yp = neighbour(X, y, rng)
        if trial % 4 == 1:  # the adversarial swap: the opposite row with the opposite label
            Xp[-1], yp[-1] = -X[-1] * ZETA / np.linalg.norm(X[-1]), -y[-1]
        f = GLMObjective(X, y, "logistic", mu)
        fp = GLMObjective(Xp, yp, "logistic", mu)
        for z in rng.normal(scale=[0.01, 1.0, 5.0][trial % 3], size=(3, d)):
            ws, wps = trajectory(f, z, eta, N), trajectory(fp, z, eta, N)
            gaps = np.linalg.norm(ws - wps, axis=1)
            k = np.arange(N + 1)
            bounds = G * (1.0 - rho**k) / mu
            assert np.all(gaps <= bounds * (1 + 1e-10) + 1e-15)
            assert gaps[-1] <= G / mu
            # the final iterate is the mechanism's output
            final = np.linalg.norm(
                run_gradient_descent(f, z, eta, N) - run_gradient_descent(fp, z, eta, N)
            )
            assert final <= G * (1.0 - rho**N) / mu * (1 + 1e-10)
            largest = max(largest, gaps[-1] / bounds[-1])
    assert largest > 0.05  # the pairs do move the output: the check is not vacuous


# ----------------------------------------------------------------- (d), (e) Lemmas A.4 and A.6


def perturbed_minimizer(f: GLMObjective, z: np.ndarray):
    """argmin F(w) + <z, w> by scipy (then Newton), and a certified bound on its error (Lemma A.5:
    ||w* - w|| <= ||grad F(w) + z|| / mu)."""
    res = optimize.minimize(
        lambda w: float(f.value(w)) + z @ w,
        np.zeros(z.size),
        jac=lambda w: f.gradient(w) + z,
        hess=f.hessian,
        method="trust-exact",
        options={"gtol": 1e-13, "maxiter": 500},
    )
    w = res.x
    for _ in range(3):  # Newton's method polishes scipy's answer to rounding level
        step = np.linalg.solve(f.hessian(w), f.gradient(w) + z)
        if np.linalg.norm(f.gradient(w - step) + z) >= np.linalg.norm(f.gradient(w) + z):
            break
        w = w - step
    err = np.linalg.norm(f.gradient(w) + z) / f.mu
    return w, err


@pytest.mark.parametrize(("n", "d", "mu"), [(60, 2, 0.5), (100, 3, 0.3), (150, 5, 0.1)])
def test_lemmas_a4_a6_convergence_and_steps(n, d, mu):
    _, eta, rho = constants(mu)
    N = 40
    rng = np.random.default_rng(300 + d)
    k = np.arange(N + 1)
    for trial in range(4):
        X, y = make_data(n, d, seed=300 + trial, kind="aligned" if trial == 3 else "generic")
        f = GLMObjective(X, y, "logistic", mu)
        grad0 = f.gradient(np.zeros(d))
        assert np.linalg.norm(grad0) <= L1 * ZETA  # a_R's bound, ||grad F(0)|| <= L1 zeta
        for z in rng.normal(scale=[0.01, 0.3, 2.0, 8.0][trial], size=(3, d)):
            ws = trajectory(f, z, eta, N)
            R = np.linalg.norm(grad0 + z) / mu
            tol = 1e-12 * max(R, 1.0)
            # eq. (15): R(z) = ||w_1 - w_0|| / (eta mu); item 1: R <= ||z||/mu + ||grad F(0)||/mu
            assert np.linalg.norm(ws[1] - ws[0]) / (eta * mu) == pytest.approx(R, rel=1e-13)
            item1 = (np.linalg.norm(z) + np.linalg.norm(grad0)) / mu
            assert item1 * (1 + 1e-15) >= R
            w_star, err = perturbed_minimizer(f, z)
            assert err < 1e-10 * max(R, 1.0)
            # item 3 and Lemma A.4
            assert np.linalg.norm(w_star) <= R + err + tol
            dist = np.linalg.norm(ws - w_star, axis=1)
            assert np.all(dist <= rho**k * (np.linalg.norm(w_star) + err) + err + tol)
            assert np.all(dist <= rho**k * R + err + tol)
            assert dist[N] <= rho**N * R + err + tol
            # item 2: ||w_{k+1} - w_k|| <= eta mu rho^k R(z)
            steps = np.linalg.norm(np.diff(ws, axis=0), axis=1)
            assert np.all(steps <= eta * mu * rho ** k[:-1] * R * (1 + 1e-10) + tol)
            # and (16): ||w_k - w_N|| <= (rho^k - rho^N) R(z)
            to_end = np.linalg.norm(ws - ws[-1], axis=1)
            assert np.all(to_end <= (rho**k - rho**N) * R * (1 + 1e-10) + tol)


def test_lemma_a4_rate_is_attained_on_a_quadratic_direction():
    """On the orthogonal complement of the data the iteration is exactly w <- rho w - eta z,
    so ||w_k - w*|| = rho^k ||w*|| there: the rate rho of Lemma A.4 cannot be improved."""
    n, d, mu = 80, 4, 0.3
    _, eta, rho = constants(mu)
    X, y = make_data(n, d, seed=7)
    X[:, -1] = 0.0  # e_d is orthogonal to every row
    f = GLMObjective(X, y, "logistic", mu)
    z = np.zeros(d)
    z[-1] = 1.0
    ws = trajectory(f, z, eta, 30)
    w_star_last = -1.0 / mu  # the minimiser's e_d component: mu w + z = 0
    k = np.arange(31)
    np.testing.assert_allclose(
        np.abs(ws[:, -1] - w_star_last), rho**k * abs(w_star_last), rtol=1e-12, atol=1e-15
    )
