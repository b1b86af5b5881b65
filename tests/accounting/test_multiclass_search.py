"""The joint calibration's search (:func:`objpert.certify._multiclass.joint_plan`): the
model-guided steps against the plain bracketing search it replaced (kept here as the
reference), the composition recomputed for every returned plan, and the number of
calibrations it costs."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.special import ndtri

pytest.importorskip("dp_accounting")

from objpert.accounting._gaussian_mechanism import calibrate_gaussian, gaussian_delta
from objpert.certify import _multiclass as multiclass
from objpert.certify._multiclass import composed_delta, gaussian_share, joint_plan
from objpert.estimators import DEFAULT_COMPARATOR_NORM
from objpert.estimators._planning import plan_for
from objpert.exceptions import UnreachableTargetError

STEP = 1e-3


def reference_joint_plan(plan_at, epsilon, delta, k, discretization=STEP, rtol=0.03):
    """The search before the model: bisection in log epsilon_i from epsilon / K (stepped
    down by 0.9) and 2 epsilon / sqrt(K), narrowed by Illinois regula falsi on
    Phi^-1(delta) until the bracket is rtol wide or the passing end uses 0.6 of delta.
    Returns (epsilon_i, plan, composed delta, calls)."""
    delta_i = delta / k
    calls = []

    def passes(e):
        calls.append(e)
        plan = plan_at(e, delta_i)
        got = multiclass.composed_delta(plan, k, epsilon, discretization)
        return got <= delta, plan, got

    lo = epsilon / k
    for _ in range(8):
        ok, plan_lo, d_lo = passes(lo)
        if ok:
            break
        lo *= 0.9
    else:
        raise UnreachableTargetError("no plan")
    hi = min(epsilon, 2.0 * epsilon / math.sqrt(k))
    ok, plan_hi, d_hi = passes(hi)
    if ok and hi < epsilon:
        lo, plan_lo, d_lo = hi, plan_hi, d_hi
        hi = epsilon
        ok, plan_hi, d_hi = passes(hi)
    if ok:
        return hi, plan_hi, d_hi, calls
    goal = float(ndtri(delta))

    def score(d):
        return float(ndtri(min(max(d, 1e-300), 0.5))) - goal

    f_lo, f_hi, kept = score(d_lo), score(d_hi), 0
    while hi / lo > 1.0 + rtol and d_lo < 0.6 * delta:
        a, b = math.log(lo), math.log(hi)
        x = b - f_hi * (b - a) / (f_hi - f_lo) if f_hi != f_lo else 0.5 * (a + b)
        x = min(max(x, a + 0.02 * (b - a)), b - 0.02 * (b - a))
        ok, plan_mid, d_mid = passes(math.exp(x))
        if ok:
            lo, plan_lo, d_lo, f_lo = math.exp(x), plan_mid, d_mid, score(d_mid)
            f_hi, kept = (f_hi / 2.0, kept) if kept < 0 else (f_hi, -1)
        else:
            hi, f_hi = math.exp(x), score(d_mid)
            f_lo, kept = (f_lo / 2.0, kept) if kept > 0 else (f_lo, 1)
    return lo, plan_lo, d_lo, calls


def _tight_family(n, d, mu):
    @functools.cache
    def plan_at(eps_i, delta_i):
        return plan_for(
            "logistic", None, "tight", n, d, 1.0, eps_i, delta_i, DEFAULT_COMPARATOR_NORM,
            2000, mu,
        )  # fmt: skip

    return plan_at


@pytest.mark.parametrize(
    ("n", "d", "epsilon", "k", "mu"),
    [(1257, 65, 1.0, 10, 0.05), (1257, 65, 1.0, 3, 0.05), (5000, 20, 2.0, 10, None)],
)
def test_model_search_matches_the_bracketing_search(n, d, epsilon, k, mu):
    """Watkins & Arora plans (the estimators' tight calibration; mu fixed, or chosen): the
    model's plan has the same or a smaller sigma than the bracketing search's (within its
    3% bracket), its K-fold composition recomputed meets the target, and it costs at
    most 4 calibrations, fewer than the bracketing search."""
    delta = 1e-6
    plan_at = _tight_family(n, d, mu)
    _, ref_plan, ref_delta, ref_calls = reference_joint_plan(plan_at, epsilon, delta, k)
    calls = []

    def counted(eps_i, delta_i):
        calls.append(eps_i)
        return plan_at(eps_i, delta_i)

    jp = joint_plan(counted, epsilon, delta, k)
    recomputed = composed_delta(jp.plan, k, epsilon, jp.discretization)
    assert recomputed == jp.composed_delta <= delta
    assert jp.plan.delta == pytest.approx(delta / k)
    assert jp.plan.epsilon == jp.epsilon_i
    assert jp.plan.sigma <= ref_plan.sigma * 1.03
    assert ref_delta <= delta
    assert len(set(calls)) == len(calls) <= 4
    assert len(calls) < len(ref_calls)


@dataclass(frozen=True)
class _Shifted:
    """A release whose privacy loss is a Gaussian one (mu-GDP) plus ``share`` of epsilon_i
    in every outcome: certified at (epsilon_i, delta_i) by delta_G(epsilon_i (1 - share);
    mu) = delta_i. K of them compose to the Gaussian loss of sqrt(K) mu shifted by K
    share epsilon_i (Dong, Roth & Su 2022, Corollary 3.3); share = 0: Gaussian releases."""

    epsilon: float
    delta: float
    share: float

    @property
    def mu(self) -> float:
        return 1.0 / calibrate_gaussian(1.0, self.epsilon * (1.0 - self.share), self.delta)

    def composed(self, k: int, epsilon: float) -> float:
        x = epsilon - k * self.share * self.epsilon  # the Gaussian part's epsilon
        if x < 0.0:
            return 1.0
        return gaussian_delta(x, 1.0, 1.0 / (math.sqrt(k) * self.mu))


def _shifted_family(monkeypatch, share):
    """plan_at for :class:`_Shifted` releases, with composed_delta computed in closed form."""
    calls = []

    def plan_at(eps_i, delta_i):
        calls.append(eps_i)
        return _Shifted(eps_i, delta_i, share)

    monkeypatch.setattr(
        multiclass, "composed_delta", lambda plan, k, epsilon, step: plan.composed(k, epsilon)
    )
    return plan_at, calls


@settings(max_examples=40, deadline=None)
@given(
    epsilon=st.floats(0.05, 8.0),
    delta=st.sampled_from([1e-10, 1e-8, 1e-6, 1e-4]),
    k=st.integers(2, 50),
    share=st.floats(0.0, 0.3),
)
@example(epsilon=0.25, delta=1e-4, k=43, share=0.25)  # seven calibrations, bracketing six
@example(epsilon=0.25, delta=1e-4, k=46, share=0.25)  # nine calibrations, bracketing six
def test_search_on_releases_with_a_closed_form_composition(epsilon, delta, k, share):
    """Releases whose K-fold composition has a closed form, from Gaussian ones to ones far
    from Gaussian: the returned share composes to the target (recomputed), obeys the
    stopping rule (0.55 of the target delta used, or 3% more fails, or the whole target),
    is not below the bracketing search's by more than its 3% tolerance, and calibrates
    no share twice, nor more than three shares beyond the bracketing search's (or 6): near
    epsilon 0.25, delta 1e-4, share 0.25 and K of 43 to 50 it needs up to three more."""
    with pytest.MonkeyPatch.context() as mp:
        plan_at, calls = _shifted_family(mp, share)
        try:
            jp = joint_plan(plan_at, epsilon, delta, k)
        except UnreachableTargetError:
            with pytest.raises(UnreachableTargetError):
                reference_joint_plan(plan_at, epsilon, delta, k)
            return
        assert jp.plan.composed(k, epsilon) == jp.composed_delta <= delta
        assert epsilon / k * 0.9**7 <= jp.epsilon_i <= epsilon
        above = _Shifted(jp.epsilon_i * 1.03, delta / k, share).composed(k, epsilon)
        assert jp.composed_delta >= 0.55 * delta or above > delta or jp.epsilon_i == epsilon
        ours = list(calls)
        assert len(set(ours)) == len(ours)
        ref_eps, _, _, ref_calls = reference_joint_plan(plan_at, epsilon, delta, k)
    assert jp.epsilon_i >= ref_eps / 1.03
    assert len(ours) <= max(6, len(ref_calls)) + 3


@settings(max_examples=30, deadline=None)
@given(
    epsilon=st.floats(0.05, 8.0),
    delta=st.sampled_from([1e-10, 1e-8, 1e-6, 1e-4, 1e-3]),
    k=st.integers(2, 100),
)
def test_gaussian_share_composes_gaussians_exactly(epsilon, delta, k):
    """K Gaussian releases, each at (gaussian_share, delta / K), compose to exactly
    (epsilon, delta): an independent check with the Gaussian profile (std sqrt(K) times
    the per-release one, Dong, Roth & Su 2022, Corollary 3.3)."""
    eps_i = gaussian_share(epsilon, delta, k)
    sigma_i = calibrate_gaussian(1.0, eps_i, delta / k)  # sensitivity 1
    composed = gaussian_delta(epsilon, 1.0, sigma_i / math.sqrt(k))
    assert composed == pytest.approx(delta, rel=1e-6)
    assert 0.0 < eps_i < epsilon


def test_search_falls_back_to_bracketing_when_the_model_has_no_value(monkeypatch):
    """Where a composed delta has no GDP reading (the model returns None), the bracketing
    search alone finds a passing share, as good as the reference's within its tolerance."""
    plan_at, _ = _shifted_family(monkeypatch, 0.1)
    ref_eps = reference_joint_plan(plan_at, 1.0, 1e-6, 5)[0]
    monkeypatch.setattr(multiclass, "_log_mu", lambda epsilon, got: None)
    jp = joint_plan(plan_at, 1.0, 1e-6, 5)
    assert jp.composed_delta <= 1e-6
    assert jp.epsilon_i >= ref_eps / 1.03


@pytest.mark.parametrize("share", [0.0, 0.05, 0.2])
def test_shifted_model_finds_shifted_releases_in_two_plans(monkeypatch, share):
    """The model of the first step (a Gaussian loss plus share * epsilon_i) equals the
    composition computed with the certify module's Gaussian profile, and on releases of
    exactly that kind the search needs the Gaussian share and one model step."""
    epsilon, delta, k = 1.0, 1e-6, 10
    for e in (0.1, 0.2, 0.3):
        want = _Shifted(e, delta / k, share).composed(k, epsilon)
        assert multiclass._shifted(e, share, k, epsilon, delta / k) == pytest.approx(want, 1e-6)
    plan_at, calls = _shifted_family(monkeypatch, share)
    jp = joint_plan(plan_at, epsilon, delta, k)
    assert 0.55 * delta <= jp.composed_delta <= delta
    assert len(calls) <= 2
