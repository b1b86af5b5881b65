"""Tests of the fast engines: the fused row-blocked sweeps, batched releases and
the data-span reduction of Lemma B.6.

Every fused gradient is compared with the plain two-pass numpy reference
X.T @ l'(X @ W, y) written here; batched and span-reduced releases with separate runs of
the plain eq. (4) loop. Problems are tiny: the threaded code path is forced by lowering
the work threshold, and the block size by ``block_rows``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import pickle
import threading
import warnings

import numpy as np
import pytest
from scipy import sparse
from scipy.special import expit
from threadpoolctl import threadpool_info, threadpool_limits

from objpert._engines import (
    ArrayEngine,
    DenseEngine,
    GLMObjective,
    SparseEngine,
    blocked,
    make_engine,
)
from objpert._engines.array import MIN_BLOCKED_SIZE
from objpert._engines.span import FeatureSpan, span_reduction_pays
from objpert._losses import Loss, get_loss
from objpert.apps._bench.common import BenchResult
from objpert.certify import _calibration as calibration
from objpert.exceptions import PrivacyError
from objpert.exceptions import TestingSeedWarning as SeedWarning
from objpert.mechanisms import _perturbed_gd as perturbed_gd
from objpert.mechanisms._perturbed_gd import (
    BatchRelease,
    perturbed_gradient_descent,
    release_batch,
    run_gradient_descent,
)

LOSSES = ["logistic", "robust", "squared"]
MU = 0.3


def loss_object(name: str):
    return get_loss(name, scale=0.7) if name == "robust" else get_loss(name)


def data(n: int, d: int, seed: int = 0, density: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if density < 1.0:
        X[rng.random(X.shape) > density] = 0.0
    norms = np.maximum(np.linalg.norm(X, axis=1), 1e-300)
    X *= (rng.uniform(0.1, 1.0, size=n) / norms)[:, None]
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


def two_pass(X: np.ndarray, W: np.ndarray, y: np.ndarray, loss) -> np.ndarray:
    """The reference: X.T @ l'(X @ W, y) in two plain numpy passes."""
    return X.T @ loss.d1(X @ W, y if W.ndim == 1 else y[:, None])


def assert_close(got: np.ndarray, ref: np.ndarray, rtol: float = 1e-12) -> None:
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


@pytest.fixture
def threaded(monkeypatch):
    """Every fused gradient takes the blocked, threaded path, however small."""
    monkeypatch.setattr(blocked, "PARALLEL_MIN_WORK", 0)


# ----------------------------------------------------------------- fused gradients


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize(("threads", "block_rows"), [(1, 64), (2, 100), (3, 37), (4, 1000)])
def test_dense_fused_gradient_equals_two_pass(name, threads, block_rows, threaded):
    X, y = data(523, 7, seed=1)
    loss = loss_object(name)
    engine = DenseEngine(X, threads=threads, block_rows=block_rows)
    rng = np.random.default_rng(2)
    for W in (rng.normal(scale=2.0, size=7), rng.normal(scale=2.0, size=(7, 5))):
        W0 = W.copy()
        got = engine.glm_gradient(W, y, loss)
        assert_close(got, two_pass(X, W, y, loss))
        assert np.array_equal(engine.glm_gradient(W, y, loss), got)  # scratch reuse is clean
        np.testing.assert_array_equal(W, W0)
    Wf = np.asfortranarray(rng.normal(size=(7, 3)))  # any layout of W
    assert_close(engine.glm_gradient(Wf, y, loss), two_pass(X, Wf, y, loss))


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize(("threads", "block_rows"), [(1, None), (2, 50), (3, 7)])
def test_sparse_fused_gradient_equals_two_pass_without_densifying(
    name, index, threads, block_rows, threaded, monkeypatch
):
    X, y = data(301, 40, seed=3, density=0.1)
    X[::17] = 0.0  # some empty rows
    S = sparse.csr_matrix(X)
    S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
    S.indices[S.indptr[5] : S.indptr[6]] = S.indices[S.indptr[5] : S.indptr[6]][::-1].copy()
    S.has_sorted_indices = False  # unsorted columns within a row are fine
    loss = loss_object(name)
    for cls in (sparse.csr_matrix, sparse.csr_array, sparse.csc_matrix, sparse.coo_matrix):
        monkeypatch.setattr(cls, "toarray", lambda *a, **k: pytest.fail("densified"))
    engine = SparseEngine(S, threads=threads, block_rows=block_rows)
    engine_nnz = SparseEngine(S, threads=threads, block_nnz=97)
    rng = np.random.default_rng(4)
    for W in (rng.normal(scale=2.0, size=40), rng.normal(scale=2.0, size=(40, 4))):
        ref = two_pass(X, W, y, loss)
        assert_close(engine.glm_gradient(W, y, loss), ref)
        assert_close(engine_nnz.glm_gradient(W, y, loss), ref)
        assert_close(engine.matvec(W), X @ W)
    assert len(engine_nnz.bounds(1)) > 10


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_cheap_path_is_the_plain_two_pass_product(fmt):
    """Below the work threshold the sweep is one block in the caller's thread."""
    X, y = data(200, 5, seed=5)
    engine = make_engine(X if fmt == "dense" else sparse.csr_matrix(X), threads=2)
    loss = get_loss("logistic")
    w = np.random.default_rng(6).normal(size=5)
    assert_close(engine.glm_gradient(w, y, loss), two_pass(X, w, y, loss), rtol=1e-14)
    if fmt == "dense":  # literally X.T @ l'(X @ w, y) (l' compiled and vectorised if numba)
        from objpert._engines import compiled

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(compiled, "ENABLED", False)
            assert np.array_equal(engine.glm_gradient(w, y, loss), two_pass(X, w, y, loss))


def blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


class RecordingEngine(DenseEngine):
    """Records, for every range swept, the thread and the BLAS thread counts in force (the
    pool's path: the one of sparse input, or without numba)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list[tuple[str, set[int]]] = []

    def _parts(self, W, y, loss, threads):  # the generic parts: one _sweep call a part
        return blocked.BlockedEngine._parts(self, W, y, loss, threads)

    def _sweep(self, *args):
        self.seen.append((threading.current_thread().name, blas_threads()))
        super()._sweep(*args)


def test_workers_run_blas_single_threaded_and_restore_it(threaded):
    X, y = data(400, 6, seed=7)
    engine = RecordingEngine(X, threads=2, block_rows=50)
    with threadpool_limits(limits=2, user_api="blas"):
        engine.glm_gradient(np.ones(6), y, get_loss("logistic"))
        assert blas_threads() == {2}
    # the sweep's fixed parts (8 blocks of 50 rows: one each), shared by the two threads
    assert len(engine.seen) == 8 and len({name for name, _ in engine.seen}) == 2
    assert all(blas == {1} for _, blas in engine.seen)


@pytest.mark.parametrize("outer", [False, True])
def test_concurrent_sweeps_share_the_blas_limit_and_restore_it(outer, threaded):
    """Sweeps in several threads at once (as Dask runs partitions): right results, and the
    BLAS limit is back where it was (threadpoolctl lets one thread set it at a time)."""
    X, y = data(400, 6, seed=19)
    loss = get_loss("logistic")
    w = np.linspace(-1.0, 1.0, 6)
    ref = two_pass(X, w, y, loss)
    engines = [RecordingEngine(X, threads=2, block_rows=30) for _ in range(4)]
    errors: list[float] = []

    def work(engine: DenseEngine) -> None:
        errors.extend(relative_error(engine.glm_gradient(w, y, loss), ref) for _ in range(10))

    before = blas_threads()
    with threadpool_limits(limits=2 if outer else None, user_api="blas"):
        pool = [threading.Thread(target=work, args=(e,)) for e in engines]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        assert blas_threads() == ({2} if outer else before)
        engines[0].glm_gradient(w, y, loss)  # the main thread can still set the limit
        assert engines[0].seen[-1][1] == {1}
    assert blas_threads() == before
    assert len(errors) == 40 and max(errors) < 1e-13


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_products_and_objective_on_fast_engines(fmt, threaded):
    X, y = data(300, 6, seed=8, density=0.5)
    M = X if fmt == "dense" else sparse.csr_matrix(X)
    fast = GLMObjective(M, y, "logistic", MU, threads=2, block_rows=64)
    plain = GLMObjective(ArrayEngine(X), y, "logistic", MU)
    assert isinstance(fast.engine, DenseEngine if fmt == "dense" else SparseEngine)
    rng = np.random.default_rng(9)
    W, R = rng.normal(size=(6, 3)), rng.normal(size=(300, 3))
    assert_close(fast.engine.matvec(W), X @ W, rtol=1e-14)
    assert_close(fast.engine.rmatvec(R), X.T @ R, rtol=1e-14)
    for point in (W[:, 0], W):
        assert_close(fast.gradient(point), plain.gradient(point))
        assert_close(fast.value(point), plain.value(point))
        assert_close(fast.hvp(point, W), plain.hvp(point, W))
    copy = pickle.loads(pickle.dumps(fast))  # e.g. to a worker process
    assert_close(copy.gradient(W), plain.gradient(W))


def test_objective_uses_a_fused_gradient_and_falls_back_without_one():
    X, y = data(50, 4, seed=10)
    loss = get_loss("robust")
    calls = []

    class Fused:
        n, d = X.shape

        def matvec(self, W):
            raise AssertionError("the fused gradient should be used")

        rmatvec = matvec

        def glm_gradient(self, W, yy, lo):
            calls.append(lo)
            return two_pass(X, W, yy, lo)

    w = np.random.default_rng(11).normal(size=4)
    expected = two_pass(X, w, y, loss) / 50 + MU * w
    assert_close(GLMObjective(Fused(), y, loss, MU).gradient(w), expected, rtol=1e-14)
    assert calls == [loss]
    assert_close(GLMObjective(ArrayEngine(X), y, loss, MU).gradient(w), expected, rtol=1e-14)


def test_make_engine_picks_the_engine():
    small, _ = data(MIN_BLOCKED_SIZE // 2 - 1, 2)
    large = np.zeros((MIN_BLOCKED_SIZE // 2, 2))
    assert type(make_engine(small)) is ArrayEngine
    assert type(make_engine(large)) is DenseEngine
    assert type(make_engine(small, threads=1)) is DenseEngine
    assert make_engine(small, block_rows=10).bounds(1)[1] == 10
    for form in (sparse.csr_matrix, sparse.csr_array, sparse.csc_matrix, sparse.coo_matrix):
        e = make_engine(form(small))
        assert type(e) is SparseEngine and sparse.issparse(e.X)
    e = DenseEngine(small)
    assert make_engine(e) is e and e.threads == blocked.available_cores()


# ----------------------------------------------------------------- batched releases


@functools.cache
def small_plan():
    return calibration.tight(
        "logistic", n=120, d=3, zeta=1.0, epsilon=4.0, delta=1e-5, mu=0.05, max_iter=2000
    )


def reference_loop(X, y, z, eta, mu, N):
    """Eq. (4) from w_0 = 0 with grad F(w) = (1/n) X^T l'(Xw, y) + mu w, logistic l."""
    w = np.zeros_like(z)
    for _ in range(N):
        w = w - eta * (X.T @ (-y * expit(-y * (X @ w))) / X.shape[0] + mu * w + z)
    return w


def test_run_gradient_descent_on_a_batch_equals_separate_runs(threaded):
    X, y = data(300, 5, seed=12)
    f = GLMObjective(X, y, "logistic", MU, threads=2, block_rows=70)
    Z = np.random.default_rng(13).normal(size=(5, 4))
    W = run_gradient_descent(f, Z, 0.8, 25)
    assert W.shape == (5, 4)
    for b in range(4):
        assert_close(W[:, b], run_gradient_descent(f, Z[:, b].copy(), 0.8, 25))
        assert_close(W[:, b], reference_loop(X, y, Z[:, b], 0.8, MU, 25))


def test_release_batch_rows_are_independent_releases():
    plan = small_plan()
    X, y = data(120, 3, seed=14)
    labels = (y > 0).astype(int)
    with pytest.warns(SeedWarning):
        batch = release_batch(X, labels, plan, 6, rng=77)
    assert isinstance(batch, BatchRelease) and batch.weights.shape == (6, 3)
    Z = np.random.default_rng(77).normal(0.0, plan.sigma, size=(6, 3))
    for b in range(6):
        ref = reference_loop(X, y, Z[b], plan.eta, plan.mu, plan.iterations)
        assert_close(batch.weights[b], ref, rtol=1e-12)
    assert len({tuple(row) for row in batch.weights}) == 6
    with pytest.warns(SeedWarning):
        single = perturbed_gradient_descent(X, labels, plan, 77)
    assert_close(batch.weights[0], single.weights, rtol=1e-13)  # row 0: the same noise
    assert batch.iterations == plan.iterations and batch.draws == 6
    assert batch.certificate == plan.recertify() and batch.plan is plan
    assert batch.seeded and batch.n_clipped == 0 and batch.seconds > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.iterations = 0


def test_release_batch_refuses_like_the_single_release():
    plan = small_plan()
    X, y = data(120, 3, seed=15)
    gen = np.random.default_rng(5)
    state = gen.bit_generator.state
    bad = dataclasses.replace(plan, iterations=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before the seed is read
        with pytest.raises(PrivacyError, match=r"does not certify|re-derived"):
            release_batch(X, y, bad, 4, gen)
        with pytest.raises(ValueError, match="norm above"):
            release_batch(X * 3, y, plan, 4, gen)
    assert gen.bit_generator.state == state
    with pytest.warns(SeedWarning):
        clipped = release_batch(X * 3, y, plan, 2, 1, clip=True)
    assert clipped.n_clipped == np.count_nonzero(np.linalg.norm(X * 3, axis=1) > 1.0) > 0


# ----------------------------------------------------------------- Lemma B.6


@functools.cache
def wide_plan():
    return calibration.tight(
        "logistic", n=40, d=120, zeta=1.0, epsilon=4.0, delta=1e-5, mu=0.3, max_iter=2000
    )


def wide_data(fmt: str):
    X, y = data(40, 120, seed=16, density=0.3 if fmt == "csr" else 1.0)
    if fmt == "csr":
        X[:, 60:] = 0.0  # columns no row uses: a coordinate subspace holds every row
        X[:, 0] = 0.5  # keep every row non-zero and within zeta = 1
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        return sparse.csr_matrix(X), y
    X[20:] = X[:20]  # rank 20 < n = 40: the basis spans more than C, which is fine
    return X, y


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_feature_span_basis(fmt):
    X, _ = wide_data(fmt)
    span = FeatureSpan(X)
    dense = X.toarray() if fmt == "csr" else X
    Q = span.lift(np.eye(span.rank))
    np.testing.assert_allclose(Q.T @ Q, np.eye(span.rank), atol=1e-13)
    np.testing.assert_allclose(dense @ Q @ Q.T, dense, atol=1e-13)  # every row in span Q
    feats = span.features.toarray() if fmt == "csr" else span.features
    np.testing.assert_allclose(feats, dense @ Q, atol=1e-13)
    assert sparse.issparse(span.features) == (fmt == "csr")
    assert span.rank == (60 if fmt == "csr" else 40)
    z = np.random.default_rng(17).normal(size=(120, 2))
    np.testing.assert_allclose(span.project(z), Q.T @ z, atol=1e-13)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_span_reduction_gives_the_direct_release(fmt):
    plan = wide_plan()
    X, y = wide_data(fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = perturbed_gradient_descent(X, y, plan, 3, span_reduction=False).weights
        reduced = perturbed_gradient_descent(X, y, plan, 3, span_reduction=True).weights
        batch_direct = release_batch(X, y, plan, 3, 4, span_reduction=False).weights
        batch_reduced = release_batch(X, y, plan, 3, 4, span_reduction=True).weights
    assert relative_error(reduced, direct) < 1e-10
    assert relative_error(batch_reduced, batch_direct) < 1e-10
    dense = X.toarray() if fmt == "csr" else X
    z = np.random.default_rng(3).normal(0.0, plan.sigma, size=120)
    ref = reference_loop(dense, y, z, plan.eta, plan.mu, plan.iterations)
    assert relative_error(direct, ref) < 1e-12


def test_span_reduction_is_automatic_when_it_pays(monkeypatch):
    plan = wide_plan()
    X, y = wide_data("dense")
    assert not span_reduction_pays(X.T, 1000)  # d < n: never
    assert not span_reduction_pays(X, 1)  # one step does not repay the QR
    assert span_reduction_pays(X, 1000)
    Xs, _ = wide_data("csr")
    assert span_reduction_pays(Xs, 1)  # empty columns: always
    assert not span_reduction_pays(sparse.csr_matrix(np.ones((2, 3))), 1000)
    built = []
    original = perturbed_gd.FeatureSpan

    def counting(M):
        built.append(M.shape)
        return original(M)

    monkeypatch.setattr(perturbed_gd, "FeatureSpan", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release_batch(X, y, plan, 16, 1)  # the QR pays for 16 draws
        assert built == [(40, 120)]
        release_batch(X, y, plan, 16, 1, span_reduction=False)
        perturbed_gradient_descent(Xs, y, plan, 1)
    assert built == [(40, 120), (40, 120)]


# ----------------------------------------------------------------- benchmark smoke tests


def test_benchmarks_run_tiny():
    from objpert.apps._bench.engine import bench_batched, bench_dense, bench_sparse

    results = (
        bench_dense(n=3000, d=8, repeats=1, threads=2)
        + bench_sparse(n=3000, d=200, nnz_per_row=5, repeats=1, threads=2)
        + bench_batched(n=150, d=3, B=3, repeats=1, threads=2)
    )
    names = [r.name for r in results]
    assert names == [
        "dense_fused_over_stream",
        "dense_fused_over_two_pass",
        "sparse_fused_over_scipy",
        "sparse_fused_over_transpose",
        "batched_throughput_gain",
    ]
    for r in results:
        assert isinstance(r, BenchResult)
        assert r.seconds > 0 and r.baseline_seconds > 0
        assert r.ratio == pytest.approx(r.seconds / r.baseline_seconds)
    assert [r.bar_kind for r in results] == ["max", "max", "max", None, "min"]


def test_best_times_interleaves_the_functions():
    """A round calls every function once, in turn (so a figure and its baseline see the
    same machine), after the warm-up rounds and a settling sleep before each timed call;
    each function's best time is returned."""
    from objpert.apps._bench.common import best_times

    calls: list[str] = []
    times = best_times(
        lambda: calls.append("a"), lambda: calls.append("b"), repeats=3, warmup=1, settle=0.01
    )
    assert calls == ["a", "b"] * 4
    assert len(times) == 2 and all(0.0 <= t < 0.01 for t in times)  # the sleep is not timed


@pytest.mark.parametrize("name", LOSSES)
def test_d1_into_equals_d1_bit_for_bit(name):
    loss = loss_object(name)
    rng = np.random.default_rng(18)
    t, y = rng.normal(scale=5.0, size=(50, 3)), np.where(rng.random(50) < 0.5, -1.0, 1.0)
    for tt, yy in ((t[:, 0].copy(), y), (t.copy(), y[:, None])):
        expected = loss.d1(tt, yy)
        out = np.empty_like(tt)
        assert loss.d1_into(tt, yy, out) is out and np.array_equal(out, expected)
        assert np.array_equal(Loss.d1_into(loss, tt, yy, out), expected)  # the generic default
        assert np.array_equal(loss.d1_into(tt, yy, tt), expected)  # in place


# ----------------------------------------------------------------- compiled row kernel


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("use_kernel", [True, False])
@pytest.mark.parametrize(("n", "d", "threads"), [(523, 7, 3), (1001, 100, 2), (3, 5, 1)])
def test_dense_row_kernel_equals_two_pass(name, use_kernel, n, d, threads, threaded, monkeypatch):
    """With numba (the compiled kernel) and without it (the numpy sweep): the two-pass
    gradient to 1e-12, bitwise repeatable, also at margins where exp overflows."""
    from objpert._engines import compiled

    if use_kernel and not compiled.available():
        pytest.skip("numba is not installed")
    monkeypatch.setattr(compiled, "ENABLED", use_kernel)
    loss = loss_object(name)
    assert (compiled.fused_kernel(loss) is not None) == use_kernel
    X, y = data(n, d, seed=21)
    if name != "logistic":
        y = y * np.random.default_rng(22).uniform(0.0, 3.0, size=n)
    engine = DenseEngine(X, threads=threads, block_rows=64)
    rng = np.random.default_rng(23)
    for scale in (0.5, 5.0, 3000.0):  # 3000: |y t| up to ~1e3, exp(-y t) overflows
        w = rng.normal(scale=scale, size=d)
        got = engine.glm_gradient(w, y, loss)
        assert np.all(np.isfinite(got))
        assert_close(got, two_pass(X, w, y, loss))
        assert np.array_equal(engine.glm_gradient(w, y, loss), got)


def test_dense_row_kernel_only_for_the_shipped_losses():
    from objpert._engines import compiled

    @dataclasses.dataclass(frozen=True)
    class Doubled(type(get_loss("logistic"))):
        def d1(self, t, y):
            return 2.0 * super().d1(t, y)

        def d1_into(self, t, y, out):
            return Loss.d1_into(self, t, y, out)

    assert compiled.fused_kernel(Doubled()) is None  # a subclass keeps its own d1
    X, y = data(300, 6, seed=24)
    w = np.linspace(-1.0, 1.0, 6)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(blocked, "PARALLEL_MIN_WORK", 0)
        got = DenseEngine(X, threads=2, block_rows=40).glm_gradient(w, y, Doubled())
    assert_close(got, 2.0 * two_pass(X, w, y, get_loss("logistic")))


# ----------------------------------------------------------------- compiled batched kernel


def needs_numba():
    from objpert._engines import compiled

    if not compiled.available():
        pytest.skip("numba is not installed")
    return compiled


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_vectorised_exp_is_within_1_ulp_of_numpy():
    compiled = needs_numba()
    rng = np.random.default_rng(30)
    x = np.concatenate(
        [
            rng.uniform(-760.0, 720.0, 400_000),
            rng.uniform(-1.0, 1.0, 100_000),
            rng.uniform(-0.35, 0.35, 100_000),
            rng.uniform(-746.0, -700.0, 100_000),  # subnormal results and the underflow
            rng.uniform(700.0, 710.0, 100_000),  # the overflow
            -(10.0 ** rng.uniform(-300, 2, 10_000)),
            10.0 ** rng.uniform(-300, 2, 10_000),
            [0.0, -0.0, 5e-324, 709.782712893384, 709.7827128933841, -745.1332191019411],
            [-745.1332191019412, -708.3964185322641, 1e300, -1e300, np.inf, -np.inf],
        ]
    )
    with np.errstate(over="ignore"):
        ref = np.exp(x)
    got = compiled.exp(x)
    finite = np.isfinite(ref) & (ref > 0.0)
    assert ulps(got[finite], ref[finite]).max() <= 1
    assert np.array_equal(got[~finite], ref[~finite])  # 0 and inf where np.exp has them
    assert np.isnan(compiled.exp(np.array([np.nan]))[0])


@pytest.mark.parametrize("name", LOSSES)
def test_vectorised_derivative_equals_d1(name):
    compiled = needs_numba()
    loss = loss_object(name)
    fast = compiled.derivative_kernel(loss)
    rng = np.random.default_rng(31)
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    if name != "logistic":
        y = y * rng.uniform(0.0, 3.0, size=300)
    scale = 10.0 ** rng.uniform(-3, 3.5, size=(300, 5))  # |t| up to ~3e3: the clamps
    t = rng.normal(size=(300, 5)) * scale
    t[:5, 0] = [0.0, 1e200, -1e200, 745.5, -745.5]
    for tt, yy in ((t, y[:, None]), (t[:, 0].copy(), y)):
        ref = loss.d1(tt, yy)
        got = fast(tt.copy(), yy)
        np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-300)
    assert compiled.derivative_kernel(type("Sub", (type(loss),), {})()) is None


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize(
    ("n", "d", "B", "threads"),
    [
        (523, 7, 5, 3),
        (1001, 20, 64, 2),
        (301, 3, 9, 2),
        (97, 600, 17, 2),
        (50, 1, 2, 1),
        (203, 7, 16, 2),
        (97, 601, 24, 2),
        (31, 1, 8, 1),
    ],
)
def test_dense_batched_kernel_equals_two_pass(name, n, d, B, threads, threaded):
    """The compiled batched kernel (tiles of rows, chunks of columns when d is large, the
    last chunk a single column for B = 17; the register-blocked products when a chunk is
    a multiple of 8 columns: B = 64, 16, 8, and 24 in chunks of 8, with leftover rows and
    features) against the two-pass gradient to 1e-12, bitwise repeatable, also at margins
    where exp overflows or underflows (the clamps)."""
    compiled = needs_numba()
    loss = loss_object(name)
    assert compiled.batched_kernel(loss) is not None
    X, y = data(n, d, seed=32)
    if name != "logistic":
        y = y * np.random.default_rng(33).uniform(0.0, 3.0, size=n)
    engine = DenseEngine(X, threads=threads, block_rows=64)
    rng = np.random.default_rng(34)
    for scale in (0.5, 5.0, 3000.0):
        W = rng.normal(scale=scale, size=(d, B))
        got = engine.glm_gradient(W, y, loss)
        assert np.all(np.isfinite(got))
        assert_close(got, two_pass(X, W, y, loss))
        assert np.array_equal(engine.glm_gradient(W, y, loss), got)
        out = np.zeros(d)  # one point through the batched kernel
        compiled.batched_kernel(loss)(X, W[:, 0].copy(), y, 0, n, out)
        assert_close(out, two_pass(X, W[:, 0], y, loss))


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("B", [0, 1, 6])
def test_parallel_kernel_is_the_sum_of_its_ranges_in_order(name, B):
    """numba's parallel launch over uneven row ranges equals the sequential kernels summed
    in range order, bit for bit (so thread timing cannot change a release); concurrent
    launches from several Python threads are serialised and right; numba's thread count
    is restored."""
    import numba

    compiled = needs_numba()
    loss = loss_object(name)
    X, y = data(701, 9, seed=35)
    if name != "logistic":
        y = y * np.random.default_rng(36).uniform(0.0, 3.0, size=701)
    rng = np.random.default_rng(37)
    W = rng.normal(scale=3.0, size=(9, B) if B else 9)
    cuts = np.array([0, 5, 300, 301, 701])
    run = compiled.parallel_kernel(loss)
    single = compiled.batched_kernel(loss) if B else compiled.fused_kernel(loss)
    expected = np.zeros_like(W)
    for s, e in itertools.pairwise(cuts.tolist()):
        part = np.zeros_like(W)
        single(X, W, y, s, e, part)
        expected += part
    before = numba.get_num_threads()
    assert np.array_equal(run(X, W, y, cuts), expected)
    assert numba.get_num_threads() == before
    assert_close(expected, two_pass(X, W, y, loss))
    results: list[np.ndarray] = []
    threads = [
        threading.Thread(target=lambda: results.extend(run(X, W, y, cuts) for _ in range(5)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 20 and all(np.array_equal(r, expected) for r in results)


def test_dense_engine_sweeps_fixed_parts_on_its_own_sleeping_pool(threaded, monkeypatch):
    """The threaded dense path cuts the rows into the same parts whatever the thread count
    (a multiple of the parts of equal blocks), runs them on the engine's own pool (whose
    threads sleep between steps; numba's spinning pool is never launched), and adds them
    in part order: the same gradient, bit for bit, on 1, 2 or 3 threads."""
    compiled = needs_numba()
    launched: list[int] = []
    real = compiled.parallel_kernel
    monkeypatch.setattr(compiled, "parallel_kernel", lambda loss: launched.append(1) or real(loss))
    X, y = data(1000, 5, seed=38)
    loss = get_loss("logistic")
    W = np.random.default_rng(39).normal(size=(5, 3))
    got = [DenseEngine(X, threads=t).glm_gradient(W, y, loss) for t in (1, 2, 3)]
    assert_close(got[0], two_pass(X, W, y, loss))
    assert all(np.array_equal(g, got[0]) for g in got[1:]) and not launched
    bounds = DenseEngine(X, threads=2).bounds(8)  # W padded to 8 columns
    assert len(bounds) - 1 == 8 and len(set(np.diff(bounds).tolist())) == 1


def test_a_forked_child_sweeps_on_its_own_threads(threaded):
    """GNU OpenMP does not survive fork (numba terminates a child that launches its pool):
    a child forked after the parent's launches gets no parallel kernel and computes the
    same gradient through the engine's own threads."""
    import os

    compiled = needs_numba()
    loss = get_loss("logistic")
    X, y = data(800, 6, seed=40)
    W = np.random.default_rng(41).normal(size=(6, 4))
    engine = DenseEngine(X, threads=2)
    expected = engine.glm_gradient(W, y, loss)
    compiled.parallel_kernel(loss)(X, W, y, np.array([0, 400, 800]))  # numba's pool started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: exit status 0 only when everything holds
        ok = compiled.parallel_kernel(loss) is None
        ok = ok and np.allclose(engine.glm_gradient(W, y, loss), expected, rtol=1e-12)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("B", [8, 16, 64])
@pytest.mark.parametrize("label", [-1.0, 1.0])
def test_register_blocked_logistic_derivative_equals_d1(B, label):
    """With one row x = (1), the batched gradient at W = (t_1 .. t_B) is l'(t_b, y) itself:
    the vector-code logistic derivative of the register-blocked path (8 or 16 values a
    step) against loss.d1, within a few ulp, across exp's clamps, and NaN in, NaN out."""
    compiled = needs_numba()
    loss = get_loss("logistic")
    rng = np.random.default_rng(42)
    for t in (
        rng.normal(size=B) * 10.0 ** rng.uniform(-3, 3.5, size=B),
        np.resize([0.0, 1e200, -1e200, 745.5, -745.5, 709.0, -709.0, 36.0], B),
    ):
        X, y = np.ones((1, 1)), np.array([label])
        out = np.zeros((1, B))
        compiled.batched_kernel(loss)(X, t.reshape(1, B).copy(), y, 0, 1, out)
        np.testing.assert_allclose(out[0], loss.d1(t, label), rtol=1e-14, atol=1e-300)
    t = np.full((1, B), np.nan)
    out = np.zeros((1, B))
    compiled.batched_kernel(loss)(np.ones((1, 1)), t, np.array([label]), 0, 1, out)
    assert np.isnan(out).all()
