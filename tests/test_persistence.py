"""Tests of objpert.persistence: round trips and every kind of damaged or edited file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from objpert import persistence
from objpert.certify.composition import ComposedCertificate
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.persistence import ModelFileError, digest, load, plan_from_dict, save

pytestmark = pytest.mark.filterwarnings("ignore::objpert.randomness.TestingSeedWarning")

RNG = np.random.default_rng(3)
X = RNG.normal(size=(300, 3)) / np.sqrt(3)
W = np.array([2.0, -1.0, 0.5])
Y_BINARY = (X @ W + 0.2 * RNG.logistic(size=300) > 0).astype(int)
Y_MULTI = np.digitize(X @ W, [-0.5, 0.5])
Y_REAL = X @ W + 0.3 + 0.05 * RNG.normal(size=300)


def _classifier(**kw):
    return PrivateLogisticRegression(epsilon=2.0, alpha=0.2, max_iterations=2000, **kw)


@pytest.fixture(scope="module")
def binary():
    return _classifier(random_state=0).fit(X, Y_BINARY)


@pytest.fixture(scope="module")
def multiclass():
    return _classifier(random_state=0).fit(X, Y_MULTI)


@pytest.fixture(scope="module")
def robust():
    return PrivateRobustRegression(epsilon=2.0, alpha=0.2, scale=0.5, random_state=0).fit(X, Y_REAL)


@pytest.fixture
def binary_file(binary, tmp_path):
    return save(binary, tmp_path / "model.json")


def _edit(path, change):
    """Apply ``change`` to the file's JSON; returns the path."""
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))
    return path


def _expect(path, match):
    with pytest.raises(ModelFileError, match=match):
        load(path)


# ---------------------------------------------------------------- round trips


def _same_model(a, b):
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert a.get_params() == b.get_params()
    assert a.n_features_in_ == b.n_features_in_
    assert np.array_equal(a.n_iter_, b.n_iter_)


def test_binary_round_trip(binary, binary_file):
    loaded = load(binary_file)
    _same_model(binary, loaded)
    np.testing.assert_array_equal(binary.predict_proba(X), loaded.predict_proba(X))
    assert loaded.classes_.dtype == binary.classes_.dtype
    assert loaded.certificate_.to_dict() == json.loads(binary.certificate_.to_json())
    assert loaded.plan_.to_dict() == json.loads(binary.plan_.to_json())
    assert not hasattr(loaded, "n_clipped_")  # a data statistic: never saved


def test_multiclass_round_trip(multiclass, tmp_path):
    loaded = load(save(multiclass, tmp_path / "multi.json"))
    _same_model(multiclass, loaded)
    np.testing.assert_array_equal(multiclass.decision_function(X), loaded.decision_function(X))
    assert isinstance(loaded.certificate_, ComposedCertificate)
    assert loaded.certificate_.epsilon == multiclass.certificate_.epsilon
    assert loaded.certificate_.delta == multiclass.certificate_.delta
    assert len(loaded.plan_) == 3


def test_robust_round_trip(robust, tmp_path):
    loaded = load(save(robust, tmp_path / "robust.json"))
    _same_model(robust, loaded)
    assert loaded.score(X, Y_REAL) == robust.score(X, Y_REAL)
    assert loaded.scale == 0.5 and not hasattr(loaded, "classes_")


@pytest.mark.parametrize(
    "labels",
    [np.array(["cat", "dog"]), np.array([False, True]), np.array([-1, 1]), np.array([0.0, 1.0])],
    ids=["str", "bool", "int", "float"],
)
def test_label_dtypes_round_trip(labels, tmp_path):
    model = _classifier(random_state=0).fit(X, labels[Y_BINARY])
    loaded = load(save(model, tmp_path / "labels.json"))
    assert loaded.classes_.dtype == model.classes_.dtype
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.predict(X).dtype == labels.dtype


def test_object_labels_and_feature_names_round_trip(tmp_path):
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    y = pd.Series(np.array(["low", "high"], dtype=object)[Y_BINARY])
    model = _classifier(random_state=0).fit(frame, y)
    loaded = load(save(model, tmp_path / "frame.json"))
    assert loaded.feature_names_in_.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))


def test_unfitted_and_foreign_models_are_not_saved(tmp_path):
    with pytest.raises(ModelFileError, match="not fitted"):
        save(_classifier(), tmp_path / "x.json")
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(ModelFileError, match="can only save"):
        save(LogisticRegression().fit(X, Y_BINARY), tmp_path / "x.json")


def test_plan_from_dict_round_trip(binary):
    plan = plan_from_dict(json.loads(binary.plan_.to_json()))
    assert plan.to_dict() == json.loads(binary.plan_.to_json())
    assert plan.recertify().to_dict() == binary.plan_.recertify().to_dict()
    with pytest.raises(ModelFileError, match="missing keys"):
        plan_from_dict({"method": "tight"})


# ---------------------------------------------------------------- damaged and edited files


def test_coef_changed_without_digest(binary_file):
    _expect(_edit(binary_file, lambda p: p["coef"][0].__setitem__(0, 9.0)), "tampered")


def test_digest_changed(binary_file):
    _expect(_edit(binary_file, lambda p: p.__setitem__("digest", "0" * 64)), "digest mismatch")


@pytest.mark.parametrize("key", ["coef", "plans", "certificate", "classes", "digest"])
def test_key_removed(binary_file, key):
    _expect(_edit(binary_file, lambda p: p.pop(key)), rf"missing keys \['{key}'\]")


def test_truncated_file(binary_file):
    text = binary_file.read_text()
    binary_file.write_text(text[: len(text) // 2])
    _expect(binary_file, "not a JSON model file")


def test_not_json(tmp_path):
    path = tmp_path / "garbage.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    _expect(path, "not a JSON model file")
    path.write_text("[1, 2, 3]")
    _expect(path, "not a model file")


def test_wrong_format_and_version(binary_file):
    _expect(_edit(binary_file, lambda p: p.__setitem__("version", 99)), "version")
    _expect(_edit(binary_file, lambda p: p.__setitem__("format", "pickle")), "wrong format")


def _resign(payload):
    payload["digest"] = digest(payload)


def test_plan_sigma_changed_is_caught_by_recertification(binary_file):
    def change(p):
        p["plans"][0]["sigma"] *= 0.5  # less noise: would no longer be private
        _resign(p)

    _expect(_edit(binary_file, change), "plan 0")


def test_plan_and_certificate_sigma_changed_together(binary_file):
    def change(p):
        p["plans"][0]["sigma"] *= 1.0001
        p["plans"][0]["certificate"]["sigma"] *= 1.0001
        _resign(p)

    _expect(_edit(binary_file, change), "recomputed certificate differs")


def test_certificate_delta_edited(binary_file):
    def change(p):
        p["certificate"]["delta"] = 1e-12
        _resign(p)

    _expect(_edit(binary_file, change), "differs from the one recomputed")


def test_composed_totals_edited(multiclass, tmp_path):
    path = save(multiclass, tmp_path / "multi.json")

    def change(p):
        p["certificate"]["epsilon"] = 0.01
        _resign(p)

    _expect(_edit(path, change), "differs from the one recomputed")


def test_plan_for_another_d_is_refused(binary_file):
    def change(p):  # a plan for other public constants: must still match the model's d
        p["plans"][0]["certificate"]["constants"]["d"] = 7
        p["plans"][0]["d"] = 7
        _resign(p)

    _expect(_edit(binary_file, change), "plan 0")


def test_inconsistent_shapes(binary_file):
    def drop_feature(p):
        p["coef"][0].pop()
        _resign(p)

    _expect(_edit(binary_file, drop_feature), "inconsistent shapes")


def test_inconsistent_classes(multiclass, tmp_path):
    path = save(multiclass, tmp_path / "multi.json")

    def drop_class(p):
        p["classes"]["values"].pop()
        _resign(p)

    _expect(_edit(path, drop_class), "inconsistent shapes")


def test_parameters_outside_the_target(binary_file):
    def change(p):
        p["params"]["epsilon"] = 0.5  # the stored certificate is for epsilon = 2
        _resign(p)

    _expect(_edit(binary_file, change), "exceeds the model's target")


def test_unknown_estimator(binary_file):
    def change(p):
        p["estimator"] = "os.system"
        _resign(p)

    _expect(_edit(binary_file, change), "unknown estimator")


def test_canonical_digest_ignores_layout(binary, binary_file):
    payload = json.loads(binary_file.read_text())
    binary_file.write_text(json.dumps(payload, indent=4))  # same content, other layout
    assert load(binary_file).coef_.tolist() == binary.coef_.tolist()
    assert payload["digest"] == persistence.digest(payload)
