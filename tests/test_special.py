"""Tests of objpert._special against independent references (mpmath at 50 digits, scipy).

Q, log Q, the integrated Gaussian tail Q1 of eq. (44) and its logarithm and inverse, and
the chi tail used as the exact truncation mass (Section C.4 / Corollary E.4).
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats
from scipy import special as sps

from objpert import _special as special

mpmath.mp.dps = 50

# t on [0, 40] in steps of 0.02, plus points either side of the internal switches
# (the series/continued-fraction boundary at 2 and the continued-fraction bins).
_EDGES = [2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 20.0]
T_GRID = np.unique(
    np.concatenate(
        [np.linspace(0.0, 40.0, 2001)]
        + [np.array([e - 1e-9, e, e + 1e-9]) for e in _EDGES]
        + [np.array([1e-12, 1e-6, 0.3, 36.9, 37.5, 38.4])]
    )
)


def _mp_q(t) -> mpmath.mpf:
    return mpmath.erfc(mpmath.mpf(t) / mpmath.sqrt(2)) / 2


def _mp_q1(t) -> mpmath.mpf:
    """Q1(t) = phi(t) - t Q(t) (eq. 44) at 50 digits: the cancellation is harmless there."""
    t = mpmath.mpf(t)
    return mpmath.npdf(t) - t * _mp_q(t)


@pytest.fixture(scope="module")
def mp_reference() -> dict[str, np.ndarray]:
    q = [_mp_q(t) for t in T_GRID]
    q1 = [_mp_q1(t) for t in T_GRID]
    return {
        "q": np.array([float(v) for v in q]),
        "log_q": np.array([float(mpmath.log(v)) for v in q]),
        "q1": np.array([float(v) for v in q1]),
        "log_q1": np.array([float(mpmath.log(v)) for v in q1]),
    }


def _max_rel(value: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(value - ref) / ref))


# ------------------------------------------------------------------ Q and log Q


def test_q_relative_accuracy(mp_reference):
    ref = mp_reference["q"]
    ok = ref > 1e-300
    assert ok.sum() > 1800
    assert _max_rel(special.q(T_GRID)[ok], ref[ok]) < 1e-12


def test_log_q_absolute_accuracy(mp_reference):
    err = np.abs(special.log_q(T_GRID) - mp_reference["log_q"])
    assert np.all(np.isfinite(special.log_q(T_GRID)))
    assert err.max() < 1e-12


def test_q_and_log_q_far_tail_and_negative_arguments():
    for t in (-5.0, -1.0, 0.0, 50.0, 200.0):
        ref = _mp_q(t)
        assert float(special.log_q(t)) == pytest.approx(
            float(mpmath.log(ref)), rel=1e-14, abs=1e-14
        )
        if ref > 1e-300:
            assert float(special.q(t)) == pytest.approx(float(ref), rel=1e-13)


# ------------------------------------------------------------------ Q1 and log Q1


def test_q1_relative_accuracy(mp_reference):
    ref = mp_reference["q1"]
    ok = ref > 1e-300
    assert T_GRID[ok].max() > 36.0  # the whole representable range is covered
    assert _max_rel(special.q1(T_GRID)[ok], ref[ok]) < 1e-12


def test_log_q1_absolute_accuracy(mp_reference):
    value = special.log_q1(T_GRID)
    assert np.all(np.isfinite(value))
    assert np.max(np.abs(value - mp_reference["log_q1"])) < 1e-12


@pytest.mark.parametrize("t", [50.0, 100.0, 1e3, 1e4, 1e6])
def test_log_q1_relative_accuracy_beyond_underflow(t):
    ref = float(mpmath.log(_mp_q1(t)))
    value = float(special.log_q1(t))
    assert value == pytest.approx(ref, rel=1e-14)
    assert float(special.q1(t)) == 0.0 or t < 38  # Q1 itself underflows there


@pytest.mark.parametrize("t", [0.0, 0.5, 1.0, 1.9999, 2.0, 2.5, 5.0, 10.0, 20.0])
def test_q1_is_the_integral_of_q(t):
    """Q1(t) = int_t^inf Q(s) ds, the definition in Theorem 4.1, by adaptive quadrature."""
    val, err = integrate.quad(
        lambda s: sps.ndtr(-s), t, np.inf, epsabs=0.0, epsrel=1e-13, limit=200
    )
    assert err < 1e-10 * val
    assert float(special.q1(t)) == pytest.approx(val, rel=1e-11)


def test_q1_derivative_is_minus_q():
    """dQ1/dt = -Q(t): central differences on a smooth grid (relative to Q)."""
    t = np.linspace(0.05, 8.0, 80)
    h = 1e-5
    slope = (special.q1(t + h) - special.q1(t - h)) / (2 * h)
    np.testing.assert_allclose(slope, -special.q(t), rtol=1e-6)


def test_q1_closed_form_at_zero_and_monotone():
    assert float(special.q1(0.0)) == pytest.approx(1.0 / math.sqrt(2.0 * math.pi), rel=1e-15)
    assert float(special.log_q1(0.0)) == pytest.approx(-0.5 * math.log(2 * math.pi), rel=1e-15)
    values = special.q1(T_GRID)
    assert np.all(np.diff(values) <= 0)
    assert np.all(np.diff(special.log_q1(T_GRID)) < 0)


def test_vectorised_shapes_and_scalars():
    grid = np.linspace(0.0, 30.0, 12).reshape(3, 4)
    for f in (special.q, special.log_q, special.q1, special.log_q1):
        out = f(grid)
        assert out.shape == (3, 4)
        np.testing.assert_array_equal(out.ravel(), [float(f(float(t))) for t in grid.ravel()])
        assert np.ndim(f(1.5)) == 0
        assert isinstance(float(f(1.5)), float)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.0, 45.0), min_size=1, max_size=12),
    st.sampled_from([1.0, 1e-3, 1e-9]),
)
def test_q1_of_an_array_equals_q1_of_each_entry(ts, spread):
    """Arrays spanning several continued-fraction bins, or inside one, give each entry the
    value it has alone (the bins skipped or taken whole must not change a bit)."""
    t = np.asarray(ts) * spread + (45.0 - 45.0 * spread) * (ts[0] / 45.0)
    for f in (special.q1, special.log_q1):
        np.testing.assert_array_equal(f(t), [float(f(float(x))) for x in t])


# ------------------------------------------------------------------ Q1 inverse


def test_q1_inverse_round_trip():
    ys = np.geomspace(1e-300, 0.39, 400)
    for y in ys:
        t = special.q1_inverse(float(y))
        assert t >= 0.0
        assert float(special.q1(t)) == pytest.approx(y, rel=1e-12)


def test_q1_inverse_against_mpmath():
    for y in (1e-200, 1e-50, 1e-8, 0.01, 0.3):
        t = special.q1_inverse(y)
        log_y = mpmath.log(y)
        ref = mpmath.findroot(lambda s, log_y=log_y: mpmath.log(_mp_q1(s)) - log_y, t)
        assert t == pytest.approx(float(ref), rel=1e-12)


def test_q1_inverse_is_decreasing():
    ys = np.geomspace(1e-250, 0.39, 60)
    ts = [special.q1_inverse(float(y)) for y in ys]
    assert all(a > b for a, b in itertools.pairwise(ts))


@pytest.mark.parametrize("y", [1.0 / math.sqrt(2.0 * math.pi), 0.4, 0.5, 1.0, 10.0])
def test_q1_inverse_is_zero_at_or_above_q1_of_zero(y):
    assert special.q1_inverse(y) == 0.0


@pytest.mark.parametrize("y", [0.0, -1e-10, -1.0])
def test_q1_inverse_rejects_nonpositive(y):
    with pytest.raises(ValueError, match="y > 0"):
        special.q1_inverse(y)


# ------------------------------------------------------------------ chi tail

DOFS = [1, 2, 3, 7, 10, 50, 101, 1000, 10001]


def _mp_chi_tail(r: float, d: int) -> mpmath.mpf:
    return mpmath.gammainc(mpmath.mpf(d) / 2, mpmath.mpf(r) ** 2 / 2, mpmath.inf, regularized=True)


@pytest.mark.parametrize("d", DOFS)
def test_chi_tail_against_mpmath_and_scipy(d):
    radii = math.sqrt(d) * np.array([0.05, 0.5, 0.9, 1.0, 1.1, 1.5, 2.0]) + np.array(
        [0.0, 0.0, 0.0, 0.0, 1.0, 3.0, 6.0]
    )
    for r in radii:
        ref = _mp_chi_tail(r, d)
        value = float(special.chi_tail(r, d))
        if ref > 1e-300:
            assert value == pytest.approx(float(ref), rel=1e-12), (r, d)
            assert stats.chi.sf(r, d) == pytest.approx(float(ref), rel=1e-9)
        else:
            assert 0.0 <= value < 1e-290


def test_chi_tail_vectorised_over_radius_and_dof():
    r = np.array([[0.5], [2.0], [10.0]])
    d = np.array([1, 5, 100])
    out = special.chi_tail(r, d)
    assert out.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            assert out[i, j] == float(special.chi_tail(float(r[i, 0]), int(d[j])))


@pytest.mark.parametrize("d", DOFS)
def test_chi_radius_inverts_chi_tail(d):
    for mass in (0.9, 0.5, 1e-2, 1e-6, 1e-12, 1e-50):
        r = float(special.chi_radius(mass, d))
        assert r > 0
        assert float(special.chi_tail(r, d)) == pytest.approx(mass, rel=1e-9)
    for u in (0.0, 1.0, 5.0):
        r = math.sqrt(d) + u
        mass = float(special.chi_tail(r, d))
        assert float(special.chi_radius(mass, d)) == pytest.approx(r, rel=1e-9)


@pytest.mark.parametrize("d", [1, 2, 5, 50, 1000, 10**5])
@pytest.mark.parametrize("u", [0.0, 0.1, 0.5, 1.0, 3.0, 6.0, 10.0, 20.0])
def test_chi_tail_below_gaussian_concentration_bound(d, u):
    """Pr(||X|| > sqrt(d) + u) <= e^{-u^2/2} (Corollary E.4): the exact mass is smaller."""
    exact = float(special.chi_tail(math.sqrt(d) + u, d))
    bound = math.exp(-0.5 * u * u)
    assert exact <= bound
    if u >= 1.0:
        assert exact < bound  # strictly: the paper's bound is loose
