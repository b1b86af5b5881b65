"""load() against files that are too large or hold hostile values: a file above
``max_bytes`` is refused before it is read (bounded time and memory), and every error
message quotes at most a short, escaped prefix of a value of the file."""

from __future__ import annotations

import json
import time
import tracemalloc

import numpy as np
import pytest

from objpert import persistence
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import ModelFileError
from objpert.persistence import MAX_BYTES, digest, load, quote_value, read, save

pytestmark = [
    pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning"),
    pytest.mark.filterwarnings("ignore::objpert.exceptions.UnverifiedModelWarning"),
]

RNG = np.random.default_rng(5)
X = RNG.normal(size=(200, 3)) / np.sqrt(3)
Y = (X[:, 0] > 0).astype(int)

#: A hostile string: a million characters, with a terminal escape and a newline in it.
HOSTILE = "\x1b[2J\n" + "A" * 1_000_000
#: The longest error message accepted here (the messages' own words plus short quotes).
SHORT = 600


@pytest.fixture(scope="module")
def model():
    return PrivateLogisticRegression(
        epsilon=2.0, data_norm=1.0, classes=[0, 1], random_state=0
    ).fit(X, Y)


@pytest.fixture
def model_file(model, tmp_path):
    return save(model, tmp_path / "model.json")


# ---------------------------------------------------------------- the size limit


def test_the_default_limit_is_64_mib_and_far_above_a_real_model(model_file):
    assert MAX_BYTES == 64 * 1024 * 1024
    assert model_file.stat().st_size < MAX_BYTES // 1000
    assert load(model_file).coef_.shape == (1, 3)


def test_a_file_above_the_limit_is_refused_unread(tmp_path):
    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:  # sparse: 200 MB that take no disk
        fh.truncate(200 * 1024 * 1024)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ModelFileError, match=r"209715200 bytes .*67108864 bytes.*unread"):
            load(path)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 1.0
    assert peak < 5 * 1024 * 1024  # the file was never read whole


def test_max_bytes_is_settable_and_checked(model_file):
    size = model_file.stat().st_size
    with pytest.raises(ModelFileError, match=rf"{size} bytes is more .*\({size - 1} bytes"):
        load(model_file, max_bytes=size - 1)
    assert load(model_file, max_bytes=size).coef_.shape == (1, 3)
    assert read(model_file, max_bytes=size).model.coef_.shape == (1, 3)
    for bad in (0, -1, True, 1.5, "64MiB", None):
        with pytest.raises(ModelFileError, match="max_bytes must be a positive integer"):
            load(model_file, max_bytes=bad)


def test_a_file_growing_past_the_limit_is_cut_at_the_limit(model_file, monkeypatch):
    """A file whose size os.fstat understates (a pipe, a file growing) is read no further
    than the limit."""
    size = model_file.stat().st_size

    class Small:
        st_size = 10

    monkeypatch.setattr(persistence._fileformat.os, "fstat", lambda fd: Small())
    with pytest.raises(ModelFileError, match=rf"more than {size - 1} bytes"):
        load(model_file, max_bytes=size - 1)


# ---------------------------------------------------------------- hostile values


def test_quote_value_is_short_escaped_and_counts():
    assert quote_value("abc") == "'abc'"
    assert quote_value("abc", quote=False) == "abc"
    text = quote_value(HOSTILE)
    assert text.startswith("'\\x1b[2J\\nAAA") and text.endswith("... (1000005 characters)")
    assert len(text) < 100 and "\x1b" not in text and "\n" not in text
    assert quote_value(["x" * 10**6] * 10**5).endswith("(100000 items)")
    assert quote_value("a\\b\x00", quote=False) == "a\\b\\x00"
    assert len(quote_value(["x" * 10**6] * 10**5)) < 100
    assert len(quote_value({"k" * 10**6: 1})) < 100
    assert quote_value(3) == "3" and quote_value(None) == "None"
    assert len(quote_value(10**99)) < 100


def _resign(payload):
    payload["digest"] = digest(payload)


def _set(*keys, value, resign=True):
    """An edit setting payload[keys[0]][keys[1]]... to ``value``."""

    def change(payload):
        target = payload
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
        if resign:
            _resign(payload)

    return change


def _unknown_key(payload):
    payload[HOSTILE] = 1


def _plan_unknown_key(payload):
    payload["plans"][0][HOSTILE] = 1
    _resign(payload)


def _certificate_key(payload):
    payload["certificate"][HOSTILE] = 1
    _resign(payload)


EDITS = {
    "format": _set("format", value=HOSTILE, resign=False),
    "version": _set("version", value=[HOSTILE, *range(100_000)], resign=False),
    "unknown key": _unknown_key,
    "signature algorithm": _set(
        "signature", value={"algorithm": HOSTILE, "value": "0"}, resign=False
    ),
    "estimator": _set("estimator", value=HOSTILE),
    "params value": _set("params", "epsilon", value=HOSTILE),
    "params key": _set("params", HOSTILE, value=1),
    "n_features_in": _set("n_features_in", value=HOSTILE),
    "coef": _set("coef", value=HOSTILE),
    "intercept": _set("intercept", value=[HOSTILE]),
    "classes dtype": _set("classes", "dtype", value=HOSTILE),
    "classes values": _set("classes", "values", value=[HOSTILE, HOSTILE + "b"]),
    "plans": _set("plans", value=HOSTILE),
    "plan unknown key": _plan_unknown_key,
    "plan loss": _set("plans", 0, "loss", value=HOSTILE),
    "plan certificate loss": _set("plans", 0, "certificate", "constants", "loss", value=HOSTILE),
    "plan method": _set("plans", 0, "method", value=HOSTILE),
    "certificate key": _certificate_key,
    "not_public": _set("certificate", "not_public", value=[HOSTILE, 1]),
    "certificate method": _set("certificate", "method", value=HOSTILE),
    "certificate number": _set("certificate", "epsilon", value=HOSTILE),
    "release iterations": _set("releases", 0, "iterations", value=HOSTILE),
    "n_iter": _set("n_iter", value=[HOSTILE]),
}


@pytest.mark.parametrize("field", sorted(EDITS))
def test_a_hostile_value_is_quoted_short_and_escaped(model_file, field):
    payload = json.loads(model_file.read_text())
    EDITS[field](payload)
    model_file.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError) as caught:
        load(model_file)
    message = str(caught.value)
    assert len(message) < SHORT, f"{field}: a message of {len(message)} characters"
    assert "\x1b" not in message and "\n" not in message, field
