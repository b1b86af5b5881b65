"""The Watkins & Arora (2026) release, Section 3.2.

Draw z ~ N(0, sigma^2 I_d) once, run exactly N steps of
w_{k+1} = w_k - eta (grad F(w_k; S) + z) from w_0 = 0 (eq. 4), release w_N. The plan's
certificate is recomputed from its public constants before any data is touched; a plan
that does not certify, or data that break Assumption 1, are refused.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert.certify.calibration import Plan
from objpert.certify.certificate import Certificate
from objpert.data import (
    for_plan,
)
from objpert.engines.glm import GLMObjective
from objpert.errors import ObjpertError
from objpert.randomness import make_rng


class PrivacyError(ObjpertError):
    """The release would not be covered by its certificate; nothing was released."""


@dataclass(frozen=True)
class Release:
    """What a mechanism hands back: the weights and everything that certifies them."""

    weights: np.ndarray
    plan: Plan
    certificate: Certificate
    iterations: int
    seconds: float
    n_clipped: int
    seeded: bool

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
    """Recompute the plan's certificate from its public constants; refuse if it fails."""
    cert = plan.recertify()
    if not cert.certified:
        raise PrivacyError(f"the plan does not certify: {'; '.join(cert.reasons)}")
    if cert.delta > plan.delta:
        raise PrivacyError(
            f"the plan certifies delta = {cert.delta:.3g} > its target {plan.delta:.3g}"
        )
    return cert


def _show_progress(verbose: bool | None, iterations: int) -> bool:
    if verbose is None:
        return iterations >= 2000 and sys.stderr.isatty()
    return bool(verbose)


def run_gradient_descent(
    objective: GLMObjective, z: np.ndarray, eta: float, iterations: int, progress: bool = False
) -> np.ndarray:
    """Exactly ``iterations`` steps of eq. (4) from w_0 = 0; no stopping rule of any kind."""
    w = np.zeros_like(z)
    if not progress:
        for _ in range(iterations):
            g = objective.gradient(w)
            g += z
            w -= eta * g
        return w
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task("perturbed gradient descent", total=iterations)
        step = max(1, iterations // 200)
        for k in range(iterations):
            g = objective.gradient(w)
            g += z
            w -= eta * g
            if (k + 1) % step == 0:
                bar.update(task, completed=k + 1)
    return w


def perturbed_gradient_descent(
    X: Any,
    y: Any,
    plan: Plan,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
) -> Release:
    """Release w_N of Section 3.2 for data (X, y) under ``plan``.

    X must have the plan's public shape (n, d) and rows of norm <= plan.zeta (clipped to it
    when ``clip``, otherwise refused). Labels: two classes for the logistic loss (mapped to
    -1/+1), real targets otherwise. ``rng``: None (OS entropy), or a seed/Generator for
    testing (warns). The noise is drawn exactly once, after every check has passed.
    """
    cert = check_plan(plan)
    pc = plan.constants
    loss = pc.loss_object()
    M, yy, clipped = for_plan(
        X, y, n=pc.n, d=pc.d, zeta=pc.zeta, label_kind=loss.label_kind, clip=clip
    )
    objective = GLMObjective(M, yy, loss, pc.mu)
    generator, seeded = make_rng(rng)
    start = time.perf_counter()
    z = generator.normal(0.0, plan.sigma, size=pc.d)  # the one and only draw
    w = run_gradient_descent(
        objective, z, pc.eta, plan.iterations, _show_progress(verbose, plan.iterations)
    )
    return Release(w, plan, cert, plan.iterations, time.perf_counter() - start, clipped, seeded)
