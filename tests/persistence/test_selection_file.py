"""A model chosen by PrivateGridSearch saved with the search's guarantee: the record is
re-derived at load (never trusted), and the report states the search's guarantee."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import objpert
from objpert import PrivateLogisticRegression
from objpert.apps._privacy_report import build_report, render
from objpert.certify import _tradeoff as tradeoff
from objpert.exceptions import ModelFileError
from objpert.model_selection import PrivateGridSearch
from objpert.persistence import SIGNATURE_ALGORITHM, digest, read, signature

KEY = b"search key"
METHODS = ("split", "random_stopping")


@pytest.fixture(scope="module")
def searches():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + 0.3 * rng.normal(size=3000) > 0).astype(int)
    est = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1])
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in METHODS:
            out[method] = PrivateGridSearch(
                estimator=est, param_grid={"mu": [0.05, 0.2]}, method=method, random_state=0
            ).fit(X, y)
        out["geometric"] = PrivateGridSearch(
            estimator=est, param_grid={"mu": [0.05, 0.2]}, method="random_stopping",
            law="geometric", random_state=0,
        ).fit(X, y)  # fmt: skip
    return out


@pytest.mark.parametrize("method", [*METHODS, "geometric"])
def test_a_search_saves_its_chosen_model_with_the_search_guarantee(searches, method, tmp_path):
    search = searches[method]
    path = objpert.save(search, tmp_path / "m.json", key=KEY)
    model = objpert.load(path, key=KEY)
    assert type(model) is type(search.best_estimator_)
    np.testing.assert_array_equal(model.coef_, search.best_estimator_.coef_)
    got = model.certificate_
    assert type(got) is type(search.certificate_)
    assert got.to_dict() == search.certificate_.to_dict()
    own = search.best_estimator_.release_certificate_
    assert model.release_certificate_.to_dict() == own.to_dict()


@pytest.mark.parametrize("method", [*METHODS, "geometric"])
def test_the_chosen_model_carries_the_search_certificate(searches, method, tmp_path):
    """What releasing the chosen model cost is the search's guarantee: its certificate_ is
    the search's (never the run's alone, which is smaller), and it is not saved alone."""
    search = searches[method]
    chosen = search.best_estimator_
    assert chosen.certificate_ is search.certificate_
    assert chosen.release_certificate_.epsilon <= search.certificate_.epsilon
    with pytest.raises(objpert.ModelFileError, match="save the PrivateGridSearch"):
        objpert.save(chosen, tmp_path / "alone.json", key=KEY)


def _resigned(payload, path):
    payload = {k: v for k, v in payload.items() if k not in ("digest", "signature")}
    payload["digest"] = digest(payload)
    payload["signature"] = {"algorithm": SIGNATURE_ALGORITHM, "value": signature(payload, KEY)}
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    ("method", "edit", "message"),
    [
        ("split", lambda c: c.update(epsilon=c["epsilon"] / 2), "differs"),
        ("split", lambda c: c["candidates"][0].update(sigma=1.0), "candidate 0"),
        ("split", lambda c: c.update(part_sizes=[10, 10, 10]), "rows"),
        ("random_stopping", lambda c: c.update(delta=c["delta"] / 10), "differs"),
        ("random_stopping", lambda c: c.update(runs_mean=1), "differs"),
        ("random_stopping", lambda c: c.update(model_epsilon=0.01), "per-run budget"),
        ("random_stopping", lambda c: c.update(law="poisson"), "law must be"),
        ("random_stopping", lambda c: c.update(law="geometric"), "differs"),
        ("geometric", lambda c: c.update(law="logarithmic"), "differs"),
    ],
)
def test_a_forged_selection_is_recomputed_and_refused(searches, method, edit, message, tmp_path):
    """Even re-signed with the key, a selection record claiming more privacy than its
    public inputs give is refused."""
    path = objpert.save(searches[method], tmp_path / "m.json", key=KEY)
    payload = json.loads(path.read_text())
    edit(payload["selection"]["certificate"])
    with pytest.raises(ModelFileError, match=message):
        objpert.load(_resigned(payload, tmp_path / "bad.json"), key=KEY)


def test_the_chosen_index_must_be_the_models_candidate(searches, tmp_path):
    search = searches["split"]
    path = objpert.save(search, tmp_path / "m.json", key=KEY)
    payload = json.loads(path.read_text())
    payload["selection"]["best_index"] = 1 - search.best_index_
    # the two candidates differ in mu, so the other candidate's certificate is not the model's
    with pytest.raises(ModelFileError, match="not the model's"):
        objpert.load(_resigned(payload, tmp_path / "bad.json"), key=KEY)


@pytest.mark.parametrize("method", METHODS)
def test_the_report_states_the_search_guarantee_and_its_attack_bound(searches, method, tmp_path):
    search = searches[method]
    path = objpert.save(search, tmp_path / "m.json", key=KEY)
    report = build_report(str(path), read(path, KEY))
    cert = search.certificate_
    assert (report.epsilon, report.delta) == (cert.epsilon, cert.delta)
    own = search.best_estimator_.release_certificate_
    assert (report.own_epsilon, report.own_delta) == (own.epsilon, own.delta)
    # the attacker's bound is that of the search's one point, computed independently
    expected = 1.0 - tradeoff.point_tradeoff(np.array([0.01, 0.1]), cert.epsilon, cert.delta)
    bounds = dict(zip(report.fpr_levels, report.tpr_bounds, strict=True))
    assert [bounds[0.01], bounds[0.1]] == pytest.approx(expected, rel=1e-12)
    md = render(report, "md")
    assert "How the model was chosen" in md and "How it was chosen: by a private search" in md
    assert md.index("How the model was chosen") < md.index("What an attacker can achieve")


@pytest.fixture(scope="module")
def multiclass_searches():
    """Searches over three-class candidates, per row and per person of up to 3 rows."""
    rng = np.random.default_rng(0)
    ids = np.repeat(np.arange(120), rng.integers(1, 6, 120))
    X = rng.uniform(-1, 1, (ids.size, 3))
    y = np.digitize(X[:, 0], [-0.3, 0.3])
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for multi_class in ("ovr", "multinomial"):
            for method in METHODS:
                for k in (None, 3):
                    est = PrivateLogisticRegression(
                        epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1, 2],
                        multi_class=multi_class, max_rows_per_unit=k, random_state=1,
                    )  # fmt: skip
                    extra = {"runs_mean": 2} if method == "random_stopping" else {}
                    search = PrivateGridSearch(
                        estimator=est, param_grid={"mu": [0.5, 1.0]}, method=method,
                        random_state=0, **extra,
                    )  # fmt: skip
                    out[multi_class, method, k] = search.fit(
                        X, y, privacy_unit=None if k is None else ids
                    )
    return out


@pytest.mark.parametrize("multi_class", ["ovr", "multinomial"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [None, 3])
def test_a_search_over_multiclass_candidates_is_saved_and_recomputed(
    multiclass_searches, multi_class, method, k, tmp_path
):
    """One-vs-rest candidates (their releases composed) and multinomial ones (the softmax
    certificate) are recomputed from their public fields at load, per row and per person."""
    search = multiclass_searches[multi_class, method, k]
    path = objpert.save(search, tmp_path / "m.json", key=KEY)
    model = objpert.load(path, key=KEY)
    assert model.certificate_.to_dict() == search.certificate_.to_dict()
    np.testing.assert_array_equal(model.coef_, search.best_estimator_.coef_)
    if method != "split":
        return
    payload = json.loads(path.read_text())
    candidate = payload["selection"]["certificate"]["candidates"][0]
    release = candidate.get("release", candidate)  # per person: the unit's release
    part = release["certificates"][0] if "certificates" in release else release
    part["constants"]["mu"] *= 2  # a stronger ridge than the candidate was fitted with
    with pytest.raises(ModelFileError, match="candidate 0"):
        objpert.load(_resigned(payload, tmp_path / "bad.json"), key=KEY)
