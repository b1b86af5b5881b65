"""scikit-learn's model selection on private rows is flagged and recorded.

Every search and cross-validation helper warns once (PrivacyLeakWarning naming it, its
number of fits counted independently here, and the honest alternatives), and every model
fitted inside it records "model selection by <name> (<fits> fits)" as not covered, in
its certificate, its saved file, ``certify --model`` and the report. With an accountant a
parallel search is refused with the library's reason before any fit.
"""

from __future__ import annotations

import json
import warnings
from typing import ClassVar

import numpy as np
import pytest
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.model_selection import (
    GridSearchCV,
    HalvingGridSearchCV,
    KFold,
    RandomizedSearchCV,
    cross_val_predict,
    cross_val_score,
    cross_validate,
    learning_curve,
    permutation_test_score,
    validation_curve,
)
from sklearn.pipeline import make_pipeline

from objpert import PrivacyLeakWarning, PrivateLogisticRegression, load, save
from objpert.accounting import PrivacyAccountant
from objpert.exceptions import BudgetExceededError, PrivacyError

D = 4
MUS = [0.5, 1.0, 3.0]


class Recorder(PrivateLogisticRegression):
    """Records the ``not_public`` items of each fit (in this process)."""

    seen: ClassVar[list[tuple[str, ...]]] = []

    def fit(self, X, y):
        super().fit(X, y)
        Recorder.seen.append(self.certificate_.not_public)
        return self


def _estimator(cls=PrivateLogisticRegression, **kw):
    return cls(
        epsilon=1.0, delta=1e-6, feature_bounds=[(-3.0, 3.0)] * D, classes=[0, 1],
        random_state=None, **kw,
    )  # fmt: skip


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.clip(rng.normal(size=(240, D)), -3, 3)
    y = (X[:, 0] + 0.5 * rng.normal(size=240) > 0).astype(int)
    return X, y


def _selection_warnings(record) -> list[str]:
    return [
        str(w.message)
        for w in record
        if issubclass(w.category, PrivacyLeakWarning) and "fits this private" in str(w.message)
    ]


def _run(fn):
    Recorder.seen = []
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = fn()
    return out, _selection_warnings(record), list(Recorder.seen)


# name, call, the number of fits counted from the call's own public settings
CASES = {
    "GridSearchCV": (
        lambda X, y: GridSearchCV(_estimator(Recorder), {"mu": MUS}, cv=3).fit(X, y),
        len(MUS) * 3 + 1,
    ),
    "RandomizedSearchCV": (
        lambda X, y: RandomizedSearchCV(
            _estimator(Recorder), {"mu": MUS}, n_iter=2, cv=4, random_state=0
        ).fit(X, y),
        2 * 4 + 1,
    ),
    "cross_val_score": (
        lambda X, y: cross_val_score(_estimator(Recorder), X, y, cv=5),
        5,
    ),
    "cross_validate": (
        lambda X, y: cross_validate(_estimator(Recorder), X, y, cv=KFold(4)),
        4,
    ),
    "cross_val_predict": (
        lambda X, y: cross_val_predict(_estimator(Recorder), X, y, cv=3),
        3,
    ),
    "validation_curve": (
        lambda X, y: validation_curve(
            _estimator(Recorder), X, y, param_name="mu", param_range=MUS[1:], cv=3
        ),
        2 * 3,
    ),
    "learning_curve": (
        lambda X, y: learning_curve(_estimator(Recorder), X, y, train_sizes=[0.6, 1.0], cv=3),
        2 * 3,
    ),
    "permutation_test_score": (
        lambda X, y: permutation_test_score(_estimator(Recorder), X, y, cv=3, n_permutations=2),
        (2 + 1) * 3,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_search_and_helper_warns_once_and_records(data, name):
    call, fits = CASES[name]
    _, warned, seen = _run(lambda: call(*data))
    assert len(warned) == 1, warned
    assert warned[0].startswith(f"{name} fits this private estimator {fits} times")
    assert "PrivateGridSearch" in warned[0] and "accountant" in warned[0]
    assert len(seen) == fits  # every fit ran in this process and recorded the selection
    for items in seen:
        assert f"model selection by {name} ({fits} fits)" in items


def test_halving_search_counts_at_least_its_first_round_and_records_the_exact_count(data):
    search = HalvingGridSearchCV(
        _estimator(Recorder), {"mu": [0.5, 1.0, 2.0, 3.0]}, cv=3, min_resources=60
    )
    _, warned, seen = _run(lambda: search.fit(*data))
    assert len(warned) == 1
    assert warned[0].startswith("HalvingGridSearchCV fits this private estimator at least 13")
    total = sum(search.n_candidates_) * 3 + 1  # every round's candidates x folds, the refit
    assert len(seen) == total
    record = f"model selection by HalvingGridSearchCV ({total} fits)"
    assert record in search.best_estimator_.certificate_.not_public


def test_warning_points_at_the_callers_line(data):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cross_val_score(_estimator(), *data, cv=3)
    (w,) = [w for w in record if "fits this private" in str(w.message)]
    assert w.filename == __file__


def test_selected_model_in_a_pipeline_records_the_search_in_file_and_report(data, tmp_path):
    pipe = make_pipeline(_estimator())
    search = GridSearchCV(pipe, {"privatelogisticregression__mu": MUS[1:]}, cv=3)
    with pytest.warns(PrivacyLeakWarning, match="GridSearchCV fits this private estimator 7"):
        search.fit(*data)
    model = search.best_estimator_[-1]
    record = "model selection by GridSearchCV (7 fits)"
    assert record in model.certificate_.not_public
    path = save(model, tmp_path / "model.json", key=b"k" * 32)
    assert record in json.loads(path.read_text())["certificate"]["not_public"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert record in load(path, key=b"k" * 32).certificate_.not_public

    from objpert.cli import main

    out = tmp_path / "report.md"
    assert main(["report", str(path), "--key-file", _key(tmp_path), "--format", "md",
                 "--out", str(out)]) in (0, None)  # fmt: skip
    assert record in out.read_text()


def _key(tmp_path) -> str:
    key = tmp_path / "key.txt"
    key.write_bytes(b"k" * 32)
    return str(key)


def test_a_plain_fit_and_clone_record_nothing(data):
    from sklearn.base import clone

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        model = clone(_estimator()).fit(*data)
    assert not any("model selection" in item for item in model.certificate_.not_public)


def test_parallel_search_with_an_accountant_is_refused_before_any_fit(data):
    accountant = PrivacyAccountant(10.0, 1e-5)
    search = GridSearchCV(_estimator(accountant=accountant), {"mu": MUS}, cv=3, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(PrivacyError, match=r"GridSearchCV would fit .* n_jobs=1"):
            search.fit(*data)
    assert accountant.steps == ()


def test_sequential_search_with_an_accountant_stops_at_the_budget(data):
    accountant = PrivacyAccountant(3.0, 1e-5)
    search = GridSearchCV(_estimator(accountant=accountant), {"mu": MUS}, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(BudgetExceededError, match="nothing was released"):
            search.fit(*data)
    assert 0 < len(accountant.steps) < len(MUS) * 3 + 1
    assert accountant.spent <= 3.0


UNDECLARED = {  # calls whose every fit reads the label set and the row bound from the rows
    "GridSearchCV": lambda est, X, y: GridSearchCV(est, {"mu": MUS}, cv=3).fit(X, y),
    "cross_val_score": lambda est, X, y: cross_val_score(est, X, y, cv=5),
    "cross_val_predict": lambda est, X, y: cross_val_predict(est, X, y, cv=3),
    "validation_curve": lambda est, X, y: validation_curve(
        est, X, y, param_name="mu", param_range=MUS[1:], cv=3
    ),
}


@pytest.mark.parametrize("name", sorted(UNDECLARED))
def test_a_selection_shows_each_warning_once_per_cause(data, name):
    """Every fit of the call reads the label set and the row bound from the rows (a
    warning each, with the fold's own numbers): the call shows one warning per cause,
    three in all, where every fit used to print its own."""
    import re

    X, y = data
    est = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, random_state=None)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")  # the strictest display: every warning issued
        UNDECLARED[name](est, X, y)
    causes = [(w.category, re.sub(r"[-+]?\d[\d.eE+-]*", "#", str(w.message))) for w in record]
    assert len(causes) == len(set(causes)) == 3, [str(w.message)[:80] for w in record]
    text = " | ".join(str(w.message) for w in record)
    assert "fits this private" in text and "label set" in text and "data_norm=None" in text


def test_an_error_filter_still_stops_the_fit_inside_a_selection(data):
    X, y = data
    est = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, classes=[0, 1], random_state=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.filterwarnings("error", message="data_norm=None", category=PrivacyLeakWarning)
        with pytest.raises(PrivacyLeakWarning, match="data_norm=None"):
            cross_val_score(est, X, y, cv=3, error_score="raise")


def test_a_model_fitted_in_a_selection_pickles(data):
    import pickle

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = GridSearchCV(_estimator(), {"mu": MUS[:2]}, cv=2).fit(X, y).best_estimator_
    back = pickle.loads(pickle.dumps(best))
    np.testing.assert_array_equal(back.predict_proba(X), best.predict_proba(X))
    assert back.certificate_.not_public == best.certificate_.not_public
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back.fit(X, y)  # a refit of the copy still works


def _meta(name):
    """scikit-learn meta-estimators around a private estimator that records its fits."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import BaggingClassifier
    from sklearn.model_selection import FixedThresholdClassifier, TunedThresholdClassifierCV

    est = _estimator(Recorder)
    return {
        "TunedThresholdClassifierCV": lambda: TunedThresholdClassifierCV(est, cv=3),
        "CalibratedClassifierCV": lambda: CalibratedClassifierCV(est, cv=3),
        "BaggingClassifier": lambda: BaggingClassifier(est, n_estimators=3, random_state=0),
        "FixedThresholdClassifier": lambda: FixedThresholdClassifier(est, threshold=0.3),
    }[name]()


@pytest.mark.parametrize(
    "name", ["TunedThresholdClassifierCV", "CalibratedClassifierCV", "BaggingClassifier"]
)
def test_meta_estimators_that_refit_on_the_rows_are_flagged_and_recorded(data, name):
    """A threshold tuned, a calibration fitted or an ensemble built on the private rows
    fits the estimator repeatedly: warned once and recorded by every fit, as a search."""
    X, y = data
    Recorder.seen.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _meta(name).fit(X, y)
    assert len(_selection_warnings(caught)) == 1
    assert len(Recorder.seen) >= 3
    assert all(seen == (f"model selection by {name}",) for seen in Recorder.seen)


def test_a_fixed_public_threshold_is_one_fit_and_not_flagged(data):
    X, y = data
    Recorder.seen.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _meta("FixedThresholdClassifier").fit(X, y)
    assert not _selection_warnings(caught) and Recorder.seen == [()]
