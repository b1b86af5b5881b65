"""What a private search refuses from its candidates' parameters, before any fit, and the
labels it scores against: one value per row."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import DataConversionWarning
from sklearn.pipeline import make_pipeline

from objpert import PrivacyAccountant, PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.model_selection import PrivateGridSearch
from objpert.preprocessing import BoundedScaler, PrivateFeatureBounds

METHODS = ["split", "random_stopping"]


def _rows(n=300):
    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 0.5, size=(n, 3))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _model(**kw):
    return PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], **kw)


def _no_fit(monkeypatch):
    fits = []
    for cls in (PrivateLogisticRegression, PrivateFeatureBounds):
        monkeypatch.setattr(cls, "fit", lambda self, *a, **k: fits.append(1) or self)
    return fits


@pytest.mark.parametrize("method", METHODS)
def test_a_column_vector_y_is_scored_as_the_labels_it_holds(method):
    """y of shape (n, 1): flattened with scikit-learn's DataConversionWarning, the same
    choice and model as with y of shape (n,) (compared with the predictions as it is,
    each score would count n x n pairs)."""
    X, y = _rows()
    searches = []
    for labels in (y, y[:, None]):
        search = PrivateGridSearch(estimator=_model(random_state=0),  # the candidates' seed
                                   param_grid={"comparator_norm": [1, 3]}, method=method,
                                   random_state=0)  # fmt: skip
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            searches.append(search.fit(X, labels))
        flattened = [w for w in seen if issubclass(w.category, DataConversionWarning)]
        assert bool(flattened) == (labels.ndim == 2)
    a, b = searches
    assert a.best_index_ == b.best_index_
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)


@pytest.mark.parametrize("method", METHODS)
def test_a_private_step_in_any_grid_point_is_refused_before_any_fit(method, monkeypatch):
    X, y = _rows()
    base = make_pipeline(BoundedScaler(bounds=[(-1, 1)] * 3), _model())
    grid = {"boundedscaler": [BoundedScaler(bounds=[(-1, 1)] * 3),
                              PrivateFeatureBounds(epsilon=5.0, ranges=[(-1, 1)] * 3)]}  # fmt: skip
    fits = _no_fit(monkeypatch)
    with pytest.raises(ParameterError, match="PrivateFeatureBounds release privately"):
        PrivateGridSearch(estimator=base, param_grid=grid, method=method).fit(X, y)
    assert fits == []


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("where", ["base", "grid"])
def test_an_accountant_in_any_grid_point_is_refused_and_charged_nothing(method, where):
    """The search charges nothing itself: a candidate's accountant would record each
    fit (random stopping: the hidden run count) and not the choice."""
    X, y = _rows()
    ledger = PrivacyAccountant(3.0, 1e-5)
    base = _model(accountant=ledger if where == "base" else None)
    grid = {"mu": [0.5, 1.0]} if where == "base" else {"accountant": [None, ledger]}
    with pytest.raises(ParameterError, match="charge the search's certificate_"):
        PrivateGridSearch(estimator=base, param_grid=grid, method=method).fit(X, y)
    assert ledger.remaining().epsilon == 3.0


@pytest.mark.parametrize(
    "grid",
    [
        {"data_norm": [1.0, None]},  # a row bound read from the rows
        {"classes": [[0, 1], None]},  # a label set read from the rows
    ],
)
def test_random_stopping_refuses_points_that_read_different_things(grid, monkeypatch):
    """Its certificate names the chosen run's not_public items; those of the runs drawn
    would tell how many ran: grid points must read the same things from the rows."""
    X, y = _rows()
    fits = _no_fit(monkeypatch)
    search = PrivateGridSearch(estimator=_model(), param_grid=grid, method="random_stopping")
    with pytest.raises(ParameterError, match="reads other things from the private rows"):
        search.fit(X, y)
    assert fits == []


def test_split_names_every_candidates_not_public_items():
    X, y = _rows()
    search = PrivateGridSearch(estimator=_model(), param_grid={"data_norm": [1.0, None]},
                               random_state=0)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    assert "data norm" in search.certificate_.not_public


@pytest.mark.parametrize(
    "estimator", [_model(), PrivateRobustRegression(epsilon=1.0, data_norm=1.0)]
)
def test_split_checks_every_candidate_at_its_part_before_any_fit(estimator, monkeypatch):
    """A candidate that cannot be certified on its part is refused before the first fit
    (no noise drawn for candidates that would be thrown away)."""
    X, y = _rows()
    fits = _no_fit(monkeypatch)
    monkeypatch.setattr(PrivateRobustRegression, "fit", lambda self, *a, **k: fits.append(1))
    search = PrivateGridSearch(estimator=estimator, param_grid={"mu": [3.0, 1e-4]})
    with pytest.raises(UnreachableTargetError, match=r"grid point \{'mu': 0.0001\}"):
        search.fit(X, y if estimator._loss == "logistic" else X[:, 0])
    assert fits == []
