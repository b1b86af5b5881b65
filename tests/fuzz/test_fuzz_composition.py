"""Fuzz: composition of releases (basic, advanced), the budget split, composed certificates."""

from __future__ import annotations

import math
import time

from fuzz_support import (
    HOSTILE,
    Arg,
    check_certificate,
    count,
    draw_args,
    draw_checked,
    fuzz,
    outcome,
    real,
)
from hypothesis import given
from hypothesis import strategies as st

from objpert.accounting import _composition as composition
from objpert.certify import _theorem41 as theorem41
from objpert.certify import problem

DELTA_LIKE = real(1e-12, 1.0, extra=(0.0, 1.0, 0.5, 0.6))


def lists(arg: Arg) -> Arg:
    return Arg(
        st.lists(arg.plausible, min_size=1, max_size=6),
        st.one_of(st.lists(st.one_of(arg.plausible, HOSTILE), max_size=6), HOSTILE),
    )


@fuzz(150)
@given(data=st.data())
def test_basic(data):
    kw = draw_args(data, eps=lists(real(0.0, 1e3)), dels=lists(DELTA_LIKE))
    eps, dels = kw["eps"], kw["dels"]
    if isinstance(eps, list) and isinstance(dels, list):
        dels = (dels * len(eps))[: len(eps)] if dels and data.draw(st.booleans()) else dels
    ok, (e, d) = (lambda r: (r[0], r[1] if r[0] else (None, None)))(
        outcome(composition.basic, eps, dels)
    )
    if ok:
        assert 0.0 <= d <= 1.0 and e >= 0.0 and not math.isnan(e)


@fuzz(150)
@given(data=st.data())
def test_advanced(data):
    kw = draw_checked(
        data, epsilon=real(0.0, 10.0), delta=DELTA_LIKE, k=count(1, 10**9),
        delta_slack=real(1e-12, 0.9),
    )  # fmt: skip
    ok, out = outcome(composition.advanced, **kw)
    if ok:
        e, d = out
        assert 0.0 <= d <= 1.0 and e >= 0.0 and not math.isnan(e)


@fuzz(120)
@given(data=st.data())
def test_split_budget(data):
    """Per-release budgets whose composition meets the target, in O(1) for any k."""
    kw = draw_checked(data, epsilon=real(1e-4, 1e3), delta=real(1e-12, 0.5), k=count(1, 10**15))
    start = time.perf_counter()
    ok, split = outcome(composition.split_budget, **kw)
    assert time.perf_counter() - start < 1.0, "split_budget must not scale with k"
    if ok:
        assert split.epsilon_total <= split.epsilon and split.delta_total <= split.delta
        assert 0.0 < split.delta_i < 1.0 and 0.0 <= split.epsilon_i <= split.epsilon
        assert not math.isnan(split.epsilon_i)


@st.composite
def certificates(draw):
    pc = problem("logistic", n=draw(st.sampled_from([100, 10**4])), d=3, zeta=1.0, mu=0.1)
    sigma = draw(st.sampled_from([0.01, 0.5, 5.0]))
    N = draw(st.sampled_from([10, 1000]))
    eps = draw(st.sampled_from([0.1, 1.0, 10.0]))
    return theorem41.certify(pc, sigma, 6.0, N, eps)


@fuzz(60)
@given(
    certs=st.lists(certificates(), max_size=5),
    method=st.sampled_from(["single", "basic", "advanced", "other", None]),
    slack=st.one_of(st.none(), real(1e-9, 0.5).plausible),
)
def test_compose(certs, method, slack):
    ok, cc = outcome(composition.compose, certs, method, delta_slack=slack)
    if ok:
        check_certificate(cc)
        assert 0.0 <= cc.delta <= 1.0
        ok, back = outcome(composition.ComposedCertificate.from_dict, cc.to_dict())
        assert ok and back.to_dict() == cc.to_dict()
