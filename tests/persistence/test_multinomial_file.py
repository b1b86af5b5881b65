"""Model files of a multinomial PrivateLogisticRegression: the round trip, the plan
re-derived from the parameters at load, and edits that are refused."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import ModelFileError
from objpert.persistence import digest, load, save


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=200)
    X = rng.normal(scale=0.3, size=(200, 4)) + np.eye(3, 4)[y]
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    est = PrivateLogisticRegression(
        data_norm=1.0, classes=["a", "b", "c"], multi_class="multinomial", random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, np.array(["a", "b", "c"])[y]), X


@pytest.fixture
def path(model, tmp_path):
    out = tmp_path / "m.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        save(model[0], out)
    return out


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load(path)


def _edit(path, change):
    payload = json.loads(path.read_text())
    change(payload)
    payload["digest"] = digest(payload)
    path.write_text(json.dumps(payload))
    return path


def test_round_trip(model, path):
    est, X = model
    got = _load(path)
    assert got.multi_class_ == "multinomial"
    assert got.certificate_ == est.certificate_
    assert got.plan_ == est.plan_
    np.testing.assert_array_equal(got.predict(X), est.predict(X))
    np.testing.assert_allclose(got.predict_proba(X), est.predict_proba(X), rtol=1e-12)
    np.testing.assert_array_equal(got.n_iter_, [est.plan_.max_iter])


@pytest.mark.parametrize(
    ("field", "factor"), [("sigma", 0.5), ("mu", 2.0), ("n", 2), ("epsilon_objective", 1.5)]
)
def test_an_edited_plan_is_refused(path, field, factor):
    def change(p):
        p["plans"][0][field] = type(p["plans"][0][field])(p["plans"][0][field] * factor)

    with pytest.raises(ModelFileError, match="plan 0"):
        _load(_edit(path, change))


def test_parameters_that_do_not_give_the_plan_are_refused(path):
    with pytest.raises(ModelFileError, match="plan 0"):
        _load(_edit(path, lambda p: p["params"].__setitem__("epsilon", 2.0)))
    with pytest.raises(ModelFileError, match="one-vs-rest"):
        _load(_edit(path, lambda p: p["params"].__setitem__("multi_class", "ovr")))


def test_an_edited_certificate_is_refused(path):
    def change(p):
        p["certificate"]["delta"] = 1e-9

    with pytest.raises(ModelFileError, match="certificate"):
        _load(_edit(path, change))


def test_the_report_shows_the_multinomial_release(model, path):
    """objpert report: the mechanism, its constants and a profile recomputed here from the
    plan's certificate (objective part at epsilon - epsilon_output, plus the output part,
    capped by the certified point)."""
    from objpert.apps._privacy_report import build_report, render
    from objpert.mechanisms._certificates.multinomial import chi_profile_delta
    from objpert.persistence import read

    est, _ = model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = build_report(str(path), read(path))
    assert report.mechanism == "multinomial"
    assert report.releases[0].mu == est.plan_.mu and report.releases[0].sigma == est.plan_.sigma
    from objpert.accounting._group import point_profile

    cert = est.certificate_
    det = cert.details
    for e, d in zip(report.epsilons, report.deltas, strict=True):
        # basic composition above the output part's epsilon; below it only the point's bound
        want = 1.0 if e < det["epsilon_output"] else chi_profile_delta(
            e - det["epsilon_output"], det["sensitivity_ratio"], det["log_det"],
            det["profile_dimension"],
        ) + det["delta_output"]  # fmt: skip
        cap = float(point_profile(cert.epsilon, cert.delta, [e])[0])
        assert d == pytest.approx(min(1.0, want, cap), rel=1e-12)
    text = render(report, "md")
    assert "softmax" in text and "Theorem C.13 of Watkins" not in text
