"""Minibatch DP-SGD with Poisson subsampling and per-example clipping (Abadi et al. 2016).

Exactly T = plan.iterations steps from w_0 = 0: each row enters the batch B_t
independently with probability q = b / n (the plan's public expected batch b), and

    w_{t+1} = w_t - eta ((sum_{i in B_t} clip_C(l'(<x_i, w_t>, y_i) x_i) + N(0, z^2 C^2 I)) / b
                         + mu w_t),

clip_C(g) = g min(1, C / ||g||). For a GLM the per-example gradient is l'_i x_i, of norm
|l'_i| ||x_i||, so the clipped sum is X_B^T (l'_i min(1, C / (|l'_i| ||x_i||))): one
matrix-vector product each way on the batch through the shared engine
(:func:`objpert._engines.array.make_engine`, dense or sparse), no loop over rows. The
release is the last iterate w_T; the certificate (:mod:`objpert.mechanisms._certificates.dp_sgd`) is
the privacy loss distribution of the T subsampled Gaussian steps under replace-one
neighbours. The batches and the noise come from :func:`objpert._randomness.make_rng`,
drawn step by step (mask, then noise), never from the data.

The noise is continuous Gaussian, not noisy GD's discrete Gaussian on a grid
(docs/threat-model.md): the accounting of Poisson subsampling by privacy loss
distributions exists for the continuous Gaussian only. The iterates are therefore
floating-point sums of noise and gradients, the surface of the floating-point attacks
that the grid closes for noisy GD; the certificate covers exact arithmetic only.
``Release.iterations`` is T; batch sizes and ``n_clipped`` are statistics of the data
(or of the sampling) that no certificate covers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from objpert._data import for_plan, row_norms
from objpert._engines.array import make_engine
from objpert._losses import Loss
from objpert._randomness import make_rng
from objpert.accounting._certificate import ReleaseCertificate
from objpert.exceptions import PrivacyError
from objpert.mechanisms._certificates.dp_sgd import DPSGDPlan
from objpert.mechanisms._peers import check_peer_plan
from objpert.mechanisms._perturbed_gd import BatchRelease, Release
from objpert.mechanisms._progress import step_progress

__all__ = [
    "checked_run",
    "clipped_gradient_sum",
    "dp_sgd_release",
    "dp_sgd_release_batch",
    "run_release",
    "run_release_batch",
]


def clipped_gradient_sum(
    M: Any, y: np.ndarray, norms: np.ndarray, loss: Loss, w: np.ndarray, clip: float
) -> np.ndarray:
    """sum_i clip_C(l'(<x_i, w>, y_i) x_i) over the rows of M (norms: their ||x_i||), as
    X^T r with r_i = l'_i min(1, C / (|l'_i| ||x_i||)) (r_i = l'_i where the gradient is 0)."""
    engine = make_engine(M)
    r = np.asarray(loss.d1(engine.matvec(w), y), dtype=float)
    size = np.abs(r) * norms
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(size > clip, r * (clip / size), r)
    return engine.rmatvec(r)


def _steps(
    M: Any,
    y: np.ndarray,
    loss: Loss,
    plan: DPSGDPlan,
    generator: np.random.Generator,
    verbose: bool | None = None,
    noise_multiplier: float | None = None,
) -> np.ndarray:
    """The T steps of the plan on checked data (``noise_multiplier`` overrides plan.sigma:
    for tests of the arithmetic only)."""
    n, d = plan.n, plan.d
    b, T, C, eta, mu = plan.batch_size, int(plan.iterations), plan.clip, plan.eta, plan.mu
    z = plan.sigma if noise_multiplier is None else noise_multiplier
    q = b / n
    norms = row_norms(M)
    w = np.zeros(d)
    with step_progress("DP-SGD", T, verbose) as tick:
        for t in range(T):
            idx = np.flatnonzero(generator.random(n) < q)  # Poisson sampling
            noise = generator.normal(0.0, z * C, size=d)
            total = noise
            if idx.size:
                total = total + clipped_gradient_sum(M[idx], y[idx], norms[idx], loss, w, C)
            w = w - eta * (total / b + mu * w)
            tick(t)
    return w


def checked_run(
    X: Any, y: Any, plan: Any, plan_type: type, method: str, rng: Any, clip: bool
) -> tuple[ReleaseCertificate, Any, np.ndarray, int, np.random.Generator, bool]:
    """The checks of a release, in order: the plan's certificate recomputed
    (:func:`objpert.mechanisms._peers.check_peer_plan`), then the data against its public
    n, d, zeta and labels, then the generator. Returns (certificate, M, y, n_clipped,
    generator, seeded)."""
    if not isinstance(plan, plan_type):
        raise PrivacyError(f"{method} needs a {plan_type.__name__}; got {type(plan).__name__}")
    cert = check_peer_plan(plan, method)
    M, yy, n_clipped = for_plan(
        X, y, n=plan.n, d=plan.d, zeta=plan.zeta,
        label_kind=plan.loss_object().label_kind, clip=clip,
    )  # fmt: skip
    if yy is None:  # a Dask engine holding the labels
        raise PrivacyError(f"{method} needs the data in memory (not a Dask array)")
    generator, seeded = make_rng(rng)
    return cert, M, yy, n_clipped, generator, seeded


def run_release(
    X: Any,
    y: Any,
    plan: Any,
    plan_type: type,
    method: str,
    rng: Any,
    clip: bool,
    steps: Callable[[Any, np.ndarray, np.random.Generator], np.ndarray],
) -> Release:
    """:func:`checked_run`, then ``steps(M, y, generator)`` once: the release of its result."""
    cert, M, yy, n_clipped, generator, seeded = checked_run(
        X, y, plan, plan_type, method, rng, clip
    )
    start = time.perf_counter()
    w = steps(M, yy, generator)
    seconds = time.perf_counter() - start
    return Release(w, plan, cert, int(plan.iterations), seconds, n_clipped, seeded)


def run_release_batch(
    X: Any,
    y: Any,
    plan: Any,
    plan_type: type,
    method: str,
    draws: int,
    rng: Any,
    clip: bool,
    steps: Callable[[Any, np.ndarray, np.random.Generator], np.ndarray],
) -> BatchRelease:
    """:func:`checked_run`, then ``steps`` ``draws`` times, one after the other from the same
    generator (so a batch of one with a seed draws the numbers of one release)."""
    cert, M, yy, n_clipped, generator, seeded = checked_run(
        X, y, plan, plan_type, method, rng, clip
    )
    start = time.perf_counter()
    W = np.stack([steps(M, yy, generator) for _ in range(draws)])
    seconds = time.perf_counter() - start
    return BatchRelease(W, plan, cert, int(plan.iterations), seconds, n_clipped, seeded)


def dp_sgd_release(
    X: Any,
    y: Any,
    plan: DPSGDPlan,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
) -> Release:
    """One DP-SGD release (module docstring): the plan re-certified, the data checked
    (rows above zeta refused; ``clip=True`` scales them down), then exactly T steps; the
    last iterate is released."""

    def steps(M: Any, yy: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        return _steps(M, yy, plan.loss_object(), plan, generator, verbose)

    return run_release(X, y, plan, DPSGDPlan, "dp_sgd", rng, clip, steps)


def dp_sgd_release_batch(
    X: Any, y: Any, plan: DPSGDPlan, draws: int, rng: Any = None, *, clip: bool = False
) -> BatchRelease:
    """``draws`` independent DP-SGD releases on the same data (for audits), through the
    same steps (fresh batches and noise each)."""

    def steps(M: Any, yy: np.ndarray, generator: np.random.Generator) -> np.ndarray:
        return _steps(M, yy, plan.loss_object(), plan, generator)

    return run_release_batch(X, y, plan, DPSGDPlan, "dp_sgd", draws, rng, clip, steps)
