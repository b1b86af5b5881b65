"""Planted bugs: their samplers against closed forms (Section C.5's linear loss)
and the mechanism's own code, and the pairwise audit flagging bugs 1, 3 and 4 while passing
the clean release. Small, seeded configurations."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from objpert._engines import GLMObjective
from objpert.audit._maps import linear_plan
from objpert.audit._pairwise import pairwise_profile
from objpert.audit._planted import PLANTED_BUGS, doubled_plan, sample_clean
from objpert.certify._calibration import calibrate
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, run_gradient_descent

EPS = [0.1, 0.3, 0.5, 0.75, 1.0]


def test_registry():
    assert set(PLANTED_BUGS) == {"noise_half", "redrawn_noise", "extra_step", "n_doubled"}
    for name, bug in PLANTED_BUGS.items():
        assert bug.name == name and bug.description
        json.dumps(bug.to_dict())
    assert PLANTED_BUGS["redrawn_noise"].make_map is None


@pytest.fixture(scope="module")
def logistic_small():
    plan = calibrate("logistic", n=10, d=2, zeta=1.0, epsilon=1.0, delta=1e-5, mu=0.5)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(np.arange(10) % 2 == 0, 1.0, -1.0)
    return plan, X, y


def test_sample_clean_is_the_mechanism(logistic_small):
    """One draw equals perturbed_gradient_descent with the same seed (the mechanism's own
    code path); a batch equals run_gradient_descent column by column."""
    plan, X, y = logistic_small
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = perturbed_gradient_descent(X, y, plan, rng=np.random.default_rng(42)).weights
    np.testing.assert_allclose(sample_clean(X, y, plan, 1, rng=42)[0], ref, rtol=0, atol=1e-13)
    W = sample_clean(X, y, plan, 6, rng=7)
    Z = plan.sigma * np.random.default_rng(7).standard_normal((2, 6))
    f = GLMObjective(X, y, "logistic", plan.mu)
    for b in range(6):
        w = run_gradient_descent(f, Z[:, b].copy(), plan.eta, plan.iterations)
        np.testing.assert_allclose(W[b], w, rtol=0, atol=1e-13)
    with pytest.raises(Exception, match="shape"):
        sample_clean(X[:-1], y[:-1], plan, 2, rng=0)


def test_bug_samplers_match_closed_forms_for_the_linear_loss():
    """Section C.5: F_S(w) = (mu/2)||w||^2 + <b, w>, so w_N = -c (b + z), c = (1 - rho^N)/mu.
    noise_half: cov (c s/2)^2 I; extra_step: w - eta (mu w + b) = rho w - eta b;
    redrawn_noise: w_N = -c b - eta sum_k rho^(N-1-k) z_k, of variance
    eta^2 s^2 (1 - rho^2N)/(1 - rho^2)."""
    n, d, mu, eta, N, s = 6, 2, 0.5, 1.0, 8, 0.7
    plan = linear_plan(n=n, d=d, zeta=1.0, mu=mu, eta=eta, sigma=s, iterations=N, epsilon=1, u=3)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, d))
    X /= 1.5 * np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.choice([-1.0, 1.0], n)
    b = -(y @ X) / n
    rho = 1 - eta * mu
    c = (1 - rho**N) / mu
    draws = 40000
    expected = {
        "clean": (-c * b, (c * s) ** 2),
        "noise_half": (-c * b, (c * s / 2) ** 2),
        "extra_step": (-(rho * c + eta) * b, (rho * c * s) ** 2),
        "redrawn_noise": (-c * b, eta**2 * s**2 * (1 - rho ** (2 * N)) / (1 - rho**2)),
    }
    for name, (mean, var) in expected.items():
        if name == "clean":
            W = sample_clean(X, y, plan, draws, rng=1)
        else:
            W = PLANTED_BUGS[name].sample(X, y, plan, draws, rng=1)
        assert W.shape == (draws, d)
        se = np.sqrt(var / draws)
        np.testing.assert_allclose(W.mean(axis=0), mean, rtol=0, atol=5 * se)
        np.testing.assert_allclose(np.cov(W.T), var * np.eye(d), rtol=0, atol=0.05 * var)


def test_n_doubled_runs_a_plan_for_2n_on_n_rows(logistic_small):
    plan, X, y = logistic_small
    twin = doubled_plan(plan)
    assert twin.n == 2 * plan.n and twin.certificate.certified
    assert (twin.mu, twin.epsilon, twin.delta) == (plan.mu, plan.epsilon, plan.delta)
    assert twin.sigma < 0.6 * plan.sigma  # G halves (and the log-det term shrinks)
    release = PLANTED_BUGS["n_doubled"].release_map(plan)
    assert release.sigma == twin.sigma and release.iterations == twin.iterations
    W = PLANTED_BUGS["n_doubled"].sample(X, y, plan, 5, rng=0)  # no shape check
    assert W.shape == (5, 2)


def _flags(X, y, Xp, yp, plan, samples):
    out = {}
    for name in ("clean", "noise_half", "extra_step", "n_doubled"):
        release = None if name == "clean" else PLANTED_BUGS[name].release_map(plan)
        out[name] = pairwise_profile(
            X, y, Xp, yp, plan, EPS, samples=samples, rng=17, release_map=release
        )
    return out


def test_pairwise_flags_the_extra_step_on_logistic_regression():
    """Bug 3 on a logistic regression whose rows lie near +-e1 (margins near 0, so the
    Hessian along e1 is near L = 1/eta): the extra step removes the noise along e1, the
    direction in which the pair x = e1, x' = -e1 differs. eta mu = 2/3 here."""
    n = 10
    plan = calibrate("logistic", n=n, d=2, zeta=1.0, epsilon=1.0, delta=1e-5, mu=0.5)
    rng = np.random.default_rng(2)
    X = np.zeros((n, 2))
    X[:, 0] = 1.0
    X += 0.05 * rng.normal(size=(n, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X *= rng.choice([-1.0, 1.0], n)[:, None]
    y = rng.choice([-1.0, 1.0], n)
    X[-1], y[-1] = [1.0, 0.0], 1.0
    Xp, yp = X.copy(), y.copy()
    Xp[-1] = [-1.0, 0.0]
    clean = pairwise_profile(X, y, Xp, yp, plan, EPS, samples=1500, rng=17)
    bug = pairwise_profile(
        X,
        y,
        Xp,
        yp,
        plan,
        EPS,
        samples=1500,
        rng=17,
        release_map=PLANTED_BUGS["extra_step"].release_map(plan),
    )
    assert not clean.flagged and clean.below_certified
    assert bug.flagged and min(bug.lower) > 0.5  # delta ~ 0.7-0.8 at every epsilon


def test_pairwise_flags_noise_half_and_n_doubled_with_saturated_gradients():
    """Bugs 1 and 4 halve sigma. For the logistic loss |l'(t, y) x - l'(t', y') x'| is about
    zeta / n = G/2 for most outputs, so the halved noise stays within the certificate's
    slack (docs/audit-pairwise.md); with the pseudo-Huber loss and labels +-5, |l'| is near
    L1 = 1 and the pair x = e1, x' = -e1 (labels 5) has gradient difference near
    G = 2 L1 zeta / n: the clean release is close to its certificate and the bugs exceed it."""
    n = 10
    plan = calibrate("robust", scale=1.0, n=n, d=2, zeta=1.0, epsilon=1.0, delta=1e-5, mu=1.0)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 2))
    X /= 1.2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.normal(size=n)
    X[-1], y[-1] = [1.0, 0.0], 5.0
    Xp, yp = X.copy(), y.copy()
    Xp[-1] = [-1.0, 0.0]
    res = _flags(X, y, Xp, yp, plan, samples=2500)
    assert not res["clean"].flagged and res["clean"].below_certified
    assert res["clean"].newton_failures == (0, 0)
    for name in ("noise_half", "n_doubled", "extra_step"):
        assert res[name].flagged, name
