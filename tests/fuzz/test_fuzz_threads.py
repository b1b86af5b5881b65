"""Fuzz: thread counts (n_jobs), the time budget, one-vs-rest releases in one sweep and the
estimators' n_jobs / max_seconds parameters."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzz_support import HOSTILE, Arg, count, draw_args, draw_checked, fuzz, optional, outcome, real
from hypothesis import given
from hypothesis import strategies as st

from objpert._engines import threads, timing
from objpert.certify import _calibration as calibration
from objpert.estimators import PrivateLogisticRegression
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, release_one_vs_rest

pytestmark = pytest.mark.filterwarnings("ignore")

N_JOBS = Arg(st.one_of(st.none(), st.just(-1), st.integers(1, 64)), HOSTILE)


@fuzz(150)
@given(data=st.data())
def test_choose_threads(data):
    """A thread count >= 1, one thread for n_jobs=1, every core for -1; or a one-line
    ParameterError."""
    kw = draw_checked(data, work=count(0, 10**12), n_jobs=N_JOBS)
    ok, got = outcome(threads.choose_threads, **kw)
    if ok:
        assert isinstance(got, int) and got >= 1
        if kw["n_jobs"] == 1:
            assert got == 1
        if kw["n_jobs"] is None and kw["work"] < threads.THREAD_MIN_WORK:
            assert got == 1


@fuzz(150)
@given(data=st.data())
def test_iteration_budget(data):
    kw = draw_checked(
        data, seconds=real(1e-6, 1e4), seconds_per_step=real(1e-7, 10.0),
        max_iter=count(1, 10**7),
    )  # fmt: skip
    ok, got = outcome(timing.iteration_budget, **kw)
    if ok:
        assert 1 <= got <= kw["max_iter"]
        steps = kw["seconds"] / kw["seconds_per_step"]  # may overflow to +inf
        cap = kw["max_iter"]
        assert got == (cap if steps >= cap else max(1, math.floor(steps)))


@fuzz(10)
@given(data=st.data())
def test_seconds_per_step(data):
    kw = draw_checked(
        data, n=count(1, 3000), d=count(1, 40), draws=count(1, 12), n_jobs=N_JOBS,
        steps=count(1, 3),
    )  # fmt: skip
    ok, got = outcome(timing.seconds_per_step, **kw)
    if ok:
        assert got > 0 and math.isfinite(got)


PLAN = calibration.tight(
    "logistic", n=60, d=4, zeta=1.0, epsilon=4.0, delta=1e-5, mu=0.2, max_iter=100,
    objective="empirical",
)  # fmt: skip


@st.composite
def label_matrices(draw):
    K = draw(st.integers(1, 5))
    kind = draw(st.sampled_from(["pm1", "pm1", "pm1", "two", "one", "many", "shape", "nan"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Y = np.where(rng.random((60, K)) < 0.5, -1.0, 1.0)
    if kind == "two":
        Y = (Y > 0).astype(int) * 3
    elif kind == "one":
        Y[:, 0] = -1.0
    elif kind == "many":
        Y[:, -1] = np.arange(60)
    elif kind == "shape":
        Y = Y[: draw(st.integers(0, 59))]
    elif kind == "nan":
        Y = Y.astype(float)
        Y[0, 0] = math.nan
    return Y, K + draw(st.sampled_from([0, 0, 0, 1, -1]))


@fuzz(25)
@given(labels=label_matrices(), seed=st.integers(0, 2**31))
def test_release_one_vs_rest(labels, seed):
    """Finite weights equal to the single releases, or a one-line objpert error."""
    Y, k = labels
    X = np.random.default_rng(seed).uniform(-0.5, 0.5, size=(60, 4))
    ok, got = outcome(release_one_vs_rest, X, Y, PLAN, [seed + j for j in range(k)])
    if ok:
        assert len(got) == Y.shape[1]
        for j, r in enumerate(got):
            single = perturbed_gradient_descent(X, Y[:, j], PLAN, seed + j)
            assert np.all(np.isfinite(r.weights))
            np.testing.assert_allclose(r.weights, single.weights, rtol=0, atol=1e-12)


@fuzz(15)
@given(data=st.data())
def test_estimator_n_jobs_and_max_seconds(data):
    kw = draw_args(data, n_jobs=N_JOBS, max_seconds=optional(real(1e-3, 30.0)))
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(80, 3))
    y = np.arange(80) % 3
    model = PrivateLogisticRegression(
        classes=[0, 1, 2], data_norm=1.0, max_iter=200, random_state=0, multi_class="ovr", **kw
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok, fitted = outcome(model.fit, X, y)
    if ok:
        assert 1 <= fitted.max_iter_used_ <= 200
        assert all(p.iterations <= fitted.max_iter_used_ for p in fitted.plan_)
        assert np.all(np.isfinite(fitted.coef_))
