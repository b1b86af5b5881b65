"""Fuzz: the comparison's seeds of one cell (objpert.apps._compare.fit_seeds) and its
worker processes (compare.run(workers=...)): hostile arguments are refused with an objpert
error; valid ones give finite weights, certificates in range, the release each seed gives
alone, and rows that do not depend on the number of workers."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_support import HOSTILE, check_certificate, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st

from objpert._data import prepare
from objpert.apps import _compare as compare
from objpert.apps._demo import split
from objpert.apps.datasets import load
from objpert.mechanisms import _registry as registry

SEEDS = st.lists(st.integers(0, 10**6), min_size=1, max_size=2)
METHODS = st.sampled_from(("watkins_arora", "noisy_gd", "theta_ref", "nonprivate"))


@pytest.fixture(scope="module")
def P():
    ds = load("breast_cancer")
    Xtr, _, ytr, _ = split(ds)
    return prepare(Xtr, ytr, data_norm=ds.data_norm)


@fuzz(8)
@given(
    method=st.one_of(METHODS, st.just("magic"), HOSTILE),
    seeds=st.one_of(SEEDS, st.just([]), st.lists(HOSTILE, min_size=1, max_size=2), HOSTILE),
    eps=st.one_of(st.sampled_from((1.0, 3.0)), HOSTILE),
    delta=st.one_of(st.just(1e-6), HOSTILE),
)
def test_fit_seeds(P, method, seeds, eps, delta):
    ok, got = outcome(compare.fit_seeds, method, P, eps, delta, seeds)
    if not ok:
        return
    fits, note = got
    assert len(fits) == len(seeds) and note in ("", compare.BATCHED_NOTE)
    for f, seed in zip(fits, seeds, strict=True):
        assert f.weights.shape == (P.d,) and np.all(np.isfinite(f.weights))
        if method in registry.names():
            check_certificate(f)
        alone = compare.FITTERS[method](P, eps, delta, seed)
        assert np.max(np.abs(f.weights - alone.weights), initial=0.0) <= 1e-12


@fuzz(6)
@given(workers=st.one_of(st.integers(1, 3), HOSTILE))
def test_run_workers(workers):
    args = (["breast_cancer"], [3.0], 1e-6, 2)
    ok, got = outcome(compare.run, *args, methods=("noisy_gd", "theta_ref"), workers=workers)
    if not ok:
        return
    rows, meta = got
    assert meta["workers"] == (compare.default_workers() if workers is None else workers)
    alone, _ = compare.run(*args, methods=("noisy_gd", "theta_ref"), workers=1)
    assert [(r.method, r.accuracies, r.objectives) for r in rows] == [
        (r.method, r.accuracies, r.objectives) for r in alone
    ]
