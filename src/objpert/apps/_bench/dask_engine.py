"""Dask engine benchmark: the gradient of one iteration on a dask.distributed cluster
against the in-memory engine, and the fixed overhead of an iteration (one map-reduce
round trip on a tiny problem; threshold: under 30 ms).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from objpert._engines.blocked import available_cores
from objpert._engines.glm import GLMObjective
from objpert._losses import get_loss
from objpert.apps._bench.common import BenchResult, best_times

__all__ = ["FIXED_OVERHEAD_THRESHOLD_S", "TINY", "bench_dask"]

FIXED_OVERHEAD_THRESHOLD_S = 0.030  # seconds per iteration on a tiny problem
TINY = (1_000, 10)  # rows, columns of the fixed-overhead problem


def _per_iteration(
    client: Any, n: int, d: int, iterations: int, repeats: int, threads: int, seed: int
) -> tuple[float, float, int]:
    """(Dask seconds, in-memory seconds, partitions) of one gradient, logistic loss."""
    from objpert._data.distributed import for_plan_dask

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) / np.sqrt(4 * d)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    loss, mu = get_loss("logistic"), 0.1
    engine, _, _ = for_plan_dask(
        X, y, n=n, d=d, zeta=1.0, label_kind="binary", clip=True, client=client
    )
    on_dask = GLMObjective(engine, None, loss, mu)
    in_memory = GLMObjective(X, y, loss, mu, threads=threads)
    w = rng.standard_normal(d) * 0.1

    def steps(objective: GLMObjective) -> None:
        for _ in range(iterations):
            objective.gradient(w)

    dask_s, memory_s = best_times(lambda: steps(on_dask), lambda: steps(in_memory), repeats=repeats)
    return dask_s / iterations, memory_s / iterations, engine.partitions


def bench_dask(
    n: int = 1_000_000,
    d: int = 50,
    *,
    workers: int = 2,
    threads: int | None = None,
    quick: bool = False,
    iterations: int = 20,
    repeats: int = 3,
    client: Any = None,
    seed: int = 0,
) -> list[BenchResult]:
    """Per-iteration gradient time on Dask / in memory (n x d, ``threads`` cores for each),
    and the fixed overhead per iteration on a tiny problem (threshold: 30 ms).

    ``client``: an existing ``distributed.Client`` (then ``workers`` is what it has);
    otherwise a LocalCluster of ``workers`` processes sharing ``threads`` cores is started
    and closed here.
    """
    from distributed import Client, LocalCluster

    if quick:
        n, d, iterations = min(n, 50_000), min(d, 20), min(iterations, 10)
    t = available_cores() if threads is None else max(1, int(threads))
    cluster = None
    if client is None:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=max(1, t // workers),
            processes=True,
            dashboard_address=":0",
        )
        client = Client(cluster, set_as_default=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # dask's large-graph notes
            big = _per_iteration(client, n, d, iterations, repeats, t, seed)
            tiny = _per_iteration(client, *TINY, iterations, repeats, t, seed)
        cores = sum(client.nthreads().values())
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
    where = f"{len(client.nthreads()) if cluster is None else workers} workers, {cores} threads"
    return [
        BenchResult(
            "dask_gradient",
            big[0],
            f"in-memory gradient ({t} threads)",
            big[1],
            big[0] / big[1],
            note=f"{n:,} x {d}, {big[2]} partitions, {where}; seconds per iteration",
        ),
        BenchResult(
            "dask_fixed_overhead",
            tiny[0],
            "in-memory tiny gradient",
            tiny[1],
            tiny[0] / tiny[1],
            bar=FIXED_OVERHEAD_THRESHOLD_S / tiny[1],
            bar_kind="max",
            note=(
                f"{tiny[0] * 1e3:.1f} ms per iteration (threshold "
                f"{FIXED_OVERHEAD_THRESHOLD_S * 1e3:g} ms, "
                f"as a ratio: 30 ms / baseline), {TINY[0]:,} x {TINY[1]} on {tiny[2]} "
                f"partitions, {where}"
            ),
        ),
    ]
