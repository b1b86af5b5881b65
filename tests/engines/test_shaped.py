"""Engines shaped by the data: merged duplicate rows, one-hot columns as CSR, the split
layout. Every variant gives the w_N of a plain float64 loop over all n rows (written
here, the losses' derivatives typed out) to 1e-12 relative."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy import sparse

from objpert._engines import GLMObjective
from objpert._engines.factory import build_engine
from objpert._engines.shaped import (
    CSR_ENTRY_COST,
    DENSE_TWO_PASS_COST,
    LAYOUTS,
    SplitEngine,
    WeightedEngine,
    choose_layout,
    indicator_columns,
    merge_rows,
    shape_engine,
    step_cost,
)
from objpert._losses import get_loss
from objpert.certify import _calibration as calibration
from objpert.exceptions import ParameterError
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, run_gradient_descent

SCALE, MU, ETA, STEPS = 0.7, 0.1, 0.9, 80


def reference_d1(name, t, y):
    if name == "logistic":
        return -y / (1.0 + np.exp(y * t))
    return (t - y) / np.sqrt(1.0 + ((t - y) / SCALE) ** 2)


def reference_descent(name, X, y, z):
    """Eq. (4) over every row of X, one row at a time in the gradient's sum."""
    n = len(X)
    w = np.zeros_like(z)
    for _ in range(STEPS):
        m = X @ w
        yy = y if m.ndim == 1 or y.ndim == 2 else y[:, None]
        g = X.T @ reference_d1(name, m, yy) / n + MU * w + z
        w = w - ETA * g
    return w


def tabular(n: int, seed: int, name: str = "logistic", pool: int | None = None):
    """Two continuous columns and two one-hot groups (6 and 4 levels, value 0.5), rows of
    norm <= 1; with ``pool``, every row (and label) drawn from ``pool`` distinct ones."""
    rng = np.random.default_rng(seed)
    m = n if pool is None else pool
    cont = rng.uniform(-0.4, 0.4, size=(m, 2))
    oh = np.hstack([np.eye(6)[rng.integers(0, 6, m)], np.eye(4)[rng.integers(0, 4, m)]]) * 0.5
    X = np.column_stack([cont, oh])
    y = np.sign(rng.normal(size=m)) if name == "logistic" else rng.normal(size=m)
    if pool is not None:
        pick = rng.integers(0, pool, n)
        X, y = X[pick], y[pick]
    return X, y, rng.normal(size=X.shape[1])


@functools.cache
def case(name: str, n: int):
    """Data with n/8 distinct (row, label) pairs and the reference w_N."""
    X, y, z = tabular(n, 4, name, pool=n // 8)
    return X, y, z, reference_descent(name, X, y, z)


def loss_of(name):
    return get_loss(name, scale=SCALE) if name == "robust" else get_loss(name)


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_merge_rows_is_exact():
    X, y, _ = tabular(5000, 0, pool=300)
    y2 = np.column_stack([y, -y])
    for labels in (y, y2):
        Xu, yu, counts, inverse = merge_rows(X, labels)
        assert len(Xu) <= 300 and counts.sum() == len(X)
        np.testing.assert_array_equal(Xu[inverse], X)
        np.testing.assert_array_equal(yu[inverse], labels)
        np.testing.assert_array_equal(counts, np.bincount(inverse))
        assert len({(*r, *np.atleast_1d(t)) for r, t in zip(X, labels, strict=True)}) == len(Xu)


def test_hash_collisions_fall_back_to_the_bytes(monkeypatch):
    """Every row hashed alike: the merge compares the rows themselves, still exact."""
    from objpert._engines import shaped

    X, y, _ = tabular(2000, 14, pool=100)
    expected = merge_rows(X, y)
    monkeypatch.setattr(shaped, "_row_hash", lambda keys: np.zeros(len(keys), np.uint64))
    got = merge_rows(X, y)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_same_row_other_label_is_kept_apart():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    Xu, yu, counts, _ = merge_rows(X, np.array([1.0, -1.0, 1.0]))
    assert len(Xu) == 2 and sorted(zip(yu, counts, strict=True)) == [(-1.0, 1.0), (1.0, 2.0)]


def test_indicator_columns_against_a_column_loop():
    X, _, _ = tabular(3000, 1)
    X[5, 7] = 0.25  # column 7 now has two non-zero values
    mask, nnz = indicator_columns(X, chunk=700)
    for j in range(X.shape[1]):
        values = set(X[:, j][X[:, j] != 0].tolist())
        assert mask[j] == (len(values) <= 1)
        assert nnz[j] == np.count_nonzero(X[:, j])


def test_layout_rule():
    X, _, _ = tabular(3000, 2)
    mask, nnz = indicator_columns(X)
    layout, cost = choose_layout(len(X), mask, nnz)
    assert layout in ("csr", "split") and cost == step_cost(len(X), mask, nnz, layout, False)
    assert cost < min(step_cost(len(X), mask, nnz, k, False) for k in LAYOUTS if k != layout)
    # split: 2 continuous columns in two passes, 2 one-hot entries per row in CSR
    assert step_cost(len(X), mask, nnz, "split", False) == len(X) * (
        2 * DENSE_TWO_PASS_COST + 2 * CSR_ENTRY_COST
    )
    dense = np.random.default_rng(3).normal(size=(500, 6))
    _, _, shape = shape_engine(dense, np.ones(500))
    assert shape.layout == "dense" and not shape.merged and shape.rows == 500


@pytest.mark.parametrize("name", ["logistic", "robust"])
@pytest.mark.parametrize("layout", [*LAYOUTS, None])
@pytest.mark.parametrize("merge", [True, False, None])
@pytest.mark.parametrize("n", [2000, 40000])  # small: plain engines; large: blocked ones
def test_every_variant_gives_the_reference_release(name, layout, merge, n):
    X, y, z, ref = case(name, n)
    engine, labels, shape = shape_engine(X, y, merge=merge, layout=layout)
    assert shape.merged == (merge is not False)  # n/8 unique rows: merging pays
    # merged rows, and the keyed layout's rows sorted by key, are held with their labels
    assert isinstance(engine, WeightedEngine) == (shape.merged or shape.layout == "keyed")
    w = run_gradient_descent(GLMObjective(engine, labels, loss_of(name), MU), z, ETA, STEPS)
    assert rel(w, ref) < 1e-12


def test_batched_and_per_column_labels():
    X, y, _ = tabular(3000, 5, pool=200)
    Z = np.random.default_rng(6).normal(size=(X.shape[1], 3))
    Y = np.column_stack([y, -y, np.where(X[:, 2] > 0, 1.0, -1.0)])
    for labels in (y, Y):
        engine, held, _ = shape_engine(X, labels, merge=True, layout="split")
        w = run_gradient_descent(GLMObjective(engine, held, loss_of("logistic"), MU), Z, ETA, 30)
        ref = run_gradient_descent(GLMObjective(X, labels, loss_of("logistic"), MU), Z, ETA, 30)
        assert rel(w, ref) < 1e-12


def test_values_and_hessian_products_of_the_full_data():
    X, y, _ = tabular(2000, 7, pool=150)
    engine, held, _ = shape_engine(X, y, merge=True, layout="csr")
    shaped, plain = GLMObjective(engine, held, "logistic", MU), GLMObjective(X, y, "logistic", MU)
    w, v = np.random.default_rng(8).normal(size=(2, X.shape[1]))
    assert shaped.value(w) == pytest.approx(plain.value(w), rel=1e-13)
    np.testing.assert_allclose(shaped.hvp(w, v), plain.hvp(w, v), rtol=1e-12)
    R = np.random.default_rng(9).normal(size=len(X))
    np.testing.assert_allclose(engine.rmatvec(R), X.T @ R, rtol=1e-12, atol=1e-12)


def test_split_engine_products():
    X, _, _ = tabular(1000, 10)
    mask, _ = indicator_columns(X)
    e = SplitEngine(X, mask)
    W = np.random.default_rng(11).normal(size=(X.shape[1], 2))
    np.testing.assert_allclose(e.matvec(W), X @ W, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(e.rmatvec(X @ W), X.T @ (X @ W), rtol=1e-13)


def test_sparse_input_and_refusals():
    X, y, _ = tabular(500, 12)
    engine, labels, shape = shape_engine(sparse.csr_matrix(X), y)
    assert shape.layout == "csr" and not shape.merged
    np.testing.assert_array_equal(labels, y)
    np.testing.assert_allclose(engine.matvec(np.ones(X.shape[1])), X.sum(axis=1), rtol=1e-14)
    with pytest.raises(ParameterError, match="layout"):
        shape_engine(X, y, layout="diagonal")
    with pytest.raises(ParameterError, match="float64"):
        build_engine(X, y, engine="shaped", dtype="float32")
    with pytest.raises(ParameterError, match="engine"):
        build_engine(X, y, engine="quantum")
    with pytest.raises(ParameterError, match="dense"):
        build_engine(sparse.csr_matrix(X), y, engine="xp")
    engine, _, _ = shape_engine(X, y, merge=True)
    with pytest.raises(ParameterError, match="labels"):
        engine.glm_gradient(np.zeros(X.shape[1]), y, loss_of("logistic"))


@functools.cache
def plan():
    X, _, _ = tabular(4000, 13, pool=500)
    zeta = float(np.max(np.linalg.norm(X, axis=1)))
    return calibration.tight("logistic", n=4000, d=X.shape[1], zeta=max(zeta, 1.0),
                             epsilon=2.0, delta=1e-5, mu=0.1, max_iter=400,
                             objective="empirical")  # fmt: skip


@pytest.mark.filterwarnings("ignore")
def test_release_through_the_mechanism():
    """engine="shaped": the default engine's release for the same seed, same certificate."""
    X, y, _ = tabular(4000, 13, pool=500)
    base = perturbed_gradient_descent(X, y, plan(), rng=5)
    got = perturbed_gradient_descent(X, y, plan(), rng=5, engine="shaped")
    assert rel(got.weights, base.weights) < 1e-12
    assert got.certificate == base.certificate and got.iterations == base.iterations
