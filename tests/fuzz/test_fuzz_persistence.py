"""Fuzz: ``load`` (and ``read``/``from_payload``) on generated and mutated model files:
a ModelFileError, or a model whose certificate holds and whose predictions are valid."""

from __future__ import annotations

import copy
import json
import math
import warnings
from functools import cache

import numpy as np
import pytest
from fuzz_support import check_certificate, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st

from objpert.exceptions import ModelFileError
from objpert.persistence import digest, from_payload, load, read, to_payload

pytestmark = pytest.mark.filterwarnings("ignore")


@cache
def payloads() -> tuple[dict, ...]:
    """Files of three small fitted models: binary, one-vs-rest (3 classes), robust."""
    from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)) / 3
    kw = dict(calibration="corollary413", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = (
            PrivateLogisticRegression(**kw).fit(X, (X[:, 0] > 0).astype(int)),
            PrivateLogisticRegression(classes=[0, 1, 2], **kw).fit(X, np.arange(40) % 3),
            PrivateRobustRegression(**kw).fit(X, X[:, 0]),
        )
    return tuple(to_payload(m) for m in models)


#: JSON values a mutation writes into a file
JSON_VALUES = st.one_of(
    st.sampled_from(
        [None, True, False, 0, -1, 1, 5.0, -5.0, 0.5, 1e300, 1e-300, 2**53 + 1, 10**60, "", "x",
         "NaN", [], {}, [1.0], {"a": 1}, "logistic", "tight", 1e-6]
    ),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-(10**20), 10**20),
    st.text(max_size=5),
)  # fmt: skip


def paths(value, prefix=()):
    """Every path (tuple of keys and indices) into a JSON value."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


def check_loaded(model) -> None:
    cert = model.certificate_
    check_certificate(cert)
    assert cert.certified
    assert np.isfinite(model.coef_).all() and np.isfinite(model.intercept_).all()
    X = np.array([[0.1, -0.2], [1e300, -1e300]])
    if hasattr(model, "classes_"):
        proba = model.predict_proba(X)
        assert ((proba >= 0) & (proba <= 1)).all()
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    else:
        ok, pred = outcome(model.predict, X)
        assert not ok or np.isfinite(pred).all()


@fuzz(100)
@given(
    which=st.integers(0, 2),
    data=st.data(),
    action=st.sampled_from(["set", "set", "delete", "add"]),
    value=JSON_VALUES,
    redigest=st.booleans(),
)
def test_mutated_payload(which, data, action, value, redigest):
    """One field of a valid file changed (its digest recomputed or not): refused, or loaded
    and still valid (some fields, e.g. feature names, may take other values)."""
    payload = copy.deepcopy(payloads()[which])
    where = data.draw(st.sampled_from([p for p in paths(payload) if p]))
    parent = payload
    for key in where[:-1]:
        parent = parent[key]
    last = where[-1]
    if action == "set":
        parent[last] = value
    elif action == "delete":
        del parent[last]
    elif isinstance(parent, dict):
        parent[f"extra_{last}"] = value
    else:
        parent.append(value)
    if redigest and isinstance(payload, dict):
        payload["digest"] = digest(payload)
    ok, loaded = outcome(from_payload, payload)
    if ok:
        check_loaded(loaded.model)
    else:
        assert isinstance(loaded, ModelFileError), type(loaded)


_HOSTILE_TEXTS = (
    "",
    "NaN",
    '{"format": NaN}',
    '{"a": Infinity}',
    '{"a": 1e400}',
    '{"a": ' + "1" * 5000 + "}",
    '{"a": ' + "9" * 120 + "}",
    "[" * 100000 + "]" * 100000,
    '{"a": ' + "[" * 500 + "]" * 500 + "}",
    "[1, 2",
    "\ufeff{}",
    "{}",
    "[]",
    "null",
    '"model"',
)


@fuzz(40)
@given(
    which=st.integers(0, 2),
    text=st.one_of(st.sampled_from(_HOSTILE_TEXTS), st.text(max_size=40)),
    cut=st.integers(0, 4000),
    mode=st.sampled_from(["replace", "truncate", "splice", "bytes"]),
)
def test_hostile_files(tmp_path_factory, which, text, cut, mode):
    """Files that are not model files (or damaged ones) are refused with ModelFileError."""
    good = json.dumps(payloads()[which])
    if mode == "replace":
        content = text.encode("utf-8", "surrogatepass")
    elif mode == "truncate":
        content = good[: cut % max(len(good), 1)].encode()
    elif mode == "splice":
        k = cut % max(len(good), 1)
        content = (good[:k] + text + good[k:]).encode("utf-8", "surrogatepass")
    else:
        content = bytes([cut % 256]) * 3 + good.encode()[cut % 50 :]
    path = tmp_path_factory.mktemp("files") / "model.json"
    path.write_bytes(content)
    ok, model = outcome(load, path)
    if ok:  # a splice can leave valid JSON that is the same model (e.g. whitespace)
        check_loaded(model)
    ok, loaded = outcome(read, path)
    if ok:
        check_loaded(loaded.model)


def test_valid_files_load():
    for payload in payloads():
        ok, loaded = outcome(from_payload, payload)
        assert ok, loaded
        check_loaded(loaded.model)
        assert not math.isnan(loaded.model.certificate_.delta)
