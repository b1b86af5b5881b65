"""The keyed layout (indicator columns as one key per row into a table of their patterns)
and the time budget on the engine the fit runs. Every gradient is checked against the
plain sum over the rows of X written here, the losses' derivatives typed out."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from objpert._engines import factory, shaped, timing
from objpert._engines.compiled import keyed_kernels
from objpert._engines.keyed import KeyedEngine, key_rows
from objpert._losses import get_loss
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import ParameterError

pytestmark = pytest.mark.filterwarnings("ignore")


def tabular(n: int, seed: int, dense: int = 2, levels=(5, 3, 2), intercept: bool = True):
    """``dense`` continuous columns, one-hot groups of ``levels`` levels (value 0.4, a
    group's level 0 all zeros), an intercept column of 0.5; rows of norm < 1."""
    rng = np.random.default_rng(seed)
    cols = [rng.uniform(-0.3, 0.3, size=(n, dense))]
    for k in levels:
        cols.append(0.4 * np.eye(k + 1)[rng.integers(0, k + 1, n)][:, 1:])
    if intercept:
        cols.append(np.full((n, 1), 0.5))
    return np.column_stack(cols), np.where(rng.random(n) < 0.5, -1.0, 1.0)


def reference(X, y, counts, w, name):
    """sum_i c_i l'(<x_i, w>, y_i) x_i."""
    t = X @ w
    d1 = -y / (1.0 + np.exp(y * t)) if name == "logistic" else (t - y)
    return X.T @ (counts * d1)


def keyed(X, counts=None, threads=1):
    """(engine, order) of X's rows sorted by key."""
    mask = shaped.indicator_columns(X)[0]
    key = key_rows(X, mask)[0]
    order = np.argsort(key, kind="stable")
    c = None if counts is None else counts[order]
    return KeyedEngine(X[order], mask, key[order], c, threads=threads), order


def rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_keys_number_the_distinct_patterns():
    X, _ = tabular(3000, 0)
    mask = shaped.indicator_columns(X)[0]
    key, K = key_rows(X, mask)
    patterns = {tuple(r) for r in (X[:, mask] != 0)}
    assert K == len(patterns) == len(np.unique(key)) and key.min() == 0 and key.max() == K - 1
    for k in range(K):  # one pattern per key, and each pattern under one key
        assert len({tuple(r) for r in (X[key == k][:, mask] != 0)}) == 1
    # more than 64 indicator columns: several words per row
    wide = np.column_stack([X, 0.1 * np.eye(80)[np.arange(3000) % 80]])
    wmask = shaped.indicator_columns(wide)[0]
    wkey, wK = key_rows(wide, wmask)
    assert wmask.sum() > 64 and wK == len({tuple(r) for r in (wide[:, wmask] != 0)})
    assert all(len({tuple(r) for r in (wide[wkey == k][:, wmask] != 0)}) == 1 for k in range(wK))


@pytest.mark.parametrize("backend", ["numba", "python"])
@pytest.mark.parametrize("name", ["logistic", "squared"])
def test_keyed_sweep_against_a_plain_sum(backend, name):
    X, y = tabular(1500, 1)
    counts = np.random.default_rng(2).integers(1, 5, len(X)).astype(float)
    w = np.random.default_rng(3).normal(size=X.shape[1])
    engine, order = keyed(X, counts)
    loss = get_loss(name)
    kernels = keyed_kernels(loss, backend=backend)
    if kernels is None:
        pytest.skip("numba is not installed")
    engine._kernels = (loss, kernels)
    got = engine.glm_gradient(w, y[order], loss)
    assert rel(got, reference(X, y, counts, w, name)) < 1e-13
    numpy_path = KeyedEngine.glm_gradient  # W (d, 1): the numpy products
    two = numpy_path(engine, w[:, None], y[order], loss)[:, 0]
    assert rel(two, reference(X, y, counts, w, name)) < 1e-13


def test_products_and_batches_equal_dense_ones():
    X, y = tabular(800, 4, dense=3, levels=(4, 6))
    engine, order = keyed(X)
    Xs = X[order]
    W = np.random.default_rng(5).normal(size=(X.shape[1], 3))
    R = np.random.default_rng(6).normal(size=(len(X), 3))
    np.testing.assert_allclose(engine.matvec(W), Xs @ W, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(engine.matvec(W[:, 0]), Xs @ W[:, 0], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(engine.rmatvec(R), Xs.T @ R, rtol=1e-13, atol=1e-12)
    loss = get_loss("logistic")
    Y = np.column_stack([y, -y, y])[order]
    got = engine.glm_gradient(W, Y, loss)
    for b in range(3):
        ref = reference(Xs, Y[:, b], np.ones(len(X)), W[:, b], "logistic")
        assert rel(got[:, b], ref) < 1e-13


def test_no_dense_column_and_no_indicator_column():
    X, y = tabular(600, 7, dense=0)
    engine, order = keyed(X)
    assert len(engine.dense_cols) == 0
    w = np.random.default_rng(8).normal(size=X.shape[1])
    loss = get_loss("logistic")
    got = engine.glm_gradient(w, y[order], loss)
    assert rel(got, reference(X, y, np.ones(len(X)), w, "logistic")) < 1e-13
    D = np.random.default_rng(9).normal(size=(300, 4))  # nothing to key: one key, all dense
    flat = KeyedEngine(D, np.zeros(4, bool), np.zeros(300, int), threads=1)
    yy = np.sign(D[:, 0])
    assert flat.keys == 1
    got = flat.glm_gradient(w[:4], yy, loss)
    assert rel(got, reference(D, yy, np.ones(300), w[:4], "logistic")) < 1e-13


def test_threads_change_nothing_and_releases_repeat_bit_for_bit():
    X, y = tabular(20000, 10)
    w = np.random.default_rng(11).normal(size=X.shape[1])
    loss = get_loss("logistic")
    grads = []
    for threads in (1, 2, None):  # the parts: max(8, cores) whatever the count
        engine, order = keyed(X, threads=threads)
        assert len(engine.cuts) - 1 >= 8  # the fixed parts, cut at key boundaries
        assert set(engine.cuts[1:-1]) <= set(engine.starts)
        grads.append(engine.glm_gradient(w, y[order], loss))
    for g in grads[1:]:
        np.testing.assert_array_equal(g, grads[0])
    again = pickle.loads(pickle.dumps(engine))
    np.testing.assert_array_equal(again.glm_gradient(w, y[order], loss), grads[0])


def test_unsorted_or_misnumbered_keys_are_refused():
    X, _ = tabular(50, 12)
    mask = shaped.indicator_columns(X)[0]
    key = key_rows(X, mask)[0]
    with pytest.raises(ParameterError, match="sorted"):
        KeyedEngine(X, mask, key)  # the rows in their own order
    with pytest.raises(ParameterError, match="numbered"):
        KeyedEngine(X[np.argsort(key)], mask, 2 * np.sort(key))
    with pytest.raises(ParameterError, match="counts"):
        KeyedEngine(X[np.argsort(key)], mask, np.sort(key), np.ones(3))
    with pytest.raises(ParameterError, match="mask"):
        KeyedEngine(X, mask[1:], np.sort(key))


def test_the_cost_model_keys_tabular_data_and_not_dense_data():
    X, y = tabular(6000, 13)
    engine, labels, shape = shaped.shape_engine(X, y)
    mask, nnz = shaped.indicator_columns(X)
    keys = len({tuple(r) for r in (X[:, mask] != 0)})
    fused = shaped.compiled_available()  # numba: the compiled sweep; else numpy's passes
    costs = {k: shaped.step_cost(len(X), mask, nnz, k, False, fused, keys)
             for k in shaped.LAYOUTS}  # fmt: skip
    per_row = (
        shaped.KEYED_ROW_COST + 2 * shaped.KEYED_DENSE_COST
        if fused
        else 2 * shaped.KEYED_ROW_COST + 2 * shaped.DENSE_TWO_PASS_COST
    )
    assert costs["keyed"] == len(X) * per_row + shaped.KEYED_KEY_COST * keys * int(mask.sum())
    best = min(costs, key=costs.__getitem__)
    pays = costs[best] <= shaped.SHAPING_PAYS * X.size
    assert shape.layout == (best if pays else "dense") and (shape.layout == "keyed") == fused
    dense = np.random.default_rng(14).normal(size=(2000, 5))
    assert shaped.shape_engine(dense, np.sign(dense[:, 0]))[2].layout == "dense"
    engine, labels, shape = shaped.shape_engine(X, y, layout="keyed")
    assert labels is None and shape.keys == keys
    loss = get_loss("logistic")
    w = np.random.default_rng(15).normal(size=X.shape[1])
    ref = reference(X, y, np.ones(len(X)), w, "logistic")
    assert rel(engine.glm_gradient(w, None, loss), ref) < 1e-13
    np.testing.assert_allclose(engine.matvec(w), X @ w, rtol=1e-13, atol=1e-14)
    np.testing.assert_array_equal(engine.labels(), y)


# ------------------------------------------------------------ the time budget


def test_seconds_per_step_times_the_engine_the_fit_runs(monkeypatch):
    seen = []
    real = timing.GLMObjective

    def recording(*args, **kw):
        seen.append((kw["engine"], kw["dtype"]))
        return real(*args, **kw)

    monkeypatch.setattr(timing, "GLMObjective", recording)
    for engine, dtype in [
        ("default", "float64"),
        ("xp", "float64"),
        ("default", "float32"),
        ("auto", "float64"),
        ("shaped", "float64"),
        ("auto", "float32"),
    ]:
        assert timing.seconds_per_step(500, 6, steps=1, engine=engine, dtype=dtype) > 0
    assert seen == [
        ("default", "float64"),
        ("xp", "float64"),
        ("default", "float32"),
        ("default", "float64"),
        ("default", "float64"),
        ("default", "float32"),
    ]
    assert timing.timed_engine("gpu", "float32") == ("gpu", "float32")  # no device needed
    with pytest.raises(ParameterError, match="engine"):
        timing.seconds_per_step(500, 6, engine="fast")
    with pytest.raises(ParameterError, match="float64"):
        timing.seconds_per_step(500, 6, engine="shaped", dtype="float32")


def test_a_device_engine_is_timed_through_its_descent(monkeypatch):
    from objpert._engines.xp import XPEngine

    calls = []
    descend = XPEngine.descend

    def recording(self, z, eta, iterations, *rest):
        calls.append(iterations)
        return descend(self, z, eta, iterations, *rest)

    monkeypatch.setattr(XPEngine, "descend", recording, raising=False)
    monkeypatch.setattr(XPEngine, "glm_gradient", None)  # a step must go through descend
    assert timing.seconds_per_step(400, 5, steps=2, engine="xp") > 0
    assert calls == [1, 1, 1]


def test_the_time_budget_reads_the_public_shape_and_the_declared_engine(monkeypatch):
    """Two data sets of one shape, one tabular (the keyed layout pays) and one dense: the
    same step is timed for both (the private rows choose neither the engine timed nor N),
    and the engine declared is the one timed."""
    from objpert.estimators import _time_budget as time_budget

    seen = []

    def fake(n, d, loss, *, draws, n_jobs, engine, dtype):
        seen.append((n, d, loss, draws, n_jobs, timing.timed_engine(engine, dtype)))
        return 0.004

    monkeypatch.setattr(time_budget, "seconds_per_step", fake)
    X, y = tabular(3000, 16)
    dense = np.random.default_rng(17).uniform(-0.2, 0.2, size=X.shape)
    fits = []
    for data in (X, dense):
        for engine in ("auto", "default"):
            m = PrivateLogisticRegression(data_norm=1.5, classes=[-1, 1], max_seconds=4.0,
                                          random_state=0, engine=engine)  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits.append(m.fit(data, y))
    assert len(set(seen)) == 1 and seen[0][-1] == ("default", "float64")
    assert len({(m.max_iter_used_, m.n_iter_[0]) for m in fits}) == 1
    m = PrivateLogisticRegression(data_norm=1.5, classes=[-1, 1], max_seconds=4.0, engine="xp",
                                  random_state=0).fit(X, y)  # fmt: skip
    assert seen[-1][-1] == ("xp", "float64") and m.max_iter_used_ == 1000


def test_compiled_shaping_passes_equal_the_numpy_ones(monkeypatch):
    if shaped._compiled() is None:
        pytest.skip("numba is not installed")
    X, y = tabular(3000, 18)
    X = X[np.random.default_rng(19).integers(0, 400, 3000)]  # duplicates to merge
    X[7, 0] = -0.0  # a signed zero is a zero
    keys = X.view(np.uint64)
    rows = shaped.merge_rows(X, y)
    compiled = (shaped._row_hash(keys), shaped.indicator_columns(X), rows)
    monkeypatch.setattr(shaped, "_compiled", lambda: None)
    numpy = (shaped._row_hash(keys), shaped.indicator_columns(X), shaped.merge_rows(X, y))
    np.testing.assert_array_equal(compiled[0], numpy[0])
    for a, b in zip((*compiled[1], *compiled[2]), (*numpy[1], *numpy[2]), strict=True):
        np.testing.assert_array_equal(a, b)
    first = np.arange(3000)
    assert shaped._rows_match(keys, first, np.arange(3000))
    monkeypatch.undo()
    assert shaped._rows_match(keys, first, np.arange(3000))
    assert not shaped._rows_match(keys, first, np.zeros(3000, np.int64))


def test_an_estimator_on_keyed_rows_repeats_and_equals_the_default_engine():
    """engine="auto" on tabular rows (the keyed layout): the same seed gives the same
    weights bit for bit, the default engine's to 1e-12, the same certificate."""
    X, y = tabular(4000, 20)
    X = X[np.random.default_rng(21).integers(0, 1500, 4000)]  # duplicates to merge

    def fit(engine):
        m = PrivateLogisticRegression(data_norm=1.5, classes=[-1, 1], random_state=0,
                                      max_iter=700, engine=engine)  # fmt: skip
        return m.fit(X, y)

    assert shaped.shape_engine(X, y)[2].layout == "keyed" or not shaped.compiled_available()
    a, b, ref = fit("auto"), fit("auto"), fit("default")
    assert a.n_iter_[0] >= factory.AUTO_MIN_STEPS  # long enough to be shaped
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    assert rel(a.coef_, ref.coef_) < 1e-12 and rel(a.intercept_, ref.intercept_) < 1e-12
    assert a.certificate_ == ref.certificate_
