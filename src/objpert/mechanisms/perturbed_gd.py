"""The Watkins & Arora (2026) release, Section 3.2.

Draw z ~ N(0, sigma^2 I_d) once, run exactly N steps of
w_{k+1} = w_k - eta (grad F(w_k; S) + z) from w_0 = 0 (eq. 4), release w_N. The plan's
certificate is recomputed from its public constants before any data is touched; a plan
that does not certify, or data that break Assumption 1, are refused. :func:`release_batch`
runs many independent releases in one sweep over X per step; with d > n both run the
recursion in the span of the features (Lemma B.6) when that is cheaper.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert.certify.calibration import Plan, rederive_plan
from objpert.certify.certificate import Certificate
from objpert.data import (
    for_plan,
)
from objpert.engines.blocked import single_threaded_blas
from objpert.engines.glm import GLMObjective
from objpert.engines.span import FeatureSpan, span_reduction_pays
from objpert.errors import check_int
from objpert.exceptions import PrivacyError
from objpert.losses import Loss
from objpert.mechanisms.progress import show_progress, step_progress
from objpert.randomness import make_rng

__all__ = [
    "BatchRelease",
    "PrivacyError",
    "Release",
    "check_plan",
    "finite_or_refused",
    "perturbed_gradient_descent",
    "release_batch",
    "run_gradient_descent",
    "run_in_feature_span",
]


@dataclass(frozen=True)
class _Released:
    """The fields of every release: the weights and everything that certifies them."""

    weights: np.ndarray
    plan: Any
    certificate: Any
    iterations: int
    seconds: float
    n_clipped: int
    seeded: bool


@dataclass(frozen=True)
class Release(_Released):
    """What a mechanism hands back: the weights (d,) and everything that certifies them."""

    @property
    def epsilon(self) -> float:
        return self.certificate.epsilon

    @property
    def delta(self) -> float:
        return self.certificate.delta

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights": self.weights.tolist(),
            "plan": self.plan.to_dict(),
            "certificate": self.certificate.to_dict(),
            "iterations": self.iterations,
            "seconds": self.seconds,
            "n_clipped": self.n_clipped,
            "seeded": self.seeded,
        }


def check_plan(plan: Plan) -> Certificate:
    """The plan's certificate re-derived from the loss and its public inputs
    (:func:`~objpert.certify.calibration.rederive_plan`); refuse any mismatch."""
    return rederive_plan(plan)


def run_gradient_descent(
    objective: GLMObjective,
    z: np.ndarray,
    eta: float,
    iterations: int,
    progress: bool | None = False,
) -> np.ndarray:
    """Exactly ``iterations`` steps of eq. (4) from w_0 = 0; no stopping rule of any kind.

    z has shape (d,) or (d, B) (B runs at once). BLAS runs one thread throughout: the
    engines thread their sweeps themselves, and a small product split over BLAS threads
    costs more than it saves (far more on a busy machine).
    """
    w = np.zeros_like(z)
    with single_threaded_blas():
        if not progress:
            for _ in range(iterations):
                g = objective.gradient(w)
                g += z
                w -= eta * g
            return w
        with step_progress("perturbed gradient descent", iterations, True) as tick:
            for k in range(iterations):
                g = objective.gradient(w)
                g += z
                w -= eta * g
                tick(k)
    return w


def run_in_feature_span(
    span: FeatureSpan,
    objective: GLMObjective,
    z: np.ndarray,
    eta: float,
    iterations: int,
    progress: bool = False,
) -> np.ndarray:
    """Eq. (4) for F on X, run in a subspace holding every row (Lemma B.6, item 1).

    ``objective`` is F restricted to the span, i.e. built on ``span.features``; z has shape
    (d,) or (d, B). Returns M(z) = Q M^C(Q^T z) - B_N (z - Q Q^T z), B_N = (1 - rho^N)/mu,
    rho = 1 - eta mu: the same w_N as :func:`run_gradient_descent` on X, up to rounding.
    """
    zc = span.project(z)
    v = run_gradient_descent(objective, zc, eta, iterations, progress)
    b_n = -math.expm1(iterations * math.log1p(-eta * objective.mu)) / objective.mu
    w = span.lift(v + b_n * zc)
    w -= b_n * z
    return w


def _prepare(
    X: Any, y: Any, plan: Plan, clip: bool
) -> tuple[Certificate, Any, np.ndarray, Loss, int]:
    """Every check before the noise: the plan certifies, the data meet its shape, labels and
    Assumption 1 (rows clipped when ``clip``). (certificate, X, y, loss, rows clipped)."""
    cert = check_plan(plan)
    pc = plan.constants
    loss = pc.loss_object()
    M, yy, clipped = for_plan(
        X, y, n=pc.n, d=pc.d, zeta=pc.zeta, label_kind=loss.label_kind, clip=clip
    )
    return cert, M, yy, loss, clipped


def finite_or_refused(w: np.ndarray) -> np.ndarray:
    """``w`` if every weight is finite; otherwise :class:`PrivacyError` and nothing is
    released (a NaN or an infinity is no point of the mechanism's output distribution)."""
    if not np.all(np.isfinite(w)):
        raise PrivacyError(
            "the gradient descent produced non-finite weights (an overflow in the loss or "
            "the data); nothing was released"
        )
    return w


def _descend(
    M: Any,
    y: np.ndarray,
    loss: Loss,
    plan: Plan,
    z: np.ndarray,
    span_reduction: bool | None,
    verbose: bool | None,
) -> np.ndarray:
    """w_N for noise z of shape (d,) or (d, B), in the feature span when ``span_reduction``
    (None: when :func:`~objpert.engines.span.span_reduction_pays`)."""
    N, mu, eta = plan.iterations, plan.constants.mu, plan.constants.eta
    progress = show_progress(verbose, N)
    draws = z.shape[1] if z.ndim == 2 else 1
    if span_reduction is None:
        span_reduction = span_reduction_pays(M, N, draws)
    if not span_reduction:
        return finite_or_refused(
            run_gradient_descent(GLMObjective(M, y, loss, mu), z, eta, N, progress)
        )
    span = FeatureSpan(M)
    objective = GLMObjective(span.features, y, loss, mu)
    return finite_or_refused(run_in_feature_span(span, objective, z, eta, N, progress))


def perturbed_gradient_descent(
    X: Any,
    y: Any,
    plan: Plan,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
    span_reduction: bool | None = None,
) -> Release:
    """Release w_N of Section 3.2 for data (X, y) under ``plan``.

    X must have the plan's public shape (n, d) and rows of norm <= plan.zeta (clipped to it
    when ``clip``, otherwise refused). Labels: two classes for the logistic loss (mapped to
    -1/+1), real targets otherwise. ``rng``: None (OS entropy), or a seed/Generator for
    testing (warns). The noise is drawn exactly once, after every check has passed.
    ``span_reduction``: run in the span of the features (Lemma B.6; the same w_N up to
    rounding); None does so when d > n and it is cheaper, False never.
    """
    cert, M, yy, loss, clipped = _prepare(X, y, plan, clip)
    generator, seeded = make_rng(rng)
    start = time.perf_counter()
    z = generator.normal(0.0, plan.sigma, size=plan.constants.d)  # the one and only draw
    w = _descend(M, yy, loss, plan, z, span_reduction, verbose)
    return Release(w, plan, cert, plan.iterations, time.perf_counter() - start, clipped, seeded)


@dataclass(frozen=True)
class BatchRelease(_Released):
    """``draws`` independent releases under one plan: row b of ``weights`` (draws, d) is w_N
    for its own noise z_b, drawn once. The certificate covers each row on its own;
    publishing all of them composes ``draws`` releases on the same data."""

    @property
    def draws(self) -> int:
        return int(self.weights.shape[0])


def release_batch(
    X: Any,
    y: Any,
    plan: Plan,
    draws: int,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
    span_reduction: bool | None = None,
) -> BatchRelease:
    """``draws`` independent releases of :func:`perturbed_gradient_descent`, computed
    together: each step evaluates the gradient at all ``draws`` iterates in one sweep over X.

    Same checks, arguments and refusals as :func:`perturbed_gradient_descent`; the noise
    Z ~ N(0, sigma^2 I), shape (draws, d), is drawn once, after every check, so with a seed
    row 0 equals the single release with that seed.
    """
    draws = check_int("draws", draws, 1)
    cert, M, yy, loss, clipped = _prepare(X, y, plan, clip)
    generator, seeded = make_rng(rng)
    start = time.perf_counter()
    z = generator.normal(0.0, plan.sigma, size=(draws, plan.constants.d))  # the only draw
    w = _descend(M, yy, loss, plan, np.ascontiguousarray(z.T), span_reduction, verbose)
    return BatchRelease(
        np.ascontiguousarray(w.T),
        plan,
        cert,
        plan.iterations,
        time.perf_counter() - start,
        clipped,
        seeded,
    )
