"""Reports, certify and ledgers of guarantees per person (a privacy unit of up to k rows):
the numbers and the words are the person's, never one row's."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import objpert
from objpert.accounting import PrivacyAccountant
from objpert.apps._privacy_report import build_ledger_report, build_report, to_markdown
from objpert.apps._privacy_report.content import _release_profile
from objpert.cli import main
from objpert.estimators import PrivateLogisticRegression
from objpert.persistence import read

K = 3
KEY = b"k" * 32


def _panel(classes: int):
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(60), rng.integers(1, 6, 60))
    X = rng.uniform(-1, 1, (ids.size, 3))
    y = np.digitize(X[:, 0], [-0.3, 0.3]) if classes == 3 else (X[:, 0] > 0).astype(int)
    return X, y, ids


@pytest.fixture(scope="module")
def multinomial_file(tmp_path_factory):
    """A 3-class multinomial release for one person of up to K rows (the group route)."""
    X, y, ids = _panel(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1, 2], max_rows_per_unit=K,
            random_state=0,
        ).fit(X, y, privacy_unit=ids)  # fmt: skip
    assert clf.certificate_.route == "group" and clf.certificate_.rows == K
    path = tmp_path_factory.mktemp("unit") / "multi.json"
    objpert.save(clf, path, key=KEY)
    return clf, path


def test_certify_states_the_persons_guarantee_not_one_rows(multinomial_file, capsys, tmp_path):
    clf, path = multinomial_file
    key = tmp_path / "key"
    key.write_bytes(KEY)
    assert main(["certify", "--model", str(path), "--key-file", str(key), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["privacy_unit"] == f"one person, up to {K} rows"
    assert out["epsilon"] == pytest.approx(1.0)  # not the one-row release's 1/K
    assert out["delta"] == pytest.approx(clf.certificate_.delta, rel=1e-9)
    assert out["delta"] <= 1e-6 and out["certified"]


def test_the_profile_of_a_person_level_report_is_the_persons(multinomial_file):
    clf, path = multinomial_file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = build_report(str(path), read(path, KEY))
    eps, deltas = np.array(report.epsilons), np.array(report.deltas)
    one_row = _release_profile(clf.plan_, eps)  # the release's profile for one row
    assert np.all(deltas >= one_row * (1 - 1e-9))
    at = int(np.argmin(np.abs(eps - clf.certificate_.epsilon)))
    if math.isclose(eps[at], clf.certificate_.epsilon, rel_tol=1e-9):
        assert deltas[at] == pytest.approx(clf.certificate_.delta, rel=1e-6)
    # the classical group bound of the one-row point holds wherever it applies
    one = clf.certificate_.release
    classical = one.delta * sum(math.exp(i * one.epsilon) for i in range(K))
    beyond = eps >= K * one.epsilon
    assert np.all(deltas[beyond] <= classical * (1 + 1e-9))
    assert report.deltas[-1] > 0 and deltas.max() > one_row.max()
    text = to_markdown(report)
    assert "replacement of the rows of one person" in text
    assert "whether a given person's rows were used" in text
    assert "The neighbouring relation is the replacement of the rows of one person" in text


def test_a_ledger_of_person_level_fits_is_for_one_person(tmp_path):
    X, y, ids = _panel(2)
    ledger = PrivacyAccountant(epsilon=3.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(2):
            PrivateLogisticRegression(
                epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1], max_rows_per_unit=K,
                accountant=ledger, random_state=seed,
            ).fit(X, y, privacy_unit=ids)  # fmt: skip
    cert = ledger.certificate()
    assert cert.rows_per_unit == K
    assert cert.covers.endswith(f"each for one person, up to {K} rows")
    assert cert.to_dict()["privacy_unit"] == f"one person, up to {K} rows"
    path = objpert.save(ledger, tmp_path / "ledger.json", key=KEY)
    report = build_ledger_report(str(path), read(path, KEY))
    text = to_markdown(report)
    assert f"replacement of the rows of one person (up to {K})" in text
    assert "differential privacy for every person" in text
    assert "replacement of one row" not in text
    # a ledger of one-row fits keeps the words for one row
    rows = PrivacyAccountant(epsilon=3.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1], accountant=rows,
            random_state=0,
        ).fit(X, y)  # fmt: skip
    assert rows.certificate().rows_per_unit == 1
    assert "privacy_unit" not in rows.certificate().to_dict()
