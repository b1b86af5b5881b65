"""Steady threads, one-vs-rest releases in one sweep, any batch width, a time budget, one
BLAS thread in the peers' solvers; each against an independent computation (the single
releases one after the other, the two-pass numpy gradient, plain arithmetic)."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
from scipy import sparse
from threadpoolctl import threadpool_info, threadpool_limits

from objpert._engines import blocked, threads, timing
from objpert._engines.dense import DenseEngine
from objpert._engines.glm import GLMObjective
from objpert._engines.sparse import SparseEngine
from objpert._losses import get_loss
from objpert.accounting import PrivacyAccountant
from objpert.certify import _calibration as calibration
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import DataError, ParameterError
from objpert.mechanisms._perturbed_gd import (
    perturbed_gradient_descent,
    release_one_vs_rest,
    release_targets,
)

pytestmark = pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")


def problem(n: int, d: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X *= (rng.uniform(0.2, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    codes = np.argmax(X @ rng.standard_normal((d, K)) + rng.standard_normal((n, K)), axis=1)
    return X, np.column_stack([np.where(codes == k, 1.0, -1.0) for k in range(K)])


def plan_for(n: int, d: int, iterations: int = 100):
    return calibration.tight(
        "logistic", n=n, d=d, zeta=1.0, epsilon=4.0, delta=1e-5, mu=0.2,
        max_iter=iterations, objective="empirical",
    )  # fmt: skip


def two_pass(X, W, Y, loss):
    """Column b: X^T l'(X w_b, y_b), one column at a time with numpy."""
    return np.column_stack([X.T @ loss.d1(X @ W[:, b], Y[:, b]) for b in range(W.shape[1])])


# ------------------------------------------------------------ one-vs-rest releases


@pytest.mark.parametrize(
    ("n", "d", "K", "fmt"),
    [(300, 6, 3, "dense"), (4000, 30, 10, "dense"), (600, 9, 5, "sparse"), (40, 90, 4, "dense")],
)
def test_one_vs_rest_equals_the_single_releases(n, d, K, fmt):
    """Column k equals perturbed_gradient_descent with the same labels and seed to 1e-12
    (small data: two passes; 4000 x 30: the compiled kernel, padded to 16 columns; CSR;
    d > n: the span reduction)."""
    X, Y = problem(n, d, K, seed=n + K)
    data = sparse.csr_matrix(X) if fmt == "sparse" else X
    plan = plan_for(n, d)
    seeds = list(range(100, 100 + K))
    got = release_one_vs_rest(data, Y, plan, seeds)
    for k, release in enumerate(got):
        single = perturbed_gradient_descent(data, Y[:, k], plan, seeds[k])
        scale = max(1.0, np.abs(single.weights).max())
        assert np.abs(release.weights - single.weights).max() <= 1e-12 * scale
        assert release.iterations == single.iterations == plan.iterations
        assert release.seeded and release.certificate == single.certificate


def test_one_generator_is_drawn_from_in_release_order():
    X, Y = problem(200, 5, 3, seed=1)
    plan = plan_for(200, 5)
    got = release_targets(X, list(Y.T), plan, [np.random.default_rng(7)] * 3)
    rng = np.random.default_rng(7)
    for k in range(3):
        single = perturbed_gradient_descent(X, Y[:, k], plan, rng)
        np.testing.assert_allclose(got[k].weights, single.weights, rtol=0, atol=1e-12)


def test_one_vs_rest_refuses_bad_labels_before_any_draw():
    X, Y = problem(100, 4, 3, seed=2)
    plan = plan_for(100, 4)
    with pytest.raises(DataError, match="one label column per generator"):
        release_one_vs_rest(X, Y, plan, [1, 2])
    bad = Y.copy()
    bad[:, 1] = np.arange(100)  # not two classes
    with pytest.raises(DataError):
        release_one_vs_rest(X, bad, plan, [1, 2, 3])
    with pytest.raises(ParameterError):
        release_one_vs_rest(X, Y[:, :0], plan, [])
    with pytest.raises(ParameterError):
        release_targets(X, list(Y.T), plan, [1])


def test_multiclass_estimator_runs_one_sweep_and_equals_the_sequential_loop(monkeypatch):
    """A 4-class fit makes one release_one_vs_rest call, and its weights equal the K
    releases one after the other (the estimators' former loop) on the same prepared data,
    labels and generators."""
    X, Y = problem(500, 6, 4, seed=3)
    y = np.argmax(Y, axis=1)
    from objpert.mechanisms import _perturbed_gd as perturbed_gd

    calls: list[tuple] = []
    real = perturbed_gd.release_one_vs_rest

    def spy(X, Y, plan, rngs, **kwargs):
        calls.append((X, np.array(Y), plan, list(rngs)))
        return real(X, Y, plan, rngs, **kwargs)

    monkeypatch.setattr(perturbed_gd, "release_one_vs_rest", spy)
    m = PrivateLogisticRegression(
        classes=[0, 1, 2, 3], data_norm=1.0, random_state=5, max_iter=60, multi_class="ovr"
    ).fit(X, y)
    assert len(calls) == 1 and m.max_iter_used_ == 60
    Xp, Yp, plan, rngs = calls[0]
    assert np.array_equal(Yp, np.where(y[:, None] == np.arange(4), 1.0, -1.0))
    for k in range(4):
        single = perturbed_gradient_descent(Xp, Yp[:, k], plan, rngs[k])
        np.testing.assert_allclose(m.releases_[k].weights, single.weights, rtol=0, atol=1e-12)


def test_release_plans_runs_one_descent_per_shared_step_size_and_n(monkeypatch):
    """Seeds and an epsilon grid: each release equals its own single release; plans that
    share the constants and N run as one batched descent."""
    from objpert.mechanisms import _perturbed_gd as perturbed_gd

    X, Y = problem(400, 6, 2, seed=12)
    y = Y[:, 0]
    grid = [plan_for(400, 6)] * 2 + [
        calibration.tight(
            "logistic", n=400, d=6, zeta=1.0, epsilon=e, delta=1e-5, mu=0.2,
            max_iter=100, objective="empirical",
        )
        for e in (2.0, 8.0)
    ]  # fmt: skip
    descents: list[int] = []
    real = perturbed_gd._descend
    monkeypatch.setattr(
        perturbed_gd, "_descend", lambda *a: descents.append(a[4].shape[-1]) or real(*a)
    )
    got = perturbed_gd.release_plans(X, y, grid, [11, 12, 13, 14])
    groups = {(p.constants, p.iterations) for p in grid}
    assert len(descents) == len(groups) <= 3 and sum(descents) == 4
    monkeypatch.setattr(perturbed_gd, "_descend", real)
    for plan, seed, release in zip(grid, [11, 12, 13, 14], got, strict=True):
        single = perturbed_gradient_descent(X, y, plan, seed)
        assert release.plan is plan and release.epsilon == single.epsilon
        np.testing.assert_allclose(release.weights, single.weights, rtol=0, atol=1e-12)
    with pytest.raises(ParameterError):
        perturbed_gd.release_plans(X, y, grid, [1])


# ------------------------------------------------------------ any batch width


@pytest.mark.parametrize("B", [2, 3, 5, 8, 12, 17])
@pytest.mark.parametrize("labelled", [False, True])
def test_any_width_and_per_column_labels_equal_two_pass(B, labelled, monkeypatch):
    monkeypatch.setattr(blocked, "PARALLEL_MIN_WORK", 0)
    rng = np.random.default_rng(B)
    X = rng.standard_normal((700, 11)) / 3
    W = rng.standard_normal((11, B))
    Y = np.where(rng.random((700, B)) < 0.4, -1.0, 1.0)
    y = Y if labelled else np.repeat(Y[:, :1], B, axis=1)
    loss = get_loss("logistic")
    expected = two_pass(X, W, y, loss)
    results = [
        DenseEngine(X, threads=t).glm_gradient(W, y if labelled else y[:, 0], loss)
        for t in (1, 2, 3)
    ]
    assert np.abs(results[0] - expected).max() <= 1e-13 * np.abs(expected).max()
    assert all(np.array_equal(r, results[0]) for r in results[1:])  # thread count: no effect
    sparse_got = SparseEngine(sparse.csr_matrix(X), threads=2).glm_gradient(W, y, loss)
    np.testing.assert_allclose(sparse_got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["logistic", "squared", "robust"])
@pytest.mark.parametrize("B", [1, 4, 12, 20])
def test_labelled_and_serial_kernels_equal_their_plain_python_meaning(name, B):
    """The compiled per-column-label kernel (widths 4 mod 8 take the 4-wide blocks) equals
    its plain-Python loops to rounding; one serial call over several ranges equals the
    range kernels called one by one, bit for bit."""
    from objpert._engines import compiled

    if not compiled.available():
        pytest.skip("numba is not installed")
    loss = get_loss(name)
    rng = np.random.default_rng(B)
    X = rng.standard_normal((61, 9))
    W = rng.standard_normal((9, B)) if B > 1 else rng.standard_normal(9)
    Y = rng.standard_normal((61, B)) if name != "logistic" else np.sign(rng.random((61, B)) - 0.5)
    y = Y if B > 1 else Y[:, 0]
    got, plain = np.zeros_like(W), np.zeros_like(W)
    factory = compiled.batched_kernel if B > 1 else compiled.fused_kernel
    factory(loss)(X, W, y, 3, 61, got)
    factory(loss, backend="python")(X, W, y, 3, 61, plain)
    np.testing.assert_allclose(got, plain, rtol=1e-13, atol=1e-13)
    cuts = np.array([0, 5, 6, 40, 61])
    outs = np.zeros((4, *W.shape))
    compiled.parts_kernel(loss)(X, W, y, cuts, outs)
    for t in range(4):
        one = np.zeros_like(W)
        factory(loss)(X, W, y, int(cuts[t]), int(cuts[t + 1]), one)
        assert np.array_equal(outs[t], one)


# ------------------------------------------------------------ thread counts


def test_choose_threads_follows_n_jobs_work_and_idle_cores(monkeypatch):
    monkeypatch.setattr(threads, "available_cores", lambda: 6)
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    big, small = threads.THREAD_MIN_WORK, threads.THREAD_MIN_WORK - 1
    assert threads.choose_threads(big, 1) == 1
    assert threads.choose_threads(small, -1) == 6
    assert threads.choose_threads(small, 3) == 3
    assert threads.choose_threads(small, None) == 1
    assert threads.choose_threads(big, None) == 4
    assert threads.parts_for(2) == 8 and threads.parts_for(11) == 11


def test_usable_cores_subtracts_other_runnable_tasks_and_load(monkeypatch):
    monkeypatch.setattr(threads, "available_cores", lambda: 4)
    readings = iter([3, 1, 2, 2, 2])
    monkeypatch.setattr(threads, "_runnable_others", lambda: next(readings))
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert threads.usable_cores(spacing=0) == 3  # the least reading: 1 busy
    monkeypatch.setattr(threads, "_runnable_others", lambda: 0)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.6, 0.0, 0.0))
    assert threads.usable_cores(spacing=0) == 1  # round(3.6) - 1 = 3 busy
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 0.0, 0.0))
    assert threads.usable_cores(spacing=0) == 1  # never below one
    assert 1 <= threads.usable_cores() <= threads.available_cores()


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2", 10**30])
def test_n_jobs_is_checked(bad):
    with pytest.raises(ParameterError, match="n_jobs"):
        threads.check_n_jobs(bad)
    with pytest.raises(ParameterError, match="n_jobs"):
        PrivateLogisticRegression(n_jobs=bad).fit(np.eye(3), [0, 1, 1])


def test_the_automatic_count_is_chosen_once_per_width(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(blocked, "choose_threads", lambda work, n_jobs: calls.append(work) or 2)
    monkeypatch.setattr(blocked, "PARALLEL_MIN_WORK", 0)
    X = np.random.default_rng(0).standard_normal((5000, 7))
    y = np.sign(X[:, 0]) + (X[:, 0] == 0)
    f = GLMObjective(X, y, "logistic", 0.1)
    assert type(f.engine) is DenseEngine and f.engine.automatic
    for _ in range(5):
        f.gradient(np.zeros(7))
        f.gradient(np.zeros((7, 3)))
    assert len(calls) == 2 and f.engine.threads_for(1) == 2
    assert GLMObjective(X, y, "logistic", 0.1, n_jobs=1).engine.threads_for(1) == 1


# ------------------------------------------------------------ the time budget


def test_iteration_budget_is_the_steps_the_seconds_buy():
    assert timing.iteration_budget(1.0, 0.003, 5000) == math.floor(1.0 / 0.003)
    assert timing.iteration_budget(100.0, 0.003, 5000) == 5000
    assert timing.iteration_budget(1e-9, 0.003, 5000) == 1


def test_seconds_per_step_is_positive_and_grows_with_n():
    small = timing.seconds_per_step(2_000, 20, steps=3)
    large = timing.seconds_per_step(200_000, 20, steps=3)  # timed on TIMED_ROWS, scaled
    assert 0 < small < large and math.isfinite(large)


def test_max_seconds_cuts_the_iteration_budget_from_the_public_shape(monkeypatch):
    """The estimator times a step for its public (n, d, releases) only, and the plan is
    calibrated within the steps the seconds buy."""
    from objpert.estimators import _time_budget as time_budget

    seen: list[tuple] = []

    def fake(n, d, loss, *, draws, n_jobs, engine, dtype):
        seen.append((n, d, loss, draws, n_jobs))
        return 0.004

    monkeypatch.setattr(time_budget, "seconds_per_step", fake)
    X, Y = problem(400, 5, 3, seed=9)
    y = np.argmax(Y, axis=1)
    m = PrivateLogisticRegression(
        classes=[0, 1, 2], data_norm=1.0, max_seconds=0.5, n_jobs=1, random_state=0
    )
    m.fit(X, y)
    assert seen == [(400, 6, "logistic", 3, 1)]
    assert m.max_iter_used_ == math.floor(0.5 / 0.004)
    assert all(p.iterations <= m.max_iter_used_ for p in m.plan_)
    r = PrivateRobustRegression(data_norm=1.0, max_seconds=100.0, random_state=0)
    r.fit(X, X[:, 0])  # 25,000 steps bought: the budget stays max_iter
    assert r.max_iter_used_ == r.max_iter == 5000
    assert seen[-1] == (400, 6, "robust", 1, None)
    with pytest.raises(ParameterError, match="max_seconds"):
        PrivateLogisticRegression(max_seconds=0).fit(X, y)


def test_a_fixed_n_plan_beyond_the_time_budget_is_refused(monkeypatch):
    from objpert.estimators import _time_budget as time_budget

    monkeypatch.setattr(time_budget, "seconds_per_step", lambda *a, **k: 1.0)
    X, Y = problem(400, 5, 2, seed=10)
    ledger = PrivacyAccountant(10.0, 1e-5)
    m = PrivateLogisticRegression(
        classes=[0, 1], calibration="corollary413", max_seconds=2.0, data_norm=1.0,
        accountant=ledger,
    )  # fmt: skip
    with pytest.raises(ParameterError, match="buys 2 steps"):
        m.fit(X, np.argmax(Y, axis=1))
    assert ledger.steps == ()  # refused before any budget: nothing is charged


# ------------------------------------------------------------ one BLAS thread


def test_the_peers_solver_runs_one_blas_thread():
    from objpert._solvers.newton import solve_to_tolerance

    X, Y = problem(300, 8, 2, seed=11)
    f = GLMObjective(X, Y[:, 0], "logistic", 0.1)
    seen: list[set[int]] = []
    gradient = f.gradient

    def recording(w):
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
        return gradient(w)

    f.gradient = recording
    with threadpool_limits(limits=2, user_api="blas"):
        w, norm, _ = solve_to_tolerance(f, np.zeros(8), 1e-8, 200)
    assert seen and all(s == {1} for s in seen) and norm <= 1e-8
    np.testing.assert_allclose(gradient(w), 0.0, atol=1e-8)


# ------------------------------------------------------------ the benchmark


def test_bench_threads_rows_and_competing_load():
    from objpert.apps._bench import threads as bench

    with bench.competing_load(1) as count:
        assert count == 1
    rows = bench.bench_threads(quick=True, rounds=1, load=False)
    assert [r.name for r in rows] == [
        "batched_b64_gain", "one_vs_rest_gain", "one_vs_rest_digits_gain", "one_vs_rest_fit",
        "one_vs_rest_fit_digits", "single_thread_step", "auto_threads_step",
    ]  # fmt: skip
    assert all(r.seconds > 0 and r.baseline_seconds > 0 and math.isfinite(r.ratio) for r in rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bench.spread([3.0, 1.0, 2.0]) == (1.0, 2.0, 3.0)


def test_clear_calibration_caches_empties_the_plan_caches():
    """The benchmarks' fits with calibration included start from empty caches."""
    from objpert.apps._bench.common import clear_calibration_caches
    from objpert.estimators._planning import plan_for

    plan_for("logistic", None, "tight", 200, 3, 1.0, 1.0, 1e-5, 1.0, 100, 0.1)
    assert plan_for.cache_info().currsize >= 1
    assert clear_calibration_caches() >= 2
    assert plan_for.cache_info().currsize == 0
