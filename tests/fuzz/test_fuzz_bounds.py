"""Fuzz: the bounded transformers, private feature bounds, row_norm_bound and the
iteration-budget report. Each either raises an objpert error or returns rows within the
public bound it declares (and a certificate within its target)."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
from fuzz_support import HOSTILE, Arg, draw_args, fuzz, outcome, real
from hypothesis import given
from hypothesis import strategies as st

from objpert.certify._budget import ceiling
from objpert.certify._calibration import tight
from objpert.preprocessing import (
    BoundedOneHotEncoder,
    BoundedScaler,
    PrivateFeatureBounds,
    row_norm_bound,
)

FINITE = st.floats(-1e6, 1e6, allow_nan=False)


def _pairs() -> Arg:
    pair = st.tuples(FINITE, FINITE).map(lambda p: (min(p), max(p) + 1e-3))
    hostile_pair = st.one_of(st.tuples(HOSTILE, HOSTILE), HOSTILE, st.tuples(HOSTILE))
    return Arg(
        st.lists(pair, min_size=1, max_size=4),
        st.one_of(st.lists(st.one_of(pair, hostile_pair), max_size=4), HOSTILE),
    )


def _matrix(data, width: int) -> np.ndarray:
    rows = data.draw(st.integers(1, 12))
    values = st.one_of(FINITE, st.sampled_from([1e300, -1e300, 0.0]))
    return np.array(data.draw(st.lists(st.lists(values, min_size=width, max_size=width),
                                       min_size=rows, max_size=rows)))  # fmt: skip


@fuzz(30)
@given(data=st.data())
def test_bounded_scaler(data):
    bounds = draw_args(data, bounds=_pairs())["bounds"]
    width = len(bounds) if isinstance(bounds, list) and bounds else 1
    X = _matrix(data, width)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok, out = outcome(lambda: BoundedScaler(bounds=bounds).fit_transform(X))
    if ok:
        assert out.shape == X.shape and np.all(np.abs(out) <= 1.0)
        bound = row_norm_bound(BoundedScaler(bounds=bounds))
        assert np.all(np.linalg.norm(out, axis=1) <= bound * (1 + 1e-12))


@fuzz(30)
@given(data=st.data())
def test_bounded_one_hot_encoder(data):
    cats = data.draw(st.one_of(
        st.lists(st.lists(st.sampled_from(["a", "b", "c", 1, 2.5, None]), min_size=0,
                          max_size=4), min_size=0, max_size=3),
        HOSTILE,
    ))  # fmt: skip
    unknown = data.draw(st.sampled_from(["error", "ignore", "bogus", None]))
    width = len(cats) if isinstance(cats, list) and cats else 1
    rows = data.draw(st.integers(1, 8))
    X = np.array(
        data.draw(st.lists(st.lists(st.sampled_from(["a", "b", "z", 1, 2.5, None]),
                                    min_size=width, max_size=width),
                           min_size=rows, max_size=rows)),
        dtype=object,
    )  # fmt: skip
    enc = BoundedOneHotEncoder(categories=cats, handle_unknown=unknown)
    ok, out = outcome(lambda: enc.fit_transform(X))
    if ok:
        assert np.all(np.linalg.norm(out, axis=1) <= enc.row_norm_bound_ * (1 + 1e-12))
        assert set(np.unique(out)) <= {0.0, 1.0}


@fuzz(15)
@given(data=st.data())
def test_private_feature_bounds(data):
    kw = draw_args(
        data, epsilon=real(1e-3, 50.0), delta=real(1e-9, 0.5, extra=(0.0,)), ranges=_pairs(),
    )  # fmt: skip
    ranges = kw["ranges"]
    width = len(ranges) if isinstance(ranges, list) and ranges else 1
    X = _matrix(data, width)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pfb = PrivateFeatureBounds(**kw, random_state=0)
        ok, out = outcome(lambda: pfb.fit_transform(X))
    if ok:
        assert np.all(np.abs(out) <= 1.0)
        assert np.all(pfb.bounds_[:, 0] < pfb.bounds_[:, 1])
        cert = pfb.certificate_
        assert cert.epsilon <= kw["epsilon"] and cert.delta <= kw["delta"]
        for c in cert.certificates:  # pure releases: (epsilon_i, 0), exactly
            assert c.delta == 0.0 and c.certified and 0.0 < c.epsilon < math.inf


@functools.cache
def _plan():
    return tight(
        "logistic", n=500, d=3, zeta=math.sqrt(2), epsilon=1.0, delta=1e-6,
        comparator_norm=3.0, max_iter=200, objective="empirical", mu=0.2,
    )  # fmt: skip


@fuzz(6)
@given(data=st.data())
def test_ceiling(data):
    budget = data.draw(st.one_of(st.integers(1, 400), HOSTILE))
    ok, report = outcome(ceiling, _plan(), budget, mu_fixed=True)
    if ok:
        assert 0.0 <= report.relative_gain < 1.0
        assert report.sigma_with_double_budget <= report.sigma_now * (1 + 1e-12)
