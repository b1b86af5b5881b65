"""Tests of objpert.accounting._composition against direct evaluation of the theorems' formulas."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from scipy.optimize import brentq

from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._composition import (
    ComposedCertificate,
    Split,
    advanced,
    basic,
    certificate_from_dict,
    compose,
    split_budget,
)
from objpert.exceptions import ParameterError


def drv(eps: float, delta: float, k: int, slack: float) -> tuple[float, float]:
    """Dwork, Rothblum & Vadhan (2010), Theorem III.3, written out independently."""
    return (
        math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * (math.exp(eps) - 1),
        k * delta + slack,
    )


def fake_certificate(epsilon: float, delta: float, **details) -> ReleaseCertificate:
    return ReleaseCertificate(
        form="c13",
        epsilon=epsilon,
        delta=delta,
        certified=True,
        iterations=100,
        threshold_iterations=90,
        truncation_mass=delta / 4,
        divergence_term=3 * delta / 4,
        sigma=0.5,
        truncation="exact",
        constants={"loss": "logistic", "n": 100, "loss_params": ()},
        details=details,
    )


# ---------------------------------------------------------------- basic and advanced


def test_basic_sums():
    assert basic([0.1, 0.2, 0.3], [1e-7, 2e-7, 3e-7]) == pytest.approx((0.6, 6e-7), rel=1e-15)
    assert basic([1.5], [1e-6]) == (1.5, 1e-6)


@pytest.mark.parametrize(
    "eps, dels, match",
    [
        ([0.1, 0.2], [1e-6], "same length"),
        ([], [], "at least one"),
        ([-0.1], [1e-6], "epsilon_i"),
        ([0.1], [1.5], "delta_i"),
        ([math.inf], [1e-6], "epsilon_i"),
    ],
)
def test_basic_rejects(eps, dels, match):
    with pytest.raises(ParameterError, match=match):
        basic(eps, dels)


@pytest.mark.parametrize(
    "eps, delta, k, slack",
    [(0.1, 1e-7, 10, 1e-6), (0.01, 0.0, 1000, 1e-5), (1.0, 1e-8, 3, 0.5), (0.5, 1e-9, 64, 1e-9)],
)
def test_advanced_matches_formula(eps, delta, k, slack):
    assert advanced(eps, delta, k, slack) == pytest.approx(drv(eps, delta, k, slack), rel=1e-12)


# ---------------------------------------------------------------- split_budget


def test_single_release_is_the_target():
    s = split_budget(0.7, 1e-6, 1)
    assert (s.method, s.epsilon_i, s.delta_i, s.epsilon_total, s.delta_total) == (
        "single",
        0.7,
        1e-6,
        0.7,
        1e-6,
    )


def test_small_k_uses_basic():
    s = split_budget(1.0, 1e-6, 3)
    assert s.method == "basic"
    assert s.epsilon_i == pytest.approx(1 / 3, rel=1e-15)
    assert s.delta_i == pytest.approx(1e-6 / 3, rel=1e-15)
    assert s.delta_slack == 0.0


def test_advanced_beats_basic_for_large_k_small_eps():
    s = split_budget(1.0, 1e-5, 1000)
    assert s.method == "advanced"
    assert s.epsilon_i > 1.0 / 1000 * 3  # several times the basic share
    assert s.delta_slack == 1e-5 / 2
    assert s.delta_i == pytest.approx(1e-5 / 2 / 1000, rel=1e-12)


def _advanced_eps_i(eps: float, delta: float, k: int) -> float:
    """Brute force: the root of DRV(eps_i) = eps with delta' = delta/2 (scipy brentq)."""
    slack = delta / 2
    return brentq(lambda e: drv(e, 0.0, k, slack)[0] - eps, 0.0, eps, xtol=1e-15, rtol=1e-14)


GRID = list(itertools.product([0.05, 0.3, 1.0, 4.0], [1e-9, 1e-6, 1e-3], [2, 3, 10, 50, 400, 5000]))


@pytest.mark.parametrize("eps, delta, k", GRID)
def test_split_meets_target_and_is_the_better_theorem(eps, delta, k):
    s = split_budget(eps, delta, k)
    assert s.k == k and (s.epsilon, s.delta) == (eps, delta)
    # the composed totals, recomputed from the formulas, meet the target exactly
    if s.method == "basic":
        totals = basic([s.epsilon_i] * k, [s.delta_i] * k)
    else:
        totals = advanced(s.epsilon_i, s.delta_i, k, s.delta_slack)
        assert drv(s.epsilon_i, s.delta_i, k, s.delta_slack)[0] <= eps * (1 + 1e-12)
    assert totals == (s.epsilon_total, s.delta_total)
    assert s.epsilon_total <= eps and s.delta_total <= delta
    # the larger per-release epsilon of the two theorems is chosen
    adv = _advanced_eps_i(eps, delta, k)
    assert s.epsilon_i == pytest.approx(max(eps / k, adv), rel=1e-9)
    if adv > eps / k * (1 + 1e-6):
        assert s.method == "advanced"
    elif adv < eps / k * (1 - 1e-6):
        assert s.method == "basic"


@pytest.mark.parametrize("eps, delta, k", [(1.0, 1e-6, 200), (0.1, 1e-8, 5000), (2.0, 1e-6, 40)])
def test_advanced_split_is_tight(eps, delta, k):
    """No larger epsilon_i meets the target: the bisection found the boundary."""
    s = split_budget(eps, delta, k)
    assert s.method == "advanced"
    bigger = s.epsilon_i * (1 + 1e-9)
    assert advanced(bigger, s.delta_i, k, s.delta_slack)[0] > eps


def test_split_to_dict_is_json():
    s = split_budget(1.0, 1e-6, 500)
    d = json.loads(json.dumps(s.to_dict()))
    assert Split(**d) == s


# ---------------------------------------------------------------- certificates


def test_certificate_from_dict_round_trip():
    c = fake_certificate(0.5, 1e-7, u=3.2, radius_ok=True, alpha_bar=1.5)
    back = certificate_from_dict(json.loads(c.to_json()))
    assert back.to_dict() == json.loads(c.to_json())
    assert back.details == {"u": 3.2, "radius_ok": True, "alpha_bar": 1.5}
    with pytest.raises(ParameterError, match="missing keys"):
        certificate_from_dict({"form": "c13"})


def test_compose_basic_from_certificates():
    certs = [fake_certificate(0.2, 1e-7), fake_certificate(0.3, 2e-7), fake_certificate(0.1, 0)]
    cc = compose(certs, "basic")
    assert (cc.epsilon, cc.delta) == basic([0.2, 0.3, 0.1], [1e-7, 2e-7, 0.0])
    assert cc.k == 3 and cc.epsilon_i == (0.2, 0.3, 0.1) and cc.certified


def test_compose_advanced_uses_the_largest_release():
    certs = [fake_certificate(0.01, 1e-9), fake_certificate(0.02, 3e-9)] * 50
    cc = compose(certs, "advanced", delta_slack=1e-6)
    assert (cc.epsilon, cc.delta) == pytest.approx(drv(0.02, 3e-9, 100, 1e-6), rel=1e-12)
    with pytest.raises(ParameterError, match="delta_slack"):
        compose(certs, "advanced")


def test_compose_rejects():
    with pytest.raises(ParameterError, match="exactly one"):
        compose([fake_certificate(0.1, 1e-7)] * 2, "single")
    with pytest.raises(ParameterError, match="method"):
        compose([fake_certificate(0.1, 1e-7)], "strong")
    with pytest.raises(ParameterError, match="at least one"):
        compose([], "basic")


def test_composed_certificate_json_round_trip():
    s = split_budget(1.0, 1e-6, 300)
    certs = [fake_certificate(s.epsilon_i, s.delta_i * 0.9, u=4.0) for _ in range(s.k)]
    cc = compose(certs, s.method, delta_slack=s.delta_slack)
    assert cc.epsilon <= 1.0 and cc.delta <= 1e-6
    d = json.loads(json.dumps(cc.to_dict()))
    assert d["certificates"][0]["u"] == 4.0  # flattened by ReleaseCertificate.to_dict
    assert d["certified"] is True and d["k"] == 300
    back = ComposedCertificate.from_dict(d)
    assert back.to_dict() == d
    # totals are recomposed from the certificates, not read from the file
    d["epsilon"] = 0.001
    assert ComposedCertificate.from_dict(d).epsilon == cc.epsilon


def test_uncertified_release_is_not_certified():
    bad = ReleaseCertificate.conclude(
        "c13",
        0.5,
        0.0,
        0.0,
        ["radius condition fails"],
        iterations=1,
        threshold_iterations=None,
        sigma=1.0,
        truncation="exact",
        constants={},
    )
    cc = compose([fake_certificate(0.5, 1e-7), bad], "basic")
    assert not cc.certified
    assert cc.delta >= 1.0


@pytest.mark.parametrize("epsilon", [5e-324, 1e-310])
def test_a_budget_too_small_to_split_is_refused_not_zeroed(epsilon):
    """Each release's epsilon would underflow to 0 (or a subnormal): refused, never a
    per-release epsilon of 0."""
    with pytest.raises(ParameterError, match="too small to split"):
        split_budget(epsilon, 1e-6, 3)
    assert split_budget(1e-300, 1e-6, 3).epsilon_i > 0
