"""Release maps z -> w for the audits: the Watkins & Arora (2026) release and its Jacobian.

A *release map* describes how a mechanism turns one noise vector z ~ N(0, sigma^2 I_d) into
its output, so the pairwise audit (:mod:`objpert.audit._pairwise`) can invert it and apply
the change of variables of eq. (6). It is any object with

* ``sigma``: the standard deviation of the noise z the release draws;
* ``forward(X, y, Z, *, jacobian=True) -> (W, J)``: the outputs W (d, B) for the B noise
  vectors in the columns of Z (d, B), and (when asked) the Jacobians dW/dZ as an array
  (B, d, d), ``J[b] = d w_b / d z_b``;
* ``name``: a short label;
* optionally ``preimage_guess(A, B, Z, W)``: a starting point for Newton's solve of
  M_B(z') = W = M_A(Z) (default: z' = z).

:class:`GradientDescentMap` is the correct release of Section 3.2: exactly N steps of
eq. (4) from w_0 = 0, with the Jacobian carried by eq. (5). The planted bugs
(:mod:`objpert.audit._planted`) are variants of it.

:class:`LinearLoss` is the linear loss l(t, y) = -y t of Section C.5 (L1 = 1 for labels
+-1, L2 = L3 = 0), for which the release is an exact rescaled Gaussian mechanism; it lives
here because :mod:`objpert._losses` has no linear loss. :func:`linear_plan` builds a
Theorem C.13 plan for it (with eta < 1/mu: Section 3.2 needs eta mu < 1, and L = mu).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike

from objpert._data import as_feature_matrix, bound_rows
from objpert._engines.glm import GLMObjective
from objpert._losses import Loss, broadcast_pair, register_loss
from objpert.certify import _calibration as calibration
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._constants import problem
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import ParameterError
from objpert.mechanisms._perturbed_gd import run_gradient_descent


class ReleaseMap(Protocol):
    """What the pairwise audit needs of a mechanism that is a map of one noise draw z."""

    name: str
    sigma: float

    def forward(
        self, X: Any, y: np.ndarray, Z: np.ndarray, *, jacobian: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]: ...


# ---------------------------------------------------------------- the linear loss (C.5)


@dataclass(frozen=True)
class LinearLoss(Loss):
    """Linear loss l(t, y) = -y t of Section C.5, labels y in {-1, +1}.

    l' = -y (|l'| = 1: L1 = 1), l'' = 0 (L2 = 0), l''' = 0 (L3 = 0). With ridge
    regularisation F_S(w) = (mu/2)||w||^2 + <b_S, w>, b_S = -(1/n) sum_i y_i x_i, and the
    release w_N = -((1 - rho^N)/mu)(b_S + z) is a rescaled Gaussian mechanism (Section C.5).
    """

    name: ClassVar[str] = "linear"
    label_kind: ClassVar[str] = "binary"

    @property
    def L1(self) -> float:
        return 1.0

    @property
    def L2(self) -> float:
        return 0.0

    @property
    def L3(self) -> float:
        return 0.0

    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        return -y * t

    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        return -np.array(y)

    def d2(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, _ = broadcast_pair(t, y)
        return np.zeros_like(t)

    def d3(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        return self.d2(t, y)


register_loss(LinearLoss)  # its constants are checked like any custom loss's


def plan_loss(plan: WatkinsAroraPlan) -> Loss:
    """The loss object of a plan (the audit's :class:`LinearLoss` included)."""
    if plan.loss == LinearLoss.name:
        return LinearLoss()
    return plan.constants.loss_object()


def linear_plan(
    *,
    n: int,
    d: int,
    zeta: float,
    mu: float,
    eta: float,
    sigma: float,
    iterations: int,
    epsilon: float,
    u: float,
    truncation: str = "exact",
    rows: int = 1,
) -> WatkinsAroraPlan:
    """A Theorem C.13 plan for the linear loss of Section C.5 (radii r = r_u, r' = r_u +
    2LG/mu of Section C.4), certified at ``epsilon``; its ``delta`` is the certified one.
    ``rows``: for neighbours that differ in up to that many rows
    (:mod:`objpert.certify._unit_rows`).

    Built with :func:`objpert.certify._theorem_c13.certify` and the calibration's own plan assembly,
    so the plan's certificate is the function every release uses.
    """
    pc = problem(LinearLoss(), n=n, d=d, zeta=zeta, mu=mu, eta=eta, rows=rows)
    cert = theorem_c13.certify(pc, sigma, iterations, epsilon, u=u, truncation=truncation)
    if not cert.certified:
        raise ParameterError(f"the linear plan does not certify: {'; '.join(cert.reasons)}")
    return calibration._finish(
        "linear", pc, sigma, iterations, epsilon, cert.delta, cert, 1.0, 0.01
    )


# ---------------------------------------------------------------- data checks


def audit_data(X: Any, y: Any, *, zeta: float, loss: Loss) -> tuple[np.ndarray, np.ndarray]:
    """Features as a float matrix with rows of norm <= zeta (Assumption 1, refused otherwise)
    and labels as floats (in {-1, +1} for a binary loss; 0/1 labels are mapped to -1/+1).
    No shape check: callers check the shape they need (the planted n-doubling bug
    deliberately has none)."""
    M, _ = bound_rows(as_feature_matrix(X), zeta, clip=False)
    yy = np.asarray(y, dtype=np.float64).ravel()
    if yy.shape[0] != M.shape[0]:
        raise ParameterError(f"X has {M.shape[0]} rows but y has {yy.shape[0]} labels")
    if loss.label_kind == "binary":
        if np.all((yy == 0.0) | (yy == 1.0)):
            yy = 2.0 * yy - 1.0  # {0, 1} -> {-1, +1}, as data.encode_binary maps them
        if not np.all(np.abs(yy) == 1.0):
            raise ParameterError("labels of a binary loss must be -1/+1 (or 0/1)")
    return M, yy


# ---------------------------------------------------------------- eqs. (4)-(5)


def _hessian_columns(objective: GLMObjective, W: np.ndarray, J: np.ndarray) -> np.ndarray:
    """Hess F(w_b) J_b for all b in one :meth:`GLMObjective.hvp` call; J in the layout
    (d, d * B) whose column j * B + b is column j of J_b."""
    return objective.hvp(np.tile(W, (1, J.shape[1] // W.shape[1])), J)


def _stacked(J: np.ndarray, B: int) -> np.ndarray:
    """(d, d * B) layout to (B, d, d)."""
    d = J.shape[0]
    return J.reshape(d, d, B).transpose(2, 0, 1)


def _layout(J: np.ndarray) -> np.ndarray:
    """(B, d, d) to the (d, d * B) layout."""
    B, d, _ = J.shape
    return np.ascontiguousarray(J.transpose(1, 2, 0).reshape(d, d * B))


def hessian_times(objective: GLMObjective, W: np.ndarray, J: np.ndarray) -> np.ndarray:
    """Hess F(w_b) J_b for the columns w_b of W (d, B) and matrices J (B, d, d)."""
    return _stacked(_hessian_columns(objective, W, _layout(J)), W.shape[1])


def gradient_descent_jacobian(
    objective: GLMObjective, Z: np.ndarray, eta: float, iterations: int
) -> tuple[np.ndarray, np.ndarray]:
    """w_N of eq. (4) and J_N = dw_N/dz of eq. (5) for the columns of Z (d, B).

    w_{k+1} = w_k - eta (grad F(w_k) + z), J_{k+1} = A_k J_k - eta I with
    A_k = I - eta Hess F(w_k), w_0 = 0, J_0 = 0. The Hessian products come from
    :meth:`GLMObjective.hvp`, one call per step for all d columns of all B Jacobians.
    Returns W (d, B) and J (B, d, d).
    """
    Z = np.asarray(Z, dtype=np.float64)
    d, B = Z.shape
    W = np.zeros_like(Z)
    J = np.zeros((d, d * B))
    eye = np.repeat(np.eye(d), B, axis=1)  # -eta I in the same layout
    for _ in range(iterations):
        J -= eta * _hessian_columns(objective, W, J)
        J -= eta * eye
        g = objective.gradient(W)
        g += Z
        W -= eta * g
    return W, _stacked(J, B)


@dataclass(frozen=True)
class GradientDescentMap:
    """The Watkins & Arora release z -> w_N of Section 3.2 (eq. 4), Jacobian by eq. (5)."""

    sigma: float
    mu: float
    eta: float
    iterations: int
    loss: Loss
    zeta: float
    name: str = "wa"

    @classmethod
    def from_plan(cls, plan: WatkinsAroraPlan, loss: Loss | None = None) -> GradientDescentMap:
        return cls(
            sigma=plan.sigma,
            mu=plan.mu,
            eta=plan.eta,
            iterations=plan.iterations,
            loss=plan_loss(plan) if loss is None else loss,
            zeta=plan.zeta,
        )

    def objective(self, X: Any, y: Any) -> GLMObjective:
        M, yy = audit_data(X, y, zeta=self.zeta, loss=self.loss)
        return GLMObjective(M, yy, self.loss, self.mu)

    def preimage_guess(
        self, A: tuple[Any, Any], B: tuple[Any, Any], Z: np.ndarray, W: np.ndarray
    ) -> np.ndarray:
        """A starting point for Newton's solve of M_B(z') = W = M_A(Z): by Lemma C.1,
        z = -grad F(w_N) + xi with ||xi|| <= rho^N ||grad F(0) + z||, so
        z' ~ z + grad F_A(W) - grad F_B(W), exact up to O(rho^N)."""
        gA = self.objective(*A).gradient(W)
        gB = self.objective(*B).gradient(W)
        return Z + gA - gB

    def forward(
        self, X: Any, y: Any, Z: np.ndarray, *, jacobian: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        f = self.objective(X, y)
        if not jacobian:
            Z = np.array(Z, dtype=np.float64)
            return run_gradient_descent(f, Z, self.eta, self.iterations), None
        return gradient_descent_jacobian(f, Z, self.eta, self.iterations)


def gaussian_noise(rng: np.random.Generator, sigma: float, d: int, draws: int) -> np.ndarray:
    """``draws`` independent N(0, sigma^2 I_d) vectors as the columns of a (d, draws) array."""
    return sigma * rng.standard_normal((d, draws))


def sample_map(
    release: ReleaseMap, X: Any, y: Any, draws: int, rng: np.random.Generator
) -> np.ndarray:
    """``draws`` releases of a map in one batched sweep: an array (draws, d)."""
    d = np.shape(X)[1]
    W, _ = release.forward(X, y, gaussian_noise(rng, release.sigma, d, draws), jacobian=False)
    return np.ascontiguousarray(W.T)


def log_abs_det(J: np.ndarray) -> np.ndarray:
    """log |det J| for a stack of matrices (B, d, d); -inf where singular."""
    _, logdet = np.linalg.slogdet(J)
    return logdet


__all__ = [
    "GradientDescentMap",
    "LinearLoss",
    "ReleaseMap",
    "audit_data",
    "gaussian_noise",
    "gradient_descent_jacobian",
    "hessian_times",
    "linear_plan",
    "log_abs_det",
    "plan_loss",
    "sample_map",
]
