"""One shape: every plan ``objpert.plan`` returns is an ``objpert.Plan`` and every
certificate the library issues an ``objpert.Certificate``, over the whole registry."""

from __future__ import annotations

import numpy as np
import pytest

import objpert
from objpert import mechanisms
from objpert.accounting import PrivacyAccountant, compose_certificates

ALL = (*mechanisms.names(), *mechanisms.names(multiclass=True))


def _plan(name: str) -> objpert.Plan:
    mech = mechanisms.get(name)
    extra = {"n_classes": 3} if mech.multiclass else {}
    return objpert.plan(
        name, loss=mech.audit_loss, n=400, d=4, zeta=1.0, epsilon=1.0, delta=1e-6, **extra
    )


@pytest.mark.parametrize("name", ALL)
def test_every_plan_is_a_plan_and_every_certificate_a_certificate(name):
    plan = _plan(name)
    assert isinstance(plan, objpert.Plan) and plan.mechanism == name
    assert mechanisms.get(name).certificate(plan) == plan.certificate
    assert isinstance(plan.certificate, objpert.Certificate)
    assert plan.target == objpert.Target(1.0, 1e-6)
    cert = plan.certificate
    assert cert.summary() and isinstance(cert.to_dict(), dict) and cert.covers


@pytest.mark.parametrize("name", [n for n in ALL if n != "qop"])
def test_every_plan_composes_as_an_event(name):
    plan = _plan(name)
    (loss,) = objpert.accounting.as_losses(plan)
    assert loss == plan.privacy_loss()


def test_composed_selection_and_ledger_certificates_are_certificates():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    three = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)
    fits = [
        objpert.PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0),
        objpert.PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2], random_state=0),
    ]
    certs = [fits[0].fit(X, y).certificate_, fits[1].fit(X, three).certificate_]
    plans = [_plan("watkins_arora")]
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    acc.spend(plans[0])
    more = [compose_certificates([certs[0], certs[0]], 2.0), acc.certificate()]
    for cert in (*certs, *more):
        assert isinstance(cert, objpert.Certificate), type(cert)


def test_the_door_refuses_a_bad_target_before_any_planner():
    with pytest.raises(objpert.ParameterError, match="epsilon"):
        objpert.plan("lop", loss="logistic", n=400, d=4, zeta=1.0, epsilon=float("inf"),
                     delta=1e-6)  # fmt: skip
    with pytest.raises(objpert.ParameterError, match="delta"):
        objpert.plan("qop", loss="squared", n=400, d=4, zeta=1.0, epsilon=1.0, delta=1.0)


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_selection_certificates_are_certificates(method):
    from objpert.model_selection import PrivateGridSearch

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, (600, 3)) / 2
    y = (X[:, 0] + 0.3 * rng.normal(size=600) > 0).astype(int)
    est = objpert.PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], epsilon=2.0)
    search = PrivateGridSearch(
        estimator=est, param_grid={"mu": [0.05, 0.2]}, method=method, random_state=0
    ).fit(X, y)
    assert isinstance(search.certificate_, objpert.Certificate)
