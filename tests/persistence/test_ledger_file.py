"""A privacy accountant's ledger as a signed file: round trip, re-derivation at load, every
kind of tampering refused, and its report (objpert report) checked against an independent
Gaussian composition."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm

import objpert
from objpert import PrivateLogisticRegression
from objpert.accounting import PrivacyAccountant, gaussian, laplace, point, zcdp
from objpert.apps._privacy_report import build_ledger_report, render
from objpert.cli import main
from objpert.exceptions import ModelFileError, UnverifiedModelWarning
from objpert.persistence import SIGNATURE_ALGORITHM, digest, read, signature
from objpert.persistence._ledger_file import ledger_payload

pytest.importorskip("dp_accounting")

KEY = b"ledger key"


def _rows(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, (X[:, 0] > 0).astype(int), rng.integers(0, 3, n)


@pytest.fixture(scope="module")
def ledger():
    X, y, y3 = _rows()
    acc = PrivacyAccountant(4.0, 1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        common = dict(delta=1e-6, data_norm=1.0, accountant=acc, random_state=0)
        PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], **common).fit(X, y)
        PrivateLogisticRegression(epsilon=1.0, classes=[0, 1, 2], **common).fit(X, y3)
    acc.spend(gaussian(10.0, 1.0), name="a noisy count")
    acc.spend(laplace(20.0, 1.0), name="a noisy sum")
    acc.spend(zcdp(0.001), name="a zCDP query")
    acc.spend(point(0.05, 1e-9), name="a peer release", not_public=["data norm"])
    return acc


def _write(payload, path, key=KEY):
    payload = dict(payload)
    payload["digest"] = digest(payload)
    payload["signature"] = (
        None
        if key is None
        else {"algorithm": SIGNATURE_ALGORITHM, "value": signature(payload, key)}
    )
    path.write_text(json.dumps(payload))
    return path


def test_a_ledger_round_trips_and_goes_on_spending(ledger, tmp_path):
    path = objpert.save(ledger, tmp_path / "ledger.json", key=KEY)
    back = objpert.load(path, key=KEY)
    assert isinstance(back, PrivacyAccountant)
    assert (back.epsilon, back.delta, back.discretization) == (
        ledger.epsilon, ledger.delta, ledger.discretization,
    )  # fmt: skip
    assert [s.name for s in back.steps] == [s.name for s in ledger.steps]
    assert [s.not_public for s in back.steps] == [s.not_public for s in ledger.steps]
    assert back.spent == ledger.spent
    assert back.spent_delta == ledger.spent_delta
    back.spend(gaussian(50.0, 1.0), name="one more")
    assert back.spent > ledger.spent


def test_unsigned_ledgers_load_with_a_warning_naming_the_ledger(ledger, tmp_path):
    path = objpert.save(ledger, tmp_path / "ledger.json")
    with pytest.warns(UnverifiedModelWarning, match="ledger"):
        objpert.load(path)
    assert read(path).status == "unsigned: entries unverified"


def test_a_wrong_key_or_an_edit_is_refused(ledger, tmp_path):
    path = objpert.save(ledger, tmp_path / "ledger.json", key=KEY)
    with pytest.raises(ModelFileError, match="signature does not verify"):
        objpert.load(path, key=b"other")
    data = json.loads(path.read_text())
    data["budget"]["epsilon"] = 40.0
    path.write_text(json.dumps(data))
    with pytest.raises(ModelFileError, match="signature does not verify"):
        objpert.load(path, key=KEY)
    data["signature"] = None  # the signature removed: the digest still catches the edit
    path.write_text(json.dumps(data))
    with pytest.raises(ModelFileError, match="digest mismatch"):
        objpert.load(path)


def _payload(ledger):
    data = ledger_payload(ledger)
    del data["digest"], data["signature"]
    return data


def test_a_forged_certificate_is_recomputed_and_refused(ledger, tmp_path):
    """A forger who recomputes the digest and signs with the key still cannot make a
    release look more private: its certificate is recomputed from its constants."""
    data = _payload(ledger)
    cert = data["steps"][0]["releases"][0]["certificate"]
    cert["delta"] = cert["delta"] / 100
    with pytest.raises(ModelFileError, match="differs from the stored one"):
        objpert.load(_write(data, tmp_path / "a.json"), key=KEY)
    data = _payload(ledger)
    data["steps"][0]["releases"][0]["certificate"]["sigma"] *= 10  # more noise claimed
    with pytest.raises(ModelFileError, match="step 0, release 0"):
        objpert.load(_write(data, tmp_path / "b.json"), key=KEY)


def test_a_ledger_over_its_budget_is_refused(ledger, tmp_path):
    data = _payload(ledger)
    data["budget"]["epsilon"] = 0.5
    with pytest.raises(ModelFileError, match=r"is refused.*budget"):
        objpert.load(_write(data, tmp_path / "over.json"), key=KEY)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["steps"][2]["releases"][0].update(kind="secret"), "unknown kind"),
        (lambda d: d["steps"][2]["releases"][0].update(count=0), "count must be"),
        (lambda d: d["steps"][2]["releases"][0]["parameters"].update(sigma=-1.0), "refused"),
        (lambda d: d["steps"].clear(), "non-empty"),
        (lambda d: d.update(extra=1), "unknown keys"),
        (lambda d: d.update(version=7), "unsupported ledger version"),
        (lambda d: d["steps"][0].update(name=3), "name must be a string"),
    ],
)
def test_malformed_ledgers_are_refused(ledger, tmp_path, edit, message):
    data = _payload(ledger)
    edit(data)
    with pytest.raises(ModelFileError, match=message):
        objpert.load(_write(data, tmp_path / "bad.json"), key=KEY)


def test_an_empty_ledger_is_not_saved(tmp_path):
    with pytest.raises(ModelFileError, match="nothing was spent"):
        objpert.save(PrivacyAccountant(1.0, 1e-6), tmp_path / "empty.json")


def _gaussian_delta(mu, epsilon):
    """delta of mu-GDP at epsilon (Balle & Wang 2018, Theorem 8; Dong, Roth & Su 2022,
    Corollary 2.13), computed here independently of the library."""
    return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


def test_the_report_of_gaussian_steps_matches_their_exact_composition(tmp_path):
    acc = PrivacyAccountant(3.0, 1e-5)
    sigmas = (2.0, 3.0, 5.0)
    for i, s in enumerate(sigmas):
        acc.spend(gaussian(s, 1.0), name=f"query {i}")
    path = objpert.save(acc, tmp_path / "g.json", key=KEY)
    report = build_ledger_report(str(path), read(path, KEY))
    mu = math.sqrt(sum(1 / s**2 for s in sigmas))
    assert report.gdp_mu == pytest.approx(mu, rel=1e-12)
    for e, d in zip(report.epsilons[::40], report.deltas[::40], strict=True):
        exact = _gaussian_delta(mu, e)
        assert d >= exact - 1e-12  # pessimistic: never below the exact composition
        assert d <= exact + 0.02  # and close to it (discretisation 1e-3)
    text = render(report, "md")
    assert f"{mu:.4g}"[:4] in text and "-GDP" in text
    assert "query 2" in text


def test_the_report_states_budget_steps_and_what_is_not_covered(ledger, tmp_path):
    path = objpert.save(ledger, tmp_path / "ledger.json", key=KEY)
    report = build_ledger_report(str(path), read(path, KEY), title="T", purpose="P")
    assert report.certified and report.gdp_mu is None
    assert report.epsilon == ledger.spent
    assert report.not_public == ("data norm",)
    md = render(report, "md")
    html = render(report, "html")
    for name in ("a noisy count", "a noisy sum", "a zCDP query", "a peer release"):
        assert name in md and name in html
    assert "no mu is stated" in md and "NOT COVERED" in md and "within its budget (4, 1e-05)" in md
    assert html.index("Summary") < html.index("The ledger: each step")


def test_the_cli_reports_a_ledger_and_other_commands_refuse_it(ledger, tmp_path, capsys):
    path = objpert.save(ledger, tmp_path / "ledger.json", key=KEY)
    key = tmp_path / "key"
    key.write_bytes(KEY)
    out = tmp_path / "r.md"
    assert main(["report", str(path), "--key-file", str(key), "--out", str(out)]) == 0
    assert "The ledger: each step and the total" in out.read_text()
    capsys.readouterr()
    csv = tmp_path / "x.csv"
    csv.write_text("a,b,c\n0.1,0.2,0.3\n")
    code = main(["predict", "--model", str(path), "--data", str(csv), "--key-file", str(key)])
    err = capsys.readouterr().err
    assert code == 2 and "privacy ledger" in err and len(err.strip().splitlines()) == 1
