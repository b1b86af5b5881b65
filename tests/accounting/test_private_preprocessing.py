"""A pipeline whose step before the model releases privately (PrivateFeatureBounds): its
budget is counted wherever the pipeline's guarantee is stated or spent."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from objpert import PrivateLogisticRegression, save
from objpert.accounting import pipeline_certificate
from objpert.exceptions import ParameterError
from objpert.model_selection import PrivateGridSearch
from objpert.persistence import read
from objpert.preprocessing import BoundedScaler, PrivateFeatureBounds

RANGES = [(-10.0, 10.0), (-10.0, 10.0)]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
    return X, y


def _pipeline(**model):
    return make_pipeline(
        PrivateFeatureBounds(epsilon=0.2, ranges=RANGES, random_state=0),
        PrivateLogisticRegression(
            epsilon=0.8, delta=1e-6, classes=[0, 1], max_iter=200, random_state=0, **model
        ),
    )


@pytest.fixture(scope="module")
def model_file(data, tmp_path_factory):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = _pipeline().fit(X, y)
    path = tmp_path_factory.mktemp("pfb") / "pipe.json"
    save(pipe, path, key=b"k" * 16)
    key = path.with_name("key")
    key.write_bytes(b"k" * 16)
    return pipe, path, key


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_a_search_refuses_a_private_step_before_any_fit(data, method):
    """Its certificate covers the candidates' models: the bounds, released again per run
    or per part, would not be counted."""
    X, y = data
    search = PrivateGridSearch(
        estimator=_pipeline(), param_grid={"privatelogisticregression__mu": [0.3, 1.0]},
        method=method, random_state=0,
    )  # fmt: skip
    with pytest.raises(ParameterError, match="PrivateFeatureBounds release privately"):
        search.fit(X, y)
    assert not hasattr(search, "certificate_")


def test_a_public_bounded_step_is_searched_as_before(data):
    X, y = data
    pipe = make_pipeline(BoundedScaler(bounds=RANGES), _pipeline()[-1])
    search = PrivateGridSearch(
        estimator=pipe, param_grid={"privatelogisticregression__mu": [0.3, 1.0]},
        method="split", random_state=0,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert search.fit(X, y).certificate_.epsilon == pytest.approx(0.8, rel=1e-3)


def _cli(*args):
    proc = subprocess.run(
        [sys.executable, "-m", "objpert", *args], capture_output=True, text=True, check=False
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize("command", ["verify", "certify"])
def test_verify_and_certify_state_everything_the_file_released(model_file, command):
    pipe, path, key = model_file
    total = pipeline_certificate(pipe)
    args = (command, str(path)) if command == "verify" else (command, "--model", str(path))
    rc, out, err = _cli(*args, "--key-file", str(key), "--json")
    assert rc == 0, err
    payload = json.loads(out)
    assert payload["epsilon"] == pytest.approx(total.epsilon)
    assert payload["epsilon"] == pytest.approx(
        pipe[0].certificate_.epsilon + pipe[-1].certificate_.epsilon
    )
    assert payload["release_epsilon"] == pytest.approx(pipe[-1].certificate_.epsilon)
    assert payload["composition"] == "basic"


def test_certify_compares_the_callers_target_with_what_the_file_released(model_file):
    """The model's release meets its own target; a target of the caller's is for the
    composition the file released (bounds and model), not for the model alone."""
    pipe, path, key = model_file
    total, own = pipeline_certificate(pipe).epsilon, pipe[-1].certificate_.epsilon
    between = (total + own) / 2
    for target, certified in ((None, True), (between, False), (total * 1.01, True)):
        extra = () if target is None else ("--epsilon", repr(target))
        rc, out, err = _cli("certify", "--model", str(path), "--key-file", str(key), "--json",
                            *extra)  # fmt: skip
        assert rc == 0, err
        payload = json.loads(out)
        assert payload["certified"] is certified, (target, payload["reasons"])
        assert payload["target_epsilon"] == target
        assert payload["release_target_epsilon"] == pytest.approx(own)


def test_the_report_heads_with_the_composition_and_names_the_released_range(model_file):
    from objpert.apps._privacy_report import build_report

    pipe, path, _ = model_file
    report = build_report(str(path), read(path, key=b"k" * 16))
    assert report.epsilon == pytest.approx(pipeline_certificate(pipe).epsilon)
    assert report.own_epsilon == pytest.approx(pipe[-1].certificate_.epsilon)
    assert [row[0] for row in report.preprocessing][-2:] == [
        "the model", "everything the file released (basic composition)",
    ]  # fmt: skip
    assert all("released range" in text for _, text in report.features)


@pytest.mark.parametrize("k", [3, 1])
def test_a_per_person_model_after_a_per_row_release_is_refused(data, k):
    """Even of one row per person: the bounds read all of each person's rows."""
    X, y = data
    pipe = _pipeline(max_rows_per_unit=k)
    ids = np.repeat(np.arange(200), 3)
    with pytest.raises(ParameterError, match="different privacy units"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y, privatelogisticregression__privacy_unit=ids)
    assert not hasattr(pipe[-1], "certificate_")
