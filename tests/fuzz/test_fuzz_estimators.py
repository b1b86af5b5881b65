"""Fuzz: the estimators' fit, predict, predict_proba, predict_log_proba and score on
generated data and parameters."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzz_support import HOSTILE, Arg, check_certificate, choice, draw_args, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression

pytestmark = pytest.mark.filterwarnings("ignore")

#: extreme but finite feature values: overflow of squares and products must not matter
EXTREME = st.sampled_from([1e300, -1e300, 1.7e308, -1.7e308, 1e-300, 5e-324, 1e154, 0.0])
FEATURE = st.one_of(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0), EXTREME)


@st.composite
def features(draw, n: int, d: int):
    kind = draw(st.sampled_from(["plain", "plain", "plain", "extreme", "nonfinite", "odd"]))
    if kind == "plain":
        return draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-2.0, 2.0)))
    if kind == "extreme":
        return draw(hnp.arrays(np.float64, (n, d), elements=FEATURE))
    if kind == "nonfinite":
        X = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-2.0, 2.0)))
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = draw(
            st.sampled_from([math.nan, math.inf, -math.inf])
        )
        return X
    return draw(
        st.sampled_from(
            [
                np.arange(n * d).reshape(n, d).astype("datetime64[D]"),
                np.arange(n * d).reshape(n, d).astype("timedelta64[s]"),
                np.full((n, d), "a", dtype=object),
                np.ones((n, d), dtype=bool),
                np.ones((n, d), dtype=np.int64),
                np.ones((n,)),
                np.ones((n, d, 1)),
                [[None] * d] * n,
            ]
        )
    )


@st.composite
def class_labels(draw, n: int):
    kind = draw(
        st.sampled_from(
            [
                "01",
                "pm1",
                "str",
                "multi",
                "01",
                "pm1",
                "str",
                "multi",
                "one",
                "none_str",
                "nan",
                "dates",
                "int2",
            ]
        )
    )
    idx = np.array(draw(st.permutations(range(n)))) % 3
    if kind == "01":
        return idx % 2
    if kind == "pm1":
        return np.where(idx % 2 == 0, -1, 1)
    if kind == "str":
        return np.array(["ham", "spam"], dtype=object)[idx % 2]
    if kind == "multi":
        return idx
    if kind == "one":
        return np.zeros(n, dtype=int)
    if kind == "none_str":
        return np.array([None, "a", "b"], dtype=object)[idx]
    if kind == "nan":
        return np.where(idx == 0, np.nan, idx.astype(float))
    if kind == "dates":
        return idx.astype("datetime64[D]")
    return idx % 2 + 1


def targets(n: int):
    return st.one_of(
        hnp.arrays(np.float64, (n,), elements=st.floats(-5.0, 5.0)),
        hnp.arrays(np.float64, (n,), elements=st.sampled_from([1.7e308, -1.7e308, 1e300, 0.0])),
        hnp.arrays(np.float64, (n,), elements=st.floats(allow_nan=True, allow_infinity=True)),
        st.just(np.array(["x"] * n, dtype=object)),
    )


def param(plausible, hostile=HOSTILE) -> Arg:
    return Arg(plausible, hostile)


PARAMS = dict(
    epsilon=param(st.sampled_from([0.5, 1.0])),
    delta=param(st.sampled_from([1e-6, 1e-3])),
    data_norm=param(st.sampled_from([1.0, 2.0])),
    fit_intercept=choice((True, False), (1, "yes", None, np.True_)),
    intercept_scaling=param(st.sampled_from([None, 1.0])),
    clip=choice((True, True, False), (0, "no", None)),
    calibration=choice(("corollary413",), ("tight", "bogus", None)),
    comparator_norm=param(st.sampled_from([3.0, 1.0])),
    max_iter=param(st.sampled_from([100, 5000]), st.one_of(HOSTILE, st.just(True))),
    random_state=param(st.sampled_from([0, 1]), st.sampled_from([-1, "seed", 1.5, True])),
)


def check_fitted(model) -> None:
    assert np.isfinite(model.coef_).all(), model.coef_
    assert np.isfinite(model.intercept_).all(), model.intercept_
    check_certificate(model.certificate_)
    assert model.certificate_.certified


def check_predictions(model, X, y, classifier: bool) -> None:
    ok, pred = outcome(model.predict, X)
    if not ok:
        return
    assert len(pred) == np.shape(X)[0]
    if classifier:
        assert set(np.asarray(pred).tolist()) <= set(model.classes_.tolist())
        ok, proba = outcome(model.predict_proba, X)
        assert ok
        assert ((proba >= 0) & (proba <= 1)).all(), proba
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
        ok, logp = outcome(model.predict_log_proba, X)
        assert ok and not np.isnan(logp).any(), logp
        np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=1e-9)
    else:
        assert np.isfinite(pred).all(), pred
    ok, score = outcome(model.score, X, y)
    if ok:
        assert math.isfinite(score), score
        if classifier:
            assert 0.0 <= score <= 1.0


def fit_and_predict(data, model, X, y, y2) -> None:
    """Fit (a library error, or a valid model), then predict and score on the training
    rows and on three rows of extreme finite features."""
    classifier = isinstance(model, PrivateLogisticRegression)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok, model = outcome(model.fit, X, y)
        if ok:
            check_fitted(model)
            X2 = data.draw(hnp.arrays(np.float64, (3, np.shape(X)[1]), elements=FEATURE))
            check_predictions(model, X2, y2, classifier=classifier)
            check_predictions(model, X, y, classifier=classifier)


@fuzz(40)
@given(data=st.data(), n=st.integers(2, 24), d=st.integers(1, 3))
def test_logistic(data, n, d):
    kw = draw_args(data, **PARAMS)
    kw["classes"] = data.draw(st.sampled_from([None, None, [0, 1], [0, 1, 2], ["ham", "spam"],
                                               [1], [None, "a"], "ab"]))  # fmt: skip
    X, y = data.draw(features(n, d)), data.draw(class_labels(n))
    fit_and_predict(data, PrivateLogisticRegression(**kw), X, y, y[:3])


@fuzz(30)
@given(data=st.data(), n=st.integers(2, 24), d=st.integers(1, 3))
def test_robust(data, n, d):
    kw = draw_args(data, **PARAMS, scale=param(st.sampled_from([0.5, 1.0])))
    X, y = data.draw(features(n, d)), data.draw(targets(n))
    y2 = data.draw(hnp.arrays(np.float64, (3,), elements=FEATURE))
    fit_and_predict(data, PrivateRobustRegression(**kw), X, y, y2)


@fuzz(6)
@given(
    data=st.data(),
    mu=st.sampled_from(["auto", 0.5, "auto", -1.0, "big", True, 10**400, math.nan]),
)
def test_tight_fits(data, mu):
    """The tight calibration (about a second per distinct shape: one shape, few examples)."""
    X = data.draw(hnp.arrays(np.float64, (20, 2), elements=FEATURE))
    y = np.arange(20) % 2
    model = PrivateLogisticRegression(random_state=0, max_iter=200, mu=mu)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok, model = outcome(model.fit, X, y)
        if ok:
            check_fitted(model)
            check_predictions(model, X, y, classifier=True)
