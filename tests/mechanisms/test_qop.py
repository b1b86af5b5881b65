"""Tests of objpert.mechanisms._certificates.qop (the Wishart calibration) and
objpert.mechanisms._qop.

Formulas are checked against direct evaluation with math.gamma / scipy where that does not
overflow (small d), against mpmath at high precision where double precision cannot (the
authors' alpha1 at d = 100, log-space incomplete gamma at d = 1e4), and the probabilistic
claims behind alpha, alpha1 and beta against Monte-Carlo Wishart draws with a binomial
margin (4 standard errors, fixed seeds).
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import sparse
from scipy.special import gammainc, gammaincinv

from objpert.exceptions import DataError, ParameterError, PrivacyError, UnreachableTargetError
from objpert.exceptions import TestingSeedWarning as SeedWarning
from objpert.mechanisms._certificates import grid_noise, qop
from objpert.mechanisms._certificates.qop import QOPCertificate, QOPPlan, qop_plan
from objpert.mechanisms._discrete_noise import discrete_gaussian_array
from objpert.mechanisms._qop import QOPRelease, qop_release

# ----------------------------------------------------------------------- direct formulas


def direct_dm(d, m):
    return (
        d
        * math.gamma(1.5)
        * math.gamma((m + 1) / 2)
        / (math.gamma(d / 2 + 1) * math.gamma((m - d + 1) / 2) * math.gamma((m - d + 2) / 2))
    )


def direct_inv(y, a):  # gamma^{-1}(y; a), the authors' inv_inc_gamma
    return float(gammaincinv(a, y / math.gamma(a)))


def direct_lower(x, a):  # gamma(a, x), the authors' inc_gamma
    return math.gamma(a) * float(gammainc(a, x))


def direct_constants(L, eps, d1, d3, d, m, rho, reading):
    a = (m - d + 1) / 2
    Dm = direct_dm(d, m)
    alpha = 2 * direct_inv(d3 / Dm, a)
    if reading == "authors":
        alpha1 = direct_inv(d1 * (1 - d3) / Dm + direct_lower(alpha, a), a) - alpha
    else:
        alpha1 = 2 * direct_inv(d1 * (1 - d3) / Dm + direct_lower(alpha / 2, a), a) - alpha
    f2 = 2 * ((m - d + 1) / (2 * alpha) + 0.5)
    s2 = max(2 * L / eps * (f2 + 2 * (2 * rho + 2) / alpha), 2 * L / alpha1)
    return Dm, alpha, alpha1, f2, s2


@pytest.mark.parametrize("d", [1, 2, 3, 5, 12, 40, 100])
@pytest.mark.parametrize("extra", [0, 1, 2.5, 7, 60])
def test_wishart_constant_matches_gamma(d, extra):
    m = d + extra
    assert qop.wishart_constant(d, m) == pytest.approx(direct_dm(d, m), rel=1e-11)
    assert qop.log_wishart_constant(d, m) == pytest.approx(math.log(direct_dm(d, m)), abs=1e-10)


@pytest.mark.parametrize("m", [10_000, 10_001, 15_000, 20_000, 10**6])
def test_wishart_constant_finite_in_logs_for_large_d(m):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warnings
        log_dm = qop.log_wishart_constant(10_000, m)
    assert math.isfinite(log_dm)
    mpmath.mp.dps = 30
    d = 10_000
    ref = (
        mpmath.log(d)
        + mpmath.loggamma(1.5)
        + mpmath.loggamma(mpmath.mpf(m + 1) / 2)
        - mpmath.loggamma(mpmath.mpf(d) / 2 + 1)
        - mpmath.loggamma(mpmath.mpf(m - d + 1) / 2)
        - mpmath.loggamma(mpmath.mpf(m - d + 2) / 2)
    )
    assert log_dm == pytest.approx(float(ref), rel=1e-12, abs=1e-9)


@pytest.mark.parametrize(("a", "x"), [(0.5, 1e-6), (3.5, 0.7), (6.5, 20.0), (50.5, 5.0)])
def test_log_lower_gamma_against_mpmath(a, x):
    mpmath.mp.dps = 40
    ref = float(mpmath.log(mpmath.gammainc(a, 0, x)))
    assert qop.log_lower_gamma(a, x) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize(("a", "x"), [(5000.5, 1000.0), (5000.5, 2700.0), (500.5, 30.0)])
def test_log_lower_gamma_where_it_underflows(a, x):
    assert gammainc(a, x) == 0.0  # double precision gives up
    mpmath.mp.dps = 40
    ref = float(mpmath.log(mpmath.gammainc(a, 0, x)))
    assert qop.log_lower_gamma(a, x) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize(
    ("a", "log_y"), [(0.5, -3.0), (6.5, 2.0), (50.5, 100.0), (5000.5, 30000.0), (5000.5, 0.0)]
)
def test_inverse_lower_gamma_round_trip(a, log_y):
    x = qop.inverse_lower_gamma(log_y, a)
    assert x > 0
    assert qop.log_lower_gamma(a, x) == pytest.approx(log_y, abs=1e-9 * max(1.0, abs(log_y)))


def test_inverse_lower_gamma_refuses_unreachable_mass():
    with pytest.raises(ParameterError, match="cannot reach"):
        qop.inverse_lower_gamma(math.lgamma(2.5) + 1e-9, 2.5)
    assert qop.inverse_lower_gamma(-math.inf, 2.5) == 0.0


@pytest.mark.parametrize("reading", qop.READINGS)
@pytest.mark.parametrize(
    ("d", "m", "d1", "d3"),
    [(3, 6, 0.05, 0.1), (12, 24, 0.005, 0.005), (12, 13, 1e-4, 1e-3), (12, 12, 1e-3, 1e-3),
     (5, 30, 0.01, 0.02), (30, 60, 1e-3, 1e-3)],
)  # fmt: skip
def test_sigma2_matches_direct_evaluation(reading, d, m, d1, d3):
    L, eps, rho = 1.7, 0.8, 1
    _Dm, alpha, alpha1, f2, s2 = direct_constants(L, eps, d1, d3, d, m, rho, reading)
    assert qop.min_eigenvalue_bound(d, m, d3) == pytest.approx(alpha, rel=1e-11)
    # the authors' alpha1 is a difference of nearly equal numbers in their code: it is
    # only as accurate as double precision lets the direct evaluation be
    tol = 1e-8 if reading == "half" else 1e-5
    assert qop.alpha1(d, m, d1, d3, reading=reading) == pytest.approx(alpha1, rel=tol)
    assert qop.f2(d, m, alpha) == pytest.approx(f2, rel=1e-11)
    assert qop.sigma2(L, eps, d1, d3, d, m, rank=rho, reading=reading) == pytest.approx(s2, rel=tol)


@pytest.mark.parametrize("reading", qop.READINGS)
@pytest.mark.parametrize(("d", "m"), [(12, 24), (100, 200), (1000, 2000), (10_000, 20_000)])
def test_alpha1_solves_its_defining_equation_in_high_precision(reading, d, m):
    """authors: D_m [gamma(a, alpha + alpha1) - gamma(a, alpha)]         = delta1 (1 - delta3)
    half:    D_m [gamma(a, (alpha + alpha1)/2) - gamma(a, alpha/2)] = delta1 (1 - delta3),
    the mass computed by mpmath quadrature of t^(a-1) e^(-t) (no cancellation, even where
    alpha1 ~ exp(-3000))."""
    d1, d3 = 0.004, 0.006
    alpha = qop.min_eigenvalue_bound(d, m, d3)
    la1 = qop.log_alpha1(d, m, d1, d3, reading=reading)
    mpmath.mp.dps = 30
    a = mpmath.mpf(m - d + 1) / 2
    dm = mpmath.exp(mpmath.mpf(qop.log_wishart_constant(d, m)))
    al, a1 = mpmath.mpf(alpha), mpmath.exp(mpmath.mpf(la1))
    # the interval [lo, lo + width]: integrate over the offset, which stays resolved
    lo, width = (al, a1) if reading == "authors" else (al / 2, a1 / 2)

    def density(t):  # unregularised: gamma(a, x) = int_0^x t^(a-1) e^(-t) dt
        return mpmath.exp((a - 1) * mpmath.log(t) - t)

    mass = dm * mpmath.quad(lambda s: density(lo + s), [0, width])
    assert float(mass / (d1 * (1 - d3))) == pytest.approx(1.0, rel=1e-7)
    # and alpha: D_m gamma(a, alpha/2) = delta3
    assert float(dm * mpmath.quad(density, [0, al / 4, al / 2]) / d3) == pytest.approx(
        1.0, rel=1e-9
    )


def test_authors_alpha1_at_d100_is_below_double_rounding():
    """Flag (i): at d = 100, m = 200 the authors' alpha1 ~ 2e-14 (their code gets ~1.8e-14
    out of a cancellation); sigma^2 = 2L/alpha1 ~ 1e17 L. The half reading gives ~0.15."""
    a1 = qop.alpha1(100, 200, 0.005, 0.005, reading="authors")
    assert 1e-14 < a1 < 3e-14
    assert qop.alpha1(100, 200, 0.005, 0.005, reading="half") == pytest.approx(0.152, rel=1e-2)


@pytest.mark.parametrize(
    ("d", "m"), [(3, 6), (12, 13), (12, 24), (12, 60), (50, 100), (100, 200), (1000, 2000)]
)
@pytest.mark.parametrize(("d1", "d3"), [(0.05, 0.05), (1e-3, 1e-5), (1e-5, 1e-2)])
def test_authors_reading_is_the_conservative_one(d, m, d1, d3):
    a_auth = qop.log_alpha1(d, m, d1, d3, reading="authors")
    a_half = qop.log_alpha1(d, m, d1, d3, reading="half")
    assert a_auth <= a_half
    assert qop.log_sigma2(1.0, 1.0, d1, d3, d, m, reading="authors") >= qop.log_sigma2(
        1.0, 1.0, d1, d3, d, m, reading="half"
    )


def test_large_d_half_reading_finite_authors_reading_leaves_double_range():
    d, m = 10_000, 20_000
    assert 0 < qop.min_eigenvalue_bound(d, m, 0.005) < m
    s2 = qop.sigma2(1.0, 1.0, 0.005, 0.005, d, m, reading="half")
    assert math.isfinite(s2) and 0 < s2 < 1e3
    plan = qop_plan(d, 1.0, 0.01, smoothness=1.0, reading="half")
    assert plan.sigma2 == pytest.approx(s2)
    log_auth = qop.log_sigma2(1.0, 1.0, 0.005, 0.005, d, m, reading="authors")
    assert 1000 < log_auth < 1e5  # finite in logs ...
    assert qop.sigma2(1.0, 1.0, 0.005, 0.005, d, m, reading="authors") == math.inf  # ... not so
    with pytest.raises(UnreachableTargetError, match="half"):
        qop_plan(d, 1.0, 0.01, smoothness=1.0)
    # m = d: a = 1/2, alpha tiny but positive
    assert math.isfinite(qop.sigma2(1.0, 1.0, 0.005, 0.005, d, d, reading="authors"))


# ------------------------------------------------------------ Monte-Carlo tail claims


def wishart_extremes(d, m, draws, seed):
    G = np.random.default_rng(seed).standard_normal((draws, d, m))
    ev = np.linalg.eigvalsh(G @ np.swapaxes(G, 1, 2))
    return ev[:, 0], ev[:, -1]


DRAWS = 20_000
lmin_36, lmax_36 = wishart_extremes(3, 6, DRAWS, seed=2026)


def within(p_hat, bound):
    return p_hat <= bound + 4 * math.sqrt(bound * (1 - bound) / DRAWS)


@pytest.mark.parametrize("delta3", [0.05, 0.1, 0.2])
def test_alpha_lower_tail_claim(delta3):
    alpha = qop.min_eigenvalue_bound(3, 6, delta3)
    p_hat = float(np.mean(lmin_36 < alpha))
    assert within(p_hat, delta3)
    assert p_hat > 0.5 * delta3  # and the bound is not vacuous


def test_alpha_tail_claim_nearly_tight_at_a_one():
    """m = d + 1 (a = 1): the Wishart bound is close to exact."""
    lmin, _ = wishart_extremes(3, 4, DRAWS, seed=7)
    for delta3 in (0.05, 0.1, 0.2):
        p_hat = float(np.mean(lmin < qop.min_eigenvalue_bound(3, 4, delta3)))
        assert within(p_hat, delta3) and p_hat > 0.85 * delta3


@pytest.mark.parametrize("reading", qop.READINGS)
@pytest.mark.parametrize(("delta1", "delta3"), [(0.05, 0.1), (0.1, 0.05), (0.2, 0.2)])
def test_alpha1_interval_claim(reading, delta1, delta3):
    """P(alpha <= lambda_min < alpha + alpha1) <= delta1 (1 - delta3) under both readings."""
    alpha = qop.min_eigenvalue_bound(3, 6, delta3)
    a1 = qop.alpha1(3, 6, delta1, delta3, reading=reading)
    p_hat = float(np.mean((lmin_36 >= alpha) & (lmin_36 < alpha + a1)))
    assert within(p_hat, delta1 * (1 - delta3))


@pytest.mark.parametrize(("delta3", "delta4"), [(0.05, 0.05), (0.1, 0.2), (0.2, 0.1)])
def test_beta_upper_tail_claim(delta3, delta4):
    beta = qop.max_eigenvalue_bound(3, 6, delta3, delta4)
    p_hat = float(np.mean(lmax_36 > beta))
    assert within(p_hat, delta4)
    expected = (math.sqrt(2 * math.log(2 / (delta4 * (1 - delta3)))) + math.sqrt(6) + 3**0.5) ** 2
    assert beta == pytest.approx(expected, rel=1e-14)


# ---------------------------------------------------------- inexact, utility, the plan


def test_output_noise_and_utility_formulas():
    tau, eta, alpha, s2, beta, e2, d2 = 1e-3, 2e-3, 0.4, 50.0, 30.0, 0.6, 1e-4
    expected = (
        (math.sqrt(2 * tau / (alpha * s2)) + beta * eta / alpha)
        * 2
        / e2
        * math.sqrt(2 * math.log(1.25 / d2))
    )
    st = qop.output_noise(tau, eta, alpha, s2, beta, e2, d2)
    assert st == pytest.approx(expected, rel=1e-14)
    assert qop.output_noise(0.0, 0.0, alpha, s2, beta, e2, d2) == 0.0
    assert qop.utility_exact(s2, 24, 1.5) == pytest.approx(s2 * 24 * 1.5**2 / 2)
    n, d, L, G, m, D = 10, 12, 1.0, 1.0, 24, 1.0
    assert qop.utility_inexact(n, d, L, st, G, tau, s2, m, D, eta) == pytest.approx(
        n * d * L * st**2 / 2 + G * math.sqrt(d) * st + tau + s2 * m * (D**2 + eta**2)
    )


def test_exact_plan_fields_and_certificate():
    plan = qop_plan(12, 1.0, 0.01, smoothness=2.0)
    Dm, alpha, _alpha1, _f2, s2 = direct_constants(2.0, 1.0, 0.005, 0.005, 12, 24, 1, "authors")
    assert (plan.m, plan.delta1, plan.delta3, plan.inexact) == (24, 0.005, 0.005, False)
    assert plan.sigma2 == pytest.approx(s2, rel=1e-5)
    assert plan.alpha == pytest.approx(alpha, rel=1e-11)
    assert plan.log_wishart == pytest.approx(math.log(Dm), abs=1e-12)
    assert plan.sigma2_branch == "alpha1"
    assert plan.epsilon == 1.0 and plan.delta == pytest.approx(0.01)
    cert = plan.certificate
    assert isinstance(cert, QOPCertificate)
    assert (cert.mechanism, cert.epsilon, cert.delta) == ("qop-exact", 1.0, plan.delta)
    assert cert.delta_parts == {"delta1": 0.005, "delta3": 0.005}
    assert any("exact minimiser" in a for a in cert.assumptions)
    for obj in (plan, cert):
        json.loads(obj.to_json())
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.epsilon = 2.0  # type: ignore[misc]
    assert plan.recompute() == plan
    assert plan.utility_bound(10, 1.0) == pytest.approx(plan.sigma2 * 24 / 2)


def test_inexact_plan_fields_and_certificate():
    plan = qop_plan(
        12,
        1.5,
        0.01,
        smoothness=1.0,
        m=30,
        inexact=True,
        tau=1e-3,
        eta=1e-3,
        deltas=(0.004, 0.003, 0.002, 0.001),
        epsilons=(1.0, 0.5),
        reading="half",
    )
    s2 = qop.sigma2(1.0, 1.0, 0.004, 0.002, 12, 30, reading="half")
    beta = qop.max_eigenvalue_bound(12, 30, 0.002, 0.001)
    assert plan.sigma2 == pytest.approx(s2, rel=1e-14)
    assert plan.beta == pytest.approx(beta, rel=1e-14)
    assert plan.sigma_tilde == pytest.approx(
        qop.output_noise(1e-3, 1e-3, plan.alpha, s2, beta, 0.5, 0.003), rel=1e-14
    )
    assert plan.epsilon == 1.5 and plan.delta == pytest.approx(0.01)
    cert = plan.certificate
    assert cert.mechanism == "qop-inexact"
    assert set(cert.delta_parts) == {"delta1", "delta2", "delta3", "delta4"}
    assert plan.recompute() == plan
    json.loads(plan.to_json())
    assert plan.utility_bound(10, 1.0, 1.0) > plan.sigma2 * 30


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"m": 11}, ParameterError, "m must be >= d"),
        ({"epsilon": 0.0}, ParameterError, "epsilon"),
        ({"epsilon": -1.0}, ParameterError, "epsilon"),
        ({"delta": 0.0}, ParameterError, "delta"),
        ({"delta": 1.0}, ParameterError, "delta"),
        ({"delta": 1.5}, ParameterError, "delta"),
        ({"deltas": (0.005, 0.004)}, ParameterError, "sum to"),
        ({"deltas": (0.01, 0.0)}, ParameterError, "deltas"),
        ({"deltas": (0.01,)}, ParameterError, "2 entries"),
        ({"smoothness": 0.0}, ParameterError, "smoothness"),
        ({"rank": 0}, ParameterError, "rank"),
        ({"d": 0}, ParameterError, "d"),
        ({"reading": "other"}, ParameterError, "reading"),
        ({"tau": 1e-3}, ParameterError, "inexact"),
        ({"inexact": True}, ParameterError, "tau and eta"),
        ({"inexact": True, "tau": 1e-3, "eta": 1e-3, "epsilon": 3.0}, ParameterError, "< 1"),
        ({"inexact": True, "tau": -1.0, "eta": 1e-3}, ParameterError, "tau"),
        ({"inexact": "yes"}, ParameterError, "inexact"),
        ({"delta": 0.9, "m": 12, "d": 12, "deltas": (0.899, 0.001)}, None, None),
    ],
)
def test_plan_refuses_bad_inputs(kwargs, error, match):
    args = {"d": 12, "epsilon": 1.0, "delta": 0.01, "smoothness": 1.0, **kwargs}
    d, eps, delta = args.pop("d"), args.pop("epsilon"), args.pop("delta")
    if error is None:  # a legitimate extreme split still plans
        assert qop_plan(d, eps, delta, **args).sigma2 > 0
        return
    with pytest.raises(error, match=match):
        qop_plan(d, eps, delta, **args)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"m": 4}, "m must be >= d"),
        ({"rank": 0}, "rank"),
        ({"smoothness": -1.0}, "smoothness"),
        ({"reading": "other"}, "reading"),
        ({"inexact": True, "tau": 1e-3, "eta": math.nan}, "eta"),
        ({"deltas": (0.01, 0.0)}, "deltas"),
    ],
)
def test_objpert_plan_refuses_bad_qop_options(options, match):
    """The formulas behind the plan take checked values: a bad option is refused at the
    door, ``objpert.plan``, naming it."""
    import objpert

    with pytest.raises(ParameterError, match=match):
        objpert.plan("qop", loss="squared", n=100, d=5, zeta=1.0, epsilon=1.0, delta=0.01,
                     **options)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "match"), [((0, 1.0), "n"), ((10, -1.0), "distance"), ((10, 1.0, math.inf), "sub")]
)
def test_utility_bound_refuses_bad_arguments(args, match):
    plan = qop_plan(5, 1.0, 0.01, smoothness=1.0)
    with pytest.raises(ParameterError, match=match):
        plan.utility_bound(*args)


def test_delta1_too_large_for_alpha1_refused():
    """(m = d, tiny a): delta1 / D_m pushes past Gamma(a), no alpha1 exists."""
    with pytest.raises(ParameterError):
        qop.log_alpha1(1, 1, 0.99, 0.5, reading="authors")


# --------------------------------------------------------------------------- the release


N, D_ = 25, 3


def regression_data(seed=0, n=N, d=D_, xi=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X = xi * X / np.linalg.norm(X, axis=1, keepdims=True)
    theta = rng.standard_normal(d)
    ref = theta + 0.1 * rng.standard_normal(d)
    return X, X @ theta, ref


def small_plan(**kw):
    kw = {"smoothness": 1.0, "reading": "half", **kw}
    return qop_plan(D_, 1.0, 0.01, **kw)


def twin_w(seed, d, m):
    G = np.random.default_rng(seed).standard_normal((d, m))
    return G @ G.T


def release(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeedWarning)
        return qop_release(*args, **kwargs)


def test_exact_release_is_the_perturbed_minimiser():
    """No l1, no box: the minimiser solves (X^T X + sigma^2 W) theta = X^T y + sigma^2 W ref."""
    X, y, ref = regression_data()
    plan = small_plan()
    rel = release(X, y, plan, ref, iterations=3000, rng=11)
    assert isinstance(rel, QOPRelease) and rel.seeded
    W = twin_w(11, D_, plan.m)
    s2 = plan.sigma2
    exact = np.linalg.solve(X.T @ X + s2 * W, X.T @ y + s2 * W @ ref)
    np.testing.assert_allclose(rel.weights, exact, rtol=1e-9, atol=1e-12)
    assert rel.certificate.mechanism == "qop-exact"
    assert rel.epsilon == 1.0 and rel.delta == pytest.approx(0.01)
    out = rel.to_dict()
    json.dumps(out)
    assert "W" not in out and "G" not in out


def test_release_with_l1_and_box_meets_kkt():
    X, y, ref = regression_data(seed=1)
    plan = small_plan()
    lam, kappa = 2.0, 0.4
    rel = release(X, y, plan, ref, l1=lam, box=kappa, iterations=4000, rng=5)
    W = twin_w(5, D_, plan.m)
    t = rel.weights
    g = N * (X.T @ (X @ t - y)) / N + plan.sigma2 * W @ (t - ref)
    assert np.max(np.abs(t)) <= kappa * (1 + 1e-12)
    for ti, gi in zip(t, g, strict=True):
        if ti == 0.0:
            assert abs(gi) <= lam + 1e-7
        elif abs(abs(ti) - kappa) < 1e-10:
            assert np.sign(ti) * (gi + lam * np.sign(ti)) <= 1e-7
        else:
            assert gi + lam * np.sign(ti) == pytest.approx(0.0, abs=1e-7)


def test_inexact_release_adds_the_planned_output_noise():
    X, y, ref = regression_data(seed=2)
    plan = small_plan(inexact=True, tau=1e-3, eta=1e-3, epsilons=(0.5, 0.5))
    rel = release(X, y, plan, ref, iterations=50, rng=3, inexact=True, tau=1e-3, eta=1e-3)
    # a twin generator: W first, then the output noise: the discrete Gaussian on the grid
    # of sigma_tilde (flag v of objpert.mechanisms._certificates.qop)
    gen = np.random.default_rng(3)
    gen.standard_normal((D_, plan.m))
    gamma, scale = grid_noise(plan.sigma_tilde)
    units = discrete_gaussian_array(gen, scale, D_)
    assert plan.sigma_tilde > 0 and gamma * scale >= plan.sigma_tilde
    # the 50 Davis-Yin steps (no prox, no projection, lambda_k = 1) written out
    W = twin_w(3, D_, plan.m)
    s2 = plan.sigma2
    step = 1.0 / (N * plan.smoothness + s2 * np.linalg.eigvalsh(W)[-1])
    x = np.zeros(D_)
    for _ in range(50):
        th = x.copy()
        g = X.T @ (X @ th - y) + s2 * W @ (th - ref)
        x += (2 * th - x - step * g) - th
    # theta of the last iteration is released (prox(x_{K-1}), as the authors' loop), on the
    # grid: gamma (rint(theta / gamma) + Y)
    assert np.array_equal(rel.weights, gamma * (np.rint(th / gamma) + units))
    assert rel.certificate.mechanism == "qop-inexact"
    assert rel.epsilon == 1.0


def test_stochastic_release_reproducible_and_sparse_equals_dense():
    X, y, ref = regression_data(seed=4)
    plan = small_plan()
    kw = {"solver": "stochastic", "iterations": 300, "l1": 0.5, "box": 2.0}
    a = release(X, y, plan, ref, rng=9, **kw)
    b = release(X, y, plan, ref, rng=9, **kw)
    c = release(sparse.csr_matrix(X), y, plan, ref, rng=9, **kw)
    np.testing.assert_array_equal(a.weights, b.weights)
    np.testing.assert_allclose(c.weights, a.weights, rtol=1e-12, atol=1e-14)
    d = release(sparse.csr_matrix(X), y, plan, ref, rng=9, iterations=200)
    e = release(X, y, plan, ref, rng=9, iterations=200)
    np.testing.assert_allclose(d.weights, e.weights, rtol=1e-12, atol=1e-14)
    assert a.solver == "stochastic" and a.iterations == 300


def test_stochastic_generic_loss_path():
    X, y, ref = regression_data(seed=4)
    labels = np.where(y > 0, 1, 0)
    plan = qop_plan(D_, 1.0, 0.01, smoothness=0.25, reading="half")
    rel = release(X, labels, plan, ref, loss="logistic", solver="stochastic", iterations=50, rng=1)
    assert np.all(np.isfinite(rel.weights))
    rel = release(X, labels, plan, ref, loss="logistic", iterations=50, rng=1)
    assert np.all(np.isfinite(rel.weights))


def test_seed_warns_and_none_does_not():
    X, y, ref = regression_data()
    plan = small_plan()
    with pytest.warns(SeedWarning):
        qop_release(X, y, plan, ref, iterations=2, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = qop_release(X, y, plan, ref, iterations=2)
    assert rel.seeded is False


def test_rows_beyond_the_smoothness_bound_refused_or_clipped():
    X, y, ref = regression_data(xi=2.0)  # ||x||^2 = 4 > L = 1
    plan = small_plan()
    with pytest.raises(DataError, match="norm"):
        release(X, y, plan, ref, iterations=2, rng=0)
    rel = release(X, y, plan, ref, iterations=2, rng=0, clip=True)
    assert rel.n_clipped == N


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"solver": "newton"}, ParameterError, "solver"),
        ({"iterations": 0}, ParameterError, "iterations"),
        ({"l1": -1.0}, ParameterError, "l1"),
        ({"box": 0.0}, ParameterError, "box"),
        ({"theta_ref": np.zeros(2)}, ParameterError, "theta_ref"),
        ({"theta_ref": np.array([np.nan, 0, 0])}, ParameterError, "theta_ref"),
        ({"inexact": True}, ParameterError, "inexact"),
        ({"tau": 1e-3}, ParameterError, "inexact"),
        ({"X": np.zeros((N, 4))}, DataError, "d = 3"),
        ({"y": np.zeros(N - 1)}, DataError, "labels"),
        ({"plan": "plan"}, ParameterError, "QOPPlan"),
        ({"loss": "hinge"}, ParameterError, "loss"),
    ],
)
def test_release_refuses_bad_inputs(kwargs, error, match):
    X, y, ref = regression_data()
    args = {"X": X, "y": y, "plan": small_plan(), "theta_ref": ref, **kwargs}
    pos = [args.pop(k) for k in ("X", "y", "plan", "theta_ref")]
    with pytest.raises(error, match=match):
        release(*pos, iterations=args.pop("iterations", 2), rng=0, **args)


def test_inexact_release_refuses_disagreeing_accuracy():
    X, y, ref = regression_data()
    plan = small_plan(inexact=True, tau=1e-3, eta=1e-3, epsilons=(0.5, 0.5))
    with pytest.raises(ParameterError, match="tau"):
        release(X, y, plan, ref, iterations=2, rng=0, tau=1e-2)
    with pytest.raises(ParameterError, match="inexact"):
        release(X, y, plan, ref, iterations=2, rng=0, inexact=False)


def test_tampered_plan_refused():
    X, y, ref = regression_data()
    plan = small_plan()
    bad = dataclasses.replace(plan, sigma2=plan.sigma2 / 2)
    assert isinstance(bad, QOPPlan)
    with pytest.raises(PrivacyError, match="sigma2"):
        release(X, y, bad, ref, iterations=2, rng=0)
