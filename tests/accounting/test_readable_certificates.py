"""Every certificate a user meets prints in a few readable lines: a release's, a composed
one's, a pipeline's (basic and PLD), an accountant's ledger and a private selection's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from objpert import PrivateLogisticRegression
from objpert.accounting import PrivacyAccountant, pipeline_certificate
from objpert.model_selection import PrivateGridSearch
from objpert.preprocessing import PrivateFeatureBounds


@pytest.fixture(scope="module")
def certificates():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X[:, 0] > 0).astype(int)
    y3 = np.digitize(X[:, 0], [-0.3, 0.3])
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, max_iter=500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ledger = PrivacyAccountant(3.0, 1e-5)
        binary = PrivateLogisticRegression(classes=[0, 1], accountant=ledger, **kw).fit(X, y)
        three = PrivateLogisticRegression(
            classes=[0, 1, 2], multi_class="ovr", accountant=ledger, **kw
        ).fit(X, y3)
        kw.pop("data_norm")
        pipe = make_pipeline(
            PrivateFeatureBounds(epsilon=0.5, ranges=[(-2, 2)] * 3),
            PrivateLogisticRegression(classes=[0, 1], **kw),
        ).fit(X, y)
        search = PrivateGridSearch(
            estimator=PrivateLogisticRegression(classes=[0, 1], data_norm=1.0, **kw),
            param_grid={"mu": [0.5, 1]},
        ).fit(X, y)
    return {
        "release": binary.certificate_,
        "one-vs-rest": three.certificate_,
        "pipeline": pipeline_certificate(pipe),
        "pipeline pld": pipeline_certificate(pipe, composition="pld", delta=1e-6),
        "ledger": ledger.certificate(),
        "selection": search.certificate_,
    }


@pytest.mark.parametrize(
    "name", ["release", "one-vs-rest", "pipeline", "pipeline pld", "ledger", "selection"]
)
def test_prints_in_a_few_lines(certificates, name):
    cert = certificates[name]
    text = str(cert)
    assert text == cert.summary()
    assert len(text.splitlines()) <= 12 and len(text) < 1200, text
    assert "epsilon" in text and "nan" not in text.lower()
    assert "\n" not in repr(cert) and len(repr(cert)) < 300, repr(cert)


def test_the_ledger_names_its_steps_and_the_budget(certificates):
    text = str(certificates["ledger"])
    assert "budget (epsilon, delta) = (3, 1e-05)" in text
    assert "step 1: PrivateLogisticRegression (1 release)" in text
    assert "step 2: PrivateLogisticRegression (3 releases)" in text


def test_a_composed_part_prints_its_own_composition(certificates):
    lines = str(certificates["pipeline"]).splitlines()
    assert lines[0].startswith("(epsilon, delta) = (1.5, 1e-06), certified (basic composition")
    assert "basic composition of 6 releases" in lines[1]  # the private bounds' 2 d quantiles
    assert "Theorem C.13" in lines[2]
