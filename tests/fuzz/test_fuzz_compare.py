"""Fuzz: the comparison's statistics (objpert.apps._compare.stats): hostile lists are
refused with an objpert error; valid ones give the plain-numpy mean, standard error and
paired t interval (NaN only where one value leaves them unknown)."""

from __future__ import annotations

import math

import numpy as np
from fuzz_support import HOSTILE, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import t as student_t

from objpert.apps._compare import mean_se, paired_difference, time_summary

VALUES = st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=12)
ANY = st.one_of(VALUES, HOSTILE, st.just([]), st.lists(HOSTILE, min_size=1, max_size=3))


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


@fuzz(15)
@given(values=ANY)
def test_mean_se_and_time_summary(values):
    ok, got = outcome(mean_se, values)
    if not ok:
        return
    v = np.asarray(values, dtype=float)
    assert _close(got[0], float(v.mean()))
    se = (
        float(np.sqrt(((v - v.mean()) ** 2).sum() / (v.size - 1) / v.size))
        if v.size > 1
        else math.nan
    )
    assert _close(got[1], se)
    med, lo, hi = time_summary(values)
    assert lo <= med <= hi and lo == v.min() and hi == v.max()


@fuzz(15)
@given(values=ANY, reference=ANY, confidence=st.floats(0.5, 0.999))
def test_paired_difference(values, reference, confidence):
    ok, got = outcome(paired_difference, values, reference, confidence)
    if not ok:
        return
    d = np.asarray(values, dtype=float) - np.asarray(reference, dtype=float)
    mean, lo, hi = got
    assert _close(mean, float(d.mean()))
    if d.size == 1:
        assert math.isnan(lo) and math.isnan(hi)
        return
    half = (
        student_t.ppf((1 + float(confidence)) / 2, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    )
    assert _close(lo, mean - half) and _close(hi, mean + half) and lo <= mean <= hi
