"""Tests of objpert._data: the contract between user input and Assumption 1.

Every expected value is recomputed here from the inputs (row norms with ``np.linalg.norm``,
label maps by hand), never copied from objpert's output.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from objpert._data import (
    NORM_RTOL,
    PreparedData,
    add_intercept,
    as_feature_matrix,
    as_targets,
    bound_rows,
    encode_binary,
    prepare,
    row_norms,
    total_norm,
)
from objpert.exceptions import DataError, ObjpertError


def _rows(n: int = 40, d: int = 5, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    """Rows of norms spread over (0.1, 3) * scale: some below 1, some above."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X * rng.uniform(0.1, 3.0, size=(n, 1)) * scale


def _labels(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).choice([0, 1], size=n)


def _dense(M) -> np.ndarray:
    return M.toarray() if sparse.issparse(M) else np.asarray(M)


# --------------------------------------------------------------------- as_feature_matrix


def test_feature_matrix_is_c_contiguous_float64():
    X = np.asfortranarray(np.arange(12, dtype=np.int32).reshape(4, 3))
    M = as_feature_matrix(X)
    assert M.dtype == np.float64 and M.flags.c_contiguous
    np.testing.assert_array_equal(M, X.astype(float))


@pytest.mark.parametrize(
    ("positions", "values"),
    [
        ([(0, 0)], [np.nan]),
        ([(1, 2), (3, 0)], [np.inf, -np.inf]),
        ([(0, 1), (2, 2), (3, 1)], [np.nan, np.inf, np.nan]),
    ],
)
def test_non_finite_features_refused_with_their_count(positions, values):
    X = np.ones((4, 3))
    for (i, j), v in zip(positions, values, strict=True):
        X[i, j] = v
    with pytest.raises(DataError, match=rf"\b{len(positions)} non-finite values"):
        as_feature_matrix(X)
    with pytest.raises(DataError, match=rf"\b{len(positions)} non-finite values"):
        as_feature_matrix(sparse.csr_matrix(X))
    with pytest.raises(DataError, match=rf"\b{len(positions)} non-finite values"):
        prepare(X, [0, 1, 0, 1], data_norm=1.0)


@pytest.mark.parametrize(
    "X",
    [np.ones(5), np.ones((2, 2, 2)), np.float64(3.0)],
    ids=["1-D", "3-D", "scalar"],
)
def test_features_must_be_two_dimensional(X):
    with pytest.raises(DataError, match="2-D"):
        as_feature_matrix(X)


@pytest.mark.parametrize(
    "X",
    [np.zeros((0, 3)), np.zeros((3, 0)), sparse.csr_matrix((0, 4)), sparse.csr_matrix((4, 0))],
    ids=["no-rows", "no-columns", "sparse-no-rows", "sparse-no-columns"],
)
def test_empty_features_refused(X):
    with pytest.raises(DataError, match="at least one row and one column"):
        as_feature_matrix(X)


def test_non_numeric_array_refused():
    with pytest.raises(DataError, match="numeric"):
        as_feature_matrix(np.array([["a", "b"], ["c", "d"]], dtype=object))


@pytest.mark.parametrize(
    "column",
    [
        ["x", "y", "z"],  # pandas' default text dtype (str from pandas 3, object before)
        np.array(["x", "y", "z"], dtype=object),
        pd.array(["x", "y", "z"], dtype="string"),
        pd.Categorical(["x", "y", "x"]),
    ],
    ids=["default-text", "object", "string", "categorical"],
)
def test_dataframe_with_text_column_refused_naming_it(column):
    df = pd.DataFrame({"age": [1.0, 2.0, 3.0], "city_name": column, "ok": [1, 2, 3]})
    with pytest.raises(DataError) as info:
        as_feature_matrix(df)
    assert "city_name" in str(info.value)
    assert "'age'" not in str(info.value) and "'ok'" not in str(info.value)


@pytest.mark.parametrize(
    "make", [np.asarray, pd.DataFrame, sparse.csr_matrix], ids=["array", "frame", "sparse"]
)
def test_complex_features_refused_not_cut_to_their_real_part(make):
    """numpy would drop the imaginary parts (rows of norm 10 passing as norm 0.1) with a
    ComplexWarning only: complex features are a DataError, at the contract and at an
    estimator's fit and predict, quoting no value."""
    import warnings

    from objpert import PrivateLogisticRegression

    real = np.full((20, 2), 0.05)
    X = make(real + 7j)
    with pytest.raises(DataError, match="real numbers"):
        as_feature_matrix(X)
    y = np.arange(20) % 2
    model = PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1])
    with pytest.raises(DataError, match="real numbers"):
        model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(real, y)
    with pytest.raises(DataError, match="real numbers"):
        model.predict(X)


def test_dataframe_bool_and_numeric_accepted():
    df = pd.DataFrame(
        {
            "f": [0.5, -1.25, 2.0],
            "i": np.array([1, 2, 3], dtype=np.int16),
            "u": np.array([7, 0, 1], dtype=np.uint8),
            "b": [True, False, True],
            "nb": pd.array([False, True, True], dtype="boolean"),
            "ni": pd.array([4, 5, 6], dtype="Int64"),
        }
    )
    M = as_feature_matrix(df)
    expected = np.array(
        [[0.5, 1, 7, 1, 0, 4], [-1.25, 2, 0, 0, 1, 5], [2.0, 3, 1, 1, 1, 6]], dtype=float
    )
    assert isinstance(M, np.ndarray) and M.dtype == np.float64
    np.testing.assert_array_equal(M, expected)


def test_sparse_input_becomes_csr_float64():
    X = sparse.coo_matrix(np.array([[0, 2], [3, 0]], dtype=np.int64))
    M = as_feature_matrix(X)
    assert sparse.issparse(M) and M.format == "csr" and M.dtype == np.float64
    np.testing.assert_array_equal(M.toarray(), [[0.0, 2.0], [3.0, 0.0]])


# --------------------------------------------------------------------- labels


@pytest.mark.parametrize(
    ("y", "classes", "expected"),
    [
        ([0, 1, 1, 0], [0, 1], [-1, 1, 1, -1]),
        ([1, -1, -1, 1], [-1, 1], [1, -1, -1, 1]),
        ([1.0, -1.0, 1.0], [-1.0, 1.0], [1, -1, 1]),
        ([True, False, True], [False, True], [1, -1, 1]),
        (["spam", "ham", "spam"], ["ham", "spam"], [1, -1, 1]),
        (["no", "yes", "yes", "no"], ["no", "yes"], [-1, 1, 1, -1]),
        ([3, 7, 7], [3, 7], [-1, 1, 1]),
    ],
)
@pytest.mark.filterwarnings("ignore::objpert.exceptions.PrivacyLeakWarning")
def test_binary_labels_map_to_minus_one_plus_one_sorted(y, classes, expected):
    for form in (y, np.asarray(y), pd.Series(y), np.asarray(y)[:, None]):
        yy, cls = encode_binary(form)
        assert yy.dtype == np.float64 and yy.ndim == 1
        np.testing.assert_array_equal(yy, np.asarray(expected, dtype=float))
        assert cls.tolist() == classes
        # classes[1] -> +1, classes[0] -> -1, by the definition, element by element
        raw = np.asarray(y)
        np.testing.assert_array_equal(yy, np.where(raw == cls[1], 1.0, -1.0))


@pytest.mark.parametrize(
    "y",
    [["a"], [0, 1, 2], ["a", "b", "c", "a"]],
    ids=["one-label", "three-ints", "three-strings"],
)
def test_binary_labels_need_exactly_two_classes(y):
    k = len(set(y))
    with pytest.raises(DataError, match=rf"exactly two classes; got {k}"):
        encode_binary(y)


def test_binary_labels_refuse_non_finite_and_matrices():
    with pytest.raises(DataError, match="non-finite"):
        encode_binary([0.0, 1.0, np.nan])
    with pytest.raises(DataError, match="1-D"):
        encode_binary(np.zeros((3, 2)))


def test_real_targets():
    y = as_targets([[1.5], [-2.0], [0.0]])
    assert y.dtype == np.float64 and y.shape == (3,)
    np.testing.assert_array_equal(y, [1.5, -2.0, 0.0])
    np.testing.assert_array_equal(as_targets(pd.Series([1, 2])), [1.0, 2.0])
    with pytest.raises(DataError, match="non-finite"):
        as_targets([1.0, np.inf])
    with pytest.raises(DataError, match="numeric"):
        as_targets(["a", "b"])
    with pytest.raises(DataError, match="1-D"):
        as_targets(np.zeros((2, 2)))


def test_length_mismatch_refused():
    X = _rows(10, 3)
    with pytest.raises(DataError, match=r"10 rows but y has 9 labels"):
        prepare(X, _labels(9), data_norm=1.0)
    with pytest.raises(DataError, match=r"10 rows but y has 11 labels"):
        prepare(X, np.zeros(11), data_norm=1.0, labels="real")


def test_unknown_label_kind_refused():
    with pytest.raises(DataError, match="labels must be"):
        prepare(_rows(4, 2), [0, 1, 0, 1], data_norm=1.0, labels="multiclass")


def test_errors_are_objpert_errors():
    assert issubclass(DataError, ObjpertError) and issubclass(DataError, ValueError)


# --------------------------------------------------------------------- bounding rows


@pytest.mark.parametrize("zeta", [0.5, 1.0, 2.5])
@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_rows_above_bound_clipped_to_exactly_the_bound(zeta, fmt):
    X = _rows(60, 4, seed=3)
    norms = np.linalg.norm(X, axis=1)
    over = norms > zeta
    assert 0 < over.sum() < len(X)
    given = X.copy() if fmt == "dense" else sparse.csr_matrix(X)
    before = _dense(given).copy()
    M, count = bound_rows(given, zeta, clip=True)
    assert count == int(over.sum())
    assert sparse.issparse(M) == (fmt == "csr")
    D = _dense(M)
    new_norms = np.linalg.norm(D, axis=1)
    np.testing.assert_allclose(new_norms[over], zeta, rtol=1e-12, atol=0)
    # clipped rows keep their direction
    np.testing.assert_allclose(D[over], X[over] * (zeta / norms[over])[:, None], rtol=1e-14)
    # other rows untouched, bit for bit
    np.testing.assert_array_equal(D[~over], X[~over])
    assert np.all(new_norms <= zeta * (1 + NORM_RTOL))
    np.testing.assert_array_equal(_dense(given), before)  # input not modified


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_rows_above_bound_refused_without_clip_naming_the_count(fmt):
    X = _rows(50, 3, seed=4)
    expected = int(np.sum(np.linalg.norm(X, axis=1) > 1.0))
    assert expected > 1
    given = X if fmt == "dense" else sparse.csr_matrix(X)
    with pytest.raises(DataError, match=rf"^{expected} rows have norm above data_norm = 1\b"):
        bound_rows(given, 1.0, clip=False)
    with pytest.raises(DataError, match=rf"^{expected} rows have norm above"):
        prepare(given, _labels(50), data_norm=1.0, clip=False)


def test_rows_within_bound_returned_unchanged():
    X = _rows(30, 3, seed=5, scale=0.3)  # norms < 0.9
    M, count = bound_rows(X, 1.0, clip=False)
    assert count == 0
    np.testing.assert_array_equal(M, X)


@pytest.mark.parametrize("zeta", [1.0, 0.3, 7.0])
def test_rows_at_the_bound_after_rounding_accepted(zeta):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(20, 6))
    X *= (zeta / np.linalg.norm(X, axis=1))[:, None]
    X[0] *= 1.0 + 1e-15  # norm zeta (1 + 1e-15): rounding of a row at the bound
    X[1] = 0.0
    X[1, 2] = zeta * (1.0 + 1e-15)
    assert np.linalg.norm(X[1]) > zeta
    for given in (X, sparse.csr_matrix(X)):
        M, count = bound_rows(given, zeta, clip=False)
        assert count == 0
        np.testing.assert_array_equal(_dense(M), X)
    # and a genuine violation, 1e-9 relative, is not rounding
    X[2] *= 1.0 + 1e-9
    with pytest.raises(DataError, match=r"^1 rows have norm above"):
        bound_rows(X, zeta, clip=False)


def test_row_norms_dense_and_sparse():
    X = _rows(25, 7, seed=8)
    X[X < -0.2] = 0.0  # make it genuinely sparse
    ref = np.linalg.norm(X, axis=1)
    np.testing.assert_allclose(row_norms(X), ref, rtol=1e-14)
    np.testing.assert_allclose(row_norms(sparse.csr_matrix(X)), ref, rtol=1e-14)


@pytest.mark.parametrize("bad", [0.0, -1.0, np.nan, np.inf, True, 10**400])
def test_bound_must_be_positive_and_finite(bad):
    """At the door: the estimator's constraints refuse the bound before any row is read."""
    from objpert.estimators import PrivateLogisticRegression

    with pytest.raises(ObjpertError, match="data_norm"):
        PrivateLogisticRegression(epsilon=1.0, data_norm=bad).fit(_rows(4, 2), [0, 1, 0, 1])


# --------------------------------------------------------------------- intercept, zeta


def test_total_norm_is_hypot():
    for a, c in [(1.0, 1.0), (3.0, 4.0), (0.5, 2.0), (2.0, 0.0)]:
        assert total_norm(a, c) == pytest.approx(math.sqrt(a * a + c * c), rel=1e-15)


def test_add_intercept_dense_and_sparse():
    X = _rows(6, 3)
    D = add_intercept(X, 0.75)
    assert D.shape == (6, 4)
    np.testing.assert_array_equal(D[:, :3], X)
    np.testing.assert_array_equal(D[:, 3], np.full(6, 0.75))
    S = add_intercept(sparse.csr_matrix(X), 0.75)
    assert sparse.issparse(S) and S.format == "csr"
    np.testing.assert_array_equal(S.toarray(), D)


@pytest.mark.parametrize(("data_norm", "scaling"), [(1.0, None), (1.0, 0.25), (2.0, 3.0)])
def test_prepare_appends_intercept_and_states_zeta(data_norm, scaling):
    X = _rows(40, 5, seed=9)
    y = _labels(40)
    P = prepare(X, y, data_norm=data_norm, intercept_scaling=scaling)
    c = data_norm if scaling is None else scaling
    assert isinstance(P, PreparedData)
    assert (P.n, P.d) == (40, 6)
    assert P.intercept_scaling == c and P.data_norm == data_norm
    np.testing.assert_array_equal(P.X[:, -1], np.full(40, c))
    assert P.zeta == pytest.approx(math.sqrt(data_norm**2 + c**2), rel=1e-15)
    norms = np.linalg.norm(P.X, axis=1)
    assert np.all(norms <= P.zeta * (1 + NORM_RTOL))
    expected_clipped = int(np.sum(np.linalg.norm(X, axis=1) > data_norm))
    assert P.n_clipped == expected_clipped > 0
    # the feature block is the clipped X
    ref = X * np.minimum(1.0, data_norm / np.linalg.norm(X, axis=1))[:, None]
    np.testing.assert_allclose(P.X[:, :-1], ref, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(P.y, np.where(y == 1, 1.0, -1.0))
    assert P.classes.tolist() == [0, 1]


def test_prepare_without_intercept():
    X = _rows(20, 3, seed=10, scale=0.3)
    P = prepare(X, _labels(20), data_norm=1.0, fit_intercept=False)
    assert P.d == 3 and P.intercept_scaling == 0.0 and P.zeta == 1.0 and P.n_clipped == 0
    np.testing.assert_array_equal(P.X, X)


def test_prepare_real_targets():
    X = _rows(15, 2, seed=11)
    y = np.linspace(-3, 3, 15)
    P = prepare(X, y, data_norm=1.0, labels="real")
    assert P.classes is None
    np.testing.assert_array_equal(P.y, y)


@pytest.mark.parametrize("bad", [0.0, -2.0, np.nan, np.inf, True])
def test_bad_intercept_scaling_is_refused_at_the_door(bad):
    from objpert.estimators import PrivateLogisticRegression

    with pytest.raises(ObjpertError, match="intercept_scaling"):
        PrivateLogisticRegression(epsilon=1.0, data_norm=1.0, intercept_scaling=bad).fit(
            _rows(4, 2), [0, 1, 0, 1]
        )


def test_prepare_sparse_stays_sparse_and_matches_dense(monkeypatch):
    rng = np.random.default_rng(12)
    X = rng.normal(size=(80, 12)) * 0.8
    X[rng.random(X.shape) < 0.7] = 0.0
    y = np.array(["neg", "pos"])[_labels(80)]
    S = sparse.csr_matrix(X)

    def no_densify(*args, **kwargs):
        raise AssertionError("the sparse path densified the matrix")

    monkeypatch.setattr(sparse.csr_matrix, "toarray", no_densify)
    monkeypatch.setattr(sparse.csr_matrix, "todense", no_densify)
    Ps = prepare(S, y, data_norm=1.0, intercept_scaling=0.5)
    monkeypatch.undo()
    Pd = prepare(X, y, data_norm=1.0, intercept_scaling=0.5)
    assert sparse.issparse(Ps.X) and Ps.X.format == "csr"
    assert isinstance(Pd.X, np.ndarray)
    assert Ps.X.nnz <= np.count_nonzero(X) + 80  # features' nonzeros plus the intercept
    assert Ps.n_clipped == Pd.n_clipped > 0
    assert Ps.zeta == Pd.zeta
    np.testing.assert_allclose(Ps.X.toarray(), Pd.X, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(Ps.y, Pd.y)
    assert Ps.classes.tolist() == Pd.classes.tolist() == ["neg", "pos"]


@pytest.mark.parametrize("fmt", ["dense", "csr", "dataframe"])
def test_inputs_not_modified_in_place(fmt):
    X = _rows(30, 4, seed=13)
    y = _labels(30).astype(float)
    X0, y0 = X.copy(), y.copy()
    if fmt == "csr":
        given = sparse.csr_matrix(X)
        data0 = given.data.copy()
    elif fmt == "dataframe":
        given = pd.DataFrame(X, columns=list("abcd"))
    else:
        given = X
    P = prepare(given, y, data_norm=1.0, clip=True)
    assert P.n_clipped > 0
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    if fmt == "csr":
        np.testing.assert_array_equal(given.data, data0)
    if fmt == "dataframe":
        np.testing.assert_array_equal(given.to_numpy(), X0)
    # and nothing written through an alias later changes the caller's arrays
    M = P.X.toarray() if sparse.issparse(P.X) else P.X
    assert not np.shares_memory(M, X)
    assert not np.shares_memory(P.y, y)


def test_error_messages_name_the_fix():
    with pytest.raises(DataError, match=re.escape("clip=True")):
        bound_rows(np.array([[3.0, 4.0]]), 1.0, clip=False)


def test_row_norms_do_not_overflow_or_underflow_and_huge_rows_are_clipped_not_zeroed():
    X = np.array([[1e200, -1e200], [3.0, -4.0], [1e-200, 1e-200], [0.0, 0.0], [-1e300, 0.0]])
    want = [np.sqrt(2) * 1e200, 5.0, np.sqrt(2) * 1e-200, 0.0, 1e300]
    for form in (X, sparse.csr_matrix(X)):
        np.testing.assert_allclose(row_norms(form), want, rtol=1e-15)
        clipped, count = bound_rows(form, 1.0, clip=True)
        dense = clipped.toarray() if sparse.issparse(clipped) else clipped
        assert count == 3
        np.testing.assert_allclose(dense[0], [np.sqrt(0.5), -np.sqrt(0.5)], rtol=1e-15)
        np.testing.assert_allclose(dense[4], [-1.0, 0.0])


@pytest.mark.parametrize("dtype", ["datetime64[D]", "timedelta64[s]"])
def test_dates_and_times_are_not_features(dtype):
    from objpert import PrivateLogisticRegression

    X = np.arange(8).reshape(4, 2).astype(dtype)
    with pytest.raises(DataError, match="dates or times"):
        as_feature_matrix(X)
    with pytest.raises(DataError, match="dates or times"):
        PrivateLogisticRegression(classes=[0, 1], max_iter=10).fit(X, [0, 1, 0, 1])


def test_a_series_is_refused_as_one_dimensional_not_crashed_on():
    with pytest.raises(DataError, match="2-D"):
        as_feature_matrix(pd.Series([1.0, 2.0]))
