"""The Dask engine: releases and fits on a 2-worker cluster equal the in-memory ones, and
gradient steps sent straight to the workers equal those of a task graph."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from objpert._data import for_plan  # noqa: E402
from objpert._data.distributed import (  # noqa: E402
    for_plan_dask,
    from_csv,
    from_parquet,
    map_rows,
)
from objpert._engines.distributed import DaskEngine  # noqa: E402
from objpert._engines.distributed_direct import pins  # noqa: E402
from objpert._engines.glm import GLMObjective  # noqa: E402
from objpert._losses import get_loss  # noqa: E402
from objpert.apps._bench.dask_engine import bench_dask  # noqa: E402
from objpert.certify._calibration import tight  # noqa: E402
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression  # noqa: E402
from objpert.exceptions import DataError  # noqa: E402
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")

N, D = 400, 4
EST = dict(epsilon=4.0, delta=1e-5, mu=1.0, data_norm=1.0, max_iter=20, random_state=7)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()  # rows of norm <= 1
    w = np.array([1.0, -2.0, 0.5, 0.0])
    y = np.where(X @ w + 0.1 * rng.normal(size=N) > 0, "yes", "no")
    t = X @ w + 0.3 * rng.normal(size=N)
    k = np.digitize(X[:, 0], [-0.1, 0.1])  # three classes
    return X, y, t, k


@pytest.fixture(scope="module")
def plans():
    common = dict(n=N, d=D, zeta=1.0, epsilon=2.0, delta=1e-5, comparator_norm=3.0, mu=1.0)
    return {
        loss: tight(loss, max_iter=20, objective="empirical", **common)
        for loss in ("logistic", "robust")
    }


def chunked(X, rows=(90, 110, 130, 70)):
    """Uneven row partitions and two column chunks (merged by the engine)."""
    return da.from_array(X, chunks=(rows, (2, X.shape[1] - 2)) if X.ndim == 2 else (rows,))


def close(a, b, rel=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    assert np.max(np.abs(a - b)) <= rel * np.max(np.abs(b))


@pytest.mark.parametrize("loss", ["logistic", "robust"])
def test_release_equals_in_memory_release(client, data, plans, loss):
    X, y, t, _ = data
    labels = y if loss == "logistic" else t
    ref = perturbed_gradient_descent(X, labels, plans[loss], rng=3)
    got = perturbed_gradient_descent(chunked(X), chunked(labels), plans[loss], rng=3)
    close(got.weights, ref.weights)
    assert got.iterations == ref.iterations and got.n_clipped == 0


def test_engine_products_and_determinism(client, data):
    X, y, _, _ = data
    engine, none, clipped = for_plan(
        chunked(X), chunked(y), n=N, d=D, zeta=1.0, label_kind="binary", clip=False
    )
    assert isinstance(engine, DaskEngine) and none is None and clipped == 0
    assert engine.partitions == 4 and engine.lengths == (90, 110, 130, 70)
    W = np.random.default_rng(1).normal(size=(D, 3))
    close(engine.matvec(W), X @ W)
    R = np.arange(N, dtype=float)
    close(engine.rmatvec(R), X.T @ R)
    yy = np.where(y == "yes", 1.0, -1.0)
    loss = get_loss("logistic")
    close(engine.glm_gradient(W, None, loss), X.T @ loss.d1(X @ W, yy[:, None]))
    g1, g2 = engine.glm_gradient(W[:, 0], None, loss), engine.glm_gradient(W[:, 0], None, loss)
    assert np.array_equal(g1, g2)  # fixed reduction order: bit for bit
    objective = GLMObjective(engine, None, loss, 0.5)  # labels held by the engine
    reference = GLMObjective(X, yy, loss, 0.5)
    close(objective.gradient(W[:, 0]), reference.gradient(W[:, 0]))
    close(objective.value(W[:, 0]), reference.value(W[:, 0]))


def test_estimators_on_dask_equal_numpy_fits(client, data):
    X, y, t, k = data
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    ddf = dd.from_pandas(frame, npartitions=3)
    for labels in (y, k):  # binary (string labels) and one-vs-rest
        ref = PrivateLogisticRegression(**EST, multi_class="ovr").fit(frame, labels)
        got = PrivateLogisticRegression(**EST, multi_class="ovr").fit(
            ddf, dd.from_pandas(pd.Series(labels), 3)
        )
        close(got.coef_, ref.coef_)
        close(got.intercept_, ref.intercept_)
        assert list(got.classes_) == list(ref.classes_)
        assert list(got.feature_names_in_) == ["a", "b", "c", "d"]
        pred = got.predict(ddf)
        assert isinstance(pred, da.Array)
        assert np.array_equal(pred.compute(), ref.predict(frame))
        close(got.predict_proba(ddf).compute(), ref.predict_proba(frame))
    ref = PrivateLogisticRegression(**EST).fit(frame, y)
    got = PrivateLogisticRegression(**EST).set_params(client=client).fit(sparse.csr_matrix(X), y)
    close(got.coef_, ref.coef_)  # CSR partitions scattered to the cluster
    ref = PrivateRobustRegression(**EST).fit(X, t)
    got = PrivateRobustRegression(**EST).fit(chunked(X), chunked(t))
    close(got.coef_, ref.coef_)
    close(got.predict(chunked(X)).compute(), ref.predict(X))
    # in-memory input fitted on the cluster when a client is given
    close(PrivateRobustRegression(**EST).set_params(client=client).fit(X, t).coef_, ref.coef_)


def test_lazy_parquet_and_csv(client, data, tmp_path):
    X, y, _, _ = data
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(label=y)
    for i, part in enumerate(np.array_split(np.arange(N), 3)):
        frame.iloc[part].to_parquet(tmp_path / f"part{i}.parquet")
        frame.iloc[part].to_csv(tmp_path / f"part{i}.csv", index=False)
    ref = PrivateLogisticRegression(**EST).fit(frame[["a", "b", "c", "d"]], y)
    for reader, pattern in ((from_parquet, "*.parquet"), (from_csv, "*.csv")):
        Xd, yd = reader(str(tmp_path / pattern), None, "label")
        assert list(Xd.columns) == ["a", "b", "c", "d"]
        got = PrivateLogisticRegression(**EST).fit(Xd, yd)
        close(got.coef_, ref.coef_)
    got = PrivateLogisticRegression(**EST).fit(Xd, y)  # in-memory labels, CSV sizes unknown
    close(got.coef_, ref.coef_)
    Xd, yd = from_csv(str(tmp_path / "*.csv"), ["a", "c"], "label")
    assert list(Xd.columns) == ["a", "c"]


def test_bad_input_is_refused(client, data, plans):
    X, y, t, _ = data
    bad = X.copy()
    bad[300, 1], bad[310, 2] = np.nan, np.inf  # both in the third partition
    with pytest.raises(DataError, match="2 non-finite"):
        perturbed_gradient_descent(chunked(bad), chunked(y), plans["logistic"], rng=0)
    big = X.copy()
    big[[5, 250]] *= 2.0 / np.linalg.norm(big[[5, 250]], axis=1, keepdims=True)
    with pytest.raises(DataError, match="2 rows have norm above"):
        perturbed_gradient_descent(chunked(big), chunked(y), plans["logistic"], rng=0, clip=False)
    clipped = perturbed_gradient_descent(
        chunked(big), chunked(y), plans["logistic"], rng=0, clip=True
    )
    assert clipped.n_clipped == 2
    close(
        clipped.weights,
        perturbed_gradient_descent(big, y, plans["logistic"], rng=0, clip=True).weights,
    )
    three = y.copy()
    three[399] = "maybe"
    with pytest.raises(DataError, match="exactly two classes"):
        perturbed_gradient_descent(chunked(X), chunked(three), plans["logistic"], rng=0)
    nan_t = t.copy()
    nan_t[0] = np.nan
    with pytest.raises(DataError, match="non-finite"):
        perturbed_gradient_descent(chunked(X), chunked(nan_t), plans["robust"], rng=0)
    with pytest.raises(DataError, match="public n and d"):
        perturbed_gradient_descent(
            da.from_array(X[:-10], 100), da.from_array(y[:-10], 100), plans["logistic"], rng=0
        )
    with pytest.raises(DataError, match="rows but y has"):
        perturbed_gradient_descent(chunked(X), da.from_array(y[:-1]), plans["logistic"], rng=0)
    with pytest.raises(DataError, match="numeric"):
        PrivateLogisticRegression(**EST).fit(
            dd.from_pandas(pd.DataFrame({"a": ["x"] * 4}), 2), y[:4]
        )


def test_direct_steps_equal_task_graph_steps(client, data, monkeypatch):
    """Steps over the workers' sockets, over Dask messages and as task graphs: the numpy
    gradient; a lost socket or a moved partition sends the step through the task graph."""
    from objpert._engines import distributed_direct

    X, y, _, _ = data
    s = np.where(y == "yes", 1.0, -1.0)
    loss = get_loss("logistic")
    common = dict(n=N, d=D, zeta=1.0, label_kind="binary", clip=False, client=client)
    fast, _, _ = for_plan_dask(da.from_array(X, chunks=100), s, **common)
    mid, _, _ = for_plan_dask(X, s, partitions=3, **common)
    slow, _, _ = for_plan_dask(X, s, partitions=3, **common)
    mid.sockets, slow.direct = False, False
    engines = (fast, mid, slow)

    def check(w):
        ref = X.T @ loss.d1(X @ w, s)  # a plain numpy reference
        for e in engines:
            assert np.max(np.abs(e.glm_gradient(w, None, loss) - ref)) <= 1e-12 * np.max(
                np.abs(ref)
            )

    for w in np.random.default_rng(1).normal(size=(4, D)):
        check(w)  # the first step places the partitions (a task graph)
    assert [(e.direct_steps, e.socket_steps) for e in engines] == [(3, 3), (3, 0), (0, 0)]
    # a partition moved, and the workers' sockets closed (idle): served by the task graph
    mid._pins = [(a, idx, [("no-such-key", ky) for _, ky in keys]) for a, idx, keys in mid._pins]
    monkeypatch.setattr(distributed_direct, "IDLE_SECONDS", 0.2)
    fast._unplace()
    check(np.zeros(D))  # both placed again, fast with sockets that close after 0.2 s
    time.sleep(0.5)
    monkeypatch.setattr(distributed_direct, "IDLE_SECONDS", 60.0)
    check(np.ones(D))  # fast placed again
    assert [(e.direct_steps, e.socket_steps) for e in engines] == [(3, 3), (4, 0), (0, 0)]
    check(np.ones(D))
    assert [(e.direct_steps, e.socket_steps) for e in engines] == [(4, 4), (5, 0), (0, 0)]


def test_pins_need_features_and_labels_on_one_worker():
    who = {"x0": ["b", "a"], "y0": ["a"], "x1": ["b"], "y1": ["b", "c"]}
    assert pins(["x0", "x1"], ["y0", "y1"], who) == [
        ("a", [0], [("x0", "y0")]),
        ("b", [1], [("x1", "y1")]),
    ]
    assert pins(["x0", "x1"], ["y1", "y0"], who) is None  # x1 and y0 apart


def test_map_rows_and_bench_smoke(client, data):
    X, _, _, _ = data
    out = map_rows(lambda b: b.sum(axis=1), chunked(X))
    close(out.compute(), X.sum(axis=1))
    results = bench_dask(n=400, d=4, workers=2, iterations=3, repeats=1, client=client)
    assert {r.name for r in results} == {"dask_gradient", "dask_fixed_overhead"}
    assert all(np.isfinite(r.seconds) and r.seconds > 0 for r in results)
