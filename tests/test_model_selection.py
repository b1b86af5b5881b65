"""Private model selection: the exponential mechanism and the parallel-selection search."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.linear_model import LogisticRegression

from objpert import PrivateLogisticRegression, PrivateRobustRegression
from objpert._randomness import make_rng
from objpert.exceptions import DataError, ObjpertError, ParameterError, TestingSeedWarning
from objpert.mechanisms._exponential import exponential_mechanism, selection_probabilities
from objpert.model_selection import PrivateGridSearch, split_sizes


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # testing seeds
        yield


def test_selection_probabilities_match_the_exponential_weights():
    u = np.array([3.0, 1.0, -2.0, 3.0])
    p = selection_probabilities(u, epsilon=0.7, sensitivity=2.0)
    w = np.exp(0.7 * u / 4.0)
    np.testing.assert_allclose(p, w / w.sum(), rtol=1e-14)


def test_gumbel_sampling_has_the_exponential_mechanism_distribution():
    u = np.array([2.0, 1.0, 0.0, -1.0, 0.5])
    eps, sens, draws = 1.3, 1.0, 20000
    gen, _ = make_rng(7)
    counts = np.bincount(
        [exponential_mechanism(u, eps, sens, gen) for _ in range(draws)], minlength=u.size
    )
    expected = selection_probabilities(u, eps, sens) * draws
    assert stats.chisquare(counts, expected).pvalue > 1e-4


def test_exponential_mechanism_is_epsilon_dp_on_neighbouring_utilities():
    rng = np.random.default_rng(0)
    eps, sens = 0.9, 1.0
    for _ in range(200):
        u = rng.normal(size=6) * 3
        v = u + rng.uniform(-sens, sens, size=6)  # each utility moves by <= sensitivity
        p, q = selection_probabilities(u, eps, sens), selection_probabilities(v, eps, sens)
        assert np.max(np.abs(np.log(p / q))) <= eps + 1e-12


def test_split_sizes_are_public_and_cover_the_rows():
    for n in (10, 11, 1000, 1003):
        for parts in (2, 3, 7):
            sizes = split_sizes(n, parts)
            assert sum(sizes) == n and max(sizes) - min(sizes) <= 1
    for n, parts in ((-1, 3), (100, 0), (100, -1), (1.5, 3), (True, 3), (10, 2.5)):
        with pytest.raises(ParameterError, match=r"(n|parts) must"):
            split_sizes(n, parts)


def _data(n=3000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    w = rng.normal(size=d) * 4
    y = (X @ w + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _search(**kw):
    base = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], random_state=3
    )
    grid = {"comparator_norm": [1.0, 3.0], "max_iter": [300, 600]}
    return PrivateGridSearch(estimator=base, param_grid=grid, random_state=11, **kw)


def test_certificate_covers_the_choice_and_each_candidate_sees_its_own_part():
    X, y = _data(n=8000)
    gs = _search(selection_epsilon=0.5).fit(X, y)
    cert = gs.certificate_
    assert gs.n_candidates_ == 4 and cert.part_sizes == split_sizes(len(X), 5)
    eps_i = [c.epsilon for c in cert.candidates]
    assert cert.epsilon == max(max(eps_i), 0.5) and cert.certified
    assert cert.delta == max(c.delta for c in cert.candidates) <= 1e-6
    assert gs.best_estimator_.plan_.constants.n == cert.part_sizes[gs.best_index_]
    assert gs.best_params_ in [
        {"comparator_norm": c, "max_iter": m} for c in (1.0, 3.0) for m in (300, 600)
    ]
    assert "scores" not in str(cert.to_dict()) and not hasattr(gs, "cv_results_")
    majority = max(np.mean(y), 1 - np.mean(y))
    assert gs.score(X, y) > majority + 0.05  # learns something on an easy task
    non_private = LogisticRegression().fit(X, y).score(X, y)
    assert gs.score(X, y) <= non_private + 0.05


def test_changing_a_scoring_row_changes_no_candidate_release():
    """Parallel composition, checked: with the split and the noise fixed by seeds, a row of
    the scoring part never reaches a release."""
    X, y = _data(n=1500)
    order = make_rng(11)[0].permutation(len(X))
    scoring_row = order[-1]
    X2, y2 = X.copy(), y.copy()
    X2[scoring_row] = -X2[scoring_row]
    y2[scoring_row] = 1 - y2[scoring_row]
    a, b = _search().fit(X, y), _search().fit(X2, y2)
    for ca, cb in zip(a.certificate_.candidates, b.certificate_.candidates, strict=True):
        assert ca == cb
    if a.best_index_ == b.best_index_:
        np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)


def test_regression_selection_uses_the_clipped_score():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 4)) / 3
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = np.clip(X @ np.array([1.0, -1.0, 0.5, 0.0]), -1, 1)
    base = PrivateRobustRegression(epsilon=2.0, delta=1e-6, data_norm=1.0, random_state=0)
    gs = PrivateGridSearch(
        estimator=base, param_grid={"comparator_norm": [1.0, 2.0]}, score_bound=2.0, random_state=0
    )
    gs.fit(X, y)
    assert gs.certificate_.certified and math.isfinite(gs.score(X, y))


def test_bad_searches_are_refused_before_any_fit():
    X, y = _data(n=200)
    base = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1])
    with pytest.raises(ParameterError):
        PrivateGridSearch(estimator=LogisticRegression(), param_grid={"C": [1.0]}).fit(X, y)
    with pytest.raises(ParameterError):
        PrivateGridSearch(estimator=base, param_grid=[]).fit(X, y)
    with pytest.raises(ParameterError):
        PrivateGridSearch(estimator=base, param_grid={"epsilon": [1.0, -1.0]}).fit(X, y)
    with pytest.raises(ParameterError):
        PrivateGridSearch(
            estimator=base, param_grid={"comparator_norm": [1.0]}, selection_epsilon=0.0
        ).fit(X, y)
    with pytest.raises(DataError):
        PrivateGridSearch(estimator=base, param_grid={"comparator_norm": [1.0] * 3}).fit(
            X[:5], y[:5]
        )
    with pytest.raises(DataError):
        PrivateGridSearch(estimator=base, param_grid={"comparator_norm": [1.0]}).fit(X, y[:-1])


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    eps=st.floats(1e-6, 1e3),
    sens=st.floats(allow_nan=True, allow_infinity=True),
    u=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=5),
)
def test_exponential_mechanism_refuses_degenerate_computed_inputs(eps, sens, u):
    """The search hands the mechanism its checked epsilon share (hostile epsilons are
    refused by the search's own fit); the utilities and their sensitivity are computed
    from the data and the public bounds, and a degenerate one is refused in one line."""
    try:
        i = exponential_mechanism(u, eps, sens, 0)
    except ObjpertError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert 0 <= i < len(u)


def _unseeded_search(random_state):
    base = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], max_iter=200
    )  # each candidate's noise from OS entropy: only the search's own seed may warn
    return PrivateGridSearch(
        estimator=base, param_grid={"comparator_norm": [1.0, 3.0]}, random_state=random_state
    )


def test_an_unseeded_search_does_not_warn_of_a_testing_seed():
    """random_state=None draws the split and the choice from OS entropy: no
    TestingSeedWarning (the search once passed its own generator on as if it were a seed)."""
    X, y = _data(n=600)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TestingSeedWarning)
        gs = _unseeded_search(None).fit(X, y)
    assert gs.certificate_.certified


def test_a_seeded_search_warns_of_its_testing_seed_once():
    X, y = _data(n=600)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _unseeded_search(5).fit(X, y)
    seeds = [w for w in caught if issubclass(w.category, TestingSeedWarning)]
    assert len(seeds) == 1, [str(w.message) for w in seeds]


def test_searches_are_bounded_before_any_work():
    """A mean run count above MAX_RUNS_MEAN and a grid above MAX_CANDIDATES points are
    refused at once (counted, never built), naming the limit."""
    import time

    from objpert.model_selection._search import MAX_CANDIDATES, MAX_RUNS_MEAN

    X = np.zeros((10, 2))
    y = np.array([0, 1] * 5)
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1])
    with pytest.raises(ParameterError, match="runs_mean=10001 is above 10000: each run fits"):
        PrivateGridSearch(
            estimator=est, param_grid={"mu": [0.1]}, method="random_stopping",
            runs_mean=MAX_RUNS_MEAN + 1,
        ).fit(X, y)  # fmt: skip
    start = time.perf_counter()
    huge = {"mu": list(np.linspace(0.1, 1.0, 1000)), "comparator_norm": list(range(1, 1001))}
    with pytest.raises(ParameterError, match=f"at most {MAX_CANDIDATES}"):
        PrivateGridSearch(estimator=est, param_grid=huge).fit(X, y)
    assert time.perf_counter() - start < 5.0


def test_a_label_outside_the_declared_classes_is_refused_wherever_the_split_puts_it():
    """Every row's label is checked before the split: the scoring part's too."""
    from sklearn.pipeline import Pipeline

    from objpert.preprocessing import BoundedScaler

    X, y = _data(n=600)
    model = PrivateLogisticRegression(epsilon=1.0, delta=1e-6, classes=[0, 1], max_iter=100)
    pipe = Pipeline([("scale", BoundedScaler(bounds=[(-1.0, 1.0)] * 5)), ("m", model)])
    for seed in range(3):
        # the rows of the scoring part (the last third of the search's permutation of the
        # rows, its generator's first draw), where no candidate's fit reads the labels
        scoring = np.random.default_rng(seed).permutation(600)[400:]
        bad = y.copy()
        bad[scoring[seed]] = 2
        search = PrivateGridSearch(
            estimator=pipe, param_grid={"m__comparator_norm": [1.0, 3.0]}, random_state=seed
        )
        with pytest.raises(DataError, match="outside the declared classes"):
            search.fit(X, bad)


def test_a_misspelt_grid_name_is_a_parameter_error():
    for grid in ({"nope": [1.0]}, {"zz__mu": [1.0]}):
        with pytest.raises(ParameterError, match="param_grid"):
            _search().set_params(param_grid=grid).fit(*_data(n=300))


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_unit_ids_reach_a_pipeline_by_metadata_routing(method):
    """With scikit-learn's metadata routing on (docs/privacy-unit.md), the search passes
    the ids as the estimator requested them."""
    import sklearn
    from sklearn.pipeline import Pipeline

    from objpert.preprocessing import BoundedScaler

    X, y = _data(n=600)
    ids = np.repeat(np.arange(300), 2)
    with sklearn.config_context(enable_metadata_routing=True):
        model = PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, classes=[0, 1], max_rows_per_unit=2
        ).set_fit_request(privacy_unit=True)
        pipe = Pipeline([("scale", BoundedScaler(bounds=[(-1.0, 1.0)] * 5)), ("m", model)])
        search = PrivateGridSearch(
            estimator=pipe, param_grid={"m__mu": [0.3, 1.0]}, method=method, random_state=0
        ).fit(X, y, privacy_unit=ids)
    assert search.best_estimator_[-1].certificate_.rows_per_unit == 2


def test_a_search_is_what_it_searches_to_scikit_learn():
    """A search over a classifier is a classifier (its tags, predict_log_proba, feature
    names): scikit-learn's threshold tools take it; over a regression, it has no
    probabilities at all."""
    import pandas as pd
    from sklearn.base import is_classifier, is_regressor
    from sklearn.frozen import FrozenEstimator
    from sklearn.model_selection import FixedThresholdClassifier

    from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
    from objpert.model_selection import PrivateGridSearch

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(0, 1, size=(400, 2)), columns=["a", "b"])
    y = (X["a"] > 0.5).astype(int).to_numpy()
    bounds = [(0, 1)] * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = PrivateGridSearch(
            estimator=PrivateLogisticRegression(classes=[0, 1], feature_bounds=bounds),
            param_grid={"comparator_norm": [1.0, 3.0]},
        ).fit(X, y)
        regression = PrivateGridSearch(
            estimator=PrivateRobustRegression(feature_bounds=bounds),
            param_grid={"comparator_norm": [1.0, 3.0]},
        ).fit(X, X["a"].to_numpy())
    assert is_classifier(search) and is_regressor(regression)
    assert list(search.feature_names_in_) == ["a", "b"]
    np.testing.assert_allclose(
        np.exp(search.predict_log_proba(X)), search.predict_proba(X), rtol=1e-12
    )
    tuned = FixedThresholdClassifier(
        FrozenEstimator(search), threshold=0.0, response_method="decision_function"
    ).fit(X, y)
    assert tuned.predict(X).shape == (400,)
    assert not hasattr(regression, "predict_proba") and not hasattr(regression, "decision_function")
