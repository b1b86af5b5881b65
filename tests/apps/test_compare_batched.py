"""The comparison's batched seeds, its plans computed once per cell and its worker
processes: each batched Watkins & Arora release is the release its seed gives alone (to
1e-12) and the one a plain numpy loop of eq. (4) gives; every cached plan is the plan its
planner computes afresh; the rows do not depend on the number of workers."""

import numpy as np
import pytest
from scipy.special import expit

from objpert._data import prepare
from objpert.apps import _compare as compare
from objpert.apps._demo import split
from objpert.apps.datasets import load
from objpert.certify._calibration import tight
from objpert.estimators import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER
from objpert.mechanisms import _registry as registry

EPS, DELTA = 1.0, 1e-6
SEEDS = [compare.seed_of(s) for s in range(3)]


@pytest.fixture(scope="module")
def P():
    ds = load("breast_cancer")
    Xtr, _, ytr, _ = split(ds)
    return prepare(Xtr, ytr, data_norm=ds.data_norm)


@pytest.fixture(scope="module")
def batched(P):
    return compare.fit_seeds("watkins_arora", P, EPS, DELTA, SEEDS)


def test_batched_seeds_are_each_seeds_own_release(P, batched):
    fits, note = batched
    assert note == compare.BATCHED_NOTE and len(fits) == len(SEEDS)
    for f, seed in zip(fits, SEEDS, strict=True):
        alone = compare.FITTERS["watkins_arora"](P, EPS, DELTA, seed)
        assert np.max(np.abs(f.weights - alone.weights)) <= 1e-12
        assert (f.epsilon, f.delta) == (alone.epsilon, alone.delta)
    # distinct seeds, distinct noise; the batch's time shared out equally
    assert np.min(np.abs(fits[0].weights - fits[1].weights)) > 0.0
    assert len({(f.seconds, f.cpu_seconds) for f in fits}) == 1


def test_batched_seeds_are_a_plain_loop_of_eq4(P, batched):
    plan = compare.mechanism_plan("watkins_arora", P.n, P.d, P.zeta, EPS, DELTA)
    mu, eta, N = plan.constants.mu, plan.constants.eta, plan.iterations
    for f, seed in zip(batched[0], SEEDS, strict=True):
        z = np.random.default_rng(seed).normal(0.0, plan.sigma, size=P.d)  # the one draw
        w = np.zeros(P.d)
        for _ in range(N):  # w <- w - eta (grad F(w) + z), logistic loss, ridge mu
            grad = P.X.T @ (-P.y * expit(-P.y * (P.X @ w))) / P.n + mu * w
            w = w - eta * (grad + z)
        assert np.max(np.abs(f.weights - w)) <= 1e-10


def test_a_mechanism_without_a_batched_release_runs_seed_by_seed(P):
    fits, note = compare.fit_seeds("noisy_gd", P, EPS, DELTA, SEEDS[:2])
    assert note == ""
    for f, seed in zip(fits, SEEDS, strict=False):
        alone = compare.FITTERS["noisy_gd"](P, EPS, DELTA, seed)
        np.testing.assert_array_equal(f.weights, alone.weights)


def test_every_cached_plan_is_its_planners_fresh_plan(P):
    fresh_wa = tight(
        "logistic", n=P.n, d=P.d, zeta=P.zeta, epsilon=EPS, delta=DELTA,
        comparator_norm=DEFAULT_COMPARATOR_NORM, max_iter=DEFAULT_MAX_ITER,
        objective="empirical", mu=None,
    )  # fmt: skip
    for name in registry.names():
        cached = compare.mechanism_plan(name, P.n, P.d, P.zeta, EPS, DELTA)
        assert compare.mechanism_plan(name, P.n, P.d, P.zeta, EPS, DELTA) is cached  # once
        if name == "watkins_arora":
            fresh = fresh_wa
        else:
            options = {}
            if compare.fit_loss(name) == "logistic":
                options["mu"] = fresh_wa.mu
                if name == "lop_clip":
                    options["clip"] = compare.LOP_CLIP_SHARE * P.zeta
            fresh = registry.get(name).plan(
                loss=compare.fit_loss(name), n=P.n, d=P.d, zeta=P.zeta, epsilon=EPS,
                delta=DELTA, **options,
            )  # fmt: skip
        assert type(cached) is type(fresh) and cached == fresh, name


def test_rows_do_not_depend_on_the_workers():
    methods = ("watkins_arora", "noisy_gd", "qop", "theta_ref")
    runs = {
        w: compare.run(["breast_cancer"], [3.0], DELTA, 2, methods=methods, workers=w)
        for w in (1, 2)
    }
    (one, meta1), (two, meta2) = runs[1], runs[2]
    assert (meta1["workers"], meta2["workers"]) == (1, 2)
    assert [(r.method, r.epsilon) for r in one] == [(r.method, r.epsilon) for r in two]
    for a, b in zip(one, two, strict=True):
        assert a.accuracies == b.accuracies and a.objectives == b.objectives, a.method
        assert (a.certified_epsilon, a.certified_delta, a.note) == (
            b.certified_epsilon, b.certified_delta, b.note,
        )  # fmt: skip
    assert {r.method: r.note for r in one}["watkins_arora"] == compare.BATCHED_NOTE
    assert meta2["cpu_seconds"] > 0.0 and meta2["wall_seconds"] > 0.0


def test_progress_counts_each_asked_cell_once():
    seen = []
    compare.run(["breast_cancer"], [1.0, 3.0], DELTA, 2, methods=("qop",), progress=seen.append,
                workers=2)  # fmt: skip
    assert sum(seen) == 2 * 2  # theta_ref, qop's reference, is run but not counted
