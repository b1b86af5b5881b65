"""PrivateLogisticRegression(multi_class=...): the multinomial fit through the estimator
API (clone, pipelines, probabilities, the accountant, the public "auto" rule)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from objpert.accounting import PrivacyAccountant
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import BudgetExceededError, DataError, ParameterError


def _data(n=150, k=4, d=5, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, size=n)
    X = rng.normal(scale=0.3, size=(n, d)) + np.eye(k, d)[y % d]
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return X, y


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def test_multinomial_fit_shapes_probabilities_and_certificate():
    X, y = _data()
    est = _fit(
        PrivateLogisticRegression(
            epsilon=2.0, data_norm=1.0, classes=[0, 1, 2, 3], multi_class="multinomial",
            random_state=0,
        ),
        X, y,
    )  # fmt: skip
    assert est.multi_class_ == "multinomial"
    assert est.coef_.shape == (4, 5) and est.intercept_.shape == (4,)
    assert est.certificate_.form == "multinomial"
    assert est.certificate_.epsilon <= 2.0 and est.certificate_.delta <= 1e-6
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    scores = est.decision_function(X)
    want = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(proba, want / want.sum(axis=1, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(est.predict_log_proba(X), np.log(proba), rtol=1e-10)
    np.testing.assert_array_equal(est.predict(X), np.argmax(proba, axis=1))
    assert est.n_iter_.shape == (1,)
    assert est.score(X, y) > 0.5


def test_extreme_margins_give_finite_probabilities():
    X, y = _data()
    est = _fit(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2, 3], random_state=0), X, y)
    big = np.full((2, 5), 1e300)
    proba = est.predict_proba(big)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert not np.isnan(est.predict_log_proba(big)).any()


def test_auto_rule_and_ovr():
    X, y = _data()
    base = dict(data_norm=1.0, random_state=0)
    auto = _fit(PrivateLogisticRegression(classes=[0, 1, 2, 3], **base), X, y)
    assert auto.get_params()["multi_class"] == "auto"
    assert auto.multi_class_ == "multinomial"
    ovr = _fit(PrivateLogisticRegression(classes=[0, 1, 2, 3], multi_class="ovr", **base), X, y)
    assert ovr.multi_class_ == "ovr" and len(ovr.plan_) == 4
    np.testing.assert_allclose(ovr.predict_proba(X).sum(axis=1), 1.0)
    X3, y3 = _data(k=3)
    three = _fit(PrivateLogisticRegression(classes=[0, 1, 2], **base), X3, y3)
    assert three.multi_class_ == "multinomial"  # the "auto" rule: from three classes on
    ovr3 = _fit(PrivateLogisticRegression(classes=[0, 1, 2], multi_class="ovr", **base), X3, y3)
    assert ovr3.multi_class_ == "ovr" and len(ovr3.plan_) == 3
    binary = _fit(
        PrivateLogisticRegression(classes=[0, 1], multi_class="multinomial", **base),
        X, (y > 1).astype(int),
    )  # fmt: skip
    assert binary.multi_class_ == "ovr" and binary.coef_.shape == (1, 5)


def test_refit_switches_cleanly():
    X, y = _data()
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2, 3], random_state=0)
    _fit(est, X, y)
    est.set_params(multi_class="ovr")
    _fit(est, X, y)
    assert est.multi_class_ == "ovr"
    np.testing.assert_allclose(
        est.predict_proba(X[:3]).sum(axis=1), 1.0
    )  # sigmoid rows normalised, not softmax


@pytest.mark.parametrize("multi_class", ["multinomial", "ovr"])
def test_a_failed_refit_leaves_the_previous_model_whole(multi_class):
    """scikit-learn's checks record the new width before the labels are read: a refit
    refused for its labels (or its budget) must not leave the old weights with it."""
    X, y = _data()
    est = PrivateLogisticRegression(
        data_norm=1.0, classes=[0, 1, 2, 3], multi_class=multi_class, random_state=0
    )
    _fit(est, X, y)
    before = {k: v for k, v in vars(est).items() if k.endswith("_")}
    proba = est.predict_proba(X)
    wider = np.hstack([X, X[:, :1]])
    with pytest.raises(DataError, match="classes"):
        _fit(est, wider, y + 7)
    assert est.n_features_in_ == X.shape[1] and set(vars(est)) >= set(before)
    np.testing.assert_array_equal(est.predict_proba(X), proba)
    ledger = PrivacyAccountant(0.5, 1e-5)
    est.set_params(accountant=ledger, epsilon=1.0)
    with pytest.raises(BudgetExceededError):
        _fit(est, wider, y)
    assert est.n_features_in_ == X.shape[1] and ledger.steps == ()
    np.testing.assert_array_equal(est.predict_proba(X), proba)


def test_clone_pipeline_and_bad_parameter():
    X, y = _data()
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2, 3], random_state=1)
    c = clone(est)
    assert c.get_params()["multi_class"] == "auto"
    pipe = make_pipeline(FunctionTransformer(), est)
    _fit(pipe, X, y)
    np.testing.assert_allclose(pipe.predict_proba(X).sum(axis=1), 1.0)
    with pytest.raises(ParameterError, match="multi_class"):
        PrivateLogisticRegression(multi_class="softmax", data_norm=1.0).fit(X, y)


def test_max_seconds_is_refused_and_mu_is_the_ridge():
    X, y = _data()
    with pytest.raises(ParameterError, match="max_seconds"):
        _fit(
            PrivateLogisticRegression(
                data_norm=1.0, classes=[0, 1, 2, 3], multi_class="multinomial", max_seconds=5.0
            ),
            X, y,
        )  # fmt: skip
    est = _fit(
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2, 3], mu=0.2, random_state=0),
        X, y,
    )  # fmt: skip
    assert est.plan_.mu == 0.2


def test_gradient_descent_settings_keep_one_vs_rest():
    """A declared composition, time budget or dtype asks for one-vs-rest under "auto" and
    is refused with multi_class="multinomial" (its solver uses none of them)."""
    X, y = _data()
    base = dict(data_norm=1.0, classes=[0, 1, 2, 3], random_state=0)
    est = _fit(PrivateLogisticRegression(dtype="float32", **base), X, y)
    assert est.multi_class_ == "ovr"
    est = _fit(PrivateLogisticRegression(composition="split", **base), X, y)
    assert est.multi_class_ == "ovr"
    with pytest.raises(ParameterError, match="dtype"):
        _fit(PrivateLogisticRegression(dtype="float32", multi_class="multinomial", **base), X, y)
    est = _fit(
        PrivateLogisticRegression(composition="pld", multi_class="multinomial", **base), X, y
    )
    assert est.multi_class_ == "multinomial"  # a composition has nothing to compose here


def test_the_accountant_is_charged_and_refuses_before_reading():
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1.5, delta=1e-5)
    est = PrivateLogisticRegression(
        epsilon=1.0, data_norm=1.0, classes=[0, 1, 2, 3], accountant=acc, random_state=0
    )
    _fit(est, X, y)
    assert len(acc.steps) == 1
    with pytest.raises(BudgetExceededError):
        _fit(clone(est), X, y)


@settings(max_examples=12, deadline=None)
@given(
    k=st.integers(3, 6),
    n=st.integers(20, 120),
    eps=st.floats(0.2, 5.0),
    seed=st.integers(0, 1000),
)
def test_any_multinomial_fit_certifies_and_gives_distributions(k, n, eps, seed):
    X, y = _data(n=n, k=k, seed=seed)
    est = _fit(
        PrivateLogisticRegression(
            epsilon=eps, data_norm=1.0, classes=list(range(k)), random_state=seed
        ),
        X, y,
    )  # fmt: skip
    cert = est.certificate_
    assert cert.certified and cert.epsilon <= eps * (1 + 1e-12) and cert.delta <= 1e-6
    proba = est.predict_proba(X)
    assert proba.shape == (n, k)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
