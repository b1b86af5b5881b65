"""Fork safety (:mod:`objpert._forksafe`): a ``multiprocessing`` "fork" pool started while
another thread runs a fit gets a child that fits too, within a bounded time, whether the
fork falls in the first fit of a fresh process (its imports, the kernels' build and the
engines' pools starting) or in a later one.

Each scenario runs in a fresh subprocess with a timeout, so a hang fails the test instead
of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(
        not hasattr(os, "register_at_fork") or sys.platform == "win32", reason="needs fork"
    ),
    pytest.mark.load,
]

SRC = str(Path(__file__).resolve().parents[2] / "src")

#: The scenario: a fit in a thread, a fork pool whose child fits while the thread's fit
#: runs; twice (the first fit of the process, then a later one). ``child.get`` is bounded,
#: so a hung child raises here; the subprocess's own timeout catches any other hang.
SCENARIO = textwrap.dedent(
    """
    import multiprocessing, sys, threading, time, warnings
    import numpy as np
    import objpert

    warnings.simplefilter("ignore")

    def data(n, d, seed):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, d))
        X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
        return X, (X[:, 0] > 0).astype(int)

    def fit(n, d, seed):
        X, y = data(n, d, seed)
        model = objpert.PrivateLogisticRegression(
            epsilon=1, delta=1e-6, data_norm=1.0, classes=[0, 1], random_state=seed
        )
        return float(model.fit(X, y).coef_.ravel()[0])

    def run(which, started):
        done = []
        thread = threading.Thread(target=lambda: done.append(fit(20000, 40, 1)))
        thread.start()
        started()  # the moment to fork: the parent's fit is under way
        t0 = time.monotonic()
        with multiprocessing.get_context("fork").Pool(1) as pool:
            child = pool.apply_async(fit, (300, 5, 2)).get(timeout=60)
        print(which, "child", child, round(time.monotonic() - t0, 2), flush=True)
        thread.join(120)
        assert done, which + ": the parent's fit did not end"
        print(which, "parent", done[0], flush=True)

    def importing():  # the first fit: fork while its thread imports the estimators
        deadline = time.monotonic() + 60
        while "objpert.estimators" not in sys.modules and time.monotonic() < deadline:
            time.sleep(0.0005)

    run("first", importing)
    run("later", lambda: time.sleep(0.3))
    print("done", flush=True)
    """
)


def test_a_fork_during_a_fit_gives_a_child_that_fits():
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    start = time.monotonic()
    try:
        out = subprocess.run(
            [sys.executable, "-c", SCENARIO],
            capture_output=True,
            text=True,
            timeout=240,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the fork scenario hung (killed after {exc.timeout} s): {exc.stdout}")
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.split("\n")
    assert [line.split()[:2] for line in lines if line.startswith(("first", "later"))] == [
        ["first", "child"],
        ["first", "parent"],
        ["later", "child"],
        ["later", "parent"],
    ]
    assert "done" in lines
    assert "Exception ignored" not in out.stderr, out.stderr[-3000:]
    assert time.monotonic() - start < 240


def test_a_fork_waits_for_imports_and_frees_their_locks_in_the_child(tmp_path):
    """The fork waits for another thread's import to finish (the child gets the whole
    module); past SETTLE_SECONDS it goes ahead, and the child finds the import lock free:
    an import of the unfinished module then fails at once instead of hanging."""
    for name, seconds in (("slow_a", 1), ("slow_b", 4)):
        (tmp_path / f"{name}.py").write_text(f"import time\ntime.sleep({seconds})\nVALUE = 1\n")
    script = textwrap.dedent(
        """
        import os, sys, threading, time
        import objpert
        from objpert import _forksafe as forksafe

        sys.path.insert(0, sys.argv[1])

        def fork_while_importing(name, child):
            thread = threading.Thread(target=lambda: __import__(name))
            thread.start()
            while name not in sys.modules:
                time.sleep(0.001)
            assert forksafe.imports_in_progress() == [name], forksafe.imports_in_progress()
            pid = os.fork()
            if pid == 0:
                os._exit(child())
            _, status = os.waitpid(pid, 0)
            print(name, os.waitstatus_to_exitcode(status), flush=True)
            thread.join()

        def whole():
            from slow_a import VALUE
            return 0 if VALUE == 1 else 1

        def unfinished():
            try:
                from slow_b import VALUE  # noqa: F401
            except ImportError:
                return 0
            return 3  # cannot be: the module did not finish in the parent before the fork

        fork_while_importing("slow_a", whole)
        forksafe.SETTLE_SECONDS = 0.2  # give up waiting: the child must still not hang
        fork_while_importing("slow_b", unfinished)
        print("settled", forksafe.imports_in_progress(), flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        out = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"a child hung on an import lock: {exc.stdout}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split("\n")[:3] == ["slow_a 0", "slow_b 0", "settled []"]


def test_module_locks_held_by_another_thread_are_free_in_a_child():
    """Locks of the library that another thread holds at the fork (the engines' pool lock,
    numba's launch lock, the model-selection guard) are fresh in the child."""
    script = textwrap.dedent(
        """
        import os, threading
        import objpert
        from objpert._engines import blocked
        from objpert._engines import compiled
        from objpert.estimators import _selection as selection

        locks = [blocked._POOL_LOCK, compiled._PARALLEL_LOCK, selection._lock]
        held, done = threading.Event(), threading.Event()

        def hold():
            for lock in locks:
                lock.acquire()
            held.set()
            done.wait(30)
            for lock in locks:
                lock.release()

        thread = threading.Thread(target=hold)
        thread.start()
        held.wait(30)
        pid = os.fork()
        if pid == 0:
            fresh = [blocked._POOL_LOCK, compiled._PARALLEL_LOCK, selection._lock]
            os._exit(0 if all(lock.acquire(timeout=2) for lock in fresh) else 1)
        _, status = os.waitpid(pid, 0)
        done.set()
        thread.join()
        print("child", os.waitstatus_to_exitcode(status), flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "child 0" in out.stdout


def test_the_blas_limit_of_a_sweep_in_another_thread_is_lifted_in_a_child():
    """A sweep's process-wide one-thread BLAS limit, set by a thread that a forked child
    does not have, is restored in the child (that thread would never restore it there),
    and the child's own sweeps set and restore it again."""
    script = textwrap.dedent(
        """
        import os, threading
        from threadpoolctl import threadpool_info
        import objpert
        from objpert._engines import blocked

        def blas():
            return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

        before = blas()
        inside, leave = threading.Event(), threading.Event()

        def sweep():
            with blocked.single_threaded_blas():
                inside.set()
                leave.wait(30)

        thread = threading.Thread(target=sweep)
        thread.start()
        inside.wait(30)
        during = blas()
        pid = os.fork()
        if pid == 0:
            ok = blas() == before
            with blocked.single_threaded_blas():
                ok = ok and all(n == 1 for n in blas())
            os._exit(0 if ok and blas() == before else 1)
        _, status = os.waitpid(pid, 0)
        leave.set()
        thread.join()
        print("before", before, "during", during, "after", blas(), flush=True)
        print("child", os.waitstatus_to_exitcode(status), flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "child 0" in out.stdout, out.stdout
