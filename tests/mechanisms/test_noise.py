"""Where the noise comes from and how published noise is certified.

* ``make_rng``: ChaCha20 keyed with 256 OS bits by default; seeds behave as before.
* The exact discrete Gaussian sampler (Canonne, Kamath & Steinke 2020, Algorithms 1-3):
  Algorithm 1 by exact enumeration of its coin tree (Fractions) and by large samples,
  Algorithms 2-3 (scalar and vectorised) by chi-square tests against the exact pmf,
  summed directly (mpmath), with fixed seeds.
* The grid: every published value of output perturbation, AMP and noisy GD lies on it,
  and depends on the value only through its grid point.
* The certificate: Theorem 14 + Corollary 13 against mpmath, never below the continuous
  Gaussian at the same sigma, the grid's gamma sqrt(d) in the sensitivity, plans that
  certify their targets.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import pickle
import secrets
import time
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import randomgen
from scipy import stats
from scipy.special import expit

from objpert import _randomness as randomness
from objpert._randomness import make_rng
from objpert.accounting import _conversions as zcdp
from objpert.accounting import _gaussian_mechanism as cgauss
from objpert.accounting._gaussian_mechanism import gaussian_profile
from objpert.exceptions import (
    CryptoUnavailableError,
    ParameterError,
    PrivacyError,
    TestingSeedWarning,
)
from objpert.mechanisms import _certificates as cpeers
from objpert.mechanisms import _discrete_noise as dn
from objpert.mechanisms import _peers as mpeers
from objpert.mechanisms._certificates import qop as cqop
from objpert.mechanisms._certificates.calibrate import calibrate_peer
from objpert.mechanisms._qop import qop_release

N, D = 2000, 4


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        return fn(*args, **kwargs)


# ================================================================= the generator


def test_unseeded_generator_is_chacha20_keyed_with_256_os_bits(monkeypatch):
    keys = []
    real = secrets.randbits

    def recording(k):
        keys.append(real(k))
        return keys[-1] if k == 256 else pytest.fail(f"randbits({k})")

    monkeypatch.setattr(randomness.secrets, "randbits", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no seed warning
        gen, seeded = make_rng(None)
    assert seeded is False and isinstance(gen, np.random.Generator)
    assert isinstance(gen.bit_generator, randomgen.ChaCha)
    state = gen.bit_generator.state["state"]
    assert state["rounds"] == 20
    # the key is the 256 OS bits themselves (eight 32-bit words), not a seed's expansion
    assert len(keys) == 1
    assert state["keysetup"] == [(keys[0] >> (32 * i)) & 0xFFFFFFFF for i in range(8)]
    other, _ = make_rng(None)
    assert other.bit_generator.state != gen.bit_generator.state
    assert gen.integers(0, 2**62) != other.integers(0, 2**62)


def test_the_chacha_generator_pickles_and_restores_its_stream():
    gen, _ = make_rng(None)
    gen.normal(size=3)
    copy = pickle.loads(pickle.dumps(gen))
    assert isinstance(copy.bit_generator, randomgen.ChaCha)
    np.testing.assert_array_equal(copy.integers(0, 1000, 20), gen.integers(0, 1000, 20))


def test_seeds_keep_their_numpy_behaviour():
    with pytest.warns(TestingSeedWarning):
        g, seeded = make_rng(7)
    assert seeded and g.normal() == np.random.default_rng(7).normal()
    base = np.random.default_rng(1)
    with pytest.warns(TestingSeedWarning):
        same, seeded = make_rng(base)
    assert same is base and seeded
    with pytest.warns(TestingSeedWarning):
        g, _ = make_rng(np.random.SeedSequence(3))
    assert g.normal() == np.random.default_rng(np.random.SeedSequence(3)).normal()
    with pytest.warns(TestingSeedWarning):
        g, _ = make_rng(np.random.RandomState(5))
    legacy = np.random.RandomState(5).randint(0, 2**31 - 1)
    assert g.normal() == np.random.default_rng(legacy).normal()


def test_no_fallback_without_randomgen(monkeypatch):
    monkeypatch.setattr(randomness, "_ChaCha", None)
    with pytest.raises(CryptoUnavailableError, match="randomgen"):
        make_rng(None)
    with pytest.warns(TestingSeedWarning):  # seeded testing still works
        make_rng(0)


# ================================================================= Algorithm 1, exactly


class _NeedCoinError(Exception):
    pass


def enumerate_bernoulli_exp(gamma, monkeypatch, depth=40):
    """P(bernoulli_exp(gamma) is True), summed over the tree of its Bernoulli(p) coins with
    exact Fractions (each coin of the code replaced by an oracle that branches), to the
    given depth: (probability of True, mass left unresolved below that depth)."""
    true, unresolved = Fraction(0), Fraction(0)
    stack = [((), Fraction(1))]
    while stack:
        prefix, p = stack.pop()
        replay = iter(prefix)

        def coin(generator, q, replay=replay):
            try:
                return next(replay)
            except StopIteration:
                raise _NeedCoinError(q) from None

        monkeypatch.setattr(dn, "_bernoulli", coin)
        try:
            out = dn.bernoulli_exp(None, gamma)
        except _NeedCoinError as need:
            q = need.args[0]
            if len(prefix) >= depth:
                unresolved += p
                continue
            for outcome, weight in ((True, q), (False, 1 - q)):
                if weight:
                    stack.append(((*prefix, outcome), p * weight))
            continue
        if out:
            true += p
    return true, unresolved


@pytest.mark.parametrize("gamma", ["0", "1/3", "1/2", "1", "3/2", "7/3"])
def test_bernoulli_exp_by_exact_enumeration(gamma, monkeypatch):
    g = Fraction(gamma)
    true, rest = enumerate_bernoulli_exp(g, monkeypatch)
    with mpmath.workdps(120):
        exact = mpmath.exp(-mpmath.mpf(g.numerator) / g.denominator)
        lo = mpmath.mpf(true.numerator) / true.denominator
        hi = lo + mpmath.mpf(rest.numerator) / rest.denominator
        slack = mpmath.mpf(10) ** -100  # the rounding of the two divisions above
        assert rest < Fraction(1, 10**15)
        assert lo - slack <= exact <= hi + slack


@pytest.mark.parametrize(("num", "den"), [(0, 7), (1, 3), (3, 3), (5, 2), (7, 1), (123, 10)])
def test_vectorised_bernoulli_exp_frequency(num, den):
    n = 400_000
    hits = dn._bernoulli_exp_array(
        np.random.default_rng(num * 100 + den), np.full(n, num, dtype=np.int64), den
    )
    p = math.exp(-num / den)
    assert abs(hits.mean() - p) <= 4.5 * math.sqrt(p * (1 - p) / n) + 1e-12


def test_scalar_bernoulli_exp_frequency():
    gen = np.random.default_rng(11)
    n = 10_000
    for gamma in (Fraction(2, 5), Fraction(9, 4)):
        p = math.exp(-float(gamma))
        freq = sum(dn.bernoulli_exp(gen, gamma) for _ in range(n)) / n
        assert abs(freq - p) <= 4.5 * math.sqrt(p * (1 - p) / n)
    with pytest.raises(ValueError):
        dn.bernoulli_exp(gen, -1)


def test_uniform_below_beyond_int64():
    gen = np.random.default_rng(2)
    high = 3 * 2**70
    v = [dn.uniform_below(gen, high) for _ in range(6000)]
    assert all(0 <= x < high for x in v)
    third = sum(x < 2**70 for x in v) / len(v)  # P = 1/3
    assert abs(third - 1 / 3) <= 4.5 * math.sqrt(2 / 9 / len(v))
    assert dn.uniform_below(gen, 1) == 0


# ================================================================= Algorithms 2-3: the pmf


def _mpf(x):
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def laplace_pmf(z, scale):
    """P(Z = z) proportional to exp(-|z| / scale), normalised in closed form."""
    q = mpmath.exp(-1 / _mpf(scale))
    return (1 - q) / (1 + q) * q ** abs(int(z))


def gauss_pmf(support, sigma2):
    """N_Z(0, sigma^2) on ``support``, normalised by direct summation (mpmath)."""
    with mpmath.workdps(30):
        s2 = _mpf(sigma2)
        top = int(40 * math.sqrt(float(sigma2))) + 40
        weights = [mpmath.exp(-(mpmath.mpf(y) ** 2) / (2 * s2)) for y in range(-top, top + 1)]
        norm = mpmath.fsum(weights)
        return np.array([float(weights[int(y) + top] / norm) for y in support])


def chi_square_p(samples, pmf_of, lo, hi):
    """p-value of a chi-square test of integer samples against a pmf: one bin per value of
    [lo, hi] whose expected count is > 5, the rest (tails included) pooled into one."""
    support = np.arange(lo, hi + 1)
    probs = np.asarray(pmf_of(support), dtype=float)
    inside = (samples >= lo) & (samples <= hi)
    counts = np.bincount(samples[inside] - lo, minlength=support.size)
    expected = samples.size * probs
    keep = expected > 5
    obs = np.append(counts[keep], samples.size - counts[keep].sum())
    exp_ = np.append(expected[keep], samples.size - expected[keep].sum())
    if exp_[-1] < 5:  # a negligible rest: it must be (nearly) empty, then drop it
        assert obs[-1] <= 5 + 10 * exp_[-1]
        obs, exp_ = obs[:-1], exp_[:-1]
    return stats.chisquare(obs, exp_ * obs.sum() / exp_.sum()).pvalue


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(3, 2), Fraction(5)])
def test_scalar_discrete_laplace_matches_its_pmf(scale):
    gen = np.random.default_rng(int(scale * 10))
    z = np.array([dn.discrete_laplace(gen, scale) for _ in range(6_000)])
    k = int(6 * scale) + 2
    p = chi_square_p(z, lambda s: [float(laplace_pmf(v, scale)) for v in s], -k, k)
    assert p > 1e-4


@pytest.mark.parametrize("sigma2", [Fraction(1, 4), Fraction(2), Fraction(49, 3)])
def test_scalar_discrete_gaussian_matches_its_pmf(sigma2):
    gen = np.random.default_rng(int(sigma2 * 12))
    y = np.array([dn.discrete_gaussian(gen, sigma2) for _ in range(6_000)])
    k = int(4 * math.sqrt(sigma2)) + 1
    assert chi_square_p(y, lambda s: gauss_pmf(s, sigma2), -k, k) > 1e-4


@pytest.mark.parametrize("scale", [1, 2, 7, 40])
def test_vectorised_discrete_gaussian_matches_its_pmf(scale):
    y = dn.discrete_gaussian_array(np.random.default_rng(scale), scale, 200_000)
    assert y.dtype == np.int64 and y.shape == (200_000,)
    k = 4 * scale + 1
    assert chi_square_p(y, lambda s: gauss_pmf(s, scale**2), -k, k) > 1e-4
    # the exact variance, summed directly
    support = np.arange(-40 * scale - 40, 40 * scale + 41)
    var = float(np.sum(gauss_pmf(support, scale**2) * support.astype(float) ** 2))
    assert abs(y.var() - var) <= 5 * var * math.sqrt(2 / y.size)


def test_vectorised_sampler_at_the_grid_scale():
    """s ~ 2^20: bins of width s/2 against the normal cdf with continuity correction (the
    discrete and continuous Gaussians agree there to ~1e-12)."""
    s = 2**20 + 12345
    y = dn.discrete_gaussian_array(np.random.default_rng(9), s, 200_000)
    edges = np.arange(-4.0, 4.01, 0.5) * s
    edges = np.concatenate([[-np.inf], np.round(edges), [np.inf]])
    counts = np.histogram(y, bins=edges - 0.5)[0]
    probs = np.diff(stats.norm.cdf((edges - 0.5) / s))
    assert stats.chisquare(counts, probs * y.size).pvalue > 1e-4


def test_the_exact_fallback_for_large_candidates_keeps_the_pmf(monkeypatch):
    monkeypatch.setattr(dn, "_SQUARE_BOUND", 3)  # most acceptances by the Fraction code
    y = dn.discrete_gaussian_array(np.random.default_rng(4), 3, 30_000)
    assert chi_square_p(y, lambda s: gauss_pmf(s, 9), -13, 13) > 1e-4


def test_vectorised_sampler_shapes_refusals_and_reproducibility():
    a = dn.discrete_gaussian_array(np.random.default_rng(1), 5, (3, 4))
    b = dn.discrete_gaussian_array(np.random.default_rng(1), 5, 12)
    assert a.shape == (3, 4) and np.array_equal(a.ravel(), b)  # row-major, same coins
    for bad in (0, 2**27, 2.5):
        with pytest.raises(ValueError):
            dn.discrete_gaussian_array(np.random.default_rng(0), bad, 3)


def test_sampler_speed():
    """Regression guard on throughput (measured ~1 us per sample on 2 cores)."""
    gen, _ = make_rng(None)
    start = time.perf_counter()
    dn.discrete_gaussian_array(gen, 2**20, 100_000)
    assert time.perf_counter() - start < 5.0


# ================================================================= the grid


@pytest.mark.parametrize("sigma", [1e-9, 0.0173, 1.0, 3.0, 2.0**10, 123456.789])
@pytest.mark.parametrize("bits", [8, 20])
def test_grid_noise_is_exact_and_idempotent(sigma, bits):
    gamma, s = cpeers.grid_noise(sigma, bits)
    assert math.frexp(gamma)[0] == 0.5  # a power of two
    assert isinstance(s, int) and 2**bits <= s <= 2 ** (bits + 1)
    eff = cpeers.grid_sigma(sigma, bits)
    assert eff == gamma * s and sigma <= eff < sigma * (1 + 2.0**-bits)
    assert cpeers.grid_noise(eff, bits)[0] * cpeers.grid_noise(eff, bits)[1] == eff
    assert cpeers.grid_sigma(eff, bits) == eff
    assert cpeers.grid_sensitivity(0.5, sigma, 9, bits) == 0.5 + 3 * cpeers.grid_noise(eff, bits)[0]


@pytest.mark.parametrize("mechanism", ["amp", "output_perturbation", "noisy_gd"])
@pytest.mark.parametrize("bits", [3, 25, 20.5, True])
def test_a_grid_outside_its_range_is_refused_at_the_door(mechanism, bits):
    """The grid's exponent k is checked where it enters, ``objpert.plan`` (the grid
    functions take it checked)."""
    import objpert

    with pytest.raises(ParameterError, match="grid_bits"):
        objpert.plan(mechanism, loss="logistic", n=500, d=3, zeta=1.0, epsilon=1.0,
                     delta=1e-5, grid_bits=bits)  # fmt: skip


def test_grid_gaussian_lands_on_the_grid_whatever_the_value():
    rng = np.random.default_rng(0)
    f = np.concatenate([rng.normal(size=50), 1e6 * rng.normal(size=5), [1e-300, -0.0, 7.5]])
    sigma = cpeers.grid_sigma(0.3)
    gamma, _ = cpeers.grid_noise(sigma)
    out = dn.grid_gaussian(np.random.default_rng(1), f, sigma)
    units = out / gamma
    assert np.array_equal(units, np.rint(units))
    # the output depends on f only through rint(f / gamma): low-order bits say nothing
    nudged = f + rng.uniform(-0.2, 0.2, size=f.size) * gamma
    nudged = np.where(np.rint(nudged / gamma) == np.rint(f / gamma), nudged, f)
    again = dn.grid_gaussian(np.random.default_rng(1), nudged, sigma)
    assert np.array_equal(out, again)
    with pytest.raises(ValueError, match="NaN"):
        dn.grid_gaussian(np.random.default_rng(1), [np.nan], sigma)
    clipped = dn.to_grid([1e300, -np.inf], gamma)
    assert clipped.tolist() == [2**52, -(2**52)]


@functools.cache
def data(seed: int):
    """Two different logistic datasets (n = 2000, d = 4, rows of norm <= 1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (rng.random(N) < expit(X @ rng.normal(size=D))).astype(int)
    return X, y


@functools.cache
def plan(method: str, **opts):
    return calibrate_peer(method, N, D, 1.0, "logistic", 1.0, 1e-5, **opts)


PUBLISHED = {
    "output_perturbation": ("sigma", mpeers.output_perturbation_release),
    "amp": ("output_sigma", mpeers.amp_release),
}


@pytest.mark.parametrize("method", sorted(PUBLISHED))
@pytest.mark.parametrize("seed", [0, 1])
def test_published_values_lie_on_the_grid(method, seed):
    field, release = PUBLISHED[method]
    p = plan(method)
    gamma, _ = cpeers.grid_noise(getattr(p, field), p.grid_bits)
    X, y = data(seed)
    for rng in (None, 3):  # cryptographic and seeded
        w = quiet(release, X, y, p, rng).weights
        assert np.array_equal(w / gamma, np.rint(w / gamma)) and np.any(w != 0)
    batch = quiet(mpeers.peer_release_batch, X, y, p, 5, 2).weights
    assert np.array_equal(batch / gamma, np.rint(batch / gamma))


@pytest.mark.parametrize("seed", [0, 1])
def test_noisy_gd_iterates_are_minus_eta_gamma_times_an_integer_vector(seed):
    p = plan("noisy_gd", iterations=30)
    gamma, _ = cpeers.grid_noise(p.sigma, p.grid_bits)
    c = p.eta * gamma
    X, y = data(seed)
    for w in (
        quiet(mpeers.noisy_gd_release, X, y, p).weights,
        quiet(mpeers.peer_release_batch, X, y, p, 3, 4).weights,
    ):
        units = np.rint(w / c)
        assert np.array_equal(c * units, w) and np.all(np.abs(units) < 2**52)


def test_noisy_gd_release_matches_the_batch_of_one_and_clips_publicly():
    p = plan("noisy_gd", iterations=30)
    X, y = data(0)
    single = quiet(mpeers.noisy_gd_release, X, y, p, 8).weights
    batch = quiet(mpeers.peer_release_batch, X, y, p, 1, 8).weights[0]
    assert np.array_equal(single, batch)
    assert mpeers.noisy_gd_clip(1) == dn.GRID_CLIP
    assert mpeers.noisy_gd_clip(2**21) == 2**41 - 2**40
    with pytest.raises(ParameterError):
        mpeers.noisy_gd_clip(2**22)


def test_qop_output_noise_is_on_the_grid_and_certified():
    p = cqop.qop_plan(3, 1.0, 0.01, smoothness=1.0, inexact=True, tau=1e-3, eta=1e-3,
                      epsilons=(0.5, 0.5), reading="half")  # fmt: skip
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    X /= 2 * np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = X @ np.ones(3)
    w = quiet(qop_release, X, y, p, np.zeros(3), iterations=20, rng=1).weights
    gamma, _ = cpeers.grid_noise(p.sigma_tilde)
    assert np.array_equal(w / gamma, np.rint(w / gamma))
    d2 = cqop.output_noise_delta(p.tau, p.eta, p.alpha, p.sigma2, p.beta, p.epsilon2,
                                 p.sigma_tilde, p.d)  # fmt: skip
    assert 0 < d2 <= 0.05 * p.delta2  # the classical factor's margin
    assert any("discrete Gaussian" in a for a in p.certificate.assumptions)


# ================================================================= the certificate


@pytest.mark.parametrize(("rho", "eps"), [(1e-4, 0.05), (0.01, 0.5), (0.1, 1.0), (2.0, 3.0)])
def test_corollary_13_against_mpmath(rho, eps):
    """delta = inf_alpha exp((alpha-1)(alpha rho - eps)) / (alpha-1) (1 - 1/alpha)^alpha,
    minimised here by mpmath's root finder on the derivative (independent code)."""
    mpmath.mp.dps = 40
    r, e = mpmath.mpf(rho), mpmath.mpf(eps)

    def log_delta(a):
        return (a - 1) * (a * r - e) - mpmath.log(a - 1) + a * mpmath.log(1 - 1 / a)

    def slope(a):
        return (2 * a - 1) * r - e + mpmath.log(1 - 1 / a)

    a_star = mpmath.findroot(slope, (1 + mpmath.mpf(10) ** -12, (e + 1) / (2 * r) + 2),
                             solver="bisect")  # fmt: skip
    exact = float(mpmath.exp(log_delta(a_star)))
    got = zcdp.cdp_delta(rho, eps)
    assert got == pytest.approx(exact, rel=1e-9) and got >= exact * (1 - 1e-12)
    back = zcdp.cdp_epsilon(rho, got)
    assert back == pytest.approx(eps, rel=1e-6)


@pytest.mark.parametrize("sens", [1e-4, 0.3, 20.0])
@pytest.mark.parametrize("ratio", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("d", [1, 50])
def test_grid_certificate_is_never_below_the_continuous_one(sens, ratio, d):
    sigma = cpeers.grid_sigma(sens * ratio)
    for eps in (0.1, 1.0, 4.0):
        discrete = cpeers.discrete_gaussian_delta(eps, sens, sigma, d)
        continuous = cgauss.gaussian_delta(eps, sens, sigma)
        assert discrete >= continuous


def test_the_grid_term_is_in_the_sensitivity():
    sens, d, eps = 0.01, 25, 1.0
    sigma = 2.0**-5  # a power of two: on the grid for every k, so only gamma changes
    gammas, deltas = [], []
    for bits in (20, 10, 6, 5):  # gamma doubles, quadruples, ...
        gamma, s = cpeers.grid_noise(sigma, bits)
        assert gamma * s == sigma
        gammas.append(gamma)
        deltas.append(cpeers.discrete_gaussian_delta(eps, sens, sigma, d, bits=bits))
        rho = cpeers.discrete_gaussian_rho(sens, sigma, d, bits=bits)
        assert rho == (sens + gamma * math.sqrt(d)) ** 2 / (2 * sigma**2)
    assert gammas == sorted(gammas) and gammas[-1] == 2 * gammas[-2]
    assert all(a < b for a, b in itertools.pairwise(deltas))
    # doubling d (the rounding errors of more coordinates) raises it too
    assert cpeers.discrete_gaussian_delta(eps, sens, sigma, 2 * d, bits=6) > deltas[2]
    # composition: T steps are T rho
    assert cpeers.discrete_gaussian_rho(sens, sigma, d, 7) == pytest.approx(
        7 * cpeers.discrete_gaussian_rho(sens, sigma, d), rel=1e-15
    )


@pytest.mark.parametrize(
    ("method", "opts"),
    [
        ("output_perturbation", {}),
        ("output_perturbation", {"gaussian_calibration": "classical", "mu": 0.05}),
        ("amp", {}),
        ("amp", {"gaussian_calibration": "classical"}),
        ("noisy_gd", {}),
        ("noisy_gd", {"accountant": "rdp"}),
        ("noisy_gd", {"accountant": "rdp", "iterations": 10}),
        ("noisy_gd", {"grid_bits": 8, "iterations": 50}),
        ("output_perturbation", {"grid_bits": 6}),
    ],
)
def test_plans_certify_their_targets_on_the_grid(method, opts):
    eps = 0.5 if opts.get("gaussian_calibration") == "classical" else 1.0
    p = calibrate_peer(method, N, D, 1.0, "logistic", eps, 1e-5, **opts)
    cert = p.certificate
    assert cert.certified and cert.delta <= 1e-5 and cert.epsilon <= eps * (1 + 1e-12)
    field = cpeers.DISCRETE_NOISE[method]
    sigma = getattr(p, field)
    assert cpeers.grid_sigma(sigma, p.grid_bits) == sigma  # the plan's noise scale exactly
    assert p.grid_bits == opts.get("grid_bits", cpeers.GRID_BITS)
    back = cpeers.PeerPlan.from_dict(json.loads(p.to_json()))
    assert back == p and back.recertify().to_dict() == cert.to_dict()
    # an older plan dict without the field gets the default grid
    old = {k: v for k, v in p.to_dict().items() if k != "grid_bits"}
    assert cpeers.PeerPlan.from_dict(old).grid_bits == cpeers.GRID_BITS


def test_a_coarser_grid_costs_noise_and_is_accounted():
    fine = plan("output_perturbation", mu=0.05)
    coarse = plan("output_perturbation", mu=0.05, grid_bits=4)
    assert coarse.sigma > fine.sigma
    spacing = coarse.certificate.details["grid_spacing"] / fine.certificate.details["grid_spacing"]
    assert spacing > 1000
    # the fine grid's sigma does not certify with the coarse grid's rounding
    tampered = dataclasses.replace(fine, grid_bits=4, certificate=None)
    assert cpeers.certify_peer(tampered).delta > fine.delta


def test_the_grid_costs_little_at_the_default_k():
    """The discrete plans' sigma against the continuous calibration at the same target:
    the gap is Corollary 13's (a few percent), not the grid's (2^-20 relative)."""
    p = plan("output_perturbation")
    sens = p.certificate.details["sensitivity"]
    continuous = cgauss.calibrate_gaussian(sens, 1.0, 1e-5)
    assert continuous < p.sigma < 1.15 * continuous
    zcdp = cpeers.calibrate_discrete_gaussian(sens, D, 1.0, 1e-5, bits=24)
    assert p.sigma == pytest.approx(zcdp, rel=1e-5)
    assert float(gaussian_profile(1.0, sens, p.sigma)) < p.certificate.delta


def test_tampered_discrete_plans_are_refused():
    X, y = data(0)
    p = plan("output_perturbation")
    for change in ({"sigma": p.sigma / 2}, {"grid_bits": 3}, {"grid_bits": 25}):
        with pytest.raises(PrivacyError):
            quiet(mpeers.output_perturbation_release, X, y, dataclasses.replace(p, **change), 0)
