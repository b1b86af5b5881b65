"""The privacy accountant: PLDs of single releases, their composition, the budget, the
jointly calibrated multiclass fit, pipelines and saved models."""

from __future__ import annotations

import copy
import json
import math
import pickle
import warnings

import numpy as np
import pytest

pytest.importorskip("dp_accounting")

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant

from objpert import BudgetExceededError, PrivacyError
from objpert._special import chi_radius
from objpert.accounting import (
    PrivacyAccountant,
    compose,
    delta_for_epsilon,
    epsilon_for_delta,
    from_plan,
    gaussian,
    laplace,
    pipeline_certificate,
    point,
    zcdp,
)
from objpert.accounting import _profiles as profiles
from objpert.accounting._conversions import cdp_delta
from objpert.accounting._gaussian_mechanism import gaussian_delta
from objpert.accounting._pld import distribution as pld_distribution
from objpert.certify import _profile as wa_profile
from objpert.certify import _theorem_c13 as theorem_c13

STEP = 1e-3


def test_gaussian_compositions_agree_with_dp_accounting():
    sigmas = [1.5, 2.0, 3.0, 3.0]
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=STEP)
    for s in sigmas:
        acc.compose(dp_accounting.GaussianDpEvent(s))
    ours = compose([gaussian(s) for s in sigmas], STEP)
    for delta in (1e-5, 1e-8):
        assert abs(epsilon_for_delta(ours, delta) - acc.get_epsilon(delta)) <= 1e-6
    # and the exact profile: K Gaussians are one with sensitivity sqrt(sum 1/sigma^2)
    mu = math.sqrt(sum(1.0 / s**2 for s in sigmas))
    for eps in (0.5, 1.0, 2.0):
        exact = gaussian_delta(eps, mu, 1.0)
        got = delta_for_epsilon(ours, eps)
        assert exact <= got <= exact * 1.05 + 1e-12  # pessimistic, close


def test_laplace_is_dp_accountings():
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=STEP)
    acc.compose(dp_accounting.LaplaceDpEvent(2.0), 3)
    assert abs(epsilon_for_delta(compose([laplace(2.0, count=3)], STEP), 1e-6)
               - acc.get_epsilon(1e-6)) <= 1e-6  # fmt: skip
    # one Laplace release with b = 1/eps is eps-DP: delta(eps) = 0
    assert delta_for_epsilon(compose([laplace(1.0)], STEP), 1.0 + 2 * STEP) <= 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_points_compose_between_the_largest_and_basic_composition(seed):
    rng = np.random.default_rng(seed)
    eps = rng.uniform(0.05, 1.0, 5)
    dels = 10.0 ** rng.uniform(-9, -5, 5)
    total = compose([point(e, d) for e, d in zip(eps, dels, strict=True)], STEP)
    # never more than basic composition (Dwork & Roth 2014, Theorem 3.16)...
    assert delta_for_epsilon(total, eps.sum() + 5 * STEP) <= dels.sum() * (1 + 1e-9)
    # ...never less than any one release loses on its own
    for e, d in zip(eps, dels, strict=True):
        assert delta_for_epsilon(total, e) >= d


def test_zcdp_profile_bounds_the_pld():
    rho = 0.05
    pld = compose([zcdp(rho)], STEP)
    for eps in (0.2, 0.5, 1.0):
        assert delta_for_epsilon(pld, eps) >= cdp_delta(rho, eps) * (1 - 1e-9)
    # the pessimistic grid loses little against the exact conversion
    assert delta_for_epsilon(pld, 1.0) <= 1.5 * cdp_delta(rho, 1.0 - 0.02)


def test_wa_profile_is_the_minimum_over_radii_by_a_plain_loop(plan):
    pc = plan.rebuilt_constants()
    eps = np.array([0.3, 0.5, 0.8])
    got = wa_profile.watkins_arora_profile(pc, plan.sigma, plan.iterations, eps)
    radii = plan.sigma * chi_radius(wa_profile.TRUNCATION_MASSES, pc.d_star)
    for e, g in zip(eps, got, strict=True):
        best = 1.0
        for r in radii:
            c = theorem_c13.certify(
                pc, plan.sigma, plan.iterations, float(e), r=float(r),
                r_outer=float(r) + 2 * pc.L * pc.G / pc.mu, truncation="exact",
            )  # fmt: skip
            if c.certified:
                best = min(best, c.delta)
        assert g == pytest.approx(best, rel=1e-9, abs=1e-300)


def test_wa_pld_is_pessimistic_and_within_the_certificate(plan):
    pc = plan.rebuilt_constants()
    loss = from_plan(plan)
    pld = pld_distribution(loss, STEP)
    at = delta_for_epsilon(pld, plan.epsilon)
    cert = plan.certificate.delta
    grid = np.arange(0, 1500) * STEP
    prof = wa_profile.watkins_arora_profile(pc, plan.sigma, plan.iterations, grid,
                                          radius=(plan.radius, plan.radius_outer))  # fmt: skip
    env = profiles.convex_envelope(*profiles.symmetric_extension(grid, prof))[grid.size - 1 :]
    i = round(plan.epsilon / STEP)
    # pessimistic: never below the Theorem C.13 profile made convex with its mirror...
    assert at >= env[i] * (1 - 1e-9) - 1e-15
    hockey = np.array([delta_for_epsilon(pld, e) for e in grid[::50]])
    assert np.all(hockey >= env[::50] * (1 - 1e-9) - 1e-15)
    # ...and never above the plan's certified delta
    assert at <= cert * (1 + 1e-9)
    assert at >= cert * 0.5  # the plan's radius is close to the best one: slack only


def test_accountant_spends_refuses_and_reports():
    acc = PrivacyAccountant(1.0, 1e-5, discretization=STEP)
    acc.spend(gaussian(8.0), name="a")
    acc.spend(gaussian(8.0, count=2), name="b")
    ref = pld_privacy_accountant.PLDAccountant(value_discretization_interval=STEP)
    ref.compose(dp_accounting.GaussianDpEvent(8.0))  # the same steps, in the same order
    ref.compose(dp_accounting.GaussianDpEvent(8.0), 2)
    assert abs(acc.spent - ref.get_epsilon(1e-5)) <= 1e-6
    before = acc.spent
    assert not acc.can_spend(gaussian(0.5))
    with pytest.raises(BudgetExceededError, match="remaining"):
        acc.spend(gaussian(0.5), name="big")
    assert acc.spent == before and [s.name for s in acc.steps] == ["a", "b"]
    left = acc.remaining()
    assert left.epsilon == pytest.approx(1.0 - before)
    cert = acc.certificate()
    assert cert.method == "pld" and cert.epsilon == before and cert.certified
    json.dumps(cert.to_dict())
    assert copy.deepcopy(acc) is acc
    with pytest.raises(PrivacyError):
        pickle.dumps(acc)


class _Untouchable:
    """A feature matrix of public shape that fails the test when anything reads it."""

    shape = (400, 5)
    ndim = 2

    def __array__(self, *args, **kwargs):
        raise AssertionError("the data were read")

    def __len__(self):
        raise AssertionError("the data were read")

    def __getattr__(self, name):
        raise AssertionError(f"the data were read ({name})")


def test_budget_refused_before_the_data_are_touched():
    from objpert.estimators import PrivateLogisticRegression

    acc = PrivacyAccountant(0.2, 1e-6)
    est = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], accountant=acc
    )
    with pytest.raises(BudgetExceededError):
        est.fit(_Untouchable(), np.zeros(400))
    assert acc.steps == ()


@pytest.fixture(scope="module")
def three_class():
    from objpert.estimators import PrivateLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = rng.integers(0, 3, 400)
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1, 2], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        acc = PrivacyAccountant(3.0, 1e-6)
        pld = PrivateLogisticRegression(composition="pld", accountant=acc, **kw).fit(X, y)
        split = PrivateLogisticRegression(composition="split", **kw).fit(X, y)
    return pld, split, acc, X, y


def test_pld_multiclass_needs_less_noise_and_meets_the_target(three_class):
    pld, split, acc, _, _ = three_class
    cert = pld.certificate_
    assert cert.method == "pld" and split.certificate_.method in ("basic", "advanced")
    assert pld.plan_[0].sigma < split.plan_[0].sigma
    assert cert.epsilon == 1.0 and cert.delta <= 1e-6
    # independent recomposition: dp-accounting's self-composition of the plan's PLD
    direct = pld_distribution(from_plan(pld.plan_[0]), cert.discretization).self_compose(3)
    assert cert.delta == pytest.approx(direct.get_delta_for_epsilon(1.0), rel=1e-12)
    # the accountant was charged the three releases: no more than the fit's target
    assert acc.spent <= 1.0 + 1e-9 and len(acc.steps) == 1


def test_pld_multiclass_saves_and_reloads(three_class, tmp_path):
    from objpert import load, save

    pld, _, acc, X, _ = three_class
    path = tmp_path / "m.json"
    save(pld, path, key=b"k" * 32)
    back = load(path, key=b"k" * 32)
    assert back.certificate_.method == "pld"
    assert back.certificate_.delta == pytest.approx(pld.certificate_.delta, rel=1e-12)
    assert back.get_params()["accountant"] is None
    np.testing.assert_array_equal(back.predict(X), pld.predict(X))
    from sklearn.base import clone

    assert clone(pld).accountant is acc


def test_pipeline_certificate(three_class):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from objpert.estimators import PrivateLogisticRegression

    _, _, _, X, y = three_class
    pipe = make_pipeline(
        FunctionTransformer(),
        PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1],
                                  random_state=0),
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, (y == 1).astype(int))
    cert = pipeline_certificate(pipe, composition="pld", delta=1e-6)
    assert [s.name for s in cert.steps] == ["0: c13"]
    assert 0.0 < cert.epsilon <= 1.0 + 2 * STEP  # the release's own PLD at its delta


def test_feature_bounds_and_model_share_one_budget(three_class):
    from objpert.estimators import PrivateLogisticRegression
    from objpert.preprocessing import PrivateFeatureBounds

    _, _, _, X, y = three_class
    ranges = [(-1.0, 1.0)] * X.shape[1]
    acc = PrivacyAccountant(1.0, 1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PrivateFeatureBounds(epsilon=0.5, ranges=ranges, accountant=acc, random_state=0).fit(X)
        assert len(acc.steps) == 1 and acc.steps[0].losses[0].count == 2 * X.shape[1]
        # pure releases composed: no more than basic composition says
        assert acc.spent <= 0.5 + 0.01
        model = PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], accountant=acc
        )
        with pytest.raises(BudgetExceededError):
            model.fit(X, (y == 1).astype(int))
        bounds = PrivateFeatureBounds(epsilon=5.0, ranges=ranges, accountant=acc)
        with pytest.raises(BudgetExceededError):
            bounds.fit(_Untouchable())  # refused before the data are read
    assert len(acc.steps) == 1


def test_an_edited_pld_certificate_is_refused(three_class, tmp_path):
    from objpert import load, save
    from objpert.exceptions import ModelFileError
    from objpert.persistence._fileformat import digest

    pld = three_class[0]
    path = save(pld, tmp_path / "m.json")

    def edited(change):
        payload = json.loads(path.read_text())
        change(payload)
        payload["digest"] = digest(payload)
        out = tmp_path / "edited.json"
        out.write_text(json.dumps(payload))
        return out

    def smaller_delta(p):
        p["certificate"]["delta"] *= 0.5

    def less_noise(p):  # every plan at half the noise: the composition misses the target
        for plan in p["plans"]:
            plan["sigma"] *= 0.5

    def split_params(p):
        p["params"]["composition"] = "split"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for change, match in (
            (smaller_delta, "differs"),
            (less_noise, "plan 0"),
            (split_params, "composition is 'split'"),
        ):
            with pytest.raises(ModelFileError, match=match):
                load(edited(change))


def test_accountant_with_labels_read_from_the_data():
    from objpert.estimators import PrivateLogisticRegression

    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3)) / 3.0
    y = (X[:, 0] > 0).astype(int)
    acc = PrivacyAccountant(0.5, 1e-6)
    est = PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BudgetExceededError):
            est.fit(X, y)  # labels read first, then refused before the release
    assert not hasattr(est, "coef_") and acc.steps == ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.set_params(epsilon=0.4).fit(X, y)
    assert acc.steps[0].not_public == ("label set",)
    assert acc.certificate().not_public == ("label set",)


def test_auto_composition_falls_back_to_the_split(monkeypatch):
    from objpert.accounting import _pld as pld
    from objpert.certify import _multiclass as multiclass

    monkeypatch.setattr(pld, "available", lambda: False)
    assert multiclass.resolve_composition("auto", 3) == "split"
    assert multiclass.resolve_composition("pld", 1) == "single"
    with pytest.raises(ValueError, match="composition must be one of"):
        multiclass.resolve_composition("fast", 3)
