"""Model files of an AMP release (the default release of objpert.spark): the round trip,
the plan re-derived by ``objpert.plan("amp", ...)`` from the public settings at load, the
certificate recomputed, and edits (re-signed) that are refused or re-certified honestly.

The model is built here as the Spark estimators' ``export`` builds it (the scikit-learn
estimator of the fit's parameters holding the release), from an in-memory AMP release
(:func:`objpert.mechanisms.amp_release`) on the same prepared rows."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import objpert
from objpert._data import prepare
from objpert.apps._privacy_report import build_report, render
from objpert.cli import main
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ModelFileError
from objpert.mechanisms import amp_release
from objpert.persistence import digest, read, save, signature

KEY = b"amp-key"
N, PASSES, TOL = 300, 40, 1e-11


def _rows():
    rng = np.random.default_rng(2)
    X = rng.normal(scale=0.5, size=(N, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = (X[:, 0] - X[:, 1] + 0.2 * rng.normal(size=N) > 0).astype(float)
    return X, y


def _amp_model(seed=5):
    """An AMP release on the rows (noise from ``seed``, None: OS entropy), held by the
    estimator of its parameters."""
    X, y = _rows()
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0.0, 1.0], random_state=seed)
    ref = prepare(X, y, labels="binary", data_norm=1.0)
    plan = objpert.plan(
        "amp", loss="logistic", n=ref.n, d=ref.d, zeta=ref.zeta, epsilon=est.epsilon,
        delta=est.delta, max_iter=PASSES, gamma=TOL * ref.zeta,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", objpert.TestingSeedWarning)
        w = amp_release(ref.X, ref.y, plan, seed).weights
    est._set_release_attributes(w[None, :-1], np.array([w[-1] * 1.0]))
    est.n_features_in_ = 3
    est.classes_ = np.array([0.0, 1.0])
    est.multi_class_ = "ovr"
    est.plan_, est.certificate_ = plan, plan.certificate
    est.n_iter_ = np.array([PASSES])
    est.seeded_ = seed is not None
    return est, X


@pytest.fixture(scope="module")
def model():
    return _amp_model()


@pytest.fixture
def path(model, tmp_path):
    return save(model[0], tmp_path / "amp.json", KEY)


def _resigned(path, change):
    payload = json.loads(path.read_text())
    change(payload)
    payload["digest"] = digest(payload)
    payload["signature"]["value"] = signature(payload, KEY)
    path.write_text(json.dumps(payload))
    return path


def test_the_release_round_trips_verified_and_predicts_the_same(model, path):
    est, X = model
    loaded = read(path, KEY)
    assert loaded.verified
    got = loaded.model
    assert got.plan_ == est.plan_  # re-derived by objpert.plan("amp", ...)
    assert got.certificate_.to_dict() == est.certificate_.to_dict()
    assert got.certificate_.form == "amp" and got.certificate_.epsilon <= 1.0
    np.testing.assert_array_equal(got.coef_, est.coef_)
    np.testing.assert_array_equal(got.predict_proba(X), est.predict_proba(X))
    np.testing.assert_array_equal(got.predict(X), est.predict(X))
    np.testing.assert_array_equal(got.n_iter_, [PASSES])  # the public budget


def test_a_robust_regression_release_round_trips(tmp_path):
    """The pseudo-Huber loss: its scale is a parameter of the re-derived plan."""
    X, y = _rows()
    est = PrivateRobustRegression(data_norm=1.0, scale=0.5, random_state=5)
    ref = prepare(X, y, labels="real", data_norm=1.0)
    plan = objpert.plan(
        "amp", loss="robust", n=ref.n, d=ref.d, zeta=ref.zeta, epsilon=est.epsilon,
        delta=est.delta, max_iter=PASSES, gamma=TOL * 0.5 * ref.zeta,
        loss_params={"scale": 0.5},
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", objpert.TestingSeedWarning)
        w = amp_release(ref.X, ref.y, plan, 5).weights
    est._set_release_attributes(w[None, :-1], np.array([w[-1]]))
    est.n_features_in_ = 3
    est.plan_, est.certificate_ = plan, plan.certificate
    est.n_iter_, est.seeded_ = np.array([PASSES]), True
    got = read(save(est, tmp_path / "robust.json", KEY), KEY).model
    assert got.plan_ == plan
    np.testing.assert_array_equal(got.predict(X), est.predict(X))
    path = _resigned(tmp_path / "robust.json", lambda p: p["params"].__setitem__("scale", 1.0))
    with pytest.raises(ModelFileError, match="plan 0"):
        read(path, KEY)


def test_an_edited_file_is_refused_by_its_signature_and_digest(path):
    payload = json.loads(path.read_text())
    payload["coef"][0][0] += 1.0
    path.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match="signature"):
        read(path, KEY)
    with pytest.raises(ModelFileError, match="digest"):
        read(path)


@pytest.mark.parametrize(
    ("where", "field", "value"),
    [
        ("params", "epsilon", 4.0),  # the target: the plan no longer re-derives
        ("plan", "epsilon", 4.0),
        ("plan", "n", 3 * N),  # n alone: sigma, mu no longer those of n
        ("plan", "sigma", 0.5),
        ("plan", "output_sigma", 0.01),
        ("plan", "mu", 1.0),
        ("plan", "accountant", "kifer"),
    ],
)
def test_an_edited_and_resigned_setting_is_refused(path, where, field, value):
    def change(p):
        (p["params"] if where == "params" else p["plans"][0])[field] = value

    with pytest.raises(ModelFileError, match="plan 0"):
        read(_resigned(path, change), KEY)


def test_a_whole_plan_for_another_n_is_recertified_honestly(model, path):
    """A signer who rewrites the plan for another n (and its certificate) gets the
    certificate objpert.plan gives for that n, never the stored numbers."""
    other = objpert.plan(
        "amp", loss="logistic", n=3 * N, d=4, zeta=np.sqrt(2.0), epsilon=1.0,
        delta=model[0].delta, max_iter=PASSES, gamma=TOL * np.sqrt(2.0),
    )  # fmt: skip

    def change(p):
        p["plans"][0] = json.loads(json.dumps(other.to_dict()))
        p["certificate"] = json.loads(json.dumps(other.certificate.to_dict()))

    got = read(_resigned(path, change), KEY).model
    assert got.plan_.n == 3 * N
    assert got.certificate_.to_dict() == other.certificate.to_dict()

    def forged(p):
        p["certificate"]["epsilon"] = 0.1  # the claim no longer what the plan certifies

    with pytest.raises(ModelFileError, match="certificate differs"):
        read(_resigned(path, forged), KEY)


def test_iteration_records_must_be_the_public_budget(path):
    original = path.read_text()
    with pytest.raises(ModelFileError, match="n_iter"):
        read(_resigned(path, lambda p: p.__setitem__("n_iter", [7])), KEY)
    path.write_text(original)
    with pytest.raises(ModelFileError, match="release 0"):
        read(_resigned(path, lambda p: p["releases"][0].__setitem__("iterations", 7)), KEY)


def test_objpert_verify_and_certify_read_the_file(path, capsys):
    key_file = path.parent / "key"
    key_file.write_bytes(KEY)
    assert main(["verify", str(path), "--key-file", str(key_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] and out["certified"]
    assert out["releases"][0]["mechanism"] == "amp"
    assert "approximate minima perturbation" in out["mechanism"]
    assert main(["certify", "--model", str(path), "--key-file", str(key_file), "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    assert cert["certified"] and cert["epsilon"] == out["epsilon"]


def test_the_privacy_report_describes_the_amp_release(tmp_path):
    """The report of an unseeded AMP file: certified, the AMP mechanism and its sources,
    no setting of the gradient-descent release, a profile through the certified point."""
    est, _ = _amp_model(seed=None)
    loaded = read(save(est, tmp_path / "amp.json", KEY), KEY)
    report = build_report("amp.json", loaded)
    cert = est.certificate_
    assert report.certified and report.mechanism == "amp" and report.releases[0].form == "amp"
    assert report.releases[0].iterations == PASSES
    assert "calibration" not in dict(report.declared)
    at = report.epsilons.index(cert.epsilon)
    assert report.deltas[at] <= cert.delta
    assert all(a >= b for a, b in zip(report.deltas, report.deltas[1:], strict=False))
    assert min(report.deltas) >= cert.details["delta_output"]  # always paid
    text = render(report, "md")
    assert "Iyengar" in text and "approximate minimiser" in text
    assert f"({cert.epsilon:g}, {cert.delta:g})-differentially private" in text


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("n", "300"),
        ("n", True),
        ("n", 1),
        ("tolerance", -1.0),
        ("tolerance", 0.0),
        ("max_iter", 0),
        ("loss", "robust"),
        ("certificate", None),
        ("certificate", {"epsilon": 1.0}),
        ("loss_params", "x"),
        ("grid_bits", 400),
    ],
)
def test_hostile_plan_values_are_refused_with_a_model_file_error(path, field, value):
    def change(p):
        p["plans"][0][field] = value

    with pytest.raises(ModelFileError):
        read(_resigned(path, change), KEY)
