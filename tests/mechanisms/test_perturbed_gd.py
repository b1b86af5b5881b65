"""Tests of objpert.mechanisms._perturbed_gd: the release of Section 3.2.

The released weights are compared with a plain reference loop of eq. (4) written here,
w_{k+1} = w_k - eta (grad F(w_k) + z), w_0 = 0, with grad F(w) = (1/n) X^T l'(Xw, y) + mu w.
The reference spells the loss derivative out in numpy (``-y * expit(-y * t)`` for the
logistic loss), and evaluates grad F in the order the engine's docstring documents:
r = l'(Xw, y); r = r / n; g = X^T r; g = g + mu w; g = g + z; w = w - eta g. With the same
operations on the same arrays the result is bit-for-bit equal; an algebraically rearranged
reference (-y / (1 + exp(y t)), a per-sample sum) agrees to 1e-13 relative.
The noise is z = Generator.normal(0, sigma, size=d), drawn once: a twin generator with the
same seed reproduces it.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import warnings

import numpy as np
import pytest
from scipy import sparse
from scipy.special import expit

from objpert._engines import glm
from objpert._randomness import make_rng
from objpert.certify import _calibration as calibration
from objpert.certify import rederive_plan
from objpert.certify._calibration import WatkinsAroraPlan
from objpert.exceptions import DataError, PrivacyError
from objpert.exceptions import TestingSeedWarning as SeedWarning
from objpert.mechanisms import Release, perturbed_gradient_descent
from objpert.mechanisms._perturbed_gd import run_gradient_descent

N_ROWS, DIM, SCALE = 120, 3, 0.7


@functools.cache
def logistic_plan() -> WatkinsAroraPlan:
    return calibration.tight(
        "logistic",
        n=N_ROWS,
        d=DIM,
        zeta=1.0,
        epsilon=4.0,
        delta=1e-5,
        mu=0.05,
        max_iter=2000,
        objective="empirical",
    )


@functools.cache
def robust_plan() -> WatkinsAroraPlan:
    return calibration.tight(
        "robust",
        scale=SCALE,
        n=N_ROWS,
        d=DIM,
        zeta=1.0,
        epsilon=4.0,
        delta=1e-5,
        mu=0.3,
        max_iter=2000,
        objective="empirical",
    )


def make_data(seed: int = 0, n: int = N_ROWS, d: int = DIM, max_norm: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= (rng.uniform(0.1, max_norm, size=n) / np.linalg.norm(X, axis=1))[:, None]
    labels = (X @ np.array([2.0, -1.0, 0.5][:d] + [0.0] * max(0, d - 3)) > 0).astype(int)
    flip = rng.random(n) < 0.2
    labels[flip] = 1 - labels[flip]
    targets = X @ rng.normal(size=d) + 0.3 * rng.normal(size=n)
    return np.ascontiguousarray(X), labels, targets


# ----------------------------------------------------------------- reference loops


def logistic_d1(t, y):
    return -y * expit(-y * t)


def robust_d1(t, y):
    zz = (t - y) / SCALE
    return SCALE * (zz / np.hypot(1.0, zz))


def reference_loop(X, y, z, eta, mu, N, d1):
    """Eq. (4) from w_0 = 0, the gradient in the engine's documented order."""
    n = X.shape[0]
    w = np.zeros_like(z)
    for _ in range(N):
        r = d1(X @ w, y)
        r = r / n
        g = X.T @ r
        g = g + mu * w
        g = g + z
        w = w - eta * g
    return w


def rearranged_logistic_loop(X, y, z, eta, mu, N):
    """The same iteration written differently: per-sample sum, l' = -y / (1 + e^{y t})."""
    n, d = X.shape
    w = np.zeros(d)
    for _ in range(N):
        g = np.zeros(d)
        for i in range(n):
            g += (-y[i] / (1.0 + np.exp(y[i] * (X[i] @ w)))) * X[i]
        w = w - eta * (g / n + mu * w + z)
    return w


def pm1(labels):
    return np.where(np.asarray(labels) == 1, 1.0, -1.0)


def twin_noise(seed, plan):
    return np.random.default_rng(seed).normal(0.0, plan.sigma, size=plan.d)


def run_seeded(X, y, plan, seed, **kwargs) -> Release:
    with pytest.warns(SeedWarning):
        return perturbed_gradient_descent(X, y, plan, seed, **kwargs)


# ----------------------------------------------------------------- counting helpers

_DRAW_METHODS = frozenset(
    name
    for name in dir(np.random.Generator)
    if not name.startswith("_") and name not in ("bit_generator",)
)


class CountingGenerator(np.random.Generator):
    """A Generator that records every public method fetched (every draw goes through one)."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        object.__setattr__(self, "calls", [])

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if name in _DRAW_METHODS:
            calls = super().__getattribute__("calls")

            def recorded(*args, **kwargs):
                calls.append((name, args, kwargs))
                return attr(*args, **kwargs)

            return recorded
        return attr


@pytest.fixture
def gradient_calls(monkeypatch):
    calls = []
    original = glm.GLMObjective.gradient

    def counted(self, W):
        calls.append(np.array(W, copy=True))
        return original(self, W)

    monkeypatch.setattr(glm.GLMObjective, "gradient", counted)
    return calls


# ----------------------------------------------------------------- the release equals eq. (4)


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_logistic_release_equals_reference_loop_bit_for_bit(seed):
    plan = logistic_plan()
    X, labels, _ = make_data(seed)
    release = run_seeded(X, labels, plan, seed)
    z = twin_noise(seed, plan)
    y = pm1(labels)
    ref = reference_loop(X, y, z, plan.eta, plan.mu, plan.iterations, logistic_d1)
    assert np.array_equal(release.weights, ref)
    other = rearranged_logistic_loop(X, y, z, plan.eta, plan.mu, plan.iterations)
    np.testing.assert_allclose(release.weights, other, rtol=1e-13, atol=0)
    assert release.weights.shape == (DIM,) and release.weights.dtype == np.float64


def test_robust_release_equals_reference_loop_bit_for_bit():
    plan = robust_plan()
    X, _, targets = make_data(3)
    release = run_seeded(X, targets, plan, 7)
    z = twin_noise(7, plan)
    ref = reference_loop(X, targets, z, plan.eta, plan.mu, plan.iterations, robust_d1)
    assert np.array_equal(release.weights, ref)
    # algebraically rearranged: l' = r / sqrt(1 + (r/c)^2)
    n = X.shape[0]
    w = np.zeros(DIM)
    for _ in range(plan.iterations):
        res = X @ w - targets
        g = X.T @ (res / np.sqrt(1.0 + (res / SCALE) ** 2)) / n + plan.mu * w
        w = w - plan.eta * (g + z)
    np.testing.assert_allclose(release.weights, w, rtol=1e-13, atol=0)


def test_run_gradient_descent_is_eq4():
    plan = logistic_plan()
    X, labels, _ = make_data(4)
    y = pm1(labels)
    z = np.array([0.3, -0.2, 0.1])
    f = glm.GLMObjective(X, y, "logistic", plan.mu)
    for N in (1, 2, 17):
        w = run_gradient_descent(f, z, plan.eta, N)
        assert np.array_equal(w, reference_loop(X, y, z, plan.eta, plan.mu, N, logistic_d1))
    # N = 1 by hand: w_1 = -eta (grad F(0) + z) with grad F(0) = (1/n) X^T l'(0, y)
    w1 = run_gradient_descent(f, z, plan.eta, 1)
    grad0 = X.T @ (-y * 0.5) / X.shape[0]
    np.testing.assert_allclose(w1, -plan.eta * (grad0 + z), rtol=1e-14)
    assert np.array_equal(run_gradient_descent(f, z, plan.eta, 0), np.zeros(DIM))


@pytest.mark.parametrize("label_form", ["strings", "bools", "pm1"])
def test_label_encodings_give_the_same_release(label_form):
    plan = logistic_plan()
    X, labels, _ = make_data(5)
    forms = {
        "strings": np.array(["ham", "spam"])[labels],  # sorted: "spam" -> +1
        "bools": labels.astype(bool),
        "pm1": pm1(labels),
    }
    a = run_seeded(X, labels, plan, 9).weights
    b = run_seeded(X, forms[label_form], plan, 9).weights
    assert np.array_equal(a, b)


# ----------------------------------------------------------------- noise drawn once, N steps


def test_noise_drawn_exactly_once_with_the_given_generator(gradient_calls):
    plan = logistic_plan()
    X, labels, _ = make_data(6)
    gen = CountingGenerator(2024)
    twin = np.random.Generator(np.random.PCG64(2024))
    with pytest.warns(SeedWarning):
        release = perturbed_gradient_descent(X, labels, plan, gen)
    assert [c[0] for c in gen.calls] == ["normal"]
    _, args, kwargs = gen.calls[0]
    bound = dict(zip(("loc", "scale", "size"), args, strict=False)) | kwargs
    assert bound == {"loc": 0.0, "scale": plan.sigma, "size": plan.d}
    z = twin.normal(0.0, plan.sigma, size=plan.d)
    # nothing else consumed the stream: both generators are in the same state
    assert gen.bit_generator.state == twin.bit_generator.state
    ref = reference_loop(X, pm1(labels), z, plan.eta, plan.mu, plan.iterations, logistic_d1)
    assert np.array_equal(release.weights, ref)
    assert len(gradient_calls) == plan.iterations


@pytest.mark.parametrize("plan_fn", [logistic_plan, robust_plan], ids=["logistic", "robust"])
def test_exactly_plan_iterations_gradient_evaluations(plan_fn, gradient_calls):
    plan = plan_fn()
    X, labels, targets = make_data(7)
    y = labels if plan.loss == "logistic" else targets
    release = run_seeded(X, y, plan, 3)
    assert len(gradient_calls) == plan.iterations == release.iterations
    assert np.array_equal(gradient_calls[0], np.zeros(DIM))  # w_0 = 0
    # the evaluations are at w_0, ..., w_{N-1}: none skipped, none repeated, no early stop
    steps = [np.linalg.norm(b - a) for a, b in itertools.pairwise(gradient_calls)]
    assert all(s > 0 for s in steps)


def test_never_stops_early_on_degenerate_data(gradient_calls):
    """Identical rows, balanced labels (grad F(0) = 0): still every step of the plan."""
    plan = logistic_plan()
    X = np.zeros((N_ROWS, DIM))
    X[:, 0] = 0.5
    labels = np.arange(N_ROWS) % 2  # balanced: grad F(0) = 0
    release = run_seeded(X, labels, plan, 11)
    assert len(gradient_calls) == plan.iterations
    assert release.iterations == plan.iterations


# ----------------------------------------------------------------- refusals, nothing drawn


def _refused(X, y, plan, error, match, gradient_calls, **kwargs):
    gen = CountingGenerator(5)
    state = gen.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a refusal happens before the seed is even read
        with pytest.raises(error, match=match):
            perturbed_gradient_descent(X, y, plan, gen, **kwargs)
    assert gen.calls == []
    assert gen.bit_generator.state == state
    assert gradient_calls == []


@pytest.mark.parametrize(
    "change",
    [
        {"iterations": 1},
        {"iterations": 2},
        {"sigma": 1e-3},  # multiplied by the plan's sigma below
        {"epsilon": 0.05},
        {"delta": 1e-3},  # multiplied by the plan's delta: certifies more than it claims
    ],
    ids=["N=1", "N=2", "sigma-tiny", "epsilon-small", "delta-below-certified"],
)
def test_refuses_a_plan_that_does_not_certify(change, gradient_calls):
    plan = logistic_plan()
    fields = dict(change)
    if "sigma" in fields:
        fields["sigma"] *= plan.sigma
    if "delta" in fields:
        fields["delta"] *= plan.delta
    bad = dataclasses.replace(plan, **fields)
    cert = bad.recertify()
    assert not (cert.certified and cert.delta <= bad.delta)
    X, labels, _ = make_data(8)
    _refused(
        X, labels, bad, PrivacyError, "does not certify|certifies delta|re-derived", gradient_calls
    )


@pytest.mark.parametrize("plan", ["x", None, 3], ids=["text", "none", "number"])
def test_refuses_what_is_not_a_plan(plan, gradient_calls):
    X, labels, _ = make_data(8)
    _refused(X, labels, plan, PrivacyError, "expected a WatkinsAroraPlan", gradient_calls)
    _refused(X, labels, plan, PrivacyError, "expected a WatkinsAroraPlan", gradient_calls,
             prior=np.zeros(X.shape[1] + 1))  # fmt: skip


def test_the_plan_itself_certifies():
    for plan in (logistic_plan(), robust_plan()):
        cert = rederive_plan(plan)
        assert cert.certified and cert.delta <= plan.delta
        assert cert == plan.recertify()


@pytest.mark.parametrize(
    ("shape", "what"),
    [((N_ROWS - 1, DIM), "n"), ((N_ROWS + 1, DIM), "n"), ((N_ROWS, DIM + 1), "d")],
)
def test_refuses_data_of_another_shape(shape, what, gradient_calls):
    plan = logistic_plan()
    X, labels, _ = make_data(9, n=shape[0], d=shape[1])
    _refused(X, labels, plan, DataError, r"shape \(120, 3\)", gradient_calls)


def test_refuses_labels_of_another_length(gradient_calls):
    plan = logistic_plan()
    X, labels, _ = make_data(10)
    _refused(X, labels[:-1], plan, DataError, "labels", gradient_calls)


def test_refuses_bad_labels_for_the_loss(gradient_calls):
    plan = logistic_plan()
    X, labels, _ = make_data(10)
    three = labels.copy()
    three[0] = 2
    _refused(X, three, plan, DataError, "two classes", gradient_calls)
    _refused(X, np.full(N_ROWS, np.nan), robust_plan(), DataError, "non-finite", gradient_calls)


def test_refuses_non_finite_features(gradient_calls):
    plan = logistic_plan()
    X, labels, _ = make_data(10)
    X[3, 1] = np.nan
    _refused(X, labels, plan, DataError, "1 non-finite", gradient_calls)


def test_rows_above_zeta_refused_or_clipped(gradient_calls):
    plan = logistic_plan()
    X, labels, _ = make_data(11, max_norm=1.6)
    norms = np.linalg.norm(X, axis=1)
    over = norms > plan.zeta
    count = int(over.sum())
    assert count > 0
    _refused(X, labels, plan, DataError, rf"^{count} rows have norm above", gradient_calls)
    release = run_seeded(X, labels, plan, 13, clip=True)
    assert release.n_clipped == count
    clipped = X * np.minimum(1.0, plan.zeta / norms)[:, None]
    ref = reference_loop(
        clipped,
        pm1(labels),
        twin_noise(13, plan),
        plan.eta,
        plan.mu,
        plan.iterations,
        logistic_d1,
    )
    np.testing.assert_allclose(release.weights, ref, rtol=1e-12, atol=1e-15)
    assert len(gradient_calls) == plan.iterations
    # clip=True on data inside the bound changes nothing
    Xin, labels_in, _ = make_data(12)
    a = run_seeded(Xin, labels_in, plan, 13, clip=True)
    b = run_seeded(Xin, labels_in, plan, 13, clip=False)
    assert a.n_clipped == b.n_clipped == 0
    assert np.array_equal(a.weights, b.weights)


# ----------------------------------------------------------------- seeds


def test_seed_warns_and_reproduces():
    plan = logistic_plan()
    X, labels, _ = make_data(14)
    a = run_seeded(X, labels, plan, 42)
    b = run_seeded(X, labels, plan, 42)
    c = run_seeded(X, labels, plan, np.random.default_rng(42))
    d = run_seeded(X, labels, plan, np.random.SeedSequence(42))
    assert a.seeded and b.seeded and c.seeded and d.seeded
    assert np.array_equal(a.weights, b.weights)
    assert np.array_equal(a.weights, c.weights)
    assert np.array_equal(a.weights, d.weights)
    e = run_seeded(X, labels, plan, 43)
    assert not np.array_equal(a.weights, e.weights)


def test_no_seed_does_not_warn_and_runs_differ():
    plan = logistic_plan()
    X, labels, _ = make_data(15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = perturbed_gradient_descent(X, labels, plan)
        b = perturbed_gradient_descent(X, labels, plan, None)
    assert not a.seeded and not b.seeded
    assert not np.array_equal(a.weights, b.weights)
    assert np.all(np.isfinite(a.weights)) and np.all(np.isfinite(b.weights))


def test_make_rng():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g1, s1 = make_rng(None)
        g2, _ = make_rng(None)
    assert isinstance(g1, np.random.Generator) and s1 is False
    assert g1.bit_generator.state != g2.bit_generator.state
    gen = np.random.default_rng(0)
    with pytest.warns(SeedWarning):
        same, seeded = make_rng(gen)
    assert same is gen and seeded is True
    with pytest.warns(SeedWarning):
        g3, _ = make_rng(0)
    assert g3.normal() == np.random.default_rng(0).normal()


# ----------------------------------------------------------------- the Release


def test_release_fields_and_json():
    plan = logistic_plan()
    X, labels, _ = make_data(16)
    release = run_seeded(X, labels, plan, 17)
    assert isinstance(release, Release)
    assert release.plan is plan
    assert release.certificate == plan.recertify()
    assert release.certificate.certified
    assert release.iterations == plan.iterations
    assert release.seconds > 0
    assert release.n_clipped == 0
    assert release.seeded is True
    assert release.epsilon == plan.epsilon
    assert release.delta == release.certificate.delta <= plan.delta
    out = release.to_dict()
    text = json.dumps(out)
    back = json.loads(text)
    assert back["weights"] == release.weights.tolist()
    assert back["iterations"] == plan.iterations
    assert back["seeded"] is True and back["n_clipped"] == 0
    assert back["plan"]["sigma"] == plan.sigma and back["plan"]["iterations"] == plan.iterations
    assert back["certificate"]["certified"] is True
    assert back["certificate"]["delta"] == release.certificate.delta
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.iterations = 0


def test_verbose_progress_gives_the_same_weights(monkeypatch):
    import rich.progress

    bars = []

    class RecordingProgress(rich.progress.Progress):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            bars.append(self)

    monkeypatch.setattr(rich.progress, "Progress", RecordingProgress)
    plan = logistic_plan()
    X, labels, _ = make_data(18)
    quiet = run_seeded(X, labels, plan, 19, verbose=False)
    assert bars == []
    loud = run_seeded(X, labels, plan, 19, verbose=True)
    assert len(bars) == 1
    assert bars[0].tasks[0].completed == plan.iterations
    auto = run_seeded(X, labels, plan, 19)  # short run, not a terminal: no bar
    assert len(bars) == 1
    assert np.array_equal(quiet.weights, loud.weights)
    assert np.array_equal(quiet.weights, auto.weights)
    f = glm.GLMObjective(X, pm1(labels), "logistic", plan.mu)
    z = twin_noise(19, plan)
    with_bar = run_gradient_descent(f, z, plan.eta, plan.iterations, progress=True)
    assert np.array_equal(with_bar, quiet.weights)


@pytest.mark.parametrize("clip", [False, True])
def test_sparse_input(clip):
    plan = logistic_plan()
    X, labels, _ = make_data(20, max_norm=1.5 if clip else 1.0)
    rng = np.random.default_rng(21)
    X[rng.random(X.shape) < 0.4] = 0.0
    S = sparse.csr_matrix(X)
    dense = run_seeded(X, labels, plan, 22, clip=clip)
    sp = run_seeded(S, labels, plan, 22, clip=clip)
    assert sp.n_clipped == dense.n_clipped
    assert (sp.n_clipped > 0) == clip
    np.testing.assert_allclose(sp.weights, dense.weights, rtol=1e-12, atol=1e-15)
    if not clip:
        ref = reference_loop(
            X,
            pm1(labels),
            twin_noise(22, plan),
            plan.eta,
            plan.mu,
            plan.iterations,
            logistic_d1,
        )
        np.testing.assert_allclose(sp.weights, ref, rtol=1e-12, atol=1e-15)
    for form in (sparse.csc_matrix(X), sparse.coo_matrix(X)):
        other = run_seeded(form, labels, plan, 22, clip=clip)
        np.testing.assert_allclose(other.weights, sp.weights, rtol=1e-12, atol=1e-15)


def test_inputs_not_modified():
    plan = logistic_plan()
    X, labels, _ = make_data(23, max_norm=1.5)
    X0, labels0 = X.copy(), labels.copy()
    run_seeded(X, labels, plan, 24, clip=True)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(labels, labels0)
