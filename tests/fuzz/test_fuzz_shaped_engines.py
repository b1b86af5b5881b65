"""Fuzz: the engines shaped by the data (:func:`objpert._engines.shaped.shape_engine`,
:func:`~objpert._engines.factory.build_engine`), the array-API engine and the ``engine`` /
``dtype`` options of a release: a one-line objpert error, or the plain engine's result."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_support import Arg, choice, count, draw_args, draw_checked, fixed, fuzz, optional, outcome
from hypothesis import given
from hypothesis import strategies as st

from objpert._engines import GLMObjective
from objpert._engines.factory import build_engine
from objpert._engines.shaped import LAYOUTS, shape_engine
from objpert._engines.xp import XPEngine
from objpert.certify import _calibration as calibration
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent

pytestmark = pytest.mark.filterwarnings("ignore")

PLAN = calibration.tight(
    "logistic", n=60, d=4, zeta=1.0, epsilon=4.0, delta=1e-5, mu=0.2, max_iter=100,
    objective="empirical",
)  # fmt: skip


@st.composite
def tabular(draw, n: int = 60, d: int = 4):
    """Rows drawn from a small pool (duplicates), some columns indicators, labels +-1."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pool = draw(st.integers(1, n))
    X = rng.uniform(-0.45, 0.45, size=(pool, d))
    X[:, draw(st.integers(0, d)) :] = 0.0
    X[rng.random((pool, d)) < 0.5] = 0.0
    pick = rng.integers(0, pool, n)
    return X[pick], np.where(rng.random(n) < 0.5, -1.0, 1.0)


BOOL_OR_NONE = Arg(st.sampled_from([None, True, False]), st.sampled_from(["yes", 2, 1.5]))


@fuzz(30)
@given(data=st.data(), Xy=tabular())
def test_shape_engine(data, Xy):
    """The gradient of the shaped engine equals the plain one to 1e-12, or an error."""
    X, y = Xy
    kw = draw_args(data, merge=BOOL_OR_NONE, layout=optional(choice(LAYOUTS)))
    ok, got = outcome(shape_engine, X, y, **kw)
    if ok:
        engine, labels, shape = got
        assert shape.n == len(X) and 1 <= shape.rows <= len(X)
        w = np.random.default_rng(0).normal(size=X.shape[1])
        g = GLMObjective(engine, labels, "logistic", 0.2).gradient(w)
        ref = GLMObjective(X, y, "logistic", 0.2).gradient(w)
        np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-14)


@fuzz(30)
@given(data=st.data(), Xy=tabular())
def test_build_engine(data, Xy):
    X, y = Xy
    kw = draw_args(data, engine=choice(("default", "shaped", "xp")),
                   dtype=choice(("float64", "float32")))  # fmt: skip
    ok, got = outcome(build_engine, X, y, **kw)
    if ok:
        engine, labels = got
        w = np.full(X.shape[1], 0.3)
        g = GLMObjective(engine, labels, "logistic", 0.2).gradient(w)
        ref = GLMObjective(X, y, "logistic", 0.2).gradient(w)
        np.testing.assert_allclose(g, ref, rtol=1e-5 if kw["dtype"] == "float32" else 1e-12,
                                   atol=1e-7)  # fmt: skip


# multiplicities of merged duplicate rows: each row counted at least once
COUNTS = Arg(
    st.integers(1, 5).map(lambda k: np.full(60, float(k))),
    st.sampled_from([np.full(60, -1.0), np.full(60, 0.5), np.full(60, np.nan), np.ones(3),
                     "counts", np.full(60, np.inf)]),
)  # fmt: skip


@fuzz(30)
@given(data=st.data(), Xy=tabular())
def test_xp_engine(data, Xy):
    X, y = Xy
    # a private engine: what fit hands it (hostile dtypes and shapes are fuzzed at fit)
    kw = draw_checked(data, dtype=choice(("float64", "float32"), bad=("float16", "int", None)),
                   counts=optional(COUNTS), n=optional(count(1, 500)),
                   X=Arg(st.just(X), st.sampled_from([X[0], X[None], "X", [["a"]]])))  # fmt: skip
    ok, got = outcome(XPEngine, y=y, **kw)
    if ok:
        w = got.descend(np.full(X.shape[1], 0.1), 0.5, 5, PLAN.constants.loss_object(), 0.2)
        assert w.shape == (X.shape[1],) and np.all(np.isfinite(w))


@fuzz(15)
@given(data=st.data(), Xy=tabular())
def test_release_engine_and_dtype(data, Xy):
    """The default engine's release for the same seed (same certificate), or an error."""
    X, y = Xy
    kw = draw_args(data, engine=choice(("default", "shaped", "xp", "gpu")),
                   dtype=choice(("float64", "float32")), rng=fixed(3))  # fmt: skip
    ok, got = outcome(perturbed_gradient_descent, X, y, PLAN, **kw)
    if ok:
        base = perturbed_gradient_descent(X, y, PLAN, rng=3)
        tol = 1e-4 if kw["dtype"] == "float32" else 1e-10
        np.testing.assert_allclose(got.weights, base.weights, rtol=tol, atol=tol)
        assert got.certificate == base.certificate
