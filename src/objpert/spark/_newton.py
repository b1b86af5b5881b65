"""The default release on Spark: AMP solved by a distributed Newton method, a few passes.

The release is the registry's ``"amp"`` (Iyengar et al. 2019, Algorithm 1;
:func:`objpert.mechanisms.amp_release`): objective perturbation whose objective noise
is certified by the tightest accountant the library has for the exact minimiser
(``accountant="tightest"``: the exact privacy profile of Redberg et al. 2023, Section 3,
or Kifer et al. 2012, Theorem 2, whichever needs less noise), solved to the plan's
gradient-norm tolerance gamma, plus discrete Gaussian output noise calibrated to the
residual gamma / mu (the plan's composition is computed in :mod:`objpert.accounting`).

It runs the mechanism's own code (:func:`objpert.mechanisms._peers.amp.amp_core`: the
plan recomputed and checked, the two noises drawn once, the solve checked against the
tolerance, nothing released otherwise) on an objective whose every new point is one
DataFrame pass returning the gradient and the d x d Hessian summed over the partitions
(:class:`PassObjective`). The solver is the in-memory batch's: damped Newton from w = 0
with dense d x d systems (:func:`objpert._solvers.newton.solve_batch_to_tolerance`), so
for the same data and seed the release equals :func:`objpert.mechanisms._peers.
peer_release_batch` with one draw, to rounding. Each Newton step costs one pass per
point its line search tries (one when the full step is taken).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objpert._losses import Loss
from objpert._randomness import make_rng
from objpert._solvers.newton import DENSE_NEWTON_MAX_D
from objpert.accounting._certificate import ReleaseCertificate
from objpert.exceptions import ParameterError, ToleranceError
from objpert.mechanisms._peers.amp import amp_core
from objpert.mechanisms._peers.checks import check_data, check_peer_plan
from objpert.spark._engine import SparkEngine
from objpert.spark._tasks import LabelTarget

__all__ = ["PassObjective", "newton_release"]


class PassObjective:
    """F(w) = (1/n) sum l(<x_i, w>, y_i) + (mu/2) ||w||^2 (eq. 1) on a :class:`SparkEngine`:
    :meth:`gradient` and :meth:`hvp` as :class:`objpert._engines.glm.GLMObjective` gives
    them, each new point w costing one pass that returns its gradient and Hessian (kept
    for the Hessian-vector products at w). More than ``max_passes`` passes in all (the
    checking pass included): :class:`~objpert.exceptions.ToleranceError`, nothing
    released."""

    def __init__(self, engine: SparkEngine, loss: Loss, mu: float, max_passes: int):
        self.engine, self.loss, self.mu, self.max_passes = engine, loss, float(mu), max_passes
        self.n, self.d = engine.n, engine.d
        self._points: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def _at(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        w = np.ascontiguousarray(w, dtype=np.float64)
        key = w.tobytes()
        if key not in self._points:
            if self.engine.passes >= self.max_passes:
                raise ToleranceError(
                    f"the Newton solve did not reach the plan's tolerance within "
                    f"maxPasses = {self.max_passes} passes over the data; nothing was "
                    "released. This refusal depends on the data: plan a larger public "
                    "maxPasses (or a looser tolerance) instead of retrying on the same data"
                )
            g, H = self.engine.gradient_hessian(w, self.loss)
            g /= self.n
            H /= self.n
            if len(self._points) >= 4:  # the accepted point and the line search's tries
                self._points.pop(next(iter(self._points)))
            self._points[key] = (g, H)
        return self._points[key]

    def gradient(self, W: np.ndarray) -> np.ndarray:
        """(1/n) X^T l'(XW, y) + mu W for W (d,) or (d, B)."""
        points = [W] if W.ndim == 1 else list(W.T)
        g = np.column_stack([self._at(w)[0] for w in points]).reshape(W.shape)
        g += self.mu * W
        return g

    def hvp(self, W: np.ndarray, V: np.ndarray) -> np.ndarray:
        """(1/n) X^T (l''(XW, y) * XV) + mu V: column b of V at the point W[:, b]."""
        if W.ndim == 1:
            out = self._at(W)[1] @ V
        else:
            out = np.column_stack([self._at(W[:, b])[1] @ V[:, b] for b in range(W.shape[1])])
        return out + self.mu * V


def newton_release(
    engine: SparkEngine, target: LabelTarget, plan: Any, rng: Any, max_passes: int
) -> tuple[np.ndarray, ReleaseCertificate, bool]:
    """One release of the AMP ``plan`` on the rows of ``engine`` (labels ``target``):
    (weights (d,), certificate, seeded). The plan's certificate is recomputed and checked
    and the rows checked against its public n, d and zeta before the noise is drawn."""
    cert = check_peer_plan(plan, "amp")
    held, _, _ = check_data(engine, target, plan, True)
    if plan.d > DENSE_NEWTON_MAX_D:
        raise ParameterError(
            f"the Newton release on Spark solves dense d x d systems for d <= "
            f"{DENSE_NEWTON_MAX_D} columns (intercept included); got d = {plan.d}: use "
            "mechanism='gradient_descent', or fewer features"
        )
    generator, seeded = make_rng(rng)
    objective = PassObjective(held, plan.loss_object(), plan.mu, max_passes)
    w, _ = amp_core(objective, plan, generator, 1, None)
    return np.ascontiguousarray(w[:, 0]), cert, seeded
