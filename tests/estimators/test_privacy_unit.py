"""fit(X, y, privacy_unit=ids) with max_rows_per_unit=k: contribution bounding by a keyed
hash, the unit-level certificate, metadata routing, the model file and the CLI."""

from __future__ import annotations

import json
import pickle
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.pipeline import Pipeline

import objpert
from objpert.accounting import PrivacyAccountant, UnitCertificate
from objpert.cli import main
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.estimators._unit import keep_rows, unit_codes, unit_key
from objpert.exceptions import (
    ClippingNotice,
    DataError,
    ModelFileError,
    ParameterError,
    PrivacyLeakWarning,
)
from objpert.persistence import digest
from objpert.preprocessing import BoundedScaler


def panel(seed=0, m=150, most=6):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, most + 1, m)
    ids = np.repeat([f"p{i}" for i in range(m)], counts)
    X = rng.uniform(-1, 1, size=(ids.size, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=ids.size) > 0).astype(int)
    return X, y, ids, counts


def model(**kw):
    base = dict(epsilon=2.0, delta=1e-5, data_norm=2.0, classes=[0, 1], random_state=1)
    return PrivateLogisticRegression(**{**base, **kw})


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=80), st.integers(1, 5))
def test_each_unit_keeps_min_of_its_rows_and_k(units, k):
    codes = np.asarray(units, dtype=np.int64)
    keep = keep_rows(codes.astype(str), k)
    kept = Counter(codes[keep].tolist())
    for unit, count in Counter(units).items():
        assert kept[unit] == min(count, k)
    assert np.all(np.diff(keep) > 0)


def test_the_rows_kept_are_chosen_at_random_not_the_first_k():
    """One unit of 5 rows, k = 2: over fresh keys every row is kept about 2/5 of the time."""
    codes = np.zeros(5, dtype=np.int64)
    hits = np.zeros(5)
    draws = 2000
    for _ in range(draws):
        hits[keep_rows(codes, 2)] += 1
    assert np.all(np.abs(hits / draws - 0.4) < 0.05)
    fixed = keep_rows(codes, 2, key=b"k" * 16)  # the key fixes the choice
    assert np.array_equal(fixed, keep_rows(codes, 2, key=b"k" * 16))


def test_unit_ids_are_checked():
    with pytest.raises(DataError, match="one id per row"):
        unit_codes([1, 2], 3)
    with pytest.raises(DataError, match="missing"):
        unit_codes([1, None, 2], 3)
    for missing in (
        pd.array([1, None, 2], dtype="Int64"),  # pandas' NA
        pd.array(["a", None, "b"], dtype="string"),
        pd.Series(pd.to_datetime(["2020-01-01", None, "2020-01-02"])),  # NaT
        np.array(["2020-01-01", "NaT", "2020-01-02"], dtype="datetime64[D]"),
    ):
        with pytest.raises(DataError, match="missing id"):
            unit_codes(missing, 3)
    codes, name, labels = unit_codes(pd.Series(["a", "b", "a"], name="pid"), 3)
    assert codes.tolist() == [0, 1, 0] and name == "pid" and labels.tolist() == ["a", "b", "a"]
    # one person whatever the id's type: a unit split by representation could keep 2k rows
    ids = np.array([7, 7.0, np.int64(7), "7", True, 1, 7.5], dtype=object)
    codes, _, _ = unit_codes(ids, len(ids))
    assert len(set(codes[:4])) == 1 and codes[4] == codes[5] and len(set(codes)) == 3


def test_replacing_one_unit_changes_no_other_units_rows():
    """The neighbouring relation the k-row theorem needs: with one key, replacing one
    unit's rows (any number of them, another id) leaves every other unit's kept rows."""
    rng = np.random.default_rng(5)
    units = [f"u{i}" for i in range(30)]
    rows = [u for u in units for _ in range(int(rng.integers(1, 8)))]
    swapped = ["new"] * 9 + [u for u in rows if u != units[0]]
    key = b"x" * 16

    def kept(labels):
        labels = np.asarray(labels)
        keep = keep_rows(labels, 3, key=key)
        out = {}
        for i in keep:  # (unit, rank of the row among its unit's rows)
            u = labels[i]
            out.setdefault(u, []).append(int(np.sum(labels[:i] == u)))
        return out

    a, b = kept(rows), kept(swapped)
    assert all(a[u] == b[u] for u in units[1:]) and len(b["new"]) == 3


def test_person_level_fit_certifies_one_unit_of_k_rows():
    X, y, ids, counts = panel()
    with pytest.warns(ClippingNotice, match="dropped"):
        clf = model(max_rows_per_unit=3).fit(X, y, privacy_unit=ids)
    cert = clf.certificate_
    assert isinstance(cert, UnitCertificate) and cert.certified
    assert cert.rows == 3 and cert.rows_per_unit == 3 and cert.route == "direct"
    assert cert.delta <= 1e-5 and cert.epsilon == 2.0
    assert clf.plan_.rows == 3 and clf.plan_.n == 150 * 3
    assert cert.summary().startswith("(epsilon, delta) = (2, 1e-05), certified: one person, up")
    data = cert.to_dict()
    assert data["privacy_unit"] == "one person, up to 3 rows" and data["rows_per_unit"] == 3
    assert dict(cert.routes)["direct"] == pytest.approx(cert.delta)
    json.dumps(data)
    # the dropped count (a statistic of the rows) is nowhere in the model
    dropped = int(np.sum(np.maximum(counts - 3, 0)))
    assert not any("drop" in name for name in vars(clf))
    assert f"dropped {dropped}".encode() not in pickle.dumps(clf)


def test_the_dropped_count_is_not_in_the_model_file(tmp_path):
    X, y, ids, counts = panel(seed=3, m=120, most=9)
    dropped, kept = int(np.sum(np.maximum(counts - 2, 0))), int(np.sum(np.minimum(counts, 2)))
    with pytest.warns(ClippingNotice):
        clf = model(max_rows_per_unit=2).fit(X, y, privacy_unit=ids)
    path = objpert.save(clf, tmp_path / "m.json")
    data = json.loads(path.read_text())
    assert data["privacy_unit"] == {"unit": "", "rows_per_unit": 2, "route": "direct"}

    def numbers(node):
        if isinstance(node, dict):
            return [v for x in node.values() for v in numbers(x)]
        if isinstance(node, list):
            return [v for x in node for v in numbers(x)]
        return [node] if isinstance(node, int) and not isinstance(node, bool) else []

    assert dropped not in numbers(data) and kept not in numbers(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = objpert.load(path)
    assert isinstance(loaded.certificate_, UnitCertificate)
    assert loaded.certificate_.to_dict() == clf.certificate_.to_dict()
    data["privacy_unit"]["rows_per_unit"] = 3
    data["digest"] = digest(data)  # the record changed, the file's digest made to match
    path.write_text(json.dumps(data))
    with pytest.raises(ModelFileError, match="privacy_unit: rows_per_unit 3"):
        objpert.persistence.load(path)


def test_row_level_fit_with_repeated_ids_is_flagged():
    X, y, ids, _ = panel()
    with pytest.warns(PrivacyLeakWarning, match="per row"):
        clf = model().fit(X, y, privacy_unit=ids)
    assert not isinstance(clf.certificate_, UnitCertificate)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        model().fit(X, y, privacy_unit=np.arange(len(y)))  # one row per unit: no flag


def test_bad_unit_settings_are_refused():
    X, y, ids, _ = panel()
    with pytest.raises(ParameterError, match="privacy_unit"):
        model(max_rows_per_unit=3).fit(X, y)
    with pytest.raises(ParameterError, match="got calibration='corollary413'"):
        model(max_rows_per_unit=3, calibration="corollary413", epsilon=1.0).fit(
            X, y, privacy_unit=ids
        )
    with pytest.raises(DataError):
        model(max_rows_per_unit=3).fit(X, y, privacy_unit=ids[:-1])


@pytest.mark.parametrize("k", [2.9, 1.5, "2", True, 0, -1, float("nan")])
def test_a_plan_for_a_unit_takes_a_whole_number_of_rows(k):
    """rows_per_unit is never rounded: a plan for 2 rows asked for 2.9 would certify
    fewer rows than the unit holds."""
    with pytest.raises(ParameterError, match="rows_per_unit"):
        objpert.plan(
            "watkins_arora", loss="logistic", n=1000, d=5, zeta=1.0, epsilon=1.0, delta=1e-6,
            rows_per_unit=k,
        )  # fmt: skip


def test_privacy_unit_is_routed_through_a_pipeline():
    X, y, ids, _ = panel()
    bounds = [[-1.0, 1.0]] * 3
    with sklearn.config_context(enable_metadata_routing=True):
        clf = model(max_rows_per_unit=2).set_fit_request(privacy_unit=True)
        pipe = Pipeline([("scale", BoundedScaler(bounds=bounds)), ("clf", clf)])
        with pytest.warns(ClippingNotice):
            pipe.fit(X, y, privacy_unit=ids)
    assert pipe[-1].certificate_.rows == 2
    pipe = Pipeline([("scale", BoundedScaler(bounds=bounds)), ("clf", model(max_rows_per_unit=2))])
    with pytest.warns(ClippingNotice):
        pipe.fit(X, y, clf__privacy_unit=ids)
    assert objpert.accounting.pipeline_certificate(pipe).rows_per_unit == 2


def test_robust_regression_and_the_accountant_refuse_mixed_units():
    X, y, ids, _ = panel()
    target = X @ np.array([1.0, -0.5, 0.2])
    ledger = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    reg = PrivateRobustRegression(
        epsilon=2.0, delta=1e-5, data_norm=2.0, max_rows_per_unit=2, accountant=ledger,
        random_state=0,
    )  # fmt: skip
    with pytest.warns(ClippingNotice):
        reg.fit(X, target, privacy_unit=ids)
    assert reg.certificate_.rows == 2 and len(ledger.steps) == 1
    with pytest.raises(ParameterError, match="privacy units"):
        model(accountant=ledger).fit(X, y)
    assert len(ledger.steps) == 1


def test_cli_train_with_a_privacy_unit(tmp_path, capsys):
    X, y, ids, _ = panel()
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(pid=ids, label=y)
    df.to_csv(tmp_path / "panel.csv", index=False)
    argv = [
        "train", "--data", str(tmp_path / "panel.csv"), "--target", "label", "--epsilon",
        "2", "--delta", "1e-5", "--data-norm", "2", "--classes", "0,1", "--seed", "1",
    ]  # fmt: skip
    out = tmp_path / "m.json"
    code = main([*argv, "--privacy-unit", "pid", "--max-rows-per-unit", "3", "--out", str(out),
                 "--json"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0 and "dropped" in captured.err and "dropped" not in captured.out
    payload = json.loads(captured.out)
    assert payload["privacy_unit"] == "one person, up to 3 rows (privacy unit 'pid')"
    assert json.loads(out.read_text())["privacy_unit"]["unit"] == "pid"
    for extra in (["--max-rows-per-unit", "3"], ["--privacy-unit", "nope"]):
        assert main([*argv, *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("objpert: error:") and "\n" not in err


def test_private_grid_search_splits_the_units(tmp_path):
    from objpert.model_selection import PrivateGridSearch

    X, y, ids, _ = panel(m=240)
    search = PrivateGridSearch(
        estimator=model(max_rows_per_unit=2), param_grid={"mu": [0.05, 0.5]}, random_state=0
    )
    with pytest.warns(ClippingNotice):
        search.fit(X, y, privacy_unit=ids)
    cert = search.certificate_
    assert cert.rows_per_unit == 2 and sum(cert.part_sizes) == 240
    assert "one person, up to 2 rows" in cert.covers
    assert all(c.rows == 2 for c in cert.candidates)
    # saved and loaded: every candidate's unit certificate recomputed, the choice too
    back = _round_trip(search, tmp_path / "search.json")
    assert back.certificate_.to_dict() == cert.to_dict()
    assert back.release_certificate_.rows == 2
    np.testing.assert_array_equal(back.predict(X), search.predict(X))
    with pytest.raises(ParameterError, match="max_rows_per_unit"):
        PrivateGridSearch(estimator=model(), param_grid={"mu": [0.05, 0.5]}).fit(
            X, y, privacy_unit=ids
        )
    stopping = PrivateGridSearch(
        estimator=model(max_rows_per_unit=2, random_state=None),
        param_grid={"mu": [0.05, 0.5]}, method="random_stopping", runs_mean=3,
        random_state=0,
    )  # fmt: skip
    with pytest.warns(ClippingNotice):
        stopping.fit(X, y, privacy_unit=ids)
    assert stopping.certificate_.rows_per_unit == 2 and stopping.certificate_.certified
    assert "one person, up to 2 rows" in stopping.certificate_.covers
    assert stopping.certificate_.n_rows == 240 * 2
    back = _round_trip(stopping, tmp_path / "stopping.json")
    assert back.certificate_.to_dict() == stopping.certificate_.to_dict()


def _round_trip(search, path):
    saved = objpert.save(search, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unsigned
        return objpert.load(saved)


def test_a_unit_candidate_on_the_group_route_is_recomputed_at_load():
    """A person-level candidate whose group route is the tighter (n = 100 persons of 2
    rows, d = 30, epsilon 2): its stored unit certificate is recomputed from the one-row
    release (Theorem C.13 for 2 rows at its sigma, N and radius, both routes), and a
    changed number is refused."""
    from objpert.estimators._unit import unit_certificate
    from objpert.persistence._unit_record import recertified_unit

    plan = objpert.plan("watkins_arora", loss="logistic", n=200, d=30, zeta=1.0, epsilon=2.0,
                        delta=1e-5, rows_per_unit=2)  # fmt: skip
    cert = unit_certificate(plan.certificate, [plan], 2, "pid")
    assert cert.route == "group" and cert.release.rows_per_unit == 1
    data = json.loads(json.dumps(cert.to_dict()))
    again = recertified_unit(data, "candidate 0")
    assert again.to_dict() == cert.to_dict()
    for key, value in (("delta", 1e-9), ("route", "direct"), ("rows_per_unit", 3)):
        with pytest.raises(ModelFileError):
            recertified_unit({**data, key: value}, "candidate 0")
    tampered = json.loads(json.dumps(data))
    tampered["release"]["sigma"] *= 0.5
    with pytest.raises(ModelFileError):
        recertified_unit(tampered, "candidate 0")


def test_a_multinomial_fit_per_unit_is_certified_by_group_privacy(tmp_path):
    X, y, ids, _ = panel()
    y3 = np.where(X[:, 1] > 0.5, 2, y)
    clf = model(max_rows_per_unit=3, classes=[0, 1, 2], multi_class="multinomial")
    with pytest.warns(ClippingNotice):
        clf.fit(X, y3, privacy_unit=ids)
    cert = clf.certificate_
    assert cert.route == "group" and cert.rows == 3 and cert.certified
    assert cert.epsilon == 2.0 and cert.delta <= 1e-5
    assert clf.plan_.n == 150 * 3 and cert.release.epsilon == pytest.approx(2.0 / 3)
    path = objpert.save(clf, tmp_path / "m.json", key=b"k" * 32)
    back = objpert.load(path, key=b"k" * 32)  # plan re-derived, unit certificate recomputed
    assert back.certificate_.to_dict() == cert.to_dict() and back.certificate_.route == "group"
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    data = json.loads(path.read_text())
    assert data["privacy_unit"] == {"unit": cert.unit, "rows_per_unit": 3, "route": "group"}
    data["privacy_unit"]["route"] = "direct"  # the group route is the only one here
    data["signature"] = None  # unsigned, so that its digest is all that is checked
    data["digest"] = digest(data)
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(ModelFileError, match="takes the group route"):
        objpert.load(tmp_path / "bad.json")


def test_a_search_puts_every_other_unit_in_the_same_part_when_one_is_replaced():
    from objpert.model_selection._split_selection import split_sizes
    from objpert.model_selection._units import unit_parts

    ids = np.repeat([f"u{i}" for i in range(40)], 3)
    other = ids.copy()
    other[other == "u7"] = "zz"  # u7 replaced in its place by another person
    parts_a, sizes, _ = unit_parts(ids, ids.size, split_sizes, 4, np.random.default_rng(1))
    parts_b, _, _ = unit_parts(other, ids.size, split_sizes, 4, np.random.default_rng(1))
    assert sizes == (10, 10, 10, 10)
    for pa, pb in zip(parts_a, parts_b, strict=True):
        assert np.array_equal(pa, pb)  # the same rows in every part


def test_a_testing_seed_keeps_the_same_rows_at_every_fit():
    """A seeded person-level fit is reproducible: the key that picks each unit's rows comes
    from the seed (read without drawing from it); without a seed the key is fresh."""
    X, y, ids, counts = panel(m=120)
    assert counts.max() > 2  # some units lose rows

    def fit(**kw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model(max_rows_per_unit=2, **kw).fit(X, y, privacy_unit=ids).coef_

    np.testing.assert_array_equal(fit(), fit())
    assert not np.array_equal(fit(), fit(random_state=2))
    assert unit_key(None) is None and unit_key(1) == unit_key(1) != unit_key(2)
    generator = np.random.default_rng(3)
    assert unit_key(generator) == unit_key(np.random.default_rng(3))
    assert generator.integers(10**9) == np.random.default_rng(3).integers(10**9)  # not drawn
    unseeded = {
        keep_rows(ids, 2, unit_key(None)).tobytes() for _ in range(4)
    }  # fresh keys: other rows
    assert len(unseeded) > 1


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_a_seeded_search_per_person_is_reproducible(method):
    """Seeded (the search, and each candidate for the split), a search per person keeps
    the same rows for its scores and its fits at every run."""
    from objpert.model_selection import PrivateGridSearch

    X, y, ids, _ = panel(m=160)

    def search():
        found = PrivateGridSearch(
            estimator=model(max_rows_per_unit=2, random_state=1 if method == "split" else None),
            param_grid={"mu": [0.05, 0.5]}, method=method, random_state=4,
            **({"runs_mean": 2} if method == "random_stopping" else {}),
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return found.fit(X, y, privacy_unit=ids)

    a, b = search(), search()
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    assert a.best_params_ == b.best_params_


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_a_search_per_person_on_no_rows_is_a_data_error(method):
    from objpert.model_selection import PrivateGridSearch

    search = PrivateGridSearch(
        estimator=model(max_rows_per_unit=2, random_state=None),
        param_grid={"mu": [0.05, 0.5]}, method=method,
    )  # fmt: skip
    with pytest.raises((DataError, ParameterError)), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(np.zeros((0, 3)), np.zeros(0, dtype=int), privacy_unit=np.array([], object))


def test_zero_rows_beyond_memory_are_refused_before_they_are_allocated(monkeypatch):
    """n = units x k zero rows are public: a k far above what anyone holds is refused with
    the numbers, before any noise is drawn, not a MemoryError."""
    from objpert.estimators import _unit

    X, y, ids, _ = panel(m=50)
    monkeypatch.setattr(_unit, "MAX_PADDING_BYTES", 10**6)
    clf = model(max_rows_per_unit=10**4)
    refused = pytest.raises(ParameterError, match="max_rows_per_unit near the most rows")
    with refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y, privacy_unit=ids)
    assert not hasattr(clf, "coef_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert model(max_rows_per_unit=10).fit(X, y, privacy_unit=ids).plan_.n == 500


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_a_search_per_person_names_the_unit_column(method):
    from objpert.model_selection import PrivateGridSearch

    X, y, ids, _ = panel(m=160)
    search = PrivateGridSearch(
        estimator=model(max_rows_per_unit=2, random_state=None),
        param_grid={"mu": [0.05, 0.5]}, method=method, random_state=4,
        **({"runs_mean": 2} if method == "random_stopping" else {}),
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y, privacy_unit=pd.Series(ids, name="pid"))
    assert "privacy unit 'pid'" in search.best_estimator_.release_certificate_.covers


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_a_search_per_person_composes_and_reads_as_one_person(method):
    """Its certificate is for one person of k rows: its privacy loss carries k rows, so it
    composes with a fit per person (not with a fit per row), a ledger keeps the unit,
    group privacy refuses to group it again, and its summary names the person."""
    from objpert.accounting import compose_certificates, group_privacy
    from objpert.model_selection import PrivateGridSearch

    X, y, ids, _ = panel(m=160)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = PrivateGridSearch(
            estimator=model(max_rows_per_unit=2), param_grid={"mu": [0.05, 0.5]}, method=method,
            **({"runs_mean": 2} if method == "random_stopping" else {}),
        ).fit(X, y, privacy_unit=ids)  # fmt: skip
        person = model(max_rows_per_unit=2).fit(X, y, privacy_unit=ids)
        row = model().fit(X, y)
    cert = search.certificate_
    assert [loss.rows for loss in cert.privacy_losses()] == [2]
    assert compose_certificates([cert, person.certificate_], 2.0).rows_per_unit == 2
    with pytest.raises(ParameterError, match="privacy units"):
        compose_certificates([cert, row.certificate_], 2.0)
    ledger = PrivacyAccountant(epsilon=10.0, delta=1e-4)
    ledger.spend(cert.privacy_losses(), name="search")
    assert ledger.certificate().rows_per_unit == 2
    with pytest.raises(ParameterError, match="already certified for units of 2 rows"):
        group_privacy(cert, 2)
    assert "one person, up to 2 rows" in str(cert).splitlines()[0]


def test_a_split_search_per_person_checks_every_candidate_before_any_fit(monkeypatch):
    from objpert.exceptions import UnreachableTargetError
    from objpert.model_selection import PrivateGridSearch

    X, y, ids, _ = panel(m=60, most=3)
    fits = []
    monkeypatch.setattr(PrivateLogisticRegression, "fit", lambda self, *a, **k: fits.append(1))
    search = PrivateGridSearch(estimator=model(max_rows_per_unit=2, max_iter=5000),
                               param_grid={"mu": [1.0, 1e-3]})  # fmt: skip
    with pytest.raises(UnreachableTargetError, match=r"grid point \{'mu': 0.001\}"):
        search.fit(X, y, privacy_unit=ids)
    assert fits == []


def test_more_rows_per_person_than_the_group_chain_takes_the_direct_route():
    """Above the group route's 3000-row chain, a single release is certified by the
    k-row theorem alone (the group route is a comparison, not a requirement)."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(40), 3)
    X = rng.uniform(-0.5, 0.5, (ids.size, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = model(max_rows_per_unit=3001).fit(X, (X[:, 0] > 0).astype(int), privacy_unit=ids)
    cert = fitted.certificate_
    assert cert.certified and cert.rows == 3001 and cert.route == "direct"


def test_every_representation_of_one_number_is_one_person():
    """True, numpy's True, 1, 1.0 and Decimal("1.0") are one unit: k rows are kept of it
    (not k of each representation)."""
    from decimal import Decimal

    ids = np.array([True, np.True_, 1, 1.0, Decimal("1.0"), np.int8(1), 2, 2], dtype=object)
    codes = unit_codes(ids, len(ids))[0]
    assert len(set(codes[:6].tolist())) == 1 and codes[0] != codes[6]
