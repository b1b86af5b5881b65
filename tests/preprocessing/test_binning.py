"""BoundedBinner: declared public bins, indicator columns, nothing read from the data."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer

from objpert.exceptions import ClippingNotice, DataError, ParameterError
from objpert.preprocessing import BoundedBinner, BoundedScaler, row_norm_bound
from objpert.preprocessing._binning import check_edges

EDGES = [[0.0, 1.0, 2.0, 3.0], [10.0, 20.0]]


def _by_loop(X: np.ndarray, edges: list[list[float]]) -> np.ndarray:
    """The indicators by a plain loop over the bins, as the docstring states them."""
    out = []
    for row in X:
        parts = []
        for x, e in zip(row, edges, strict=True):
            k = len(e) - 1
            block = [0.0] * k
            if x < e[1]:
                block[0] = 1.0
            elif x >= e[k - 1]:
                block[k - 1] = 1.0
            else:
                block[next(i for i in range(k) if e[i] <= x < e[i + 1])] = 1.0
            parts += block
        out.append(parts)
    return np.array(out)


def test_bins_by_hand_and_end_bins_take_the_outside():
    X = np.array([[-1.0, 5.0], [0.0, 10.0], [0.999, 15.0], [1.0, 20.0], [2.5, 25.0], [3.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingNotice)
        out = BoundedBinner(edges=EDGES).fit_transform(X)
    expected = np.array(
        [[1, 0, 0, 1], [1, 0, 0, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [0, 0, 1, 1]],
        dtype=float,
    )
    np.testing.assert_array_equal(out, expected)


def test_reads_nothing_from_the_values():
    a = BoundedBinner(edges=EDGES).fit(np.zeros((3, 2)))
    b = BoundedBinner(edges=EDGES).fit(np.full((40, 2), 1e9))
    state = {k: v for k, v in vars(a).items() if k.endswith("_")}
    assert state.keys() == {k for k in vars(b) if k.endswith("_")}
    assert state.keys() == {"edges_", "row_norm_bound_", "n_features_in_"}
    for ea, eb in zip(a.edges_, b.edges_, strict=True):
        np.testing.assert_array_equal(ea, eb)
    assert a.row_norm_bound_ == math.sqrt(2) == row_norm_bound(BoundedBinner(edges=EDGES))


def test_bad_edges_and_bad_input():
    for bad in ([], "ab", [[1.0]], [[1.0, 1.0]], [[2.0, 1.0]], [[0.0, math.nan]],
                [[0.0, math.inf]], [["a", "b"]], [5.0]):  # fmt: skip
        with pytest.raises(ParameterError):
            BoundedBinner(edges=bad).fit(
                np.zeros((2, max(len(bad), 1) if hasattr(bad, "__len__") else 1))
            )
    with pytest.raises(ParameterError):
        check_edges([[0.0, 2.0, 1.0]])
    with pytest.raises(DataError, match="2 were declared"):
        BoundedBinner(edges=EDGES).fit(np.zeros((4, 3)))
    fitted = BoundedBinner(edges=EDGES).fit(np.zeros((2, 2)))
    with pytest.raises(DataError):
        fitted.transform(np.array([[math.nan, 1.0]]))
    with pytest.raises(DataError):
        fitted.transform(np.zeros((2, 1)))


def test_clipping_notice_only_above_one_percent():
    X = np.zeros((200, 2))
    X[:, 1] = 15.0
    X[0, 0] = 9.0  # one row of 200 outside: 0.5%, no notice
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingNotice)
        BoundedBinner(edges=EDGES).fit_transform(X)
    X[:5, 1] = 99.0
    with pytest.warns(ClippingNotice, match="outside the declared edges"):
        BoundedBinner(edges=EDGES).fit_transform(X)


def test_feature_names_and_a_column_transformer():
    frame = pd.DataFrame({"a": [0.5, 2.5], "b": [12.0, 30.0], "c": [1.0, 3.0]})
    binner = BoundedBinner(edges=EDGES).fit(frame[["a", "b"]])
    names = list(binner.get_feature_names_out())
    assert names == ["a_[0, 1)", "a_[1, 2)", "a_[2, 3]", "b_[10, 20]"]
    ct = ColumnTransformer(
        [
            ("bins", BoundedBinner(edges=EDGES), ["a", "b"]),
            ("s", BoundedScaler(bounds=[(0.0, 4.0)]), ["c"]),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingNotice)
        Z = ct.fit_transform(frame)
    assert Z.shape == (2, 5)
    assert row_norm_bound(ct) == pytest.approx(math.sqrt(3))
    np.testing.assert_allclose(Z[:, -1], [-0.5, 0.5])


edges_strategy = st.lists(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=6, unique=True).map(
        sorted
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=40, deadline=None)
@given(edges=edges_strategy, data=st.data())
def test_matches_a_plain_loop_and_rows_have_the_public_norm(edges, data):
    rows = data.draw(st.integers(1, 8))
    X = np.array(
        [[data.draw(st.floats(-2e6, 2e6, allow_nan=False)) for _ in edges] for _ in range(rows)]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingNotice)
        Z = BoundedBinner(edges=edges).fit_transform(X)
    np.testing.assert_array_equal(Z, _by_loop(X, edges))
    # exactly one 1 per feature: the norm is the public bound sqrt(d), whatever the rows
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), math.sqrt(len(edges)))
    assert Z.shape[1] == sum(len(e) - 1 for e in edges)
