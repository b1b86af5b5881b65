"""Engine benchmarks: the fused dense and sparse gradients and batched releases, each a
ratio against a baseline timed in the same process with every BLAS
pinned to ``threads`` threads (the engines' worker count; they run BLAS single-threaded
inside their workers). Sizes are arguments so tests can run them tiny; ``quick`` picks
small ones.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits

from objpert._engines.blocked import available_cores
from objpert._engines.dense import DenseEngine
from objpert._engines.sparse import SparseEngine
from objpert._losses import get_loss
from objpert.apps._bench.common import BenchResult, best_times

__all__ = [
    "BATCHED_THRESHOLD",
    "DENSE_OVER_STREAM_THRESHOLD",
    "SPARSE_THRESHOLD",
    "TWO_PASS_SPEEDUP_THRESHOLD",
    "bench_batched",
    "bench_dense",
    "bench_sparse",
    "random_csr",
]

# the thresholds each figure is checked against
DENSE_OVER_STREAM_THRESHOLD = 1.3  # fused gradient <= 1.3 x one streaming pass X @ w
TWO_PASS_SPEEDUP_THRESHOLD = 1.5  # two-pass numpy gradient >= 1.5 x the fused one
SPARSE_THRESHOLD = 1.2  # engine gradient <= 1.2 x scipy's A @ w + A.T @ g
BATCHED_THRESHOLD = 5.0  # B releases at once >= 5 x the throughput of B single releases


def _threads(threads: int | None) -> int:
    return available_cores() if threads is None else max(1, int(threads))


def _labels(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.where(rng.random(n) < 0.5, -1.0, 1.0)


def bench_dense(
    n: int = 2_000_000,
    d: int = 100,
    *,
    threads: int | None = None,
    quick: bool = False,
    repeats: int = 5,
    seed: int = 0,
) -> list[BenchResult]:
    """DenseEngine.glm_gradient (logistic loss) against one streaming pass ``X @ w`` and
    against the two-pass numpy gradient ``X.T @ d1(X @ w, y)``, on an n x d matrix."""
    if quick:
        n = min(n, 200_000)
    t = _threads(threads)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.sqrt(d)
    y, w = _labels(rng, n), rng.standard_normal(d)
    loss = get_loss("logistic")
    engine = DenseEngine(X, threads=t)
    rows = int(engine.bounds(1)[1])
    with threadpool_limits(limits=t):
        fused, stream, naive = best_times(
            lambda: engine.glm_gradient(w, y, loss),
            lambda: X @ w,
            lambda: X.T @ loss.d1(X @ w, y),
            repeats=repeats,
        )
    size = f"n={n}, d={d}, {t} thread(s), {rows} rows/block"
    return [
        BenchResult(
            "dense_fused_over_stream",
            fused,
            "X @ w (one pass)",
            stream,
            fused / stream,
            DENSE_OVER_STREAM_THRESHOLD,
            "max",
            size,
        ),
        BenchResult(
            "dense_fused_over_two_pass",
            fused,
            "X.T @ d1(X @ w, y)",
            naive,
            fused / naive,
            1.0 / TWO_PASS_SPEEDUP_THRESHOLD,
            "max",
            f"{size}; two-pass/fused = {naive / fused:.3g} "
            f"(threshold >= {TWO_PASS_SPEEDUP_THRESHOLD:g})",
        ),
    ]


def random_csr(n: int, d: int, nnz_per_row: int, rng: np.random.Generator) -> sparse.csr_matrix:
    """n x d CSR with ``nnz_per_row`` entries per row at uniform random columns, rows of
    norm about 1."""
    indptr = np.arange(0, n * nnz_per_row + 1, nnz_per_row, dtype=np.int64)
    index = np.int32 if d < 2**31 and n * nnz_per_row < 2**31 else np.int64
    indices = rng.integers(0, d, size=n * nnz_per_row, dtype=index)
    data = rng.standard_normal(n * nnz_per_row)
    data /= np.sqrt(nnz_per_row)
    return sparse.csr_matrix((data, indices, indptr.astype(index)), shape=(n, d))


def bench_sparse(
    n: int = 1_000_000,
    d: int = 10_000,
    nnz_per_row: int = 50,
    *,
    threads: int | None = None,
    quick: bool = False,
    repeats: int = 5,
    seed: int = 0,
) -> list[BenchResult]:
    """SparseEngine.glm_gradient (logistic) against scipy's ``A @ w`` plus ``A.T @ g``; also
    reported: the two-pass gradient through a precomputed CSR transpose."""
    if quick:
        n = min(n, 100_000)
    t = _threads(threads)
    rng = np.random.default_rng(seed)
    A = random_csr(n, d, nnz_per_row, rng)
    y, w, g = _labels(rng, n), rng.standard_normal(d), rng.standard_normal(n)
    loss = get_loss("logistic")
    engine = SparseEngine(A, threads=t)
    with threadpool_limits(limits=t):
        AT = A.T.tocsr()
        fused, scipy_pair, transposed = best_times(
            lambda: engine.glm_gradient(w, y, loss),
            lambda: (A @ w, A.T @ g),
            lambda: AT @ loss.d1(A @ w, y),
            repeats=repeats,
        )
    size = f"n={n}, d={d}, {nnz_per_row} nonzeros/row, {t} thread(s)"
    return [
        BenchResult(
            "sparse_fused_over_scipy",
            fused,
            "A @ w + A.T @ g (scipy)",
            scipy_pair,
            fused / scipy_pair,
            SPARSE_THRESHOLD,
            "max",
            size,
        ),
        BenchResult(
            "sparse_fused_over_transpose",
            fused,
            "A.T.tocsr() @ d1(A @ w, y)",
            transposed,
            fused / transposed,
            note=f"{size}; the precomputed-transpose strategy, for comparison",
        ),
    ]


def bench_batched(
    n: int = 10_000,
    d: int = 20,
    B: int = 64,
    *,
    threads: int | None = None,
    quick: bool = False,
    repeats: int = 7,
    seed: int = 0,
) -> list[BenchResult]:
    """B releases through one release_batch call against B perturbed_gradient_descent
    calls (the same plan, data and iterations): ratio = throughput gain (higher is better)."""
    from objpert.certify import _calibration as calibration
    from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, release_batch

    if quick:
        n, B = min(n, 2_000), min(B, 16)
    t = _threads(threads)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X *= (rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    y = (X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n) > 0).astype(int)
    plan = calibration.tight(
        "logistic",
        n=n,
        d=d,
        zeta=1.0,
        epsilon=4.0,
        delta=1e-5,
        mu=0.05,
        max_iter=5000,
        objective="empirical",
    )

    def singles() -> None:
        for b in range(B):
            perturbed_gradient_descent(X, y, plan, seed + b, verbose=False)

    with threadpool_limits(limits=t), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the testing-seed warning of every call
        one_by_one, batched = best_times(
            singles, lambda: release_batch(X, y, plan, B, seed, verbose=False), repeats=repeats
        )
    return [
        BenchResult(
            "batched_throughput_gain",
            one_by_one,
            f"release_batch (B={B})",
            batched,
            one_by_one / batched,
            BATCHED_THRESHOLD,
            "min",
            f"n={n}, d={d}, B={B}, N={plan.iterations} steps, {t} thread(s); "
            f"seconds: {B} perturbed_gradient_descent calls",
        )
    ]
