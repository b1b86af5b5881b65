"""Tests of objpert.persistence: round trips and every kind of damaged or edited file.

Signatures are tested in test_signing.py; here files are unsigned (they load with an
UnverifiedModelWarning, filtered below where it is not the point).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from objpert import persistence
from objpert.accounting._composition import ComposedCertificate, compose
from objpert.certify import _sequences as sequences
from objpert.certify._calibration import certify_plan
from objpert.certify._constants import ProblemConstants
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ModelFileError, UnverifiedModelWarning
from objpert.persistence import digest, load, plan_from_dict, save

pytestmark = [
    pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning"),
    pytest.mark.filterwarnings("ignore::objpert.exceptions.PrivacyLeakWarning"),
    pytest.mark.filterwarnings("ignore::objpert.exceptions.UnverifiedModelWarning"),
]

RNG = np.random.default_rng(3)
X = RNG.normal(size=(300, 3)) / np.sqrt(3)
W = np.array([2.0, -1.0, 0.5])
Y_BINARY = (X @ W + 0.2 * RNG.logistic(size=300) > 0).astype(int)
Y_MULTI = np.digitize(X @ W, [-0.5, 0.5])
Y_REAL = X @ W + 0.3 + 0.05 * RNG.normal(size=300)


def _classifier(**kw):
    params = {"epsilon": 2.0, "mu": 0.2, "max_iter": 2000, "data_norm": 1.0, **kw}
    return PrivateLogisticRegression(**params)


@pytest.fixture(scope="module")
def binary():
    return _classifier(random_state=0).fit(X, Y_BINARY)


@pytest.fixture(scope="module")
def multiclass():
    return _classifier(random_state=0, composition="split").fit(X, Y_MULTI)


@pytest.fixture(scope="module")
def robust():
    return PrivateRobustRegression(
        epsilon=2.0, mu=0.2, scale=0.5, data_norm=1.0, random_state=0
    ).fit(X, Y_REAL)


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
    assert loaded.certificate_ == binary.certificate_  # freshly recomputed, equal
    assert loaded.certificate_.not_public == ("label set",)  # classes=None
    assert loaded.plan_ == binary.plan_
    assert loaded.plan_.to_dict() == binary.plan_.to_dict()
    assert not hasattr(loaded, "n_clipped_")  # a data statistic: never saved


def test_a_data_statistic_and_the_timing_are_not_in_the_file(binary, binary_file):
    text = binary_file.read_text()
    # max_seconds is a public parameter; no measured time of the fit is stored
    assert "n_clipped" not in text and "seconds" not in text.replace('"max_seconds"', "")
    releases = json.loads(text)["releases"]
    assert releases == [{"iterations": binary.plan_.iterations, "seeded": True}]


def test_multiclass_round_trip(multiclass, tmp_path):
    loaded = load(save(multiclass, tmp_path / "multi.json"))
    _same_model(multiclass, loaded)
    np.testing.assert_array_equal(multiclass.decision_function(X), loaded.decision_function(X))
    assert isinstance(loaded.certificate_, ComposedCertificate)
    assert loaded.certificate_.epsilon == multiclass.certificate_.epsilon
    assert loaded.certificate_.delta == multiclass.certificate_.delta
    assert loaded.certificate_ == multiclass.certificate_
    assert loaded.plan_ == multiclass.plan_
    assert len(loaded.plan_) == 3


def test_robust_round_trip(robust, tmp_path):
    loaded = load(save(robust, tmp_path / "robust.json"))
    _same_model(robust, loaded)
    assert loaded.score(X, Y_REAL) == robust.score(X, Y_REAL)
    assert loaded.scale == 0.5 and not hasattr(loaded, "classes_")
    assert loaded.certificate_ == robust.certificate_
    assert loaded.certificate_.not_public == ()


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

    _expect(_edit(binary_file, change), "plan 0")


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


def test_classes_out_of_order_are_refused(binary_file):
    """Swapped classes_ (digest recomputed) would flip every prediction and mislabel the
    columns of predict_proba: a fit leaves them sorted, so a file must too."""

    def swap(p):
        p["classes"]["values"].reverse()
        _resign(p)

    _expect(_edit(binary_file, swap), "not sorted")


@pytest.mark.parametrize(
    ("classes", "reason"),
    [
        ({"values": [False, True], "dtype": "bool"}, "not the declared classes"),
        ({"values": [0, 1.5], "dtype": "<i8"}, "not values of dtype"),  # cast to [0, 1]
        ({"values": [0, 1], "dtype": None}, "unknown dtype"),  # np.dtype(None): float64
    ],
)
def test_edited_classes_are_refused_not_cast(tmp_path, classes, reason):
    """A file's classes are read as written: a cast that changes a value, a missing
    dtype, or booleans standing for declared 0 and 1 are refused."""
    declared = _classifier(random_state=0, classes=[0, 1]).fit(X, Y_BINARY)

    def edit(p):
        p["classes"] = classes
        _resign(p)

    _expect(_edit(save(declared, tmp_path / "m.json"), edit), reason)


def test_a_file_descriptor_is_not_a_path(binary_file):
    """load(0) would read stdin; load(fd) would read and close the caller's descriptor."""
    with binary_file.open("rb") as fh:
        with pytest.raises(TypeError, match=r"os\.PathLike"):
            load(fh.fileno())
        assert not fh.closed and fh.read(1)


def test_parameters_outside_the_target(binary_file):
    def change(p):
        p["params"]["epsilon"] = 0.5  # the stored certificate is for epsilon = 2
        _resign(p)

    _expect(_edit(binary_file, change), "plan 0 does not match the model: epsilon")


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


# ---------------------------------------------------------------- forged files: plans re-derived


def _forged_certificate(plan: dict) -> dict:
    """The certificate that a plan's *stored* constants give: what a forger computes so
    that the file is consistent with itself (digest recomputed too)."""
    pc = ProblemConstants.from_dict(plan["certificate"]["constants"])
    cert = certify_plan(
        pc,
        plan["sigma"],
        plan["iterations"],
        plan["epsilon"],
        plan["certificate"]["form"],
        plan["u"],
        plan["radius"],
        plan["radius_outer"],
        plan["truncation"],
    )
    assert cert.certified  # a "valid" certificate of the forged numbers
    return json.loads(json.dumps(cert.to_dict()))


def _install(p: dict, i: int, cert: dict) -> None:
    """Put a forged certificate into plan i and the model's certificate; re-digest."""
    plan = p["plans"][i]
    plan["certificate"] = cert
    plan["delta_truncation"] = cert["truncation_mass"]
    plan["delta_divergence"] = cert["divergence_term"]
    if len(p["plans"]) == 1:
        p["certificate"] = {**cert, "not_public": p["certificate"]["not_public"]}
    _resign(p)


def test_faked_l1_is_refused_even_with_a_consistent_certificate(binary_file):
    def change(p):  # claim L1 = 0.5 for the logistic loss (L1 = 1): half the sensitivity
        p["plans"][0]["certificate"]["constants"]["L1"] = 0.5
        _install(p, 0, _forged_certificate(p["plans"][0]))

    _expect(_edit(binary_file, change), r"plan 0 is refused: .*L1")


def test_a_step_above_one_over_l_is_refused(binary_file, monkeypatch):
    def change(p):
        plan = p["plans"][0]
        pc = plan["certificate"]["constants"]
        eta = 2.5 / (pc["mu"] + pc["L2"] * pc["zeta"] ** 2)
        pc["eta"] = plan["eta"] = eta
        with monkeypatch.context() as m:  # a certifier that accepts eta L > 1 (as before)
            m.setattr(sequences, "_one_minus_eta_l", lambda pc: max(1.0 - pc.eta * pc.L, 0.0))
            _install(p, 0, _forged_certificate(plan))

    _expect(_edit(binary_file, change), r"plan 0 is refused: .*eta")


def test_n_changed_is_refused(binary_file):
    def change(p):
        plan = p["plans"][0]
        plan["n"] = plan["certificate"]["constants"]["n"] = 30_000
        _resign(p)

    _expect(_edit(binary_file, change), "plan 0")


def _other_binary(**kw):
    params = {"epsilon": 2.0, "mu": 0.2, "max_iter": 2000, "random_state": 1}
    params = {"data_norm": 1.0, **params, **kw}
    return PrivateLogisticRegression(**params).fit(X, Y_BINARY)


def test_a_plan_of_another_model_is_refused(binary_file, tmp_path):
    """A plan and certificate for epsilon = 1 in a model file of epsilon = 2: consistent
    with itself and within the target, but not the plan of these parameters."""
    other = json.loads(save(_other_binary(epsilon=1.0), tmp_path / "other.json").read_text())

    def change(p):
        p["plans"] = other["plans"]
        p["certificate"] = other["certificate"]
        _resign(p)

    _expect(_edit(binary_file, change), "plan 0 does not match the model: epsilon")


def test_a_plan_of_another_multiclass_model_is_refused(multiclass, tmp_path):
    path = save(multiclass, tmp_path / "multi.json")
    donor = _classifier(random_state=1, epsilon=1.5, composition="split").fit(X, Y_MULTI)
    donor_plan = json.loads(json.dumps(donor.plan_[1].to_dict()))

    def change(p):  # swap plan 1, recompose the certificate as a forger would
        p["plans"][1] = donor_plan
        certs = [plan_from_dict(q).recertify() for q in p["plans"]]
        composed = compose(
            certs, p["certificate"]["method"], delta_slack=p["certificate"]["delta_slack"] or None
        )
        assert composed.epsilon <= 2.0  # within the model's target
        p["certificate"] = {
            **json.loads(json.dumps(composed.to_dict())),
            "not_public": ["label set"],
        }
        _resign(p)

    _expect(_edit(path, change), "plan 1 does not match the model: epsilon")


def test_plans_of_one_fit_must_agree(multiclass, tmp_path):
    path = save(multiclass, tmp_path / "multi.json")

    def change(p):  # fields of plan 2 its certificate does not depend on, edited consistently
        from objpert.certify import _utility as utility
        from objpert.persistence import plan_from_dict

        plan = p["plans"][2]
        plan["delta_sample"] = 0.02  # and the utility bound that depends on it, re-derived
        edited = plan_from_dict(plan)
        plan["utility_bound"] = float(
            utility.theorem_47(
                edited.rebuilt_constants(), edited.sigma, edited.iterations,
                edited.comparator_norm, 0.02,
            )
        )  # fmt: skip
        _resign(p)

    _expect(_edit(path, change), "plan 2 differs from plan 0|plan 2 is refused")


# ---------------------------------------------------------------- seeds, not_public, params


def test_seeded_flag_round_trips(binary, tmp_path):
    assert binary.seeded_ is True
    assert load(save(binary, tmp_path / "seeded.json")).seeded_ is True
    entropy = _classifier().fit(X, Y_BINARY)  # OS entropy
    assert entropy.seeded_ is False
    assert load(save(entropy, tmp_path / "entropy.json")).seeded_ is False
    generator = _classifier(random_state=np.random.default_rng(5)).fit(X, Y_BINARY)
    path = save(generator, tmp_path / "generator.json")
    assert json.loads(path.read_text())["params"]["random_state"] is None  # state not saved
    assert load(path).seeded_ is True  # but the release is still recorded as seeded


def test_a_seed_recorded_as_unseeded_is_refused(binary_file):
    def change(p):
        p["releases"][0]["seeded"] = False  # random_state = 0 is in the params
        _resign(p)

    _expect(_edit(binary_file, change), "not seeded")


def test_release_iterations_must_be_the_plans(binary_file):
    def change(p):
        p["releases"][0]["iterations"] += 1
        _resign(p)

    _expect(_edit(binary_file, change), "release 0 ran")


def test_label_set_read_from_data_cannot_be_hidden(binary_file):
    def change(p):  # classes=None, but "label set" dropped from not_public
        p["certificate"]["not_public"] = []
        _resign(p)

    _expect(_edit(binary_file, change), "does not list 'label set'")


def test_declared_classes_round_trip_with_nothing_not_public(tmp_path):
    model = _classifier(random_state=0, classes=[0, 1]).fit(X, Y_BINARY)
    assert model.certificate_.not_public == ()
    path = save(model, tmp_path / "declared.json")
    loaded = load(path)
    assert loaded.certificate_ == model.certificate_
    assert loaded.classes == [0, 1] and loaded.classes_.tolist() == [0, 1]

    def change(p):  # declared classes that are not the model's
        p["params"]["classes"] = [0, 2]
        _resign(p)

    _expect(_edit(path, change), "not the declared classes")


def test_save_after_set_params_refuses_or_saves_consistently(tmp_path):
    model = _classifier(random_state=0).fit(X, Y_BINARY)
    model.set_params(epsilon=3.0)  # the plan is for epsilon = 2
    with pytest.raises(ModelFileError, match="set_params"):
        save(model, tmp_path / "changed.json")
    assert not (tmp_path / "changed.json").exists()
    model.set_params(epsilon=0.5)  # the certificate would exceed the target
    with pytest.raises(ModelFileError, match="set_params"):
        save(model, tmp_path / "changed.json")
    model.set_params(epsilon=2.0, mu=0.3)
    with pytest.raises(ModelFileError, match="set_params"):
        save(model, tmp_path / "changed.json")
    model.set_params(mu=0.2, verbose=True)  # back, and a parameter of no plan
    assert load(save(model, tmp_path / "same.json")).verbose is True


def test_a_loaded_model_saves_again(binary, binary_file, tmp_path):
    again = load(save(load(binary_file), tmp_path / "again.json"))
    assert again.certificate_ == binary.certificate_ and again.seeded_ is True


def test_unknown_top_level_key_is_refused(binary_file):
    def change(p):
        p["n_clipped"] = 3
        _resign(p)

    _expect(_edit(binary_file, change), r"unknown keys \['n_clipped'\]")


def _as_version_1(p):
    """A payload as objpert 0.1 wrote it (version 1: no releases, signature, not_public)."""
    p["version"] = 1
    del p["releases"], p["signature"]
    for c in [p["certificate"], *(q["certificate"] for q in p["plans"])]:
        c.pop("not_public", None)
    p["digest"] = digest(p)


@pytest.mark.parametrize("version", [1, 3, 99])
def test_only_the_current_version_is_read(binary_file, version):
    """Nothing was released in another format: version 1 is refused like any unknown one."""
    _edit(binary_file, _as_version_1 if version == 1 else lambda p: p.update(version=version))
    _expect(binary_file, rf"unsupported format version {version}: this objpert reads version 2")


def test_a_certificate_without_not_public_is_refused(binary_file):
    def change(p):
        p["certificate"].pop("not_public")
        _resign(p)

    _expect(_edit(binary_file, change), "not_public")


def test_unsigned_file_warns_unverified(binary_file):
    with pytest.warns(UnverifiedModelWarning, match="unsigned: its weights are unverified"):
        load(binary_file)


def test_certificate_dataclass_fields_are_all_restored(binary, binary_file):
    loaded = load(binary_file)
    for f in dataclasses.fields(loaded.certificate_):
        assert getattr(loaded.certificate_, f.name) == getattr(binary.certificate_, f.name)


def test_a_recomputed_certificate_over_the_models_target_is_refused():
    """The check both model loaders share: equal to the stored certificate is not enough,
    the certificate must also stay within the model's target (epsilon, delta)."""
    from objpert.certify._calibration import tight
    from objpert.persistence._fileformat import _check_model_certificate, _normal

    cert = tight(
        "logistic", n=2000, d=4, zeta=1.0, epsilon=1.0, delta=1e-6, max_iter=500
    ).certificate
    stored = _normal(cert.to_dict())
    _check_model_certificate(cert, stored, 1.0, 1e-6, "the plans")  # within: no error
    with pytest.raises(ModelFileError, match="exceeds the model's target"):
        _check_model_certificate(cert, stored, 0.5, 1e-6, "the plans")
    with pytest.raises(ModelFileError, match="differs from the one recomputed from the plans"):
        _check_model_certificate(cert, {**stored, "epsilon": 0.5}, 1.0, 1e-6, "the plans")
