"""Tests of the peer mechanisms: objpert.mechanisms._certificates and objpert.mechanisms._peers.

Calibrations are checked against their formulas evaluated directly here; the analytic
Gaussian calibration against the profile; the continuous noisy-GD accounting against the
single Gaussian mechanism (T = 1), a brute-force hockey-stick integral (T = 2) and
dp-accounting (when installed). Published noise (output perturbation, AMP's output, noisy
GD) is a discrete Gaussian on a grid, certified by Canonne, Kamath & Steinke (2020),
Theorem 14 and Corollary 13 (the grid and the sampler are tested in test_noise.py).
Releases are checked for refusals, noise draws, reproducibility, the solver tolerance and
accuracy on a synthetic logistic problem.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, sparse
from scipy.special import expit
from scipy.stats import norm

import objpert
from objpert._losses import get_loss
from objpert.accounting import _gaussian_mechanism as cgauss
from objpert.accounting import _gaussian_steps as gsteps
from objpert.accounting._gaussian_mechanism import gaussian_profile
from objpert.certify import _calibration as calibration
from objpert.exceptions import DataError, ParameterError, PrivacyError, ToleranceError
from objpert.exceptions import TestingSeedWarning as SeedWarning
from objpert.mechanisms import _certificates as cpeers
from objpert.mechanisms import _peers as mpeers
from objpert.mechanisms._builtin import LOP_CLIP_SHARE
from objpert.mechanisms._certificates.calibrate import calibrate_peer
from objpert.mechanisms._discrete_noise import discrete_gaussian_array

N, D = 5000, 5
EPS, DELTA = 1.0, 1e-5

RELEASES = {
    "lop": mpeers.lop_release,
    "lop_clip": mpeers.lop_clip_release,
    "amp": mpeers.amp_release,
    "output_perturbation": mpeers.output_perturbation_release,
    "noisy_gd": mpeers.noisy_gd_release,
}
OPTS = {"lop_clip": {"clip": 0.5}}


@functools.cache
def problem(seed: int = 0):
    """n = 5000, d = 5 logistic data with rows of norm <= 1 and labels in {0, 1}."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w_true = np.array([3.0, -2.0, 1.0, 0.5, 0.0])
    labels = (rng.random(N) < expit(X @ w_true)).astype(int)
    return np.ascontiguousarray(X), labels


@functools.cache
def plan_for(method: str, epsilon: float = EPS, **opts):
    merged = {**OPTS.get(method, {}), **opts}
    return calibrate_peer(method, N, D, 1.0, "logistic", epsilon, DELTA, **merged)


def seeded(method, X, y, plan, seed, **kwargs):
    with pytest.warns(SeedWarning):
        return RELEASES[method](X, y, plan, seed, **kwargs)


def pm1(labels):
    return np.where(np.asarray(labels) == 1, 1.0, -1.0)


def logistic_grad(X, y, w, mu):
    """grad of (1/n) sum log(1 + exp(-y <x, w>)) + mu/2 ||w||^2, written out in numpy."""
    return X.T @ (-y * expit(-y * (X @ w))) / X.shape[0] + mu * w


def accuracy(X, labels, w):
    return float(np.mean((X @ w > 0) == (np.asarray(labels) == 1)))


def grid_of(sigma, bits=cpeers.GRID_BITS):
    """(gamma, s) written out: gamma = 2^(floor(log2 sigma) - k), s = sigma / gamma."""
    gamma = 2.0 ** (math.floor(math.log2(sigma)) - bits)
    s = sigma / gamma
    assert s == int(s) and 2**bits <= s < 2 ** (bits + 1)  # a planned sigma is on its grid
    return gamma, int(s)


def grid_delta(epsilon, sens, sigma, d=D, steps=1):
    """delta(epsilon) of the grid discrete Gaussian, written out: rho = T (sens + gamma
    sqrt(d))^2 / (2 sigma^2) (Canonne et al. 2020, Theorem 14), Corollary 13 minimised
    over a fine grid of alpha (any alpha is valid, so this is >= the library's optimum)."""
    gamma, _ = grid_of(sigma)
    rho = steps * (sens + gamma * math.sqrt(d)) ** 2 / (2 * sigma**2)
    a = 1.0 + np.geomspace(1e-4, 1e5, 200001)
    log_d = (a - 1) * (a * rho - epsilon) - np.log(a - 1) + a * np.log1p(-1 / a)
    return float(np.exp(log_d.min()))


# ================================================================= calibration formulas


def test_lop_plan_matches_kifer_formula():
    plan = plan_for("lop", accountant="kifer")
    g, smooth = 1.0, 0.25  # logistic: L1 zeta, L2 zeta^2 at zeta = 1
    # Kifer et al. (2012), Theorem 2, at the replace-one sensitivity 2 g
    sigma = 2 * g * math.sqrt(8 * math.log(2 / DELTA) + 4 * EPS) / (N * EPS)
    assert plan.sigma == pytest.approx(sigma, rel=1e-10) and plan.sigma >= sigma
    assert plan.mu == pytest.approx(2 * smooth / (N * EPS), rel=1e-15)
    cert = plan.certificate
    assert cert.certified and cert.form == "lop"
    assert cert.epsilon == EPS and cert.delta <= DELTA
    assert cert.delta == pytest.approx(DELTA, rel=1e-8)
    assert cert.details["tolerance"] == plan.tolerance == pytest.approx(1e-9)
    assert "exact minimiser" in cert.details["guarantee"]
    # the inverse of the noise formula
    assert cpeers.lop_delta(N, g, sigma, EPS) == pytest.approx(DELTA, rel=1e-9)
    # the default takes the exact profile, tighter at Kifer's floor
    best = plan_for("lop")
    assert best.accountant == "profile" and best.mu == plan.mu and best.sigma < plan.sigma


def test_lop_mu_is_max_of_requested_and_minimum():
    mu_min = plan_for("lop").mu
    assert plan_for("lop", mu=0.05).mu == 0.05
    assert plan_for("lop", mu=mu_min / 10).mu == mu_min


def test_lop_clip_uses_clip_level_and_accepts_unbounded_losses():
    plan = plan_for("lop_clip", accountant="kifer")
    c = 0.5
    sigma = 2 * c * math.sqrt(8 * math.log(2 / DELTA) + 4 * EPS) / (N * EPS)
    assert plan.sigma == pytest.approx(sigma, rel=1e-10)
    assert plan.mu == pytest.approx(2 * 0.25 / (N * EPS), rel=1e-15)
    assert plan.certificate.constants["gradient_bound"] == c
    sq = calibrate_peer("lop_clip", 100, 3, 2.0, "squared", 2.0, 1e-6, clip=1.5)
    assert sq.certificate.certified
    assert sq.mu == pytest.approx(2 * 1.0 * 4.0 / (100 * 2.0))
    with pytest.raises(ParameterError, match="L1"):
        calibrate_peer("lop", 100, 3, 2.0, "squared", 2.0, 1e-6)
    # the registry's default clip for a loss with unbounded l' (L1 None): share * zeta
    default = objpert.plan("lop_clip", loss="squared", n=100, d=3, zeta=2.0, epsilon=2.0,
                           delta=1e-6)  # fmt: skip
    assert default.certificate.constants["gradient_bound"] == LOP_CLIP_SHARE * 2.0
    # ... and of the robust loss: share * L1 zeta with L1 its scale (not the default scale)
    for scale in (0.01, 100.0):
        robust = objpert.plan("lop_clip", loss="robust", n=100, d=3, zeta=2.0, epsilon=2.0,
                              delta=1e-6, loss_params={"scale": scale})  # fmt: skip
        assert robust.clip == pytest.approx(LOP_CLIP_SHARE * scale * 2.0, rel=1e-15)


@pytest.mark.parametrize("sens", [1e-3, 1.0, 37.0])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-8])
def test_analytic_gaussian_calibration_meets_delta_and_is_tight(sens, epsilon, delta):
    sigma = cgauss.calibrate_gaussian(sens, epsilon, delta)
    assert float(gaussian_profile(epsilon, sens, sigma)) <= delta
    assert float(gaussian_profile(epsilon, sens, sigma * (1 - 1e-9))) > delta
    # scale invariance: sigma is linear in the sensitivity
    assert sigma / sens == pytest.approx(cgauss.calibrate_gaussian(1.0, epsilon, delta), rel=1e-12)
    if epsilon < 1:  # the classical formula is valid and looser
        assert cgauss.classical_gaussian_sigma(sens, epsilon, delta) >= sigma


def test_analytic_gaussian_calibration_is_monotone():
    eps = [0.1, 0.3, 1.0, 3.0, 10.0]
    by_eps = [cgauss.calibrate_gaussian(1.0, e, 1e-6) for e in eps]
    assert all(a > b for a, b in itertools.pairwise(by_eps))
    dels = [1e-2, 1e-4, 1e-6, 1e-10]
    by_delta = [cgauss.calibrate_gaussian(1.0, 1.0, d) for d in dels]
    assert all(a < b for a, b in itertools.pairwise(by_delta))
    # the profile is decreasing in sigma, and gaussian_epsilon inverts it
    sigmas = np.geomspace(0.3, 30, 20)
    prof = [cgauss.gaussian_delta(1.0, 1.0, s) for s in sigmas]
    assert all(a > b for a, b in itertools.pairwise(prof))
    e = cgauss.gaussian_epsilon(1e-6, 1.0, 4.0)
    assert (
        cgauss.gaussian_delta(e, 1.0, 4.0) <= 1e-6 < cgauss.gaussian_delta(e * (1 - 1e-9), 1.0, 4.0)
    )


def test_classical_gaussian_formula_and_range():
    assert cgauss.classical_gaussian_sigma(2.0, 0.5, 1e-5) == pytest.approx(
        2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5
    )
    with pytest.raises(ParameterError, match="epsilon < 1"):
        cgauss.classical_gaussian_sigma(1.0, 1.0, 1e-5)


def test_output_perturbation_formula():
    plan = plan_for("output_perturbation", mu=0.01)
    sens = (2 * 1.0 / N + 2 * plan.tolerance) / 0.01
    assert plan.certificate.details["sensitivity"] == pytest.approx(sens, rel=1e-15)
    assert cpeers.output_sensitivity(N, 1.0, 0.01) == pytest.approx(2 / (N * 0.01))
    gamma, _ = grid_of(plan.sigma)
    assert plan.certificate.details["grid_spacing"] == gamma
    assert plan.certificate.details["grid_sensitivity"] == sens + gamma * math.sqrt(D)
    # discrete Gaussian on the grid: Theorem 14 + Corollary 13, tight at the target
    direct = grid_delta(EPS, sens, plan.sigma)
    assert plan.certificate.delta <= DELTA
    assert plan.certificate.delta == pytest.approx(direct, rel=1e-6)
    assert plan.certificate.delta == pytest.approx(DELTA, rel=1e-4)
    below = plan.sigma - gamma  # the grid point below the calibrated sigma fails
    assert cpeers.discrete_gaussian_delta(EPS, sens, below, D) > DELTA
    # never below the continuous Gaussian at the same sigma
    assert plan.certificate.delta >= float(gaussian_profile(EPS, sens, plan.sigma))
    # default mu: the public heuristic
    c = math.sqrt(2 * math.log(1.25 / DELTA))
    assert plan_for("output_perturbation").mu == pytest.approx(
        2 * math.sqrt(c * math.sqrt(D) / (N * EPS))
    )
    classical = plan_for("output_perturbation", 0.5, mu=0.01, gaussian_calibration="classical")
    c_sigma = cgauss.classical_gaussian_sigma(sens, 0.5, DELTA)
    gamma, _ = grid_of(classical.sigma)
    # the classical formula at the grid sensitivity: sens + gamma sqrt(d)
    grid_sens = sens + gamma * math.sqrt(D)
    assert classical.sigma >= cgauss.classical_gaussian_sigma(grid_sens, 0.5, DELTA)
    assert classical.sigma == pytest.approx(c_sigma, rel=1e-4)
    assert classical.certificate.delta <= 0.05 * DELTA  # the classical factor's margin


@pytest.mark.parametrize("calib", ["analytic", "classical"])
def test_amp_formula(calib):
    plan = plan_for("amp", gaussian_calibration=calib, gamma=1e-8, accountant="kifer")
    cert = plan.certificate
    eps1, eps2 = plan.epsilon_objective, plan.epsilon_output
    assert eps2 == pytest.approx(0.01 * EPS) and eps1 + eps2 <= EPS
    assert plan.delta_objective + plan.delta_output <= DELTA
    # objective part: Kifer et al. at (eps1, delta1), replace-one sensitivity 2 L1 zeta = 2
    sigma1 = 2 * math.sqrt(8 * math.log(2 / plan.delta_objective) + 4 * eps1) / (N * eps1)
    assert plan.sigma == pytest.approx(sigma1, rel=1e-10)
    assert plan.mu == pytest.approx(2 * 0.25 / (N * eps1), rel=1e-15)
    # output part: sensitivity 2 gamma / mu (+ the grid's), discrete Gaussian at (eps2, delta2)
    sens = 2 * 1e-8 / plan.mu
    assert cert.details["output_sensitivity"] == pytest.approx(sens, rel=1e-15)
    d2 = grid_delta(eps2, sens, plan.output_sigma)
    assert cert.details["delta_output"] == pytest.approx(d2, rel=1e-6)
    assert cert.details["delta_output"] <= plan.delta_output
    assert cert.details["output_grid_spacing"] == grid_of(plan.output_sigma)[0]
    d2 = cert.details["delta_output"]
    d1 = cpeers.lop_delta(N, 1.0, plan.sigma, eps1)
    assert cert.details["delta_objective"] == d1 <= plan.delta_objective
    assert cert.delta == pytest.approx(d1 + d2, rel=1e-15) and cert.delta <= DELTA
    assert cert.epsilon == eps1 + eps2 <= EPS
    if calib == "classical":  # the classical formula at the grid sensitivity
        gamma = cert.details["output_grid_spacing"]
        grid_sens = sens + gamma * math.sqrt(D)
        classical = cgauss.classical_gaussian_sigma(grid_sens, eps2, plan.delta_output)
        assert classical <= plan.output_sigma <= classical * (1 + 2.0**-19)


# ================================================================= noisy GD accounting


@pytest.mark.parametrize("z", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_noisy_gd_with_one_step_is_the_gaussian_mechanism(z, epsilon):
    assert gsteps.noisy_gd_delta(epsilon, 1, z) == float(gaussian_profile(epsilon, 1.0, z))
    zc = gsteps.calibrate_noise_multiplier(epsilon, 1e-5, 1)
    assert zc == cgauss.calibrate_gaussian(1.0, epsilon, 1e-5)


def test_noisy_gd_composition_by_direct_hockey_stick_integral():
    """T = 2 steps of sensitivity 1 and std s: outputs N((1, 1), s^2 I) against N(0, s^2 I).

    delta(eps) = int_{R^2} (p - e^eps q)_+ from the definition: for fixed x1 the set
    {p > e^eps q} is {x2 > c(x1)}, c = eps s^2 + 1 - x1 (the log-likelihood ratio is
    (x1 + x2 - 1)/s^2), so the inner integral is closed-form and the outer one is quad.
    """
    for s, eps in [(1.5, 0.5), (0.8, 2.0), (3.0, 0.1)]:

        def inner(x1, s=s, eps=eps):
            c = eps * s * s + 1.0 - x1
            p1, q1 = norm.pdf(x1, 1.0, s), norm.pdf(x1, 0.0, s)
            return p1 * norm.sf((c - 1.0) / s) - math.exp(eps) * q1 * norm.sf(c / s)

        direct, _ = integrate.quad(inner, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12)
        assert gsteps.noisy_gd_delta(eps, 2, s) == pytest.approx(direct, rel=1e-7)


def test_noisy_gd_plan_formula_and_monotonicity():
    plan = plan_for("noisy_gd")
    sens = 2.0 / N
    z = plan.sigma / sens
    assert plan.certificate.details["noise_multiplier"] == pytest.approx(z)
    # T composed grid discrete Gaussians: T rho-zCDP (Theorem 14), Corollary 13
    direct = grid_delta(EPS, sens, plan.sigma, steps=plan.iterations)
    assert plan.certificate.delta <= DELTA
    assert plan.certificate.delta == pytest.approx(direct, rel=1e-6)
    assert plan.certificate.delta == pytest.approx(DELTA, rel=1e-4)
    continuous = float(gaussian_profile(EPS, math.sqrt(plan.iterations) * sens, plan.sigma))
    assert plan.certificate.delta >= continuous
    assert plan.eta == pytest.approx(1 / 0.25) and plan.certificate.iterations == 100
    zs = [gsteps.calibrate_noise_multiplier(1.0, 1e-5, T) for T in (1, 10, 100, 1000)]
    assert all(a < b for a, b in itertools.pairwise(zs))
    # noise multiplier grows like sqrt(T): the GDP mu is fixed by (eps, delta)
    assert zs[3] / zs[2] == pytest.approx(math.sqrt(10), rel=1e-9)


def test_rdp_accountant_is_valid_and_looser_than_gdp():
    for T, z in [(1, 1.0), (10, 3.0), (100, 40.0)]:
        e_rdp, alpha = gsteps.rdp_epsilon(1e-5, T, z)
        e_gdp = gsteps.noisy_gd_epsilon(1e-5, T, z, "gdp")
        assert e_gdp <= e_rdp and alpha > 1
        # the continuous optimum is no worse than any order on a grid
        grid = np.linspace(1.01, 200, 5000)
        assert e_rdp <= gsteps.rdp_epsilon(1e-5, T, z, orders=grid)[0] + 1e-12
    plan = plan_for("noisy_gd", accountant="rdp")
    assert plan.certificate.delta == DELTA and plan.certificate.epsilon <= EPS
    assert plan.certificate.epsilon == pytest.approx(EPS, rel=1e-5)  # one grid step
    # discrete noise: 'zcdp' (Corollary 13) and 'rdp' (Proposition 12 at alpha T rho)
    # are the same curve of the same zCDP guarantee, so they pick the same sigma
    assert plan.sigma == pytest.approx(plan_for("noisy_gd").sigma, rel=1e-5)


def test_noisy_gd_accounting_against_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting import rdp

    orders = [1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512]
    for T, z in [(1, 2.0), (10, 3.0), (100, 30.0)]:
        event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(z), T)
        acc = rdp.RdpAccountant(orders)
        acc.compose(event)
        assert gsteps.rdp_epsilon(1e-5, T, z, orders=orders)[0] == pytest.approx(
            acc.get_epsilon(1e-5), rel=1e-12
        )
        # PLD (pessimistic discretisation) against the exact GDP composition
        e_pld = gsteps.pld_epsilon(1e-5, T, z)
        e_gdp = gsteps.noisy_gd_epsilon(1e-5, T, z)
        assert e_gdp <= e_pld <= e_gdp * (1 + 1e-3) + 1e-4


# ================================================================= plans


def test_dispatcher_refuses_unknown_methods_and_options():
    with pytest.raises(ParameterError, match="method"):
        calibrate_peer("dpsgd", N, D, 1.0, "logistic", EPS, DELTA)
    with pytest.raises(ParameterError, match="option"):
        calibrate_peer("lop", N, D, 1.0, "logistic", EPS, DELTA, clip=1.0)
    with pytest.raises(ParameterError):
        calibrate_peer("lop", N, D, 1.0, "logistic", EPS, 1.5)
    with pytest.raises(ParameterError):
        calibrate_peer("noisy_gd", N, D, 1.0, "logistic", EPS, DELTA, accountant="moments")
    with pytest.raises(ParameterError, match="clip"):
        calibrate_peer("lop_clip", N, D, 1.0, "logistic", EPS, DELTA)  # clip is required


@pytest.mark.parametrize("method", cpeers.METHODS)
def test_plans_round_trip_json_and_recertify(method):
    plan = plan_for(method)
    assert plan.certificate.certified
    assert plan.certificate.delta <= plan.delta and plan.certificate.epsilon <= plan.epsilon
    back = cpeers.PeerPlan.from_dict(json.loads(plan.to_json()))
    assert back == plan
    assert plan.recertify().to_dict() == plan.certificate.to_dict()


@pytest.mark.parametrize(("method", "option"), [("amp", "calibration"),
                                                ("output_perturbation", "calibration"),
                                                ("noisy_gd", "accountant")])  # fmt: skip
def test_an_option_name_no_planner_has_is_refused(method, option):
    with pytest.raises(ParameterError, match=option):
        plan_for.__wrapped__(method, **{option: "exact"})
    old = json.loads(plan_for(method).to_json())
    field = "accountant" if method == "noisy_gd" else "gaussian_calibration"
    old[field] = "exact"
    assert getattr(cpeers.PeerPlan.from_dict(old), field) == "exact"  # read as stored


def test_continuous_accountants_are_named_for_what_they_compute():
    assert gsteps.CONTINUOUS_ACCOUNTANTS == ("gdp", "rdp", "pld")
    for bad in ("exact", "zcdp"):  # zcdp: a discrete-noise accountant only
        with pytest.raises(ParameterError, match="accountant"):
            gsteps.noisy_gd_epsilon(1e-5, 10, 3.0, bad)


def test_robust_loss_plan_carries_its_scale():
    plan = calibrate_peer("lop", 200, 3, 1.0, "robust", 2.0, 1e-6, loss_params={"scale": 0.5})
    assert plan.loss_params == (("scale", 0.5),)
    assert plan.certificate.constants["gradient_bound"] == 0.5


# ================================================================= releases: refusals


@pytest.mark.parametrize("method", cpeers.METHODS)
def test_release_refuses_mismatched_and_tampered_plans(method):
    X, y = problem()
    other = "amp" if method != "amp" else "lop"
    with pytest.raises(PrivacyError, match="plan"):
        RELEASES[method](X, y, plan_for(other), 0)
    wa = calibration.corollary_413("logistic", n=N, d=D, zeta=1.0, epsilon=1.0, delta=DELTA)
    with pytest.raises(PrivacyError, match="PeerPlan"):
        RELEASES[method](X, y, wa, 0)
    plan = plan_for(method)
    for change in ({"sigma": plan.sigma / 2}, {"mu": plan.mu * 3 + 1e-3}, {"epsilon": 0.5}):
        with pytest.raises(PrivacyError):
            RELEASES[method](X, y, dataclasses.replace(plan, **change), 0)
    # a certifying plan whose stored certificate is not its own
    with pytest.raises(PrivacyError, match="differs"):
        RELEASES[method](X, y, dataclasses.replace(plan, certificate=None), 0)
    wider = plan_for(method, mu=0.2)
    with pytest.raises(PrivacyError, match="differs"):
        RELEASES[method](X, y, dataclasses.replace(wider, certificate=plan.certificate), 0)


@pytest.mark.parametrize("method", cpeers.METHODS)
def test_release_refuses_bad_data(method):
    X, y = problem()
    plan = plan_for(method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeedWarning)
        with pytest.raises(DataError, match="shape"):
            RELEASES[method](X[:-1], y[:-1], plan, 0)
        with pytest.raises(DataError, match="rows have norm"):
            RELEASES[method](2.0 * X, y, plan, 0)
        with pytest.raises(DataError, match="two classes"):
            RELEASES[method](X, np.arange(N) % 3, plan, 0)
        with pytest.raises(DataError, match="labels"):
            RELEASES[method](X, y[:-1], plan, 0)
        bad = X.copy()
        bad[0, 0] = np.nan
        with pytest.raises(DataError, match="non-finite"):
            RELEASES[method](bad, y, plan, 0)
        release = RELEASES[method](2.0 * X, y, plan, 0, clip=True)
    assert release.n_clipped > 0


# ================================================================= releases: noise


class CountingGenerator(np.random.Generator):
    """Records every draw method fetched from the generator."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        object.__setattr__(self, "calls", [])

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if not name.startswith("_") and name not in ("bit_generator", "calls", "spawn"):
            calls = super().__getattribute__("calls")

            def recorded(*args, **kwargs):
                calls.append((name, args, kwargs))
                return attr(*args, **kwargs)

            return recorded
        return attr


@pytest.mark.parametrize(
    ("method", "normal", "discrete"),
    [
        ("lop", 1, []),
        ("lop_clip", 1, []),
        ("amp", 1, [(D,)]),
        ("output_perturbation", 0, [(D,)]),
        ("noisy_gd", 0, [(100, D)]),  # the 100 steps' noise in one block
    ],
)
def test_noise_is_drawn_once_per_vector(method, normal, discrete, monkeypatch):
    """Objective noise: one continuous draw; published noise: one call of the discrete
    sampler (its coins are uniform integers from the same generator)."""
    X, y = problem()
    gen = CountingGenerator(3)
    shapes = []

    def recording(generator, scale, shape):
        assert generator is gen
        shapes.append(shape)
        return discrete_gaussian_array(generator, scale, shape)

    monkeypatch.setattr(mpeers.noise, "discrete_gaussian_array", recording)
    release = seeded(method, X, y, plan_for(method), gen)
    assert release.seeded
    normals = [kw for name, _, kw in gen.calls if name == "normal"]
    assert len(normals) == normal and all(kw["size"] == D for kw in normals)
    assert {name for name, _, _ in gen.calls} <= {"normal", "integers"}
    assert shapes == discrete


@pytest.mark.parametrize("method", cpeers.METHODS)
def test_release_is_reproducible_with_a_seed_and_fresh_without(method):
    X, y = problem()
    plan = plan_for(method)
    a = seeded(method, X, y, plan, 11)
    b = seeded(method, X, y, plan, 11)
    assert np.array_equal(a.weights, b.weights)
    assert a.epsilon <= plan.epsilon and a.delta <= plan.delta
    json.dumps(a.to_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = RELEASES[method](X, y, plan)
    assert not c.seeded and not np.array_equal(a.weights, c.weights)


def test_noisy_gd_equals_reference_loop_bit_for_bit():
    """w_{t+1} = -eta gamma (sum of the grid gradients q_s + Y_s), the integers summed
    exactly: the release is a function of the published grid-valued noisy gradients."""
    X, labels = problem()
    plan = plan_for("noisy_gd", mu=1e-3)
    release = seeded("noisy_gd", X, labels, plan, 5)
    gamma, s = grid_of(plan.sigma)
    Y = discrete_gaussian_array(np.random.default_rng(5), s, (plan.iterations, D))
    y, w, total = pm1(labels), np.zeros(D), np.zeros(D, dtype=np.int64)
    for k in range(plan.iterations):
        r = -y * expit(-y * (X @ w))
        r = r / N
        g = X.T @ r
        g = g + plan.mu * w
        total += np.rint(g / gamma).astype(np.int64) + Y[k]
        w = -(plan.eta * gamma) * total.astype(float)
    assert np.array_equal(release.weights, w)
    assert release.iterations == plan.iterations
    c = plan.eta * gamma
    assert np.array_equal(c * np.rint(release.weights / c), release.weights)


def test_lop_release_is_the_perturbed_minimiser():
    X, labels = problem()
    plan = plan_for("lop")
    release = seeded("lop", X, labels, plan, 2)
    z = np.random.default_rng(2).normal(0.0, plan.sigma, size=D)
    g = logistic_grad(X, pm1(labels), release.weights, plan.mu) + z
    assert np.linalg.norm(g) <= plan.tolerance * (1 + 1e-6)


def test_amp_release_is_a_gamma_minimiser_plus_output_noise():
    X, labels = problem()
    plan = plan_for("amp")
    release = seeded("amp", X, labels, plan, 4)
    gen = np.random.default_rng(4)
    b1 = gen.normal(0.0, plan.sigma, size=D)
    gamma, s = grid_of(plan.output_sigma)
    b2 = gamma * discrete_gaussian_array(gen, s, D)
    assert np.array_equal(np.rint(release.weights / gamma), release.weights / gamma)
    w = release.weights - b2  # the minimiser rounded to the grid: within gamma/2 of it
    g = logistic_grad(X, pm1(labels), w, plan.mu) + b1
    smooth = 0.25 + plan.mu  # L2 zeta^2 + mu bounds the Hessian
    assert np.linalg.norm(g) <= plan.tolerance * (1 + 1e-6) + smooth * gamma * math.sqrt(D) / 2


def test_output_perturbation_release_is_the_minimiser_plus_noise():
    X, labels = problem()
    plan = plan_for("output_perturbation")
    release = seeded("output_perturbation", X, labels, plan, 6)
    gamma, s = grid_of(plan.sigma)
    noise = gamma * discrete_gaussian_array(np.random.default_rng(6), s, D)
    assert np.array_equal(np.rint(release.weights / gamma), release.weights / gamma)
    g = logistic_grad(X, pm1(labels), release.weights - noise, plan.mu)
    smooth = 0.25 + plan.mu
    assert np.linalg.norm(g) <= plan.tolerance * (1 + 1e-6) + smooth * gamma * math.sqrt(D) / 2


def test_amp_refuses_when_the_tolerance_is_not_met():
    X, y = problem()
    for opts in ({"gamma": 1e-30}, {"gamma": 1e-9, "max_iter": 1}):
        plan = calibrate_peer("amp", N, D, 1.0, "logistic", EPS, DELTA, **opts)
        with pytest.raises(ToleranceError, match="tolerance"):
            seeded("amp", X, y, plan, 0)
    assert issubclass(ToleranceError, PrivacyError)
    plan = calibrate_peer("lop", N, D, 1.0, "logistic", EPS, DELTA, tolerance=1e-30)
    with pytest.raises(ToleranceError):
        seeded("lop", X, y, plan, 0)


# ================================================================= LOP-Clip


def test_lop_clip_equals_lop_when_nothing_is_clipped():
    X, y = problem()
    lop = plan_for("lop")
    clipped = plan_for("lop_clip", clip=1.0)  # c = L1 zeta: no gradient can be clipped
    assert clipped.sigma == lop.sigma and clipped.mu == lop.mu
    a = seeded("lop", X, y, lop, 9)
    b = seeded("lop_clip", X, y, clipped, 9)
    assert np.array_equal(a.weights, b.weights)


def test_lop_clip_solves_the_clipped_objective():
    X, labels = problem()
    plan = plan_for("lop_clip")
    release = seeded("lop_clip", X, labels, plan, 8)
    z = np.random.default_rng(8).normal(0.0, plan.sigma, size=D)
    y, w = pm1(labels), release.weights
    per_sample = (-y * expit(-y * (X @ w)))[:, None] * X  # rows: l'(t_i) x_i
    norms = np.linalg.norm(per_sample, axis=1)
    assert np.count_nonzero(norms > 0.5) > 0  # clipping is active
    clipped = per_sample * np.minimum(1.0, 0.5 / np.maximum(norms, 1e-300))[:, None]
    g = clipped.mean(axis=0) + plan.mu * w + z
    assert np.linalg.norm(g) <= plan.tolerance * (1 + 1e-6)
    lop = seeded("lop", X, labels, plan_for("lop"), 8)
    assert not np.allclose(lop.weights, w)


@pytest.mark.parametrize(("name", "params"), [("logistic", {}), ("robust", {"scale": 0.7})])
def test_clipped_loss_value_matches_its_gradient(name, params):
    rng = np.random.default_rng(1)
    base = get_loss(name, **params)
    X = rng.normal(size=(40, 3))
    y = pm1(rng.integers(0, 2, 40)) if name == "logistic" else rng.normal(size=40)
    loss = mpeers.ClippedGLMLoss.for_rows(base, X, y, 0.3)
    t = rng.normal(scale=4.0, size=40)
    h = 1e-6
    fd = (loss.value(t + h, y) - loss.value(t - h, y)) / (2 * h)
    np.testing.assert_allclose(fd, loss.d1(t, y), atol=1e-6)
    assert np.all(np.abs(loss.d1(t, y)) * np.linalg.norm(X, axis=1) <= 0.3 * (1 + 1e-12))
    inside = (t > loss.t_lo) & (t < loss.t_hi)
    np.testing.assert_array_equal(loss.d1(t, y)[inside], base.d1(t, y)[inside])
    # thresholds: l'(t_lo) = -b, l'(t_hi) = +b where finite
    fin = np.isfinite(loss.t_hi)
    np.testing.assert_allclose(base.d1(loss.t_hi[fin], y[fin]), loss.bound[fin], rtol=1e-9)
    # batched margins (n, B), as GLMObjective evaluates them
    T2 = np.column_stack([t, -t])
    np.testing.assert_array_equal(loss.d1(T2, y[:, None])[:, 0], loss.d1(t, y))


def test_lop_clip_with_the_squared_loss_runs():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    targets = X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=300)
    plan = calibrate_peer("lop_clip", 300, 3, 1.0, "squared", 3.0, 1e-5, clip=1.0, mu=0.05)
    release = seeded("lop_clip", X, targets, plan, 0)
    assert np.all(np.isfinite(release.weights))


# ================================================================= accuracy


@pytest.mark.parametrize("epsilon", [1.0, 3.0])
@pytest.mark.parametrize("method", cpeers.METHODS)
def test_accuracy_is_sane_on_synthetic_logistic(method, epsilon):
    X, y = problem()
    from sklearn.linear_model import LogisticRegression

    baseline = LogisticRegression(C=1e6).fit(X, y).score(X, y)
    plan = plan_for(method, epsilon)
    scores = [accuracy(X, y, seeded(method, X, y, plan, s).weights) for s in range(3)]
    assert min(scores) >= baseline - 0.03


def test_sparse_input_gives_the_dense_release():
    X, y = problem()
    plan = plan_for("lop")
    dense = seeded("lop", X, y, plan, 1)
    sp = seeded("lop", sparse.csr_matrix(X), y, plan, 1)
    np.testing.assert_allclose(sp.weights, dense.weights, rtol=1e-8, atol=1e-10)


def test_the_mean_form_never_hands_out_a_zero_noise():
    from objpert.mechanisms._certificates.kifer import lop_mean_form

    with pytest.raises(ParameterError, match="underflows"):
        lop_mean_form(10**9, 1e-320, 1.0, 1.0, 1e-6)
    assert lop_mean_form(100, 1.0, 1.0, 1.0, 1e-6)[1] > 0
