"""Fuzz: the trade-off functions (objpert.certify._tradeoff) and ``objpert report`` on
damaged model files and hostile arguments."""

from __future__ import annotations

import json
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from fuzz_support import (
    HOSTILE,
    Arg,
    check_not_nan,
    count,
    draw_checked,
    fuzz,
    outcome,
    real,
)
from hypothesis import given
from hypothesis import strategies as st
from test_fuzz_cli import check_exit

from objpert.certify import _tradeoff as tradeoff
from objpert.cli import main

pytestmark = pytest.mark.filterwarnings("ignore")


def arrays(arg: Arg, max_size: int = 8) -> Arg:
    return Arg(
        st.lists(arg.plausible, min_size=1, max_size=max_size),
        st.one_of(st.lists(st.one_of(arg.plausible, HOSTILE), max_size=max_size), HOSTILE),
    )


@fuzz(150)
@given(data=st.data())
def test_tradeoff(data):
    """A trade-off value in [0, 1], non-increasing in alpha, f(alpha) <= 1 - alpha; or an
    objpert error."""
    kw = draw_checked(
        data,
        alpha=arrays(real(0.0, 1.0), 12),
        epsilons=arrays(real(0.0, 50.0, extra=(0.0, 1e300))),
        deltas=arrays(real(1e-300, 1.0, extra=(0.0, 1.0))),
    )
    eps, dels = kw["epsilons"], kw["deltas"]
    if isinstance(eps, list) and isinstance(dels, list) and data.draw(st.booleans()):
        dels = (dels * len(eps))[: len(eps)]
    ok, f = outcome(tradeoff.tradeoff, kw["alpha"], eps, dels)
    if not ok:
        return
    check_not_nan(f)
    assert np.shape(f) == np.shape(kw["alpha"])
    a, f = np.atleast_1d(np.asarray(kw["alpha"], dtype=float)), np.atleast_1d(f)
    assert np.all((f >= 0.0) & (f <= 1.0))
    assert np.all(f <= 1.0 - a + 1e-12)
    order = np.argsort(a)
    assert np.all(np.diff(f[order]) <= 1e-12)
    tpr = tradeoff.max_true_positive_rate(kw["alpha"], eps, dels)
    np.testing.assert_array_equal(np.atleast_1d(tpr), 1.0 - f)


@fuzz(100)
@given(data=st.data())
def test_epsilon_grid(data):
    kw = draw_checked(data, epsilon=real(0.0, 1e6, extra=(0.0, 1e308)), points=count(2, 2000))
    ok, grid = outcome(tradeoff.epsilon_grid, **kw)
    if ok:
        check_not_nan(grid)
        assert grid[0] == 0.0 and np.isfinite(grid).all() and np.all(np.diff(grid) > 0)
        assert float(kw["epsilon"]) in grid


@cache
def _model_text() -> str:
    """A small model file (trained once)."""
    import objpert

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = objpert.PrivateLogisticRegression(
            classes=[0, 1], data_norm=1.0, max_iter=100, random_state=0
        ).fit(X, y)
    path = Path(__file__).with_name("_report_model.json.tmp")
    try:
        objpert.save(model, path)
        return path.read_text(encoding="utf-8")
    finally:
        path.unlink(missing_ok=True)


_EDITS = st.one_of(
    st.tuples(st.just("cut"), st.integers(0, 4000), st.integers(0, 200)),
    st.tuples(st.just("text"), st.integers(0, 4000), st.text(max_size=12)),
    st.tuples(st.just("json"), st.sampled_from(["coef", "plans", "certificate", "params",
                                                "classes", "n_features_in", "signature"]),
              st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=5),
                        st.just([]), st.just({}), st.just(1e308))),
)  # fmt: skip


@fuzz(15)
@given(edit=_EDITS, fmt=st.sampled_from(["html", "md", "pdf", ""]))
def test_report_of_a_damaged_file(edit, fmt, tmp_path_factory, capsys):
    """A damaged model file or a bad --format: exit 2 with one error line; otherwise a
    report (exit 0)."""
    text = _model_text()
    kind, where, what = edit
    if kind == "cut":
        text = text[:where] + text[where + what :]
    elif kind == "text":
        text = text[:where] + what + text[where:]
    else:
        payload = json.loads(text)
        payload[where] = what
        text = json.dumps(payload)
    path = tmp_path_factory.mktemp("damaged") / "model.json"
    path.write_text(text, encoding="utf-8")
    out = path.with_suffix(".out")
    code = main(["report", str(path), "--out", str(out), "--format", fmt])
    err = capsys.readouterr().err
    check_exit(code, err)
    if code == 0:
        assert out.read_text(encoding="utf-8").strip()
