"""Tests of objpert.estimators: scikit-learn conventions, privacy contract, accuracy.

Fits are seeded (random_state) for reproducible tests; the TestingSeedWarning that every
seeded release raises is filtered except where a test asserts it. Plans are cached by the
estimators (a pure function of public constants), so tests reuse shapes where they can.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._composition import ComposedCertificate, basic, split_budget
from objpert.estimators import (
    PrivateLogisticRegression,
    PrivateRobustRegression,
    fit_statistics,
    plan_for,
)
from objpert.exceptions import DataError, ParameterError
from objpert.exceptions import TestingSeedWarning as SeedWarning

pytestmark = pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")

# ---------------------------------------------------------------- scikit-learn's checks

# A fixed mu keeps the ~100 checks fast (a plan for a given mu takes ~0.2 s instead of
# ~1 s for the "auto" search); "auto" is exercised by the accuracy tests below.
CHECKED = [
    PrivateLogisticRegression(epsilon=3.0, max_iter=300, mu=0.3, data_norm=1.0),
    PrivateRobustRegression(epsilon=3.0, max_iter=300, mu=0.3, data_norm=1.0),
]


@parametrize_with_checks(CHECKED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeedWarning)
        check(estimator)


# ---------------------------------------------------------------- data


def _binary(n: int, d: int = 5, seed: int = 0):
    """Rows of norm about 1 (some above: clipped), logistic labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    w = np.array([3.0, -2.0, 1.0, 0.5, -1.0, 0.7, -0.4][:d])
    y = (X @ w + 0.3 + 0.3 * rng.logistic(size=n) > 0).astype(int)
    return X, y


def _three_class(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    labels = rng.integers(0, 3, n)
    return rng.normal(size=(n, 2)) * 0.3 + centers[labels], labels


SMALL_X, SMALL_Y = _binary(400, d=3, seed=1)


def small_model(**kw):
    params = dict(epsilon=2.0, mu=0.2, max_iter=2000, data_norm=1.0, random_state=0)
    params.update(kw)
    return PrivateLogisticRegression(**params)


# ---------------------------------------------------------------- accuracy


def test_binary_accuracy_close_to_non_private():
    X, y = _binary(5000, seed=0)
    Xt, yt = _binary(3000, seed=1)
    model = PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    reference = LogisticRegression().fit(X, y).score(Xt, yt)
    assert model.score(Xt, yt) >= reference - 0.03
    assert model.coef_.shape == (1, 5) and model.intercept_.shape == (1,)
    assert isinstance(model.certificate_, ReleaseCertificate)
    assert model.certificate_.epsilon == 1.0 and model.certificate_.delta <= 1e-6
    # the plan is built from public values: n = rows, d = features + intercept column
    plan = model.plan_
    assert (plan.n, plan.d, plan.loss) == (5000, 6, "logistic")
    assert plan.zeta == pytest.approx(np.sqrt(2.0))
    recertified = plan.recertify()
    assert recertified.certified and recertified.delta <= 1e-6
    assert model.n_iter_.tolist() == [plan.iterations]
    proba = model.predict_proba(Xt)
    assert proba.shape == (3000, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(model.classes_[np.argmax(proba, axis=1)], model.predict(Xt))


def test_multiclass_composes_within_the_target():
    X, y = _three_class(3000)
    model = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0, composition="split"
    )
    model.fit(X, y)
    assert model.score(X, y) > 0.8
    assert model.coef_.shape == (3, 2) and model.intercept_.shape == (3,)
    cert = model.certificate_
    assert isinstance(cert, ComposedCertificate)
    assert cert.k == 3 and cert.certified
    assert cert.epsilon <= 1.0 and cert.delta <= 1e-6
    split = split_budget(1.0, 1e-6, 3)
    assert cert.method == split.method == "basic"
    # the totals recomposed from the per-release certificates
    eps = [c.epsilon for c in cert.certificates]
    dels = [c.delta for c in cert.certificates]
    assert (cert.epsilon, cert.delta) == basic(eps, dels)
    assert all(e == split.epsilon_i for e in eps) and all(d <= split.delta_i for d in dels)
    assert len(model.plan_) == 3 and model.n_iter_.shape == (3,)
    proba = model.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(np.argmax(proba, axis=1), np.argmax(model.decision_function(X), 1))
    # seeded multiclass fits reproduce; the K releases draw from independent child seeds
    again = clone(model).fit(X, y)
    assert np.array_equal(again.coef_, model.coef_)


def test_iris_multiclass_runs():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    scaled = FunctionTransformer(lambda Z: Z / 10.0)  # a public scale: iris is in cm
    pipe = Pipeline([("scale", scaled), ("clf", PrivateLogisticRegression(epsilon=3.0))])
    pipe.fit(X, y)
    clf = pipe.named_steps["clf"]
    assert set(pipe.predict(X)) <= {0, 1, 2}
    assert clf.certificate_.epsilon <= 3.0 and clf.certificate_.delta <= 1e-6


# ---------------------------------------------------------------- labels and inputs


@pytest.mark.parametrize(
    "labels",
    [np.array([0, 1]), np.array([-1, 1]), np.array([False, True]), np.array(["no", "yes"])],
    ids=["01", "pm1", "bool", "str"],
)
def test_binary_label_encodings(labels):
    y = labels[SMALL_Y]
    model = small_model().fit(SMALL_X, y)
    reference = small_model().fit(SMALL_X, SMALL_Y)
    assert np.array_equal(model.classes_, labels)
    assert model.predict(SMALL_X).dtype == labels.dtype
    assert set(model.predict(SMALL_X)) <= set(labels)
    np.testing.assert_array_equal(model.coef_, reference.coef_)  # classes_[1] is +1


def test_pandas_input_records_feature_names():
    frame = pd.DataFrame(SMALL_X, columns=["age", "income", "score"])
    model = small_model().fit(frame, pd.Series(SMALL_Y))
    assert model.feature_names_in_.tolist() == ["age", "income", "score"]
    np.testing.assert_array_equal(model.coef_, small_model().fit(SMALL_X, SMALL_Y).coef_)
    with pytest.warns(UserWarning, match="feature names"):
        assert np.array_equal(model.predict(frame), model.predict(SMALL_X))
    bad = frame.assign(city="x")[["age", "income", "city"]]
    with pytest.raises(DataError, match="numeric"):
        small_model().fit(bad, SMALL_Y)


def test_sparse_input_matches_dense():
    Xs = SMALL_X.copy()
    Xs[np.abs(Xs) < 0.2] = 0.0
    dense = small_model().fit(Xs, SMALL_Y)
    sp = small_model().fit(sparse.csr_matrix(Xs), SMALL_Y)
    np.testing.assert_allclose(sp.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    assert np.array_equal(sp.predict(sparse.csr_matrix(Xs)), dense.predict(Xs))


def test_clipping_counted_and_refused_without_clip():
    X = SMALL_X.copy()
    norms = np.linalg.norm(X, axis=1)
    with fit_statistics() as fits:  # shown at fit time, never stored on the model
        small_model().fit(X, SMALL_Y)
        X_ok = X / norms.max()  # every row inside the unit ball
        small_model(clip=False).fit(X_ok, SMALL_Y)
    assert [f.n_clipped for f in fits] == [int(np.sum(norms > 1.0)), 0]
    with pytest.raises(DataError, match="above data_norm"):
        small_model(clip=False).fit(X, SMALL_Y)


def test_nan_and_inf_refused():
    X = SMALL_X.copy()
    X[3, 1] = np.nan
    with pytest.raises(DataError, match="non-finite"):
        small_model().fit(X, SMALL_Y)
    X[3, 1] = np.inf
    with pytest.raises(DataError, match="non-finite"):
        small_model().fit(X, SMALL_Y)
    model = small_model().fit(SMALL_X, SMALL_Y)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.where(np.eye(3, dtype=bool), np.nan, 0.0))


def test_shapes_and_classes_refused():
    with pytest.raises(DataError, match="one class"):
        small_model().fit(SMALL_X, np.zeros(len(SMALL_X), dtype=int))
    with pytest.raises(ValueError):
        small_model().fit(SMALL_X, SMALL_Y[:-1])
    model = small_model().fit(SMALL_X, SMALL_Y)
    with pytest.raises(ValueError, match="features"):
        model.predict(SMALL_X[:, :2])


@pytest.mark.parametrize(
    "params, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"data_norm": 0.0}, "data_norm"),
        ({"mu": 0.0}, "mu"),
        ({"mu": -0.5}, "mu"),
        ({"mu": "large"}, "mu"),
        ({"calibration": "magic"}, "calibration"),
        ({"calibration": "corollary413", "mu": 0.5}, "Corollary 4.13"),
        ({"max_iter": 0}, "max_iter"),
        ({"intercept_scaling": -1.0}, "intercept_scaling"),
        ({"comparator_norm": 0.0}, "comparator_norm"),
        ({"random_state": "seed"}, "random_state"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ParameterError, match=match):
        small_model(**params).fit(SMALL_X, SMALL_Y)


def test_bad_robust_scale():
    with pytest.raises(ParameterError, match="scale"):
        PrivateRobustRegression(scale=0.0).fit(SMALL_X, SMALL_X[:, 0])


def test_corollary413_calibration():
    model = small_model(calibration="corollary413", mu="auto", epsilon=1.0)
    model.fit(SMALL_X, SMALL_Y)
    assert model.plan_.calibration == "corollary413"
    assert model.certificate_.form == "theorem41" and model.certificate_.delta <= 1e-6
    with pytest.raises(ParameterError, match=r"\(0, 1\]"):
        small_model(calibration="corollary413", mu="auto", epsilon=2.0).fit(SMALL_X, SMALL_Y)


# ---------------------------------------------------------------- randomness


def test_seed_reproduces_and_warns():
    with pytest.warns(SeedWarning):
        a = small_model(random_state=7).fit(SMALL_X, SMALL_Y)
    b = small_model(random_state=7).fit(SMALL_X, SMALL_Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    c = small_model(random_state=8).fit(SMALL_X, SMALL_Y)
    assert not np.array_equal(a.coef_, c.coef_)


def test_os_entropy_differs_and_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeedWarning)
        a = small_model(random_state=None).fit(SMALL_X, SMALL_Y)
        b = small_model(random_state=None).fit(SMALL_X, SMALL_Y)
    assert not np.array_equal(a.coef_, b.coef_)
    assert a.plan_ is b.plan_  # the plan is cached: a pure function of public constants


def test_plan_cache_is_keyed_by_public_values():
    from objpert.estimators._planning import calibration_for

    def hits() -> int:
        return plan_for.cache_info().hits + calibration_for.cache_info().hits

    small_model().fit(SMALL_X, SMALL_Y)
    before = (hits(), calibration_for.cache_info().misses)
    small_model().fit(SMALL_X[::-1], SMALL_Y[::-1])  # other data, same public constants
    assert hits() >= before[0] + 1
    assert calibration_for.cache_info().misses == before[1]  # nothing recalibrated


# ---------------------------------------------------------------- model selection


def test_pipeline_grid_search_and_cross_validation():
    X, y = SMALL_X, SMALL_Y
    pipe = Pipeline(
        [
            ("public_scale", FunctionTransformer(lambda Z: Z / 2.0)),
            ("clf", PrivateLogisticRegression(epsilon=2.0, max_iter=2000, data_norm=1.0)),
        ]
    )
    search = GridSearchCV(pipe, {"clf__mu": [0.05, 0.5]}, cv=3).fit(X, y)
    assert search.best_params_["clf__mu"] in (0.05, 0.5)
    assert 0.0 <= search.score(X, y) <= 1.0
    scores = cross_val_score(pipe.set_params(clf__mu=0.2), X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.5)


# ---------------------------------------------------------------- robust regression


def _linear(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2)) / np.sqrt(2)
    w = np.array([2.0, -1.0])
    return X, X @ w + 0.5 + 0.05 * rng.normal(size=n), w


def test_robust_regression_recovers_a_linear_model():
    X, y, w = _linear(3000, seed=0)
    model = PrivateRobustRegression(epsilon=3.0, data_norm=1.0, random_state=0).fit(X, y)
    assert model.score(X, y) > 0.9
    assert model.coef_.shape == (2,) and isinstance(model.intercept_, float)
    assert np.linalg.norm(model.coef_ - w) < 0.5
    assert model.plan_.loss == "robust" and model.certificate_.delta <= 1e-6
    assert dict(model.plan_.constants.loss_params) == {"scale": 1.0}


def test_robust_regression_resists_outliers():
    X, y, w = _linear(3000, seed=1)
    rng = np.random.default_rng(1)
    out = rng.random(len(y)) < 0.05  # 5% gross outliers pulling the slope the wrong way
    y_bad = y.copy()
    y_bad[out] = -20.0 * np.sign(X[out, 0])
    robust = PrivateRobustRegression(epsilon=3.0, data_norm=1.0, random_state=0).fit(X, y_bad)
    least_squares = LinearRegression().fit(X, y_bad)
    clean = ~out
    assert robust.score(X[clean], y[clean]) > 0.95
    assert least_squares.score(X[clean], y[clean]) < 0.5
    assert np.linalg.norm(robust.coef_ - w) < 0.5 < np.linalg.norm(least_squares.coef_ - w)


def test_robust_regression_without_intercept():
    X, y, _ = _linear(500, seed=2)
    model = PrivateRobustRegression(
        epsilon=3.0, fit_intercept=False, mu=0.2, data_norm=1.0, random_state=0
    ).fit(X, y - 0.5)
    assert model.intercept_ == 0.0 and model.plan_.d == 2
    assert model.plan_.zeta == 1.0


def test_top_level_exports_are_the_estimators_and_persistence():
    import objpert
    from objpert import estimators, persistence

    assert objpert.PrivateLogisticRegression is estimators.PrivateLogisticRegression
    assert objpert.PrivateRobustRegression is estimators.PrivateRobustRegression
    assert objpert.save is persistence.save and objpert.load is persistence.load
    with pytest.raises(AttributeError):
        objpert.no_such_thing  # noqa: B018


@pytest.mark.parametrize(
    "y",
    [
        np.array(["2020-01-01"] * 40, dtype="datetime64[D]"),
        np.array([np.timedelta64(1, "D")] * 40),
    ],
)
def test_a_regression_target_of_dates_is_refused(y):
    X = np.random.default_rng(0).uniform(-1, 1, (40, 2)) / 2
    with pytest.raises(DataError, match="dates or durations"):
        PrivateRobustRegression(data_norm=1.0).fit(X, y)
