"""eqs. (21)-(22), Lemma A.9 and Lemma C.5 (eq. 36): the iteration-count sequences
(objpert.certify), against independent computations."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from certify_cases import (
    g_bar_brute,
    nu_sum,
    nu_tilde_sum,
    rel,
)

from objpert.certify import _sequences as sequences
from objpert.certify import problem
from objpert.certify._constants import ProblemConstants

mpf = mpmath.mpf

# (label, loss kwargs, mu, eta_frac or an absolute eta): eta mu from 1e-6 to ~0.98
SEQ_CASES = [
    ("tiny-eta", dict(mu=1e-4), 0.01),  # eta = 0.01, eta mu = 1e-6
    ("tiny-mu", dict(mu=0.25e-6 / (1 - 1e-6)), None),  # eta = 1/L, eta mu = 1e-6
    ("small", dict(mu=1e-3), None),
    ("example", dict(mu=0.01), None),
    ("half-step", dict(mu=0.2), "half"),
    ("large", dict(mu=10.0), None),  # eta mu = 10/10.25
]


def _seq_pc(kw: dict, eta) -> ProblemConstants:
    base = problem("logistic", n=1000, d=5, zeta=1.0, **kw)
    if eta is None:
        return base
    if eta == "half":
        return problem("logistic", n=1000, d=5, zeta=1.0, eta=0.5 / base.L, **kw)
    return problem("logistic", n=1000, d=5, zeta=1.0, eta=eta, **kw)


@pytest.mark.parametrize(("label", "kw", "eta"), SEQ_CASES, ids=[c[0] for c in SEQ_CASES])
def test_nu_and_nu_tilde_match_explicit_sums(label, kw, eta):
    """eqs. (21)-(22): closed forms equal the defining sums for every N = 1..2000."""
    pc = _seq_pc(kw, eta)
    N_max = 2000
    Ns = np.arange(1, N_max + 1)
    nu = sequences.nu_n(pc, Ns)
    nut = sequences.nu_tilde_n(pc, Ns)
    # explicit sums in double precision with exactly rounded terms 1 - rho^k (all positive)
    t = -np.expm1(np.arange(N_max + 1) * math.log1p(-pc.eta * pc.mu))
    nu_ref = np.cumsum(t[:N_max])
    nut_ref = np.array([math.fsum(t[1 : N + 1][::-1] * t[:N]) for N in Ns])
    assert nu[0] == 0.0 and nut[0] == 0.0  # nu_1 = nu-tilde_1 = 0
    np.testing.assert_allclose(nu[1:], nu_ref[1:], rtol=1e-12, atol=0)
    np.testing.assert_allclose(nut[1:], nut_ref[1:], rtol=1e-12, atol=0)
    # 0 <= nu-tilde_N <= nu_N <= N (eq. 22)
    assert np.all(nut >= 0) and np.all(nut <= nu * (1 + 1e-14)) and np.all(nu <= Ns)
    # spot checks against 40-digit sums
    rho = 1 - mpf(pc.eta * pc.mu)
    for N in (2, 3, 17, 500, 2000):
        assert rel(nu[N - 1], nu_sum(rho, N)) < 1e-13
        assert rel(nut[N - 1], nu_tilde_sum(rho, N)) < 1e-13


def test_nu_sequences_scalar_and_large_n():
    pc = _seq_pc(dict(mu=1e-3), None)
    Ns = np.array([1.0, 2.0, 10.0, 1e4, 1e6, 1e9])
    vec_nu, vec_nut = sequences.nu_n(pc, Ns), sequences.nu_tilde_n(pc, Ns)
    for i, N in enumerate(Ns):
        assert float(sequences.nu_n(pc, N)) == pytest.approx(vec_nu[i], rel=1e-15)
        assert float(sequences.nu_tilde_n(pc, N)) == pytest.approx(vec_nut[i], rel=1e-15)
    # large N: nu_N -> N - 1/(eta mu), nu-tilde_N -> N - (1 + rho)/(eta mu)
    x = pc.eta * pc.mu
    assert vec_nu[-1] == pytest.approx(1e9 - 1 / x, rel=1e-14)
    assert vec_nut[-1] == pytest.approx(1e9 - (2 - x) / x, rel=1e-14)


@pytest.mark.parametrize("eta_frac", [1.0, 0.5, 1e-3])
@pytest.mark.parametrize("mu", [1e-3, 0.05, 1.0])
def test_gamma_n_is_the_frozen_hessian_floor(mu, eta_frac):
    """gamma_N = (1 - (1 - eta L)^N)/L = min over h in [mu, L] of (1 - (1 - eta h)^N)/h."""
    base = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu)
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu, eta=eta_frac / base.L)
    L = mu + 0.25
    hs = np.linspace(mu, L, 4001)
    for N in (1, 2, 3, 10, 100, 5000):
        value = float(sequences.gamma_n(pc, N))
        ref = (1 - (1 - mpf(pc.eta) * (mpf(mu) + mpf(0.25))) ** N) / (mpf(mu) + mpf(0.25))
        assert rel(value, ref) < 1e-13
        with np.errstate(divide="ignore"):  # eta h = 1 at h = L when eta = 1/L
            profile = -np.expm1(N * np.log1p(-pc.eta * hs)) / hs
        assert value <= profile.min() * (1 + 1e-13)
        assert value >= pc.eta * (1 - 1e-13)  # gamma_N >= eta (Lemma A.9)


@pytest.mark.parametrize(
    ("mu", "eta_frac"),
    [(0.01, 1.0), (0.2, 1.0), (0.01, 0.5), (0.2, 0.9), (1e-4, 0.3), (0.3, 1e-3)],
)
def test_g_bar_is_the_sup_of_eq36(mu, eta_frac):
    """Lemma C.5: g-bar_N = sup over h in [mu, L] of eq. (36), brute force on a fine grid."""
    base = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu)
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu, eta=eta_frac / base.L)
    Ns = [1, 2, 3, 5, 10, 50, 200, 1000]
    vec = sequences.g_bar_n(pc, np.array(Ns))
    for i, N in enumerate(Ns):
        value = float(sequences.g_bar_n(pc, N))
        assert value == vec[i]
        brute = g_bar_brute(pc, N)
        assert value >= brute - 1e-13  # never below the sup (tau0 must not shrink)
        assert value == pytest.approx(brute, abs=1e-12)
        a_min = 1 - pc.eta * (pc.mu + 0.25)
        assert 0.0 <= value <= 1 - max(a_min, 0.0) ** (N - 1) + 1e-15  # Lemma C.5's bound
    if eta_frac == 1.0:  # Section C.4: g-bar_N = 1 for N >= 2 at eta = 1/L
        assert vec[0] == 0.0 and np.all(vec[1:] == 1.0)


@pytest.mark.parametrize("x", [1e-9, 1e-3, 0.3, 0.99])
def test_rho_power_is_floored_and_exact_otherwise(x):
    """rho^p never returns a subnormal or 0 (floored at e^-708), and equals rho^p otherwise."""
    mu = 24.75  # 1/L = 1/25, so eta = x/mu <= 1/L for every x <= 0.99
    pc = problem("logistic", n=1000, d=5, zeta=1.0, mu=mu, eta=x / mu)
    p = np.concatenate([np.arange(0, 50) / 2, np.geomspace(10, 1e12, 200)])
    values = sequences.rho_power(pc, p)
    assert np.all(values >= np.finfo(float).tiny) and np.all(values <= 1.0)
    rho = 1 - mpf(pc.eta * pc.mu)
    floored = 0
    for pi, v in zip(p, values, strict=True):
        ref = rho ** mpf(pi)
        if ref > 1e-300:
            assert rel(v, ref) < 1e-12
            if ref < 1:
                assert rel(sequences.one_minus_rho_power(pc, pi), 1 - ref) < 1e-12
        else:
            floored += 1
            assert v == math.exp(-708.0)  # the documented floor, a normal double
    assert floored > 0 or x < 1e-3
    assert float(sequences.rho_power(pc, 0)) == 1.0
    assert float(sequences.rho_power(pc, 1e300)) == math.exp(-708.0)
