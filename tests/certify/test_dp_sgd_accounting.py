"""The accounting of DP-SGD and DP Newton (objpert.mechanisms._certificates.dp_sgd, .dp_newton).

DP-SGD's privacy loss distribution is compared with dp-accounting's DpEvent-based PLD
accountant, with the full-batch Gaussian's exact profile at q = 1 (the replace-one shift
is 2C) and with the add/remove relation (replace-one must cost more). DP Newton's 2K
Gaussian mechanisms are compared with the Gaussian-DP profile solved here with scipy.
The Hessian sensitivity sqrt(2) L2 zeta^2 / n is checked by brute force.
"""

from __future__ import annotations

import dataclasses
import math

import dp_accounting
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from objpert.accounting._gaussian_steps import subsampled_gaussian_epsilon
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates.dp_newton import (
    DPNewtonPlan,
    certify_dp_newton,
    newton_sensitivities,
    plan_dp_newton,
)
from objpert.mechanisms._certificates.dp_sgd import (
    DPSGDPlan,
    certify_dp_sgd,
    plan_dp_sgd,
)
from objpert.mechanisms._certificates.plan import PeerInputs

DELTA = 1e-5
REPLACE = dp_accounting.NeighboringRelation.REPLACE_ONE


def _accountant_epsilon(T, q, z, delta, disc, relation=REPLACE):
    acc = dp_accounting.pld.PLDAccountant(
        neighboring_relation=relation, value_discretization_interval=disc
    )
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), T)
    return acc.get_epsilon(delta)


def _gdp_epsilon(mu: float, delta: float) -> float:
    """epsilon of mu-GDP at delta: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
    (Dong, Roth & Su 2022, Corollary 2.13), solved by brentq."""

    def f(eps):
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta

    return brentq(f, 0.0, 100.0, xtol=1e-14)


@pytest.mark.parametrize("T,q,z", [(1, 0.1, 1.0), (50, 0.05, 1.2), (300, 0.02, 0.8)])
def test_pld_equals_dp_accounting_event_accountant(T, q, z):
    ours = subsampled_gaussian_epsilon(DELTA, T, q, z, 1e-3)
    theirs = _accountant_epsilon(T, q, z, DELTA, 1e-3)
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-6)


def test_full_batch_is_the_gaussian_of_sensitivity_two():
    # q = 1 under replace-one: T Gaussian steps of shift 2C, std z C: sqrt(T) 2 / z - GDP
    T, z = 20, 6.0
    ours = subsampled_gaussian_epsilon(DELTA, T, 1.0, z, 1e-4)
    assert ours == pytest.approx(_gdp_epsilon(2 * math.sqrt(T) / z, DELTA), rel=2e-3)


def test_replace_one_costs_more_than_add_remove():
    T, q, z = 100, 0.05, 1.0
    add_remove = _accountant_epsilon(
        T, q, z, DELTA, 1e-3, dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    assert subsampled_gaussian_epsilon(DELTA, T, q, z, 1e-3) > 1.2 * add_remove


def test_planner_is_tight():
    plan = plan_dp_sgd("logistic", n=400, d=3, zeta=1.0, epsilon=1.0, delta=DELTA, epochs=2)
    assert plan.batch_size == 20 and plan.iterations == 40 and plan.clip == 1.0
    assert plan.eta == pytest.approx(4.0)  # 1 / (L2 zeta^2), L2 = 1/4
    q = plan.batch_size / plan.n
    assert _accountant_epsilon(plan.iterations, q, plan.sigma, DELTA, 1e-3) <= 1.0
    assert _accountant_epsilon(plan.iterations, q, 0.98 * plan.sigma, DELTA, 1e-3) > 1.0
    cert = plan.certificate
    assert cert.certified and cert.epsilon <= 1.0 and cert.delta == DELTA
    assert cert.details["accountant"] == "pld" and cert.form == "dp_sgd"
    assert certify_dp_sgd(plan).to_dict() == cert.to_dict()


def test_plan_round_trips_and_recertifies():
    plan = plan_dp_sgd("robust", n=300, d=2, zeta=2.0, epsilon=2.0, delta=DELTA, iterations=30)
    again = DPSGDPlan.from_dict(plan.to_dict())
    assert again == plan and again.recertify().to_dict() == plan.certificate.to_dict()
    weaker = dataclasses.replace(plan, sigma=0.9 * plan.sigma)
    assert weaker.recertify().epsilon > 2.0


def test_planner_refuses_bad_arguments():
    common = dict(n=100, d=2, zeta=1.0, epsilon=1.0, delta=DELTA)
    with pytest.raises(ParameterError, match="not both"):
        plan_dp_sgd("logistic", iterations=10, epochs=1, **common)
    with pytest.raises(ParameterError, match="batch_size"):
        plan_dp_sgd("logistic", batch_size=101, **common)
    with pytest.raises(ParameterError, match="accountant"):
        plan_dp_sgd("logistic", accountant="rdp", **common)
    with pytest.raises(ParameterError):  # no L1: clipping must be declared
        plan_dp_sgd("squared", **common)
    with pytest.raises(ParameterError, match="noise_multiplier"):
        subsampled_gaussian_epsilon(DELTA, 10, 0.1, 0.1)


# ---------------------------------------------------------------- DP Newton


def test_hessian_sensitivity_by_brute_force():
    L2, zeta, d = 0.25, 3.0, 4
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(2000):
        x, xp = (v * zeta * rng.uniform() / np.linalg.norm(v) for v in rng.normal(size=(2, d)))
        a, b = L2 * rng.uniform(size=2)
        worst = max(worst, np.linalg.norm(a * np.outer(x, x) - b * np.outer(xp, xp)))
    bound = math.sqrt(2) * L2 * zeta**2
    assert worst <= bound
    e = np.eye(d) * zeta  # orthogonal rows at the bound reach it
    reached = np.linalg.norm(L2 * (np.outer(e[0], e[0]) - np.outer(e[1], e[1])))
    assert reached == pytest.approx(bound)
    inputs = PeerInputs.check("logistic", 50, d, zeta, 1.0, DELTA)
    assert newton_sensitivities(inputs) == pytest.approx((2 * zeta / 50, bound / 50))


@pytest.mark.parametrize("K", [1, 4])
def test_newton_gdp_accounting_matches_the_profile(K):
    plan = plan_dp_newton(
        "logistic", n=500, d=3, zeta=1.0, epsilon=1.0, delta=DELTA, mu=0.1, iterations=K,
        accountant="gdp",
    )  # fmt: skip
    assert _gdp_epsilon(math.sqrt(2 * K) / plan.sigma, DELTA) == pytest.approx(1.0, abs=1e-8)
    assert _gdp_epsilon(math.sqrt(2 * K) / (0.98 * plan.sigma), DELTA) > 1.0
    cert = plan.certificate
    assert cert.certified and cert.details["mechanisms"] == 2 * K
    assert cert.details["gradient_noise_std"] == pytest.approx(plan.sigma * 2 / 500)


def test_newton_pld_accounting_is_dp_accountings():
    plan = plan_dp_newton(
        "logistic", n=500, d=3, zeta=1.0, epsilon=1.0, delta=DELTA, mu=0.1, iterations=2
    )
    acc = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.GaussianDpEvent(plan.sigma), 4)
    assert acc.get_epsilon(DELTA) <= 1.0
    less = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    less.compose(dp_accounting.GaussianDpEvent(0.98 * plan.sigma), 4)
    assert less.get_epsilon(DELTA) > 1.0
    assert plan.certificate.epsilon == pytest.approx(acc.get_epsilon(DELTA), rel=1e-9)
    # the PLD is a pessimistic approximation of the exact (GDP) answer
    assert plan.certificate.epsilon == pytest.approx(_gdp_epsilon(2 / plan.sigma, DELTA), rel=1e-3)
    assert isinstance(plan, DPNewtonPlan)
    assert certify_dp_newton(plan).to_dict() == plan.certificate.to_dict()


def test_newton_planner_refuses_bad_arguments():
    common = dict(n=100, d=2, zeta=1.0, epsilon=1.0, delta=DELTA)
    with pytest.raises(ParameterError, match="mu"):
        plan_dp_newton("logistic", mu=0.0, **common)
    with pytest.raises(ParameterError, match="iterations"):
        plan_dp_newton("logistic", iterations=0, **common)
    with pytest.raises(ParameterError):
        plan_dp_newton("squared", **common)  # no L1: no gradient sensitivity
    with pytest.raises(ParameterError, match="d must be"):
        plan_dp_newton("logistic", **{**common, "d": 1001})
