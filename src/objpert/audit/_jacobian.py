"""Jacobian and invertibility checks of the release map on the certificate's ball.

On the ball Omega' = {||z|| <= r'} of Theorem C.13 (r' the plan's outer radius, eq. 47),
Theorem A.12 gives, at alpha-bar = gamma_N - eta M R-bar B nu~_N rho^(N-1) (eq. 47):

* J_N(z)^sym <= -alpha-bar I  (item 1), hence
* sigma_min(J_N(z)) >= alpha-bar  (item 2),

and Theorem A.13 gives <M(z1) - M(z2), z1 - z2> <= -alpha-bar ||z1 - z2||^2 on the ball
(injectivity). :func:`check_jacobian` samples z in the ball (half uniformly inside, half on
its boundary sphere, where ||z|| and the trajectory scale R(z) are largest), computes J_N by
eq. (5), and checks all three, plus the recursion itself against central finite differences
of z -> w_N at a few points.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from objpert._validation import check_positive, count, validated
from objpert.audit._maps import GradientDescentMap, ReleaseMap, audit_data, plan_loss
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import ParameterError

__all__ = [
    "JacobianReport",
    "ball_points",
    "check_jacobian",
    "finite_difference_jacobian",
]


@dataclass(frozen=True)
class JacobianReport:
    """Theorem A.12 / A.13 checks of z -> w_N on the ball ||z|| <= ``radius``."""

    samples: int
    radius: float
    alpha_bar: float  # eq. (47) at the plan's N and radii (nan when <= 0)
    min_sigma_min: float  # min over samples of sigma_min(J_N(z)); >= alpha_bar (A.12 item 2)
    max_sym_eigenvalue: float  # max of lambda_max(J_N^sym); <= -alpha_bar (A.12 item 1)
    max_monotonicity: float  # max <M(z1)-M(z2), z1-z2>/||z1-z2||^2; <= -alpha_bar (A.13)
    fd_max_error: float  # max |J_N - finite differences| / max |J_N| at the fd points
    release: str = "wa"
    violations: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k, v in out.items():
            if isinstance(v, float) and not math.isfinite(v):
                out[k] = None
        out["clean"] = self.clean
        return out


def ball_points(rng: np.random.Generator, d: int, count: int, radius: float) -> np.ndarray:
    """``count`` points (d, count): the first half uniform in the ball of ``radius``, the
    rest uniform on its boundary sphere."""
    u = rng.standard_normal((d, count))
    u /= np.linalg.norm(u, axis=0)
    inside = count // 2
    scale = np.ones(count)
    scale[:inside] = rng.random(inside) ** (1.0 / d)
    return u * (radius * scale)


def finite_difference_jacobian(
    release: ReleaseMap, X: Any, y: Any, Z: np.ndarray, step: float
) -> np.ndarray:
    """Central differences (M(z + h e_j) - M(z - h e_j)) / 2h for the columns of Z: (B, d, d)."""
    d = Z.shape[0]
    cols = []
    for e in np.eye(d):
        plus, _ = release.forward(X, y, Z + step * e[:, None], jacobian=False)
        minus, _ = release.forward(X, y, Z - step * e[:, None], jacobian=False)
        cols.append((plus - minus) / (2.0 * step))  # (d, B): column j of each J_b
    return np.stack(cols, axis=2).transpose(1, 0, 2)


@validated(samples=count(2), fd_points=count(1), fd_step=check_positive,
           fd_tolerance=check_positive)  # fmt: skip
def check_jacobian(
    X: Any,
    y: Any,
    plan: WatkinsAroraPlan,
    *,
    samples: int = 256,
    rng: Any = None,
    release_map: ReleaseMap | None = None,
    fd_points: int = 4,
    fd_step: float = 1e-6,
    fd_tolerance: float = 1e-5,
) -> JacobianReport:
    """Check Theorems A.12 and A.13 for the release on (X, y) over the ball ||z|| <= r'
    (r' = the plan's outer radius of eq. 47, which contains the truncation ball r).

    ``violations`` lists every failed check (empty when clean): sigma_min(J_N) < alpha-bar,
    lambda_max(J_N^sym) > -alpha-bar, the Theorem A.13 monotonicity on consecutive sample
    pairs, non-finite Jacobians, and a finite-difference mismatch above ``fd_tolerance``
    (relative to max |J_N|) of the eq. (5) recursion. ``release_map`` defaults to the plan's
    Watkins & Arora release.
    """
    loss = plan_loss(plan)
    M, yy = audit_data(X, y, zeta=plan.zeta, loss=loss)
    if M.shape[1] != plan.d:
        raise ParameterError(f"the plan is for d = {plan.d} features; got {M.shape[1]}")
    release = GradientDescentMap.from_plan(plan, loss) if release_map is None else release_map
    terms = theorem_c13.c13_terms(
        plan.constants, plan.sigma, plan.radius, plan.radius_outer, plan.iterations
    )
    alpha = float(np.asarray(terms.alpha_bar))
    radius = float(plan.radius_outer)
    generator = np.random.default_rng(rng)
    Z = ball_points(generator, plan.d, samples, radius)
    violations: list[str] = []
    with threadpool_limits(limits=1, user_api="blas"):
        W, J = release.forward(M, yy, Z)
        k = min(max(fd_points, 0), samples)
        if k:
            fd = finite_difference_jacobian(release, M, yy, Z[:, :k], fd_step)
            fd_err = float(np.max(np.abs(fd - J[:k])) / max(np.max(np.abs(J[:k])), 1e-300))
        else:
            fd_err = 0.0
    if not np.all(np.isfinite(J)):
        violations.append(f"{int(np.sum(~np.isfinite(J).all(axis=(1, 2))))} non-finite Jacobians")
    sig_min = float(np.min(np.linalg.svd(J, compute_uv=False)[:, -1]))
    sym_max = float(np.max(np.linalg.eigvalsh(0.5 * (J + J.transpose(0, 2, 1)))[:, -1]))
    dz = Z[:, 1:] - Z[:, :-1]
    dw = W[:, 1:] - W[:, :-1]
    mono = float(np.max(np.sum(dw * dz, axis=0) / np.sum(dz * dz, axis=0)))
    rel = 1e-9 * max(abs(alpha), 1e-300)
    if math.isfinite(alpha):
        if sig_min < alpha - rel:
            violations.append(f"sigma_min(J_N) = {sig_min:.6g} < alpha_bar = {alpha:.6g} (A.12)")
        if sym_max > -alpha + rel:
            violations.append(
                f"lambda_max(J_N^sym) = {sym_max:.6g} > -alpha_bar = {-alpha:.6g} (A.12)"
            )
        if mono > -alpha + rel:
            violations.append(
                f"<dM, dz>/|dz|^2 = {mono:.6g} > -alpha_bar = {-alpha:.6g} (A.13 injectivity)"
            )
    else:
        violations.append("alpha_bar <= 0 at the plan's N and radii: Theorem A.12 gives nothing")
    if fd_err > fd_tolerance:
        violations.append(f"eq. (5) Jacobian differs from finite differences by {fd_err:.3g}")
    return JacobianReport(
        samples=samples,
        radius=radius,
        alpha_bar=alpha,
        min_sigma_min=sig_min,
        max_sym_eigenvalue=sym_max,
        max_monotonicity=mono,
        fd_max_error=fd_err,
        release=release.name,
        violations=violations,
    )
