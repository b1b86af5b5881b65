"""Releases of the peer mechanisms: LOP, LOP-Clip, AMP, output perturbation, noisy GD.

Each follows :func:`objpert.mechanisms.perturbed_gd.perturbed_gradient_descent`: the
plan's certificate is recomputed from its public fields before any data is touched (and
must equal the stored one and meet the plan's target); data that break the contract
(shape (n, d), rows of norm <= zeta, labels) are refused; the noise is drawn once, after
every check has passed (noisy GD: one vector per step, T steps, drawn in blocks of steps
before they are used); the solver runs to a public gradient-norm tolerance that is
checked afterwards (no release otherwise), or for exactly T steps (noisy GD). All
gradients are computed by :class:`objpert.engines.glm.GLMObjective`. The certificates are
in :mod:`objpert.certify.peers`.

Noise that enters an objective (LOP, LOP-Clip, AMP's b1) is continuous Gaussian from the
generator. Noise that is published added to a value (output perturbation, AMP's output
noise b2, noisy GD's gradient noise) is the exact discrete Gaussian on the plan's public
grid (:mod:`objpert.mechanisms.discrete_noise`): the value is rounded to gamma Z and
gamma N_Z(0, s^2) added, so what is released lies on the grid (noisy GD: its iterates are
-eta gamma times an integer vector, the sum of the grid-valued noisy gradients).

:func:`peer_release_batch` runs many independent releases of a plan on the same data
(for audits) through the same code path as the single releases (one noise vector per
release, per step for noisy GD); the minimisers of a batch are found together by damped
Newton with dense d x d systems (:func:`objpert.solvers.newton.solve_batch_to_tolerance`,
small d; re-exported here with :func:`~objpert.solvers.newton.solve_to_tolerance`).

``Release.iterations`` is the solver's iteration count (fixed T for noisy GD); like
``seconds`` and ``n_clipped`` it is a statistic of the data that no certificate covers.
A refusal for an unmet tolerance is likewise a data-dependent event outside the
certificate: choose the public tolerance and iteration budget so that it does not occur,
and do not retry on the same data with fresh noise.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from objpert.certify.certificate import Certificate
from objpert.certify.peers import NOISY_GD_MAX_ITERATIONS, PeerPlan, grid_noise
from objpert.data import (
    for_plan,
    row_norms,
)
from objpert.engines.blocked import single_threaded_blas
from objpert.engines.glm import GLMObjective
from objpert.errors import ParameterError, check_int
from objpert.exceptions import ToleranceError
from objpert.losses import Loss
from objpert.mechanisms.discrete_noise import (
    GRID_CLIP,
    discrete_gaussian_array,
    from_grid,
    to_grid,
)
from objpert.mechanisms.perturbed_gd import BatchRelease, PrivacyError, Release
from objpert.mechanisms.progress import step_progress
from objpert.randomness import make_rng
from objpert.solvers.newton import (
    DENSE_NEWTON_MAX_D,
    solve_batch_to_tolerance,
    solve_to_tolerance,
)

__all__ = [
    "DENSE_NEWTON_MAX_D",
    "ClippedGLMLoss",
    "ToleranceError",
    "amp_release",
    "check_peer_plan",
    "lop_clip_release",
    "lop_release",
    "noisy_gd_clip",
    "noisy_gd_release",
    "output_perturbation_release",
    "peer_release_batch",
    "solve_batch_to_tolerance",
    "solve_to_tolerance",
]

_EPS_REL = 1e-12  # certified epsilon may exceed the target by this relative rounding only


def check_peer_plan(plan: Any, method: str) -> Certificate:
    """Recompute the plan's certificate from its public fields; refuse a plan of another
    method, one that does not certify, one whose stored certificate differs from the
    recomputed one, or one whose certificate exceeds its target."""
    if not isinstance(plan, PeerPlan):
        raise PrivacyError(
            f"expected a PeerPlan for {method!r} (objpert.certify.peers.calibrate_peer); "
            f"got {type(plan).__name__}"
        )
    if plan.method != method:
        raise PrivacyError(f"this release needs a {method!r} plan; got a {plan.method!r} plan")
    try:
        cert = plan.recertify()
    except (ValueError, TypeError) as exc:
        raise PrivacyError(f"the plan cannot be certified: {exc}") from None
    if not cert.certified:
        raise PrivacyError(f"the plan does not certify: {'; '.join(cert.reasons)}")
    if plan.certificate is None or plan.certificate.to_dict() != cert.to_dict():
        raise PrivacyError(
            "the plan's stored certificate differs from the one recomputed from its fields"
        )
    if cert.delta > plan.delta:
        raise PrivacyError(
            f"the plan certifies delta = {cert.delta:.3g} > its target {plan.delta:.3g}"
        )
    if cert.epsilon > plan.epsilon * (1.0 + _EPS_REL):
        raise PrivacyError(
            f"the plan certifies epsilon = {cert.epsilon:.6g} > its target {plan.epsilon:.6g}"
        )
    return cert


def _data(X: Any, y: Any, plan: PeerPlan, clip: bool):
    """(X, y) checked against the plan's public n, d, zeta and loss: (M, y, n_clipped)."""
    return for_plan(
        X,
        y,
        n=plan.n,
        d=plan.d,
        zeta=plan.zeta,
        label_kind=plan.loss_object().label_kind,
        clip=clip,
    )


# ---------------------------------------------------------------- the clipped loss


def _inverse_d1(loss: Loss, y: np.ndarray, target: np.ndarray) -> np.ndarray:
    """t with l'(t, y) = target, elementwise (l' is nondecreasing as l'' >= 0); -inf where
    target < inf l' and +inf where target > sup l' (bracket doubling to 2^70, then
    bisection to adjacent floats)."""
    lo = np.full(target.shape, -1.0)
    hi = np.full(target.shape, 1.0)
    for _ in range(70):
        low_bad = loss.d1(lo, y) > target
        high_bad = loss.d1(hi, y) < target
        if not (low_bad.any() or high_bad.any()):
            break
        lo = np.where(low_bad, 2.0 * lo, lo)
        hi = np.where(high_bad, 2.0 * hi, hi)
    below = loss.d1(lo, y) > target  # target below the range of l'
    above = loss.d1(hi, y) < target  # target above the range of l'
    for _ in range(2100):
        mid = 0.5 * (lo + hi)
        if not np.any((mid > lo) & (mid < hi)):
            break
        up = loss.d1(mid, y) < target
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    t = 0.5 * (lo + hi)
    t = np.where(below, -np.inf, t)
    return np.where(above, np.inf, t)


@dataclass(frozen=True, eq=False)
class ClippedGLMLoss(Loss):
    """The GLM loss whose per-sample gradient l'(t_i, y_i) x_i is clipped to norm <= c.

    For row i with ||x_i|| > 0 that is l' clipped to [-b_i, b_i], b_i = c / ||x_i||
    (b_i = inf for zero rows). Its integral, l on [t_lo_i, t_hi_i] (where l' = -b_i, +b_i)
    continued linearly with slopes -b_i and +b_i outside, is convex; its l'' is l'' inside
    and 0 outside. Redberg, Koskela & Wang (2023). The per-row thresholds are fixed by the
    data and the labels, so the arrays align with the rows of the objective.
    """

    base: Loss
    bound: np.ndarray
    labels: np.ndarray
    t_lo: np.ndarray
    t_hi: np.ndarray

    name: ClassVar[str] = "clipped"
    label_kind: ClassVar[str] = "any"

    @classmethod
    def for_rows(cls, base: Loss, X: Any, y: np.ndarray, clip: float) -> ClippedGLMLoss:
        norms = row_norms(X)
        with np.errstate(divide="ignore"):
            bound = np.where(norms > 0, clip / np.where(norms > 0, norms, 1.0), np.inf)
        y = np.asarray(y, dtype=float)
        finite = np.isfinite(bound)
        if base.L1 is not None:  # |l'| < L1 <= b_i: row i is never clipped
            finite &= bound < base.L1
        t_lo = np.full(y.shape, -np.inf)
        t_hi = np.full(y.shape, np.inf)
        if finite.any():
            t_lo[finite] = _inverse_d1(base, y[finite], -bound[finite])
            t_hi[finite] = _inverse_d1(base, y[finite], bound[finite])
        return cls(base, bound, y, t_lo, t_hi)

    @property
    def L1(self) -> float | None:
        return self.base.L1

    @property
    def L2(self) -> float:
        return self.base.L2

    @property
    def L3(self) -> float:
        return self.base.L3

    def _rows(self, t: np.ndarray, a: np.ndarray) -> np.ndarray:
        return a if t.ndim == 1 else a[:, None]

    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lo, hi, b = (self._rows(t, a) for a in (self.t_lo, self.t_hi, self.bound))
        inside = self.base.value(np.clip(t, lo, hi), y)
        over = np.where(t > hi, t - hi, 0.0)
        under = np.where(t < lo, lo - t, 0.0)
        return inside + np.where(over > 0, b * over, 0.0) + np.where(under > 0, b * under, 0.0)

    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        b = self._rows(t, self.bound)
        return np.clip(self.base.d1(t, y), -b, b)

    def d2(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lo, hi = self._rows(t, self.t_lo), self._rows(t, self.t_hi)
        return np.where((t > lo) & (t < hi), self.base.d2(t, y), 0.0)

    def d3(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lo, hi = self._rows(t, self.t_lo), self._rows(t, self.t_hi)
        return np.where((t > lo) & (t < hi), self.base.d3(t, y), 0.0)

    def clipped_count(self, t: np.ndarray) -> int:
        """How many per-sample gradients are clipped at margins t (a data statistic)."""
        return int(np.count_nonzero(np.abs(self.base.d1(t, self.labels)) > self.bound))


# ---------------------------------------------------------------- the checked solve


def _solve_checked(objective, z, plan: PeerPlan) -> tuple[np.ndarray, int]:
    """The minimiser of F + <z, w> for z of shape (d,) (one release) or (d, B) (a batch),
    refused unless every gradient norm meets the plan's tolerance."""
    if z.ndim == 1:
        w, norm, used = solve_to_tolerance(objective, z, plan.tolerance, plan.max_iterations)
    else:
        w, norms, used = solve_batch_to_tolerance(objective, z, plan.tolerance, plan.max_iterations)
        norm = float(norms.max())
    if not norm <= plan.tolerance:
        raise ToleranceError(
            f"the solver stopped at gradient norm {norm:.3g} > the plan's tolerance "
            f"{plan.tolerance:.3g} after {used} iterations; nothing was released. This "
            "refusal depends on the data: plan a looser public tolerance or a larger "
            "max_iterations instead of retrying on the same data"
        )
    return w, used


# ---------------------------------------------------------------- the releases


def _gaussian(
    generator: np.random.Generator, sigma: float, d: int, draws: int | None
) -> np.ndarray:
    """N(0, sigma^2 I_d) objective noise (continuous: it enters the objective and is never
    published added to a value): shape (d,) for one release (``draws`` None), else
    (d, draws), one column per release. A batch of one draws exactly the numbers of one
    release."""
    if draws is None:
        return generator.normal(0.0, sigma, size=d)
    return generator.normal(0.0, sigma, size=(draws, d)).T


def _discrete(
    generator: np.random.Generator, scale: int, d: int, draws: int | None, steps: int = 0
) -> np.ndarray:
    """N_Z(0, scale^2) integers: shape (d,) for one release (``draws`` None), else (d, draws),
    one column per release; with ``steps`` > 0, that many such vectors stacked in front
    (steps, d) or (steps, d, draws). Drawn row-major over (steps, draws, d), so a batch of
    one draws exactly the numbers of one release."""
    shape = (d,) if draws is None else (draws, d)
    if steps:
        shape = (steps, *shape)
    y = discrete_gaussian_array(generator, scale, shape)
    return y if draws is None else np.swapaxes(y, -1, -2)


def _on_grid(w: np.ndarray, units: np.ndarray, gamma: float) -> np.ndarray:
    """gamma (rint(w / gamma) + Y): w (d,) or (d, B), Y (d,) or (d, B) (one minimiser may be
    shared by a batch). The result lies on the grid gamma Z."""
    q = to_grid(w, gamma)
    return from_grid((q[:, None] if q.ndim < units.ndim else q) + units, gamma)


def _lop(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    z = _gaussian(generator, plan.sigma, plan.d, draws)  # the one and only draw
    return _solve_checked(objective, z, plan)


def _amp(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    gamma, scale = grid_noise(plan.output_sigma, plan.grid_bits)
    b1 = _gaussian(generator, plan.sigma, plan.d, draws)  # objective noise, drawn once
    b2 = _discrete(generator, scale, plan.d, draws)  # output noise on the grid, drawn once
    w, used = _solve_checked(objective, b1, plan)
    return _on_grid(w, b2, gamma), used


def _output_perturbation(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    gamma, scale = grid_noise(plan.sigma, plan.grid_bits)
    noise = _discrete(generator, scale, plan.d, draws)  # the one and only draw
    w, used = _solve_checked(objective, np.zeros(plan.d), plan)  # one solve for a batch
    return _on_grid(w, noise, gamma), used


def _noisy_gd(
    objective: GLMObjective,
    plan: PeerPlan,
    generator: np.random.Generator,
    draws: int | None,
    verbose: bool | None,
) -> tuple[np.ndarray, int]:
    T, d = int(plan.iterations), plan.d
    gamma, scale = grid_noise(plan.sigma, plan.grid_bits)
    step = float(plan.eta) * gamma  # exact: gamma is a power of two
    bound = noisy_gd_clip(T)
    total = np.zeros(d if draws is None else (d, draws), dtype=np.int64)  # sum of the g_t
    w = np.zeros(total.shape)
    block = max(1, NOISE_BLOCK // (d * (draws or 1)))
    with step_progress("noisy gradient descent", T, verbose) as tick:
        for k in range(T):
            if k % block == 0:  # the next steps' noise, drawn before they run
                noise = _discrete(generator, scale, d, draws, min(block, T - k))
                if np.abs(noise).max() >= _NOISE_BOUND:  # pragma: no cover - P < e^-(2^29)
                    raise RuntimeError("discrete noise out of range: the generator is broken")
            total += to_grid(objective.gradient(w), gamma, bound)
            total += noise[k % block]
            w = -step * total.astype(float)  # w_{k+1} = -eta gamma (q_1 + Y_1 + ... )
            tick(k)
    return w, T


#: Noisy GD draws the noise of this many numbers at a time (a block of steps).
NOISE_BLOCK = 2**18
_NOISE_BOUND = 2**40


def noisy_gd_clip(iterations: int) -> int:
    """The public box of noisy GD's gradients on the grid: |q| <= B = min(2^52,
    floor(2^62 / T) - 2^40) grid units per coordinate, so the int64 sum of T steps
    (|q + Y| <= B + 2^40 each: |Y| < 2^40 is checked, and fails with probability below
    e^-(2^29) for s <= 2^25) stays below 2^62. A 1-Lipschitz clip: the sensitivity bound
    holds. T <= 2^21."""
    T = check_int("iterations", iterations, 1)
    if T > NOISY_GD_MAX_ITERATIONS:
        raise ParameterError(f"noisy GD with T = {T} > 2^21 steps is not supported")
    return min(GRID_CLIP, 2**62 // T - 2**40)


#: method -> (objective, plan, generator, draws, verbose) -> (weights, iterations).
_CORES = {
    "lop": _lop,
    "lop_clip": _lop,
    "amp": _amp,
    "output_perturbation": _output_perturbation,
    "noisy_gd": _noisy_gd,
}


def _run(
    method: str,
    X: Any,
    y: Any,
    plan: PeerPlan,
    rng: Any,
    clip: bool,
    draws: int | None,
    verbose: bool | None = None,
) -> tuple[np.ndarray, Certificate, int, float, int, bool]:
    """The one code path of every peer release and batch of releases: check the plan, then
    the data, build the objective (clipped for LOP-Clip), draw the noise and solve. ``draws``
    None: one release, weights (d,); an int: that many independent releases at once,
    weights (d, draws). Returns the fields of a release after the plan."""
    cert = check_peer_plan(plan, method)
    M, yy, n_clipped = _data(X, y, plan, clip)
    if draws is not None:
        draws = check_int("draws", draws, 1)
    generator, seeded = make_rng(rng)
    loss = plan.loss_object()
    if method == "lop_clip":
        loss = ClippedGLMLoss.for_rows(loss, M, yy, plan.clip)
    objective = GLMObjective(M, yy, loss, plan.mu)
    start = time.perf_counter()
    with single_threaded_blas():  # the solvers' small products: one BLAS thread is fastest
        w, used = _CORES[method](objective, plan, generator, draws, verbose)
    return w, cert, used, time.perf_counter() - start, n_clipped, seeded


def _release(method: str, X: Any, y: Any, plan: PeerPlan, rng: Any, clip: bool, **kw) -> Release:
    w, cert, used, seconds, n_clipped, seeded = _run(method, X, y, plan, rng, clip, None, **kw)
    return Release(w, plan, cert, used, seconds, n_clipped, seeded)


def lop_release(X: Any, y: Any, plan: PeerPlan, rng: Any = None, *, clip: bool = False) -> Release:
    """Gaussian LOP (Chaudhuri et al. 2011; certified by the profile of Redberg et al. 2023
    or by Kifer et al. 2012, as the plan says): draw z ~ N(0, sigma^2 I) once, minimise
    F(w) + <z, w> (mu = plan.mu) to the plan's gradient-norm tolerance, release the
    minimiser. The certificate covers the exact minimiser; the tolerance is reported in it.
    Rows above zeta are refused (``clip=True`` scales them down)."""
    return _release("lop", X, y, plan, rng, clip)


def lop_clip_release(
    X: Any, y: Any, plan: PeerPlan, rng: Any = None, *, clip: bool = False
) -> Release:
    """LOP-Clip (Redberg et al. 2023): as :func:`lop_release` on the objective whose
    per-sample gradients are clipped to norm plan.clip (:class:`ClippedGLMLoss`). When no
    gradient can be clipped (plan.clip >= L1 max ||x_i||) it is LOP's objective exactly."""
    return _release("lop_clip", X, y, plan, rng, clip)


def amp_release(X: Any, y: Any, plan: PeerPlan, rng: Any = None, *, clip: bool = False) -> Release:
    """Approximate Minima Perturbation (Iyengar et al. 2019, Algorithm 1): draw
    b1 ~ N(0, sigma^2 I) (continuous: it enters the objective) and the output noise once
    each, minimise F(w) + <b1, w> until ||grad|| <= gamma (checked: no release otherwise),
    release gamma_g (rint(w / gamma_g) + Y), Y ~ N_Z(0, s^2 I), (gamma_g, s) the grid of
    output_sigma (:func:`objpert.certify.peers.grid_noise`): w + b2 on the grid."""
    return _release("amp", X, y, plan, rng, clip)


def output_perturbation_release(
    X: Any, y: Any, plan: PeerPlan, rng: Any = None, *, clip: bool = False
) -> Release:
    """Output perturbation (Chaudhuri et al. 2011) with discrete Gaussian noise: minimise F
    to the plan's tolerance (checked; the sensitivity includes it), release
    gamma (rint(w / gamma) + Y), Y ~ N_Z(0, s^2 I) drawn once, (gamma, s) the grid of sigma
    (:func:`objpert.certify.peers.grid_noise`): a point of the grid gamma Z."""
    return _release("output_perturbation", X, y, plan, rng, clip)


def noisy_gd_release(
    X: Any,
    y: Any,
    plan: PeerPlan,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
) -> Release:
    """Noisy full-batch gradient descent: exactly T = plan.iterations steps from w_0 = 0 of
    w_{t+1} = w_t - eta g_t, g_t = gamma (q_t + Y_t), q_t = rint(grad F(w_t) / gamma)
    (clipped to :func:`noisy_gd_clip`), Y_t ~ N_Z(0, s^2 I) fresh at every step (T draws),
    (gamma, s) the grid of sigma (:func:`objpert.certify.peers.grid_noise`). The integers
    q_t + Y_t are summed exactly (int64) and w_t = -(eta gamma) times the sum: every iterate,
    and the released w_T, is a fixed function of the published noisy gradients."""
    return _release("noisy_gd", X, y, plan, rng, clip, verbose=verbose)


def peer_release_batch(
    X: Any, y: Any, plan: PeerPlan, draws: int, rng: Any = None, *, clip: bool = False
) -> BatchRelease:
    """``draws`` independent releases of the plan's mechanism (``plan.method``) on the
    same data, at once: what an audit needs (Jagielski et al. 2020; Nasr et al. 2021 run a
    mechanism many times on neighbouring datasets). Each row of ``.weights`` (draws, d) is
    distributed as one release of :func:`lop_release`, :func:`lop_clip_release`,
    :func:`amp_release`, :func:`output_perturbation_release` or
    :func:`noisy_gd_release`, through the same code (same checks, same noise, one noise
    vector per release and per step for noisy GD); the minimisers of a batch come from
    :func:`solve_batch_to_tolerance` (each within the plan's tolerance, checked for every
    draw). A batch of one with a seed draws the same noise as one release with that seed.
    ``iterations`` is the largest solver iteration count of the batch."""
    method = plan.method if isinstance(plan, PeerPlan) else "peer"
    w, cert, used, seconds, n_clipped, seeded = _run(method, X, y, plan, rng, clip, draws)
    return BatchRelease(np.ascontiguousarray(w.T), plan, cert, used, seconds, n_clipped, seeded)
