"""Fuzz: the keyed layout (:mod:`objpert._engines.keyed`) and the engine a time budget
times (:func:`objpert._engines.timing.timed_engine`): a one-line objpert error, or keys
that number the patterns and the plain sum over the rows."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_support import HOSTILE, Arg, choice, count, draw_args, draw_checked, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st

from objpert._engines import timing
from objpert._engines.factory import ENGINES
from objpert._engines.keyed import KeyedEngine, key_rows
from objpert._engines.shaped import indicator_columns
from objpert._losses import get_loss
from objpert._validation import MAX_INT

pytestmark = pytest.mark.filterwarnings("ignore")


@st.composite
def rows(draw, n: int = 40, d: int = 5):
    """Rows with some columns indicators (0 or one value), others anything finite."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.uniform(-1, 1, size=(n, d))
    for j in range(draw(st.integers(0, d))):
        X[:, j] = np.where(rng.random(n) < 0.5, 0.0, draw(st.sampled_from([0.5, -2.0, 1e-300])))
    return X, np.where(rng.random(n) < 0.5, -1.0, 1.0)


MASKS = Arg(st.sampled_from(["indicators", "none", "all"]), st.sampled_from(["short", "ints"]))


def mask_of(X, kind):
    return {"indicators": indicator_columns(X)[0], "none": np.zeros(X.shape[1], bool),
            "all": np.ones(X.shape[1], bool), "short": np.ones(2, bool),
            "ints": np.ones(X.shape[1], int)}[kind]  # fmt: skip


@fuzz(40)
@given(data=st.data(), Xy=rows())
def test_keyed_engine(data, Xy):
    X, y = Xy
    kw = draw_checked(data, mask=MASKS, threads=Arg(st.sampled_from([None, 1, 2, -1]), HOSTILE))
    mask = mask_of(X, kw["mask"])
    ok, got = outcome(key_rows, X, mask)
    if not ok:
        return
    key, K = got
    assert key.min() == 0 and key.max() == K - 1
    patterns = (X != 0)[:, mask]
    for k in range(K):  # one pattern per key, a different one for every key
        assert (patterns[key == k] == patterns[key == k][0]).all()
    assert len({tuple(p) for p in patterns}) == K
    order = np.argsort(key, kind="stable")
    counts = np.random.default_rng(1).integers(1, 4, len(X)).astype(float)
    ok, engine = outcome(KeyedEngine, X[order], mask, key[order], counts[order],
                         threads=kw["threads"])  # fmt: skip
    indicators = indicator_columns(X)[0]
    t = kw["threads"]
    good = t is None or (
        isinstance(t, int) and not isinstance(t, bool) and (t == -1 or 1 <= t <= MAX_INT)
    )
    assert ok or not (good and indicators[mask].all())  # refused: bad threads, or no indicator
    if ok:
        assert indicators[mask].all()
        w = np.random.default_rng(2).normal(size=X.shape[1])
        loss = get_loss("logistic")
        t = X @ w
        ref = X.T @ (counts * (-y / (1.0 + np.exp(y * t))))
        got = engine.glm_gradient(w, y[order], loss)
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@fuzz(60)
@given(data=st.data())
def test_timed_engine(data):
    kw = draw_args(
        data, engine=choice(ENGINES), dtype=choice(("float64", "float32"))
    )  # fmt: skip
    ok, got = outcome(timing.timed_engine, **kw)
    if ok:
        engine, dtype = got
        assert engine in ENGINES and engine not in ("auto", "shaped") and dtype == kw["dtype"]
        assert engine == ("default" if kw["engine"] in ("auto", "shaped") else kw["engine"])


@fuzz(12)
@given(data=st.data())
def test_seconds_per_step_on_an_engine(data):
    """A positive finite time for the engine the fit runs, or a one-line objpert error (a
    GPU missing, float32 for the shaped engines, a bad name)."""
    kw = draw_checked(
        data, engine=choice(ENGINES), dtype=choice(("float64", "float32")), n=count(1, 500),
        d=count(1, 8),
    )  # fmt: skip
    ok, got = outcome(timing.seconds_per_step, steps=1, **kw)
    if ok:
        assert 0 < got < float("inf")
