"""Signed model files: HMAC-SHA-256 over the canonical JSON, keys from the caller or
OBJPERT_MODEL_KEY, and what an unsigned or unverifiable file loads as."""

from __future__ import annotations

import hashlib
import hmac
import json
import warnings

import numpy as np
import pytest

from objpert import persistence
from objpert.certify._calibration import certify_plan
from objpert.certify._constants import ProblemConstants
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import ModelFileError, UnverifiedModelWarning
from objpert.persistence import KEY_ENV, canonical_json, digest, load, read, save

pytestmark = [
    pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning"),
    pytest.mark.filterwarnings("ignore::objpert.exceptions.PrivacyLeakWarning"),
]

KEY = b"\x00correct horse battery staple\xff"
RNG = np.random.default_rng(11)
X = RNG.normal(size=(240, 3)) / np.sqrt(3)
Y = (X @ np.array([1.5, -1.0, 0.5]) > 0).astype(int)


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture(scope="module")
def model():
    return PrivateLogisticRegression(
        epsilon=2.0, mu=0.2, max_iter=500, classes=[0, 1], data_norm=1.0, random_state=0
    ).fit(X, Y)


@pytest.fixture
def signed(model, tmp_path):
    return save(model, tmp_path / "signed.json", key=KEY)


def _strict_load(path, key=None):
    """load, failing on any UnverifiedModelWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedModelWarning)
        return load(path, key=key)


def test_signed_round_trip_verifies_without_warning(model, signed):
    loaded = _strict_load(signed, key=KEY)
    np.testing.assert_array_equal(loaded.coef_, model.coef_)
    assert loaded.certificate_ == model.certificate_
    assert read(signed, KEY).status == "signed and verified"


def test_the_signature_is_hmac_sha256_of_the_canonical_json(signed):
    payload = json.loads(signed.read_text())
    body = {k: v for k, v in payload.items() if k != "signature"}
    want = hmac.new(KEY, canonical_json(body).encode(), hashlib.sha256).hexdigest()
    assert payload["signature"] == {"algorithm": "hmac-sha256", "value": want}
    assert payload["digest"] == digest(payload)  # the corruption digest is kept
    assert payload["version"] == 2


def test_str_keys_are_utf8(model, tmp_path):
    path = save(model, tmp_path / "str.json", key="clé")
    _strict_load(path, key="clé".encode())
    _strict_load(path, key="clé")


def test_wrong_key_is_refused(signed):
    with pytest.raises(ModelFileError, match="signature does not verify"):
        load(signed, key=b"another key")


@pytest.mark.parametrize(
    ("where", "fragment"),
    [("coef", "signature does not verify"), ("value", "signature does not verify")],
)
def test_one_byte_changed_in_a_signed_file_is_refused(signed, where, fragment):
    text = signed.read_text()
    at = text.index(f'"{where}"') + len(where) + 2
    at = next(i for i in range(at, len(text)) if text[i] in "0123456789abcdef")
    new = "1" if text[at] != "1" else "2"
    signed.write_text(text[:at] + new + text[at + 1 :])
    with pytest.raises(ModelFileError, match=fragment):
        load(signed, key=KEY)


def test_every_one_byte_change_is_refused_or_changes_nothing(signed):
    """Each non-blank byte of a signed file replaced: refused, unless the file still reads
    as the same JSON (e.g. 1e-05 written 1E-05)."""
    original = signed.read_bytes()
    content = json.loads(original)
    accepted = []
    for i, byte in enumerate(original):
        if chr(byte).isspace():
            continue  # layout is not content: the signature covers the canonical JSON
        for new in sorted({ord("0"), ord("7"), ord("x")} - {byte}):
            changed = original[:i] + bytes([new]) + original[i + 1 :]
            try:
                persistence.from_payload(json.loads(changed), KEY)
            except (ModelFileError, ValueError):
                continue
            if json.loads(changed) != content:
                accepted.append((i, chr(byte), chr(new)))
    assert accepted == []


def test_env_key_signs_and_verifies(model, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "from the environment")
    path = save(model, tmp_path / "env.json")
    assert json.loads(path.read_text())["signature"] is not None
    _strict_load(path)  # the same variable verifies
    with pytest.raises(ModelFileError, match="signature does not verify"):
        load(path, key=b"an explicit key wins over the environment")
    monkeypatch.delenv(KEY_ENV)
    with pytest.warns(UnverifiedModelWarning, match="no key"):
        load(path)  # signed, but nothing to verify it with
    assert read(path).signature == "no key"


def test_unsigned_file_warns_even_with_a_key(model, tmp_path):
    path = save(model, tmp_path / "unsigned.json")
    assert json.loads(path.read_text())["signature"] is None
    with pytest.warns(UnverifiedModelWarning, match="unsigned"):
        load(path)
    with pytest.warns(UnverifiedModelWarning, match="weights are unverified"):
        load(path, key=KEY)
    assert read(path, KEY).status == "unsigned: weights unverified"


def test_unsigned_file_with_a_byte_changed_is_refused_by_the_digest(model, tmp_path):
    path = save(model, tmp_path / "unsigned.json")
    payload = json.loads(path.read_text())
    payload["coef"][0][0] += 0.5
    path.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match="digest mismatch"):
        load(path)


def test_stripping_the_signature_leaves_an_unverified_file(signed):
    """Removing the signature cannot make a forged file pass as signed: it loads (if its
    digest is recomputed) with the unverified warning."""
    payload = json.loads(signed.read_text())
    payload["coef"][0][0] += 0.5
    payload["signature"] = None
    payload["digest"] = digest(payload)
    signed.write_text(json.dumps(payload))
    with pytest.warns(UnverifiedModelWarning):
        load(signed, key=KEY)
    assert not read(signed, KEY).verified


def test_consistent_forgery_of_n_needs_the_key(signed):
    """n changed everywhere, the certificate recomputed and the digest too: every number
    in the file agrees, so only the signature tells."""
    payload = json.loads(signed.read_text())
    plan = payload["plans"][0]
    plan["n"] = plan["certificate"]["constants"]["n"] = 10 * plan["n"]
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
    plan["certificate"] = payload["certificate"] = json.loads(json.dumps(cert.to_dict()))
    plan["delta_truncation"], plan["delta_divergence"] = cert.truncation_mass, cert.divergence_term
    payload["digest"] = digest(payload)
    signed.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match="signature does not verify"):
        load(signed, key=KEY)


def test_signature_is_compared_in_constant_time(signed, monkeypatch):
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    _strict_load(signed, key=KEY)
    stored = json.loads(signed.read_text())["signature"]["value"].encode()
    assert any(stored in (a, b) for a, b in calls)


@pytest.mark.parametrize(
    ("signature", "fragment"),
    [
        ({"algorithm": "md5", "value": "00"}, "unknown signature algorithm"),
        ("deadbeef", "signature must be null or an object"),
        ({"value": "00"}, "signature must be null or an object"),
    ],
)
def test_malformed_signatures_are_refused(signed, signature, fragment):
    payload = json.loads(signed.read_text())
    payload["signature"] = signature
    signed.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match=fragment):
        load(signed, key=KEY)


@pytest.mark.parametrize(("key", "fragment"), [(b"", "empty"), (42, "bytes or str")])
def test_bad_keys_are_refused(model, tmp_path, key, fragment):
    with pytest.raises(ModelFileError, match=fragment):
        save(model, tmp_path / "x.json", key=key)
    assert not (tmp_path / "x.json").exists()
