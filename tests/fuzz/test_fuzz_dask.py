"""Fuzz: the step timeout of a fit on a Dask cluster (``step_timeout`` of the estimators'
fit, :func:`objpert._engines.distributed.step_timeout`) and the placement of partitions for
direct steps (:func:`objpert._engines.distributed_direct.pins`)."""

from __future__ import annotations

import math
import socket
import time
from unittest import mock

import numpy as np
import pytest
from fuzz_support import HOSTILE, Arg, draw_args, fuzz, log_floats, outcome
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("distributed")

from objpert._data.distributed import cluster
from objpert._engines import distributed as engines
from objpert._engines.distributed_direct import pins
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ClusterError, ParameterError

pytestmark = pytest.mark.filterwarnings("ignore")

TIMEOUT = Arg(st.one_of(st.none(), st.just(math.inf), log_floats(1e-3, 1e6)), HOSTILE)


@fuzz(150)
@given(data=st.data())
def test_step_timeout(data):
    """Seconds > 0 (inf: none; None: STEP_TIMEOUT), or a one-line ParameterError."""
    kw = draw_args(data, timeout=TIMEOUT)
    ok, got = outcome(engines.step_timeout, **kw)
    if ok:
        assert isinstance(got, float) and got > 0
        if kw["timeout"] is None:
            assert got == engines.STEP_TIMEOUT
        elif not isinstance(kw["timeout"], bool):
            assert got == float(kw["timeout"])
    else:
        assert isinstance(got, ParameterError) and "timeout" in str(got)


CONNECT = 1.0  # the longest wait for a scheduler in the test below (library: 30 s)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@fuzz(4)
@given(data=st.data())
def test_fit_step_timeout_with_no_scheduler(data):
    """A fit given a scheduler address where none listens: a bad step_timeout is refused
    before any connection is tried; a valid one bounds the wait for the scheduler."""
    kw = draw_args(data, step_timeout=Arg(st.one_of(st.none(), log_floats(0.05, 0.5)), HOSTILE))
    cls = data.draw(st.sampled_from([PrivateLogisticRegression, PrivateRobustRegression]))
    X = np.eye(4)[:, :3] / 2
    y = np.array([0, 1, 0, 1])
    est = cls(epsilon=1.0, delta=1e-5, data_norm=1.0)
    # The longest wait for a scheduler (30 s) lowered to CONNECT s, so that None and huge
    # valid timeouts (which wait that longest) stay fast; it still exceeds every drawn
    # plausible step_timeout, which must bound the wait on its own.
    start = time.perf_counter()
    with mock.patch.object(cluster, "_CONNECT_SECONDS", CONNECT):
        est.set_params(client=f"tcp://127.0.0.1:{_closed_port()}", **kw)
        ok, err = outcome(est.fit, X, y)
    elapsed = time.perf_counter() - start
    assert not ok and not hasattr(est, "coef_")
    if isinstance(err, ClusterError):
        # None is valid: the wait is then the longest wait for a scheduler
        bound = min(engines.step_timeout(kw["step_timeout"]), CONNECT)
        assert "no Dask scheduler answered at tcp://127.0.0.1:" in str(err)
        assert f"within {bound:g} s" in str(err)
        assert elapsed < bound + 10
    else:
        assert isinstance(err, ParameterError) and "step_timeout" in str(err)


KEYS = st.integers(0, 5)
WORKERS = st.sets(st.sampled_from("abc"), max_size=3)


@fuzz(200)
@given(
    who=st.dictionaries(st.tuples(st.sampled_from("xy"), KEYS), WORKERS),
    parts=st.integers(0, 6),
)
def test_pins(who, parts):
    """Every partition once, on a worker holding its features and labels (the first such
    worker in order), in partition order per worker; None iff one has no such worker."""
    x_keys, y_keys = [("x", i) for i in range(parts)], [("y", i) for i in range(parts)]
    holders = {k: sorted(v) for k, v in who.items()}
    got = pins(x_keys, y_keys, holders)
    common = [set(who.get(("x", i), ())) & set(who.get(("y", i), ())) for i in range(parts)]
    if not all(common):
        assert got is None
        return
    assert got is not None
    assert [a for a, _, _ in got] == sorted({a for a, _, _ in got})
    served = sorted(i for _, idx, _ in got for i in idx)
    assert served == list(range(parts))
    for addr, idx, keys in got:
        assert idx == sorted(idx) and keys == [(("x", i), ("y", i)) for i in idx]
        for i in idx:
            assert addr == min(common[i])
