"""The array-API engine: the same release as the CPU engines for the same noise.

The reference is a plain loop written here (numpy, the losses' derivatives typed out,
not objpert._losses): w <- w - eta ((1/n) X^T l'(Xw, y) + mu w + z), N times. The
engine's own code path runs on numpy (via array-api-compat) and on array-api-strict,
which rejects anything outside the standard.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from objpert._engines import GLMObjective
from objpert._engines.xp import DERIVATIVES, XPEngine, gpu_namespace
from objpert._losses import get_loss
from objpert.certify import _calibration as calibration
from objpert.exceptions import ParameterError
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, run_gradient_descent

xps = pytest.importorskip("array_api_strict")
pytest.importorskip("array_api_compat")

SCALE, MU, ETA, STEPS = 0.7, 0.2, 0.8, 60
ROOT = Path(__file__).resolve().parents[2]


def reference_d1(name: str, t: np.ndarray, y: np.ndarray) -> np.ndarray:
    if name == "logistic":
        return -y / (1.0 + np.exp(y * t))
    if name == "robust":
        return (t - y) / np.sqrt(1.0 + ((t - y) / SCALE) ** 2)
    return t - y


def reference_descent(name, X, y, z, counts=None, n=None):
    n = len(X) if n is None else n
    c = np.ones(len(X)) if counts is None else counts
    w = np.zeros_like(z)
    for _ in range(STEPS):
        m = X @ w
        yy = y[:, None] if m.ndim == 2 else y
        cc = c[:, None] if m.ndim == 2 else c
        g = X.T @ (cc * reference_d1(name, m, yy)) / n + MU * w + z
        w = w - ETA * g
    return w


def data(name: str, seed: int = 0, n: int = 400, d: int = 6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.sign(rng.normal(size=n)) if name == "logistic" else 2.0 * rng.normal(size=n)
    return X, y, rng.normal(size=d)


def loss_of(name: str):
    return get_loss(name, scale=SCALE) if name == "robust" else get_loss(name)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("name", ["logistic", "robust", "squared"])
@pytest.mark.parametrize("xp", [None, xps], ids=["numpy", "strict"])
def test_descend_equals_cpu_engine_float64(name, xp):
    """1e-10 relative on w_N against the plain loop and against the CPU engine."""
    X, y, z = data(name)
    loss = loss_of(name)
    cpu = run_gradient_descent(GLMObjective(X, y, loss, MU), z, ETA, STEPS)
    got = XPEngine(X, y, xp=xp).descend(z, ETA, STEPS, loss, MU)
    assert got.dtype == np.float64
    assert rel(got, cpu) < 1e-10
    assert rel(got, reference_descent(name, X, y, z)) < 1e-10


@pytest.mark.parametrize("xp", [None, xps], ids=["numpy", "strict"])
def test_batched_noise_and_weighted_rows(xp):
    X, y, _ = data("logistic", seed=1)
    Z = np.random.default_rng(2).normal(size=(X.shape[1], 3))
    loss = loss_of("logistic")
    assert rel(XPEngine(X, y, xp=xp).descend(Z, ETA, STEPS, loss, MU),
               reference_descent("logistic", X, y, Z)) < 1e-10  # fmt: skip
    counts = np.arange(1.0, len(X) + 1.0) % 4 + 1.0
    got = XPEngine(X, y, xp=xp, counts=counts, n=int(counts.sum())).descend(
        Z[:, 0], ETA, STEPS, loss, MU
    )
    expanded = np.repeat(np.arange(len(X)), counts.astype(int))
    assert rel(got, reference_descent("logistic", X[expanded], y[expanded], Z[:, 0])) < 1e-10


@pytest.mark.parametrize("name", ["logistic", "robust"])
@pytest.mark.parametrize("xp", [None, xps], ids=["numpy", "strict"])
def test_float32_within_1e4(name, xp):
    """float32 changes the rounding only: 1e-4 relative on w_N against float64."""
    X, y, z = data(name, seed=3)
    loss = loss_of(name)
    got = XPEngine(X, y, xp=xp, dtype="float32").descend(z, ETA, STEPS, loss, MU)
    ref = reference_descent(name, X, y, z)
    assert got.dtype == np.float64
    assert 0 < rel(got, ref) < 1e-4  # it does round differently, and only a little


def test_products_and_gradient_match_numpy():
    X, y, _ = data("robust", seed=4)
    e = XPEngine(X, y, xp=xps)
    W = np.random.default_rng(5).normal(size=(X.shape[1], 2))
    np.testing.assert_allclose(e.matvec(W), X @ W, rtol=1e-13, atol=1e-15)
    R = np.random.default_rng(6).normal(size=len(X))
    np.testing.assert_allclose(e.rmatvec(R), X.T @ R, rtol=1e-13, atol=1e-13)
    g = e.glm_gradient(W[:, 0], None, loss_of("robust"))
    np.testing.assert_allclose(g, X.T @ reference_d1("robust", X @ W[:, 0], y), rtol=1e-12)


def test_extreme_margins_stay_finite():
    """l' at margins of +-1e300 (float64) and beyond float32's range: finite, bounded."""
    for dtype in ("float64", "float32"):
        e = XPEngine(np.ones((2, 1)), np.array([1.0, -1.0]), xp=xps, dtype=dtype)
        for name in ("logistic", "robust"):
            g = e.glm_gradient(np.array([1e300 if dtype == "float64" else 1e38]), None,
                               loss_of(name))  # fmt: skip
            assert np.all(np.isfinite(g)) and np.max(np.abs(g)) <= 2 * max(1.0, SCALE)


def test_refusals():
    X, y, z = data("logistic")
    with pytest.raises(ParameterError, match="2-D"):
        XPEngine(X[0], y)
    with pytest.raises(ParameterError, match="no labels"):
        XPEngine(X).descend(z, ETA, 1, loss_of("logistic"), MU)

    class Other(type(loss_of("logistic"))):
        pass

    with pytest.raises(ParameterError, match="no derivative"):
        XPEngine(X, y).descend(z, ETA, 1, Other(), MU)
    assert set(DERIVATIVES) >= {"logistic", "robust"}


@functools.cache
def plan():
    return calibration.tight("logistic", n=300, d=4, zeta=1.0, epsilon=2.0, delta=1e-5,
                             mu=0.1, max_iter=300, objective="empirical")  # fmt: skip


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(("engine", "dtype", "tol"),
                         [("xp", "float64", 1e-10), ("default", "float32", 1e-4)])  # fmt: skip
def test_release_through_the_mechanism(engine, dtype, tol):
    """The same seed (so the same z) gives the default engine's release, same certificate."""
    X, y, _ = data("logistic", seed=7, n=300, d=4)
    base = perturbed_gradient_descent(X, y, plan(), rng=11)
    got = perturbed_gradient_descent(X, y, plan(), rng=11, engine=engine, dtype=dtype)
    assert rel(got.weights, base.weights) < tol
    assert got.certificate == base.certificate and got.iterations == plan().iterations


@pytest.mark.filterwarnings("ignore")
def test_engine_refused_before_the_draw():
    X, y, _ = data("logistic", n=300, d=4)
    with pytest.raises(ParameterError, match="engine"):
        perturbed_gradient_descent(X, y, plan(), rng=1, engine="tpu")
    if gpu_namespace() is None:
        with pytest.raises(ParameterError, match="GPU"):
            perturbed_gradient_descent(X, y, plan(), rng=1, engine="gpu")


@pytest.mark.parametrize(("engine", "dtype"), [("xp", "float64"), ("auto", "float32")])
@pytest.mark.parametrize("classes", [[0, 1], [0, 1, 2]])
def test_sparse_x_for_the_array_api_engine_is_refused_before_any_budget(engine, dtype, classes):
    """The array-API engine takes dense X: sparse X is refused at fit's door, before the
    accountant is charged or the noise drawn (the sparse engine takes it in float64)."""
    from scipy import sparse

    from objpert import PrivacyAccountant, PrivateLogisticRegression

    X, y, _ = data("logistic", n=120, d=4)
    y = np.arange(120) % len(classes)
    accountant = PrivacyAccountant(2.0, 1e-5)
    model = PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, data_norm=2.0, classes=classes, engine=engine, dtype=dtype,
        accountant=accountant,
    )  # fmt: skip
    with pytest.raises(ParameterError, match="dense X"):
        model.fit(sparse.csr_matrix(X), y)
    assert accountant.remaining().epsilon == 2.0 and not hasattr(model, "coef_")


def test_gpu_check_without_gpu_exits_zero():
    if gpu_namespace() is not None:
        pytest.skip("a GPU is present: benchmarks/gpu_check.py runs for real there")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py")],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "no CUDA GPU" in out.stdout


@pytest.mark.parametrize("name", ["logistic", "robust", "squared"])
def test_float32_compiled_sweep_with_counts(name):
    """numpy float32, one point: the compiled float32 sweep (with numba), weighted rows."""
    pytest.importorskip("numba")
    from objpert._engines import xp as xp_module

    X, y, z = data(name, seed=8)
    counts = np.arange(len(X)) % 3 + 1.0
    e = XPEngine(X, y, dtype="float32", counts=counts)
    assert xp_module._kernel32() is not None
    g = e.glm_gradient(z, None, loss_of(name))
    ref = X.T @ (counts * reference_d1(name, X @ z, y))
    assert rel(g, ref) < 1e-5
    expanded = np.repeat(np.arange(len(X)), counts.astype(int))
    got = e.descend(z, ETA, STEPS, loss_of(name), MU)
    assert rel(got, reference_descent(name, X[expanded], y[expanded], z)) < 1e-4
