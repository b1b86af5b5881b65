"""Person-level certificates of every registered mechanism (group route at least), the
Watkins & Arora release's two routes, and their composition: the accountant composes
releases of one privacy unit and refuses to mix units."""

from __future__ import annotations

import math

import pytest

import objpert
from objpert.accounting import PrivacyAccountant, UnitCertificate, group_certificate
from objpert.accounting import _pld as pld
from objpert.certify._unit_rows import unit_routes
from objpert.exceptions import ParameterError, PrivacyError
from objpert.mechanisms import _registry as registry

pytestmark = pytest.mark.skipif(not pld.available(), reason="needs dp-accounting")

PUBLIC = dict(loss="logistic", n=2000, d=5, zeta=1.0)
K = 3


@pytest.fixture(scope="module")
def plans():
    return {
        name: objpert.plan(name, **PUBLIC, epsilon=1.0 / K, delta=1e-7) for name in registry.names()
    }


@pytest.mark.parametrize("name", [n for n in registry.names() if n != "qop"])
def test_every_mechanism_has_a_person_level_certificate(plans, name):
    cert = plans[name].certificate
    unit = group_certificate(cert, K)
    assert isinstance(unit, UnitCertificate) and unit.certified and unit.route == "group"
    assert unit.epsilon == pytest.approx(K * cert.epsilon)
    crude = K * math.exp((K - 1) * cert.epsilon) * cert.delta
    assert cert.delta <= unit.delta <= crude
    assert (
        unit.summary()
        .splitlines()[0]
        .endswith(
            f"one person, up to {K} rows, by group privacy of the release's one-row privacy "
            f"profile: {cert.covers}"
        )
    )
    assert all(x.rows == K for x in unit.privacy_losses())


def test_an_uncertified_release_has_no_person_level_guarantee(plans):
    unit = group_certificate(plans["qop"].certificate, K)
    assert not unit.certified and unit.delta == 1.0
    with pytest.raises(PrivacyError):
        unit.privacy_losses()


def test_watkins_arora_routes_on_one_release(plans):
    """The same row-level release read for k rows: Theorem C.13 for k rows at its sigma,
    and group privacy of its one-row profile; both below the classical group bound."""
    plan = plans["watkins_arora"]
    routes = unit_routes(plan, K, epsilon=1.0)
    crude = K * math.exp((K - 1) / K) * plan.certificate.delta
    assert 0 < routes["group"] < crude and 0 < routes["direct"] < crude
    unit = group_certificate(plan.certificate, K, 1.0)
    assert unit.delta == pytest.approx(routes["group"], rel=1e-6)


def test_the_accountant_composes_one_unit_and_refuses_another(plans):
    ledger = PrivacyAccountant(epsilon=8.0, delta=1e-4)
    for name in ("lop", "amp", "noisy_gd"):
        ledger.spend(group_certificate(plans[name].certificate, K), name=name)
    assert len(ledger.steps) == 3 and all(x.rows == K for s in ledger.steps for x in s.losses)
    with pytest.raises(ParameterError, match="privacy units"):
        ledger.spend(plans["lop"].certificate)
    with pytest.raises(ParameterError, match="privacy units"):
        pld.compose(
            [plans["lop"].certificate.privacy_loss(),
             group_certificate(plans["amp"].certificate, K).privacy_loss()]
        )  # fmt: skip
    with pytest.raises(ParameterError):  # a k-row release is not grouped again
        group_certificate(group_certificate(plans["lop"].certificate, K), 2)


def test_a_ledger_of_person_level_releases_round_trips(plans, tmp_path):
    import warnings

    from objpert.accounting import gaussian, group_privacy

    ledger = PrivacyAccountant(epsilon=8.0, delta=1e-4)
    ledger.spend(group_certificate(plans["lop"].certificate, K), name="lop")
    ledger.spend(group_certificate(plans["watkins_arora"].certificate, K), name="wa")
    ledger.spend(group_privacy(gaussian(5.0), K), name="gaussian")
    path = objpert.save(ledger, tmp_path / "ledger.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unsigned
        back = objpert.load(path)
    assert back.spent == pytest.approx(ledger.spent, rel=1e-12)
    assert [x.rows for s in back.steps for x in s.losses] == [K, K, K]
