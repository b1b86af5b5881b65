"""Tests of objpert._engines.compiled: the pure-Python kernel set against the compiled one
(every loss, the single-point, batched, parallel and derivative kernels, on a few rows),
the backend selection, the immutable kernel sets, the deprecated aliases, the warm-up and
a fork while another thread compiles."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from objpert._engines import compiled
from objpert._engines.compiled import build, exponential, loops
from objpert._losses import get_loss

LOSSES = ["logistic", "robust", "squared"]
KIND = {"logistic": loops.LOGISTIC, "robust": loops.ROBUST, "squared": loops.SQUARED}
SCALE = 0.7  # of the robust loss


def loss_object(name: str):
    return get_loss(name, scale=SCALE) if name == "robust" else get_loss(name)


def data(name: str, n: int = 11, d: int = 6, seed: int = 0):
    """n rows (tiles of 4 leave 3), d features (blocks of 4 leave 2)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    if name != "logistic":
        y = y * rng.uniform(0.0, 3.0, size=n)
    return X, y


def two_pass(X, W, y, loss):
    return X.T @ loss.d1(X @ W, y if W.ndim == 1 else y[:, None])


def assert_close(got, ref, rtol=1e-12):
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


def numba_set():
    kernels = compiled.kernel_set("numba")
    if kernels is None or not compiled.ENABLED:
        pytest.skip("numba is not installed or the kernels are disabled")
    return kernels


def both(run):
    """run(kernel set) for the python set and, with numba, the compiled one."""
    with np.errstate(all="ignore"):  # the plain-Python loops overflow to inf like the others
        python = run(compiled.kernel_set("python"))
    kernels = compiled.kernel_set("numba")
    return python, None if kernels is None else run(kernels)


SCALES = (0.5, 5.0, 3000.0)  # 3000: |y t| up to ~1e3, exp's clamps


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("scale", SCALES)
def test_python_row_kernel_equals_the_compiled_one(name, scale):
    X, y = data(name)
    loss = loss_object(name)
    w = np.random.default_rng(1).normal(scale=scale, size=X.shape[1])

    def run(kernels):
        out = np.zeros(X.shape[1])
        kernels.fused(X, w, y, 2, X.shape[0], KIND[name], SCALE, out)
        return out

    python, numba = both(run)
    assert_close(python, two_pass(X[2:], w, y[2:], loss))
    if numba is not None:
        assert_close(python, numba)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize(
    ("B", "tile", "chunk"),
    [
        (1, 4, 1),  # one column: the row dot products
        (3, 4, 3),  # the column loops
        (8, 4, 8),  # register-blocked, logistic 8 values a step
        (16, 8, 16),  # register-blocked, logistic 16 values a step
        (17, 4, 8),  # chunks of 8, 8 and 1
        (24, 12, 16),  # chunks of 16 and 8
    ],
)
@pytest.mark.parametrize("scale", SCALES)
def test_python_batched_kernel_equals_the_compiled_one(name, B, tile, chunk, scale):
    X, y = data(name)
    loss = loss_object(name)
    W = np.random.default_rng(2).normal(scale=scale, size=(X.shape[1], B))

    def run(kernels):
        out = np.zeros_like(W)
        kernels.batched(X, W, y, 1, X.shape[0], KIND[name], SCALE, out, tile, chunk)
        return out

    python, numba = both(run)
    assert_close(python, two_pass(X[1:], W, y[1:], loss))
    if numba is not None:
        assert_close(python, numba)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("B", [0, 3, 8])
def test_python_parallel_kernels_equal_the_compiled_ones(name, B):
    X, y = data(name, n=13)
    loss = loss_object(name)
    W = np.random.default_rng(3).normal(scale=3.0, size=(X.shape[1], B) if B else X.shape[1])
    cuts = np.array([0, 5, 6, 13])

    def run(kernels):
        outs = np.zeros((len(cuts) - 1, *W.shape))
        if B:
            kernels.parallel_batched(X, W, y, cuts, KIND[name], SCALE, outs, 4, 8)
        else:
            kernels.parallel_fused(X, W, y, cuts, KIND[name], SCALE, outs)
        return outs

    python, numba = both(run)
    for t in range(len(cuts) - 1):
        s, e = cuts[t], cuts[t + 1]
        assert_close(python[t], two_pass(X[s:e], W, y[s:e], loss))
    if numba is not None:
        assert_close(python, numba)


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("cols", [1, 5])
def test_python_derivative_equals_the_compiled_one(name, cols):
    loss = loss_object(name)
    rng = np.random.default_rng(4)
    y = np.where(rng.random(9) < 0.5, -1.0, 1.0) * (1.0 if name == "logistic" else 2.0)
    t = rng.normal(size=(9, cols)) * 10.0 ** rng.uniform(-3, 3.5, size=(9, cols))
    t[:4, 0] = [0.0, 1e200, -745.5, 709.5]

    def run(kernels):
        m = t.copy().reshape(-1)
        kernels.derivative(m, y, 0, 9, cols, KIND[name], SCALE)
        return m.reshape(9, cols)

    python, numba = both(run)
    np.testing.assert_allclose(python, loss.d1(t, y[:, None]), rtol=1e-13, atol=1e-300)
    if numba is not None:
        np.testing.assert_allclose(python, numba, rtol=1e-13, atol=1e-300)


def test_python_exp_and_bit_casts():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.uniform(-760.0, 720.0, 2000), [0.0, -0.0, -745.2, 709.78]])
    x = np.concatenate([x, [np.inf, -np.inf, np.nan]])
    python = compiled.exp(x, backend="python")
    with np.errstate(over="ignore"):
        ref = np.exp(x)
    finite = np.isfinite(ref) & (ref > 0.0)
    assert np.abs(python[finite].view(np.int64) - ref[finite].view(np.int64)).max() <= 1
    assert np.array_equal(python[:-1][~finite[:-1]], ref[:-1][~finite[:-1]])
    assert np.isnan(python[-1])
    if compiled.kernel_set("numba") is not None:
        numba = compiled.exp(x, backend="numba")
        assert np.abs(python[finite].view(np.int64) - numba[finite].view(np.int64)).max() <= 1
    assert exponential.f2i(1.0) == 0x3FF0000000000000
    assert exponential.i2f(0x3FF0000000000000) == 1.0
    assert exponential.i2f(-1 << 63) == -0.0 and str(exponential.i2f(-1 << 63)) == "-0.0"
    for v in rng.normal(size=20) * 1e5:
        assert exponential.i2f(exponential.f2i(v)) == v


def test_the_exp_constants_are_defined_once():
    c = exponential.CONSTANTS
    assert c["shifter_bits"] == exponential.f2i(exponential.SHIFTER)
    assert [c[f"c{j}"] for j in range(2, 14)] == list(exponential.TAYLOR)
    assert (c["lo"], c["hi"]) == (exponential.LOGISTIC_LO, exponential.EXP_HI)
    with pytest.raises(TypeError):
        c["c2"] = 0.0  # type: ignore[index]


# ------------------------------------------------------------------- kernel sets, backends


def test_kernel_sets_are_built_once_immutable_and_leave_the_sources_plain():
    python = compiled.kernel_set("python")
    assert python is compiled.kernel_set("python") and python.backend == "python"
    assert python.fused is loops.fused_rows and python.batched is loops.batched_rows
    with pytest.raises(AttributeError):
        python.fused = None  # type: ignore[misc]
    with pytest.raises(ValueError, match="unknown kernel backend"):
        compiled.kernel_set("cuda")
    numba = numba_set()
    assert compiled.warm() is numba is compiled.kernel_set("numba")
    for dispatcher in numba[1:]:
        assert dispatcher.signatures  # compiled (or loaded from the cache) by warm()
    # building the compiled set filled in nothing: the loops still call plain functions
    for name in ("row_dot", "deriv_tile", "margins4", "logistic2", "exp_parts", "i2f"):
        assert isinstance(getattr(loops, name), types.FunctionType)
    assert loops.prange is range and isinstance(exponential.f2i, types.FunctionType)


@pytest.mark.parametrize("name", LOSSES)
def test_the_backend_argument_and_default_select_the_python_kernels(name, monkeypatch):
    monkeypatch.setattr(compiled, "ENABLED", True)  # whatever OBJPERT_NUMBA says
    X, y = data(name, n=9)
    loss = loss_object(name)
    rng = np.random.default_rng(6)
    for W in (rng.normal(size=6), rng.normal(size=(6, 8))):
        ref = two_pass(X, W, y, loss)
        factory = compiled.fused_kernel if W.ndim == 1 else compiled.batched_kernel
        out = np.zeros_like(W)
        factory(loss, backend="python")(X, W, y, 0, 9, out)
        assert_close(out, ref)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(compiled, "BACKEND", "python")
            again = np.zeros_like(W)
            factory(loss)(X, W, y, 0, 9, again)
        assert np.array_equal(again, out)
        run = compiled.parallel_kernel(loss, backend="python")
        assert_close(run(X, W, y, np.array([0, 4, 9])), ref)
        m = X @ W
        assert_close(
            compiled.derivative_kernel(loss, backend="python")(m, y),
            loss.d1(X @ W, y if W.ndim == 1 else y[:, None]),
        )
    monkeypatch.setattr(compiled, "ENABLED", False)
    assert compiled.fused_kernel(loss, backend="python") is None
    assert compiled.warm("python") is None


def run_python(script: str, env: dict[str, str] | None = None, timeout: float = 300.0):
    """Run ``script`` in a fresh interpreter; its stdout."""
    environment = {**os.environ, **(env or {})}
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


GRADIENT = """
    import sys
    import numpy as np
    from objpert._engines import blocked, compiled
    from objpert._engines.dense import DenseEngine
    from objpert._losses import get_loss

    blocked.PARALLEL_MIN_WORK = 0  # the kernels' path, however small
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    loss = get_loss("logistic")
    for W in (rng.normal(size=5), rng.normal(size=(5, 8))):
        got = DenseEngine(X, threads=2, block_rows=8).glm_gradient(W, y, loss)
        ref = X.T @ loss.d1(X @ W, y if W.ndim == 1 else y[:, None])
        assert np.allclose(got, ref, rtol=1e-12, atol=1e-14), (got, ref)
"""


@pytest.mark.parametrize(
    ("env", "backend"),
    [({"OBJPERT_KERNELS": "python"}, "python"), ({"NUMBA_DISABLE_JIT": "1"}, "python")],
)
def test_environment_selects_the_python_kernels(env, backend):
    """OBJPERT_KERNELS=python, or NUMBA_DISABLE_JIT=1: the engine's gradients run the plain
    loops (numba is not even imported) and equal the two-pass gradient."""
    script = (
        GRADIENT
        + """
    print(compiled.BACKEND, compiled.available(), "numba" in sys.modules)
    """
    )
    clean = {"OBJPERT_KERNELS": "", "NUMBA_DISABLE_JIT": "0", "OBJPERT_NUMBA": "1", **env}
    assert run_python(script, clean).split() == [backend, "True", "False"]


def test_without_numba_the_engine_uses_the_numpy_sweep():
    script = (
        """
    import sys
    sys.modules["numba"] = None  # import numba raises ImportError
    """
        + GRADIENT
        + """
    from objpert._engines.compiled import kernel_set
    assert compiled.fused_kernel(loss) is None and compiled.parallel_kernel(loss) is None
    assert compiled.warm() is None and kernel_set("numba") is None
    assert kernel_set("python") is not None
    print(compiled.BACKEND, compiled.available(), compiled.available("python"))
    """
    )
    env = {"OBJPERT_KERNELS": "", "NUMBA_DISABLE_JIT": "0", "OBJPERT_NUMBA": "1"}
    assert run_python(script, env).split() == ["numba", "False", "True"]


# ------------------------------------------------------------------- warm-up and fork

FORK = """
    import multiprocessing
    import queue
    import sys
    import threading
    import warnings

    import numpy as np
    from numba.core.compiler_lock import global_compiler_lock

    from objpert._engines import blocked, compiled
    from objpert._engines.dense import DenseEngine
    from objpert._losses import get_loss

    warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
    blocked.PARALLEL_MIN_WORK = 0
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 7))
    y = np.where(rng.random(500) < 0.5, -1.0, 1.0)
    W = rng.normal(size=(7, 5))
    loss = get_loss("logistic")


    def gradient():
        return DenseEngine(X, threads=1).glm_gradient(W, y, loss)


    def child(results):
        results.put(gradient())


    compiling = threading.Event()


    def warm():
        with global_compiler_lock:  # this thread is compiling when the fork happens
            compiling.set()
            compiled.warm()


    thread = threading.Thread(target=warm)
    thread.start()
    compiling.wait()
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    process = context.Process(target=child, args=(results,))
    process.start()
    try:
        got = results.get(timeout=60)
    except queue.Empty:
        process.kill()
        print("the child did not finish")
        sys.exit(1)
    process.join(60)
    thread.join()
    ref = X.T @ loss.d1(X @ W, y[:, None])
    assert np.allclose(got, ref, rtol=1e-12, atol=1e-14)
    print(process.exitcode, np.array_equal(got, gradient()))
"""


def test_a_child_forked_while_another_thread_compiles_finishes():
    """multiprocessing's fork while another thread holds numba's compiler lock (warming the
    kernels): the fork waits for the compile, and the child computes the same gradient
    instead of waiting forever for a lock held by a thread it does not have."""
    pytest.importorskip("numba")
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("no fork start method")
    env = {"OBJPERT_KERNELS": "", "NUMBA_DISABLE_JIT": "0", "OBJPERT_NUMBA": "1"}
    assert run_python(FORK, env, timeout=600).split() == ["0", "True"]


def test_warm_is_idempotent_and_marks_the_thread_pool_started():
    numba_set()
    kernels = compiled.warm()
    assert compiled.warm(parallel=False) is kernels
    # compiling the parallel kernels starts numba's threading layer: a forked child must
    # not launch it, so it gets no parallel kernel
    assert os.getpid() == compiled._POOL_STARTED_IN
    assert build.LOCK.acquire(blocking=False)  # released after the warm-up
    build.LOCK.release()
