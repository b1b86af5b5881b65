"""BoundedScaler, BoundedOneHotEncoder and row_norm_bound: public bounds, nothing read
from the data."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import StandardScaler

from objpert.exceptions import ClippingNotice, DataError, ParameterError
from objpert.preprocessing import BoundedOneHotEncoder, BoundedScaler, row_norm_bound

BOUNDS = [(0.0, 10.0), (-5.0, 5.0), (100.0, 200.0)]


def test_scaler_maps_bounds_onto_minus_one_one_and_clips():
    X = np.array([[0.0, -5.0, 100.0], [10.0, 5.0, 200.0], [5.0, 0.0, 150.0], [20.0, -9.0, 0.0]])
    out = BoundedScaler(bounds=BOUNDS).fit(X).transform(X)
    # by hand: 2 (x - lo) / (hi - lo) - 1, clipped
    expected = np.array([[-1, -1, -1], [1, 1, 1], [0, 0, 0], [1, -1, -1]], dtype=float)
    np.testing.assert_allclose(out, expected, atol=1e-15)


def test_scaler_reads_nothing_from_the_values():
    """Two data sets of the same width give the same fitted state."""
    a = BoundedScaler(bounds=BOUNDS).fit(np.zeros((3, 3)))
    b = BoundedScaler(bounds=BOUNDS).fit(np.full((50, 3), 1e6))
    state_a = {k: v for k, v in vars(a).items() if k.endswith("_")}
    state_b = {k: v for k, v in vars(b).items() if k.endswith("_")}
    assert state_a.keys() == state_b.keys() == {"bounds_", "row_norm_bound_", "n_features_in_"}
    np.testing.assert_array_equal(a.bounds_, b.bounds_)
    assert a.row_norm_bound_ == math.sqrt(3)


def test_scaler_width_and_bad_bounds():
    with pytest.raises(DataError, match="3 were declared"):
        BoundedScaler(bounds=BOUNDS).fit(np.zeros((4, 2)))
    for shape in ((4,), (4, 3, 1)):  # scikit-learn's width check skips 1-D input
        with pytest.raises(DataError, match="must be 2-D"):
            BoundedScaler(bounds=BOUNDS).fit(np.zeros(shape))
    for bad in ([(1.0, 1.0)], [(2.0, 1.0)], [(0.0, math.inf)], [(1.0,)], [], "ab"):
        with pytest.raises(ParameterError):
            BoundedScaler(bounds=bad).fit(np.zeros((2, max(len(bad), 1))))
    # the widest finite range scales without overflow (halves, never hi - lo)
    wide = BoundedScaler(bounds=[(-1e308, 1e308)]).fit_transform(
        np.array([[1e308], [0.0], [-1e308]])
    )
    np.testing.assert_array_equal(wide.ravel(), [1.0, 0.0, -1.0])


def test_clipping_notice_above_one_percent():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(1000, 1))
    X[:5, 0] = 2.0  # 0.5%: no notice
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingNotice)
        BoundedScaler(bounds=[(0.0, 1.0)]).fit_transform(X)
    X[:50, 0] = 2.0  # 5%
    with pytest.warns(ClippingNotice, match="50 of 1000"):
        BoundedScaler(bounds=[(0.0, 1.0)]).fit_transform(X)


def test_one_hot_on_a_frame_with_categorical_and_string_columns():
    df = pd.DataFrame({"city": pd.Categorical(["a", "b", "a", "c"]), "kind": ["x", "y", "x", "x"]})
    enc = BoundedOneHotEncoder(categories=[["a", "b", "c"], ["x", "y"]]).fit(df)
    out = enc.transform(df)
    expected = [[1, 0, 0, 1, 0], [0, 1, 0, 0, 1], [1, 0, 0, 1, 0], [0, 0, 1, 1, 0]]
    np.testing.assert_array_equal(out, expected)
    assert enc.row_norm_bound_ == math.sqrt(2)
    assert np.all(np.linalg.norm(out, axis=1) <= enc.row_norm_bound_)
    assert enc.get_feature_names_out().tolist() == [
        "city_a", "city_b", "city_c", "kind_x", "kind_y"
    ]  # fmt: skip


def test_one_hot_unknown_categories():
    X = np.array([["a"], ["z"], [None]], dtype=object)
    with pytest.raises(DataError, match="2 value"):
        BoundedOneHotEncoder(categories=[["a", "b"]]).fit_transform(X)
    out = BoundedOneHotEncoder(categories=[["a", "b"]], handle_unknown="ignore").fit_transform(X)
    np.testing.assert_array_equal(out, [[1, 0], [0, 0], [0, 0]])
    with pytest.raises(ParameterError, match="twice"):
        BoundedOneHotEncoder(categories=[["a", "a"]]).fit(X)
    with pytest.raises(ParameterError):
        BoundedOneHotEncoder(categories=[["a"]], handle_unknown="maybe").fit(X)


def test_one_hot_matches_a_listed_nan_whatever_the_object():
    """NaN equals nothing, itself included: a listed NaN still matches every float NaN of
    the column (numpy's, Python's, a frame's), and is listed once."""
    X = np.array([[1.0], [2.0], [np.nan], [float("nan")]])
    want = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1]]
    encoder = BoundedOneHotEncoder(categories=[[1.0, 2.0, float("nan")]])
    np.testing.assert_array_equal(encoder.fit_transform(X), want)
    np.testing.assert_array_equal(encoder.fit_transform(pd.DataFrame({"a": X[:, 0]})), want)
    objects = np.array([["a"], [np.float32("nan")], [None]], dtype=object)
    out = BoundedOneHotEncoder(categories=[["a", np.nan]], handle_unknown="ignore")
    np.testing.assert_array_equal(out.fit_transform(objects), [[1, 0], [0, 1], [0, 0]])
    with pytest.raises(ParameterError, match="twice"):
        BoundedOneHotEncoder(categories=[[np.nan, float("nan")]]).fit(X)


def test_row_norm_bound_of_compositions_is_checked_on_the_output():
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        {
            "age": rng.uniform(0, 120, 200),
            "income": rng.uniform(-1e4, 3e5, 200),
            "city": rng.choice(["a", "b", "c"], 200),
            "kind": rng.choice(["x", "y"], 200),
        }
    )
    ct = ColumnTransformer(
        [
            ("num", BoundedScaler(bounds=[(18, 100), (0, 2e5)]), ["age", "income"]),
            (
                "cat",
                BoundedOneHotEncoder(categories=[["a", "b", "c"], ["x", "y"]]),
                ["city", "kind"],
            ),
        ]
    )
    bound = row_norm_bound(ct)  # before fitting
    assert bound == pytest.approx(math.sqrt(2 + 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingNotice)
        out = ct.fit_transform(df)
    norms = np.linalg.norm(out, axis=1)
    assert norms.max() <= bound * (1 + 1e-12)
    assert norms.max() == pytest.approx(bound)  # attained: the bound is tight here
    assert row_norm_bound(Pipeline([("ct", ct)])) == bound
    union = FeatureUnion(
        [("a", BoundedScaler(bounds=[(0, 1)])), ("b", BoundedScaler(bounds=[(0, 1)] * 3))]
    )
    assert row_norm_bound(union) == pytest.approx(2.0)


@pytest.mark.parametrize("kind", ["columns", "union"])
def test_row_norm_bound_counts_the_transformer_weights(kind, tmp_path):
    """Each part's output is multiplied by its weight, so its bound is: the bound is
    attained on the output, a pipeline's model plans with it (no row clipped), and a file
    keeps the weights (the same predictions after loading)."""
    from sklearn.pipeline import make_pipeline

    from objpert import PrivateLogisticRegression
    from objpert.estimators import fit_statistics
    from objpert.persistence import load, save

    weights = {"a": 10.0, "b": -2.0}
    if kind == "columns":
        step = ColumnTransformer(
            [("a", BoundedScaler(bounds=[(0, 1)] * 2), [0, 1]),
             ("b", BoundedScaler(bounds=[(0, 1)]), [2])],
            transformer_weights=weights,
        )  # fmt: skip
        bound = math.sqrt(100 * 2 + 4 * 1)
    else:
        step = FeatureUnion(
            [("a", BoundedScaler(bounds=[(0, 1)] * 3)), ("b", BoundedScaler(bounds=[(0, 1)] * 3))],
            transformer_weights=weights,
        )
        bound = math.sqrt(100 * 3 + 4 * 3)
    X = np.random.default_rng(2).random((200, 3))
    X[0] = 1.0
    assert row_norm_bound(step) == pytest.approx(bound)
    assert np.linalg.norm(step.fit_transform(X), axis=1).max() == pytest.approx(
        row_norm_bound(step)
    )
    with warnings.catch_warnings(), fit_statistics() as fits:
        warnings.simplefilter("ignore")
        pipe = make_pipeline(step, PrivateLogisticRegression(epsilon=1.0, classes=[0, 1]))
        pipe.fit(X, (X[:, 0] > 0.5).astype(int))
        back = load(save(pipe, tmp_path / "p.json"))
    assert fits[-1].n_clipped == 0
    assert pipe[-1].pipeline_data_norm_ == pytest.approx(row_norm_bound(step))
    np.testing.assert_array_equal(back.predict_proba(X), pipe.predict_proba(X))


def test_unbounded_parts_are_refused():
    for t in (StandardScaler(), "passthrough"):
        with pytest.raises(ParameterError, match="no public row-norm bound"):
            row_norm_bound(t)
    ct = ColumnTransformer([("num", BoundedScaler(bounds=[(0, 1)]), [0])], remainder="passthrough")
    with pytest.raises(ParameterError):
        row_norm_bound(ct)
