"""Regression tests for what a random fuzz run of 30,000 examples found (``OBJPERT_FUZZ_SCALE=7``,
``HYPOTHESIS_PROFILE=random-noshrink``; see conftest.py): each failed on the code before its
fix (raw Python/numpy exceptions, an allocation of terabytes, a silently wrong report)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from objpert.accounting._pld import distribution as pld_distribution
from objpert.certify import problem
from objpert.exceptions import ParameterError

pytestmark = pytest.mark.filterwarnings("ignore")


def _one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert msg.strip() and "\n" not in msg, msg
    return msg


@pytest.mark.parametrize(
    "categories",
    [np.array(2.0), [np.array(2.0)], [np.array([[1, 2], [3, 4]])[0, :0]], [["a"], np.array(1)]],
    ids=["0d", "0d-inner", "empty-inner-array", "0d-second"],
)
def test_one_hot_categories_without_a_length_are_a_parameter_error(categories):
    """test_fuzz_bounds: a 0-d array of categories reached len() (TypeError)."""
    from objpert.preprocessing import BoundedOneHotEncoder

    with pytest.raises(ParameterError, match="categories") as err:
        BoundedOneHotEncoder(categories=categories).fit([["a"]] * 2 + [["a"]] * 0)
    _one_line(err)


def test_one_hot_categories_given_as_arrays_are_taken():
    """An array of several categories is a list of categories (``not array`` was ambiguous)."""
    from objpert.preprocessing import BoundedOneHotEncoder

    enc = BoundedOneHotEncoder(categories=[np.array(["a", "b", "c"])])
    out = enc.fit_transform(np.array([["b"], ["c"], ["a"]], dtype=object))
    np.testing.assert_array_equal(out, np.eye(3)[[1, 2, 0]])


def test_a_message_shows_a_multiline_value_on_one_line():
    from objpert._validation import check_positive

    with pytest.raises(ParameterError) as err:
        check_positive("x", np.zeros((3, 3)))
    assert "array([[0., 0., 0.], [0., 0., 0.]" in _one_line(err)


def test_ceiling_refuses_a_budget_below_the_plans_steps():
    """test_fuzz_bounds: ceiling(plan, 13) of a 39-step plan recalibrated at 26 steps and
    reported a doubled budget needing more noise (sigma 0.031 against 0.025)."""
    from test_fuzz_bounds import _plan

    from objpert.certify._budget import ceiling

    plan = _plan()  # the plan of test_fuzz_bounds: 39 steps
    assert plan.iterations > 3
    with pytest.raises(ParameterError, match="below the plan") as err:
        ceiling(plan, plan.iterations // 3)
    _one_line(err)
    report = ceiling(plan, plan.iterations, mu_fixed=True)  # the budget it may have had
    assert report.sigma_with_double_budget <= report.sigma_now * (1 + 1e-12)


@pytest.mark.parametrize("epsilon", [1e300, 710.0, 1.152921504606846977e18])
def test_a_point_beyond_exp_range_is_refused_by_pld_accounting(epsilon):
    """test_fuzz_accounting: dp-accounting's point PLD computes exp(epsilon) (OverflowError)."""
    pytest.importorskip("dp_accounting")
    from objpert import accounting

    loss = accounting.point(epsilon, 1e-10)
    with pytest.raises(ParameterError, match="epsilon") as err:
        accounting.compose([loss, loss])
    _one_line(err)


def test_a_point_pld_too_large_is_refused_before_it_is_built():
    """A point at epsilon = 600 on a 1e-6 grid is 1.2e9 grid points (about 10 GB dense)."""
    pytest.importorskip("dp_accounting")
    from objpert import accounting

    start = time.perf_counter()
    with pytest.raises(ParameterError, match="grid points"):
        pld_distribution(accounting.point(600.0, 1e-10), 1e-6)
    assert time.perf_counter() - start < 2.0


def test_a_point_pld_keeps_its_delta():
    """The pessimistic PLD of an (epsilon, delta) point (Koskela et al. 2020) has delta at
    epsilon, and composing K of them stays within basic composition (K eps, K delta)."""
    pytest.importorskip("dp_accounting")
    from objpert import accounting

    eps, delta = 1.5, 1e-7
    single = pld_distribution(accounting.point(eps, delta), 1e-3)
    assert accounting.delta_for_epsilon(single, eps) == pytest.approx(delta, rel=1e-6)
    three = accounting.compose([accounting.point(eps, delta)] * 3, 1e-3)
    assert accounting.delta_for_epsilon(three, 3 * eps) <= 3 * delta * (1 + 1e-6)


@pytest.mark.parametrize(("epsilon", "delta"), [(5e-324, 1e-6), (1.0, 5e-324), (3e-308, 1e-6)])
def test_joint_plan_refuses_shares_that_underflow(epsilon, delta):
    """test_fuzz_accounting: epsilon = 5e-324 over 2 releases planned each at epsilon 0."""
    from objpert.certify import _multiclass as multiclass

    calls = []

    def plan_at(e, d):
        calls.append((e, d))
        raise AssertionError("not reached")

    with pytest.raises(ParameterError, match="smallest normal float") as err:
        multiclass.joint_plan(plan_at, epsilon, delta, 2)
    _one_line(err)
    assert calls == []


def test_theorem_c13_terms_refuse_shapes_that_do_not_broadcast():
    """test_fuzz_certify: N = [] with sigma = [1, 2] reached a numpy broadcast ValueError."""
    from objpert.certify import _theorem_c13 as theorem_c13

    pc = problem("logistic", n=131, d=948, zeta=0.01, mu=27.7)
    with pytest.raises(ParameterError, match="broadcast") as err:
        theorem_c13.c13_terms(pc, np.array([1.0, 2.0]), 0.21, 0.21, [])
    _one_line(err)
    ok = theorem_c13.c13_terms(pc, np.array([1.0, 2.0]), 0.21, 0.21, [[5], [7]])
    assert ok.s_n.shape == (2, 2)


def test_min_iterations_refuses_an_n_max_it_cannot_search():
    """test_fuzz_certify: n_max = 2^53 - 1 allocated one bound per 1024 iterations (64 TiB)."""
    from objpert.certify import _search as search

    pc = problem("logistic", n=129, d=382, zeta=1.3e-14, mu=3.74)
    start = time.perf_counter()
    with pytest.raises(ParameterError, match="n_max") as err:
        search.min_iterations(pc, 8.78, 0.014, 3.1e-4, u=28.0, n_max=2**53 - 1)
    _one_line(err)
    assert time.perf_counter() - start < 2.0
    cert = search.min_iterations(pc, 8.78, 0.014, 3.1e-4, u=28.0, n_max=search.N_MAX_LIMIT)
    assert (
        cert.certified
        and cert.iterations == search.min_iterations(pc, 8.78, 0.014, 3.1e-4, u=28.0).iterations
    )


@pytest.mark.parametrize(
    "args",
    [(1, 1.0, 1.0, 5e-324, 0.175), (1, 1e300, 1.0, 1.0, 1e-300), (10**8, 1e-300, 1.0, 1.0, 1e300)],
    ids=["c0-overflows", "t-overflows", "t-underflows"],
)
def test_exact_lop_constants_outside_float64_are_refused(args):
    """test_fuzz_exact_lop: mu = 5e-324 gave c0 = log1p(inf) = inf as a constant."""
    from objpert.mechanisms._certificates import redberg

    with pytest.raises(ParameterError, match="float64 range") as err:
        redberg.exact_lop_constants(*args)
    _one_line(err)
    t, c0 = redberg.exact_lop_constants(100, 1.0, 0.25, 0.1, 2.0)
    assert (t, c0) == (2.0 * 1.0 / (100 * 2.0), math.log1p(0.25 / (100 * 0.1)))


def test_the_default_output_ridge_outside_float64_is_refused():
    """test_fuzz_peers: radius = 5e-324 gave the default ridge mu = inf."""
    import mpmath

    from objpert.mechanisms._certificates import default_output_mu

    for args in [(2, 403, 1.0, 9.72, 1e-12, 5e-324), (2, 1, 1e-300, 1.0, 0.1, 1e300)]:
        with pytest.raises(ParameterError, match="float64 range") as err:
            default_output_mu(*args)
        _one_line(err)
    n, d, g, e, dl, w = 1000, 5, 1.0, 1.0, 1e-6, 2.0
    c = mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / dl))
    want = 2 * g * mpmath.sqrt(c * mpmath.sqrt(d) / (n * e)) / w  # Dwork & Roth 2014, Thm A.1
    assert default_output_mu(n, d, g, e, dl, w) == pytest.approx(float(want), rel=1e-13)


@pytest.mark.parametrize("log_y", [1 + 1j, "0.5", True, math.nan, math.inf])
def test_inverse_lower_gamma_refuses_what_is_not_a_real_log(log_y):
    """test_fuzz_peers: log_y = 1 + 1j reached float() (TypeError); "0.5" was taken as 0.5."""
    from objpert.mechanisms._certificates import qop

    with pytest.raises(ParameterError, match="log_y") as err:
        qop.inverse_lower_gamma(log_y, 2.5)
    _one_line(err)


def test_inverse_lower_gamma_inverts_the_lower_gamma_function():
    import mpmath

    from objpert.mechanisms._certificates import qop

    assert qop.inverse_lower_gamma(-math.inf, 2.5) == 0.0
    for a, x in [(2.5, 1.3), (17.7, 9.0), (0.5, 0.01)]:
        log_y = float(mpmath.log(mpmath.gammainc(a, 0, x)))  # gamma(a, x), unregularised
        assert qop.inverse_lower_gamma(np.float64(log_y), a) == pytest.approx(x, rel=1e-9)


@pytest.mark.parametrize("delta", [5e-324, 1e-310])
def test_a_target_delta_below_every_certificate_is_refused(delta, capsys):
    """test_fuzz_cli: ``calibrate --delta 5e-324`` was an internal error (certificates report
    at least 2.2e-308, so the plan never certified)."""
    from objpert import plan as objpert_plan
    from objpert.certify._calibration import calibrate
    from objpert.cli import main

    with pytest.raises(ParameterError, match=r"at least 2\.225e-308") as err:
        calibrate("logistic", n=1000, d=5, zeta=1.0, epsilon=0.5, delta=delta)
    _one_line(err)
    for method in ("lop", "amp", "output_perturbation", "noisy_gd"):
        with pytest.raises(ParameterError, match=r"at least 2\.225e-308"):
            objpert_plan(method, loss="logistic", n=1000, d=5, zeta=1.0, epsilon=1.0, delta=delta)
    capsys.readouterr()
    code = main(["calibrate", "--n", "1000", "--d", "5", "--epsilon", "0.5", "--delta", str(delta)])
    err_text = capsys.readouterr().err
    assert code == 2 and err_text.count("\n") == 1 and "internal error" not in err_text
    plan = calibrate("logistic", n=1000, d=5, zeta=1.0, epsilon=0.5, delta=2.3e-308)
    assert plan.certificate.certified and plan.certificate.delta <= 2.3e-308


def test_a_pld_that_lost_mass_reports_it_as_delta():
    """test_fuzz_accounting: 7.4 million self-composed (3.9e-167, 1.9e-12) points lost
    2.7e-10 of their mass in dp-accounting, and two such releases reported a smaller delta
    (1 - 5.9e-10) than one (1 - 2.7e-10); the true delta at epsilon = 8.69 is 1 - e^-7000."""
    pytest.importorskip("dp_accounting")
    from objpert import accounting

    loss = accounting.point(3.891216511944785e-167, 1.9105441602944397e-12, count=7441180)
    one = accounting.compose([loss], 1e-3)
    two = accounting.compose([loss, loss], 1e-3)
    d_one = accounting.delta_for_epsilon(one, 8.692555289422186)
    d_two = accounting.delta_for_epsilon(two, 8.692555289422186)
    assert d_one >= 1.0 - 1e-15 and d_two >= d_one
    assert accounting.epsilon_for_delta(two, 0.5) >= accounting.epsilon_for_delta(one, 0.5)


def test_composing_a_release_with_almost_no_finite_mass_is_no_guarantee():
    """test_fuzz_accounting: a point with delta = 1 - 6e-16 composed 5 times reached an
    IndexError in dp-accounting's tail truncation (finite mass 5e-77 below 1e-15)."""
    pytest.importorskip("dp_accounting")
    from objpert import accounting

    pld = accounting.compose([accounting.point(1.0, 0.9999999999999994, count=5)])
    assert accounting.delta_for_epsilon(pld, 1.0) == 1.0
    assert accounting.epsilon_for_delta(pld, 0.5) == math.inf


def test_pair_delta_of_a_huge_ratio_is_one_not_zero():
    """test_fuzz_exact_lop: epsilon = t = 2e182 gave delta = -1.0 (t^2 / 2 overflowed in the
    quadrature's knots); t = 1e150 gave 0.0, the mass of e^(epsilon - y) near epsilon being
    hidden in an interval of length 1e299 (the collinear closed form gives 1.0)."""
    from objpert.mechanisms._certificates import redberg

    with pytest.raises(ParameterError, match="float64 range") as err:
        redberg.pair_delta(2.038555681033482e182, 2.038555681033482e182, 1.7555701873274092)
    _one_line(err)
    for t in (1e150, 1e6, 40.0):
        assert redberg.folded_gaussian_delta(1.0, t) == 1.0
        assert redberg.pair_delta(1.0, t, 1.0) == pytest.approx(1.0, abs=1e-12)
    for eps, t in [(1.0, 2.0), (3.0, 0.5), (0.5, 7.0)]:  # angle 0: the collinear closed form
        want = redberg.folded_gaussian_delta(eps, t)
        assert redberg.pair_delta(eps, t, 0.0) == pytest.approx(want, rel=1e-8)


def test_gaussian_and_laplace_plds_depend_on_noise_over_sensitivity_alone():
    """test_fuzz_accounting: sigma = 5.6e197 overflowed squaring inside dp-accounting, and a
    Laplace scale 1e12 times its sensitivity reached an IndexError in its tail truncation."""
    pytest.importorskip("dp_accounting")
    from scipy.stats import norm

    from objpert import accounting

    for loss in (accounting.gaussian(5.567797381293124e197, 0.14353963717658222, count=19),
                 accounting.laplace(1.0, 1e-12)):  # fmt: skip
        with pytest.raises(ParameterError, match="noise / sensitivity") as err:
            accounting.compose([loss, loss])
        _one_line(err)
    small = accounting.delta_for_epsilon(accounting.compose([accounting.gaussian(4.0, 1.0)]), 0.5)
    huge = accounting.gaussian(4e200, 1e200)
    assert accounting.delta_for_epsilon(accounting.compose([huge]), 0.5) == small
    # the Gaussian mechanism's exact profile (Balle & Wang 2018, Theorem 8), mu = 1 / 4
    mu, eps = 0.25, 0.5
    exact = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert exact <= small <= exact + 1e-3
