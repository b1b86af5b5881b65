"""Releases of the peer mechanisms: LOP, LOP-Clip, AMP, output perturbation, noisy GD.

One module per mechanism (:mod:`.lop`, :mod:`.amp`, :mod:`.output_perturbation`,
:mod:`.noisy_gd`), the checks they share (:mod:`.checks`), their noise (:mod:`.noise`) and
LOP-Clip's loss (:mod:`.clipped_loss`); this module runs them through one code path.

Each follows :func:`objpert.mechanisms.perturbed_gradient_descent`: the
plan's certificate is recomputed from its public fields before any data is touched (and
must equal the stored one and meet the plan's target); data that break the contract
(shape (n, d), rows of norm <= zeta, labels) are refused; the noise is drawn once, after
every check has passed (noisy GD: one vector per step, T steps, drawn in blocks of steps
before they are used); the solver runs to a public gradient-norm tolerance that is
checked afterwards (no release otherwise), or for exactly T steps (noisy GD). All
gradients are computed by :class:`objpert._engines.glm.GLMObjective`. The certificates are
in :mod:`objpert.mechanisms._certificates`.

Noise that enters an objective (LOP, LOP-Clip, AMP's b1) is continuous Gaussian from the
generator. Noise that is published added to a value (output perturbation, AMP's output
noise b2, noisy GD's gradient noise) is the exact discrete Gaussian on the plan's public
grid (:mod:`objpert.mechanisms._discrete_noise`): the value is rounded to gamma Z and
gamma N_Z(0, s^2) added, so what is released lies on the grid (noisy GD: its iterates are
-eta gamma times an integer vector, the sum of the grid-valued noisy gradients).

:func:`peer_release_batch` runs many independent releases of a plan on the same data
(for audits) through the same code path as the single releases (one noise vector per
release, per step for noisy GD); the minimisers of a batch are found together by damped
Newton with dense d x d systems (:func:`objpert._solvers.newton.solve_batch_to_tolerance`,
small d; re-exported here with :func:`~objpert._solvers.newton.solve_to_tolerance`).

``Release.iterations`` is the solver's iteration count (fixed T for noisy GD); like
``seconds`` and ``n_clipped`` it is a statistic of the data that no certificate covers.
A refusal for an unmet tolerance is likewise a data-dependent event outside the
certificate: choose the public tolerance and iteration budget so that it does not occur,
and do not retry on the same data with fresh noise.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from objpert._engines.blocked import single_threaded_blas
from objpert._engines.glm import GLMObjective
from objpert._randomness import make_rng
from objpert._solvers.newton import (
    DENSE_NEWTON_MAX_D,
    solve_batch_to_tolerance,
    solve_to_tolerance,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.mechanisms._certificates import PeerPlan
from objpert.mechanisms._peers.amp import amp_core
from objpert.mechanisms._peers.checks import check_data, check_peer_plan
from objpert.mechanisms._peers.clipped_loss import ClippedGLMLoss
from objpert.mechanisms._peers.lop import lop_core
from objpert.mechanisms._peers.noisy_gd import noisy_gd_clip, noisy_gd_core
from objpert.mechanisms._peers.output_perturbation import output_perturbation_core
from objpert.mechanisms._perturbed_gd import BatchRelease, Release

__all__ = [
    "DENSE_NEWTON_MAX_D",
    "ClippedGLMLoss",
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


#: method -> (objective, plan, generator, draws, verbose) -> (weights, iterations).
_CORES = {
    "lop": lop_core,
    "lop_clip": lop_core,
    "amp": amp_core,
    "output_perturbation": output_perturbation_core,
    "noisy_gd": noisy_gd_core,
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
) -> tuple[np.ndarray, ReleaseCertificate, int, float, int, bool]:
    """The one code path of every peer release and batch of releases: check the plan, then
    the data, build the objective (clipped for LOP-Clip), draw the noise and solve. ``draws``
    None: one release, weights (d,); an int: that many independent releases at once,
    weights (d, draws). Returns the fields of a release after the plan."""
    cert = check_peer_plan(plan, method)
    M, yy, n_clipped = check_data(X, y, plan, clip)
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
    each, minimise F(w) + <b1, w> until ||grad|| <= gamma (checked: no release otherwise;
    solved as a batch of one, so it equals :func:`peer_release_batch` with one draw and the
    Spark release to rounding), release gamma_g (rint(w / gamma_g) + Y),
    Y ~ N_Z(0, s^2 I), (gamma_g, s) the grid of output_sigma
    (:func:`objpert.mechanisms._certificates.grid_noise`): w + b2 on the grid."""
    return _release("amp", X, y, plan, rng, clip)


def output_perturbation_release(
    X: Any, y: Any, plan: PeerPlan, rng: Any = None, *, clip: bool = False
) -> Release:
    """Output perturbation (Chaudhuri et al. 2011) with discrete Gaussian noise: minimise F
    to the plan's tolerance (checked; the sensitivity includes it), release
    gamma (rint(w / gamma) + Y), Y ~ N_Z(0, s^2 I) drawn once, (gamma, s) the grid of sigma
    (:func:`objpert.mechanisms._certificates.grid_noise`): a point of the grid gamma Z."""
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
    (gamma, s) the grid of sigma (:func:`objpert.mechanisms._certificates.grid_noise`). The integers
    q_t + Y_t are summed exactly (int64) and w_t = -(eta gamma) times the sum: every iterate,
    and the released w_T, is a fixed function of the published noisy gradients."""
    return _release("noisy_gd", X, y, plan, rng, clip, verbose=verbose)


def peer_release_batch(
    X: Any, y: Any, plan: PeerPlan, draws: int, rng: Any = None, *, clip: bool = False
) -> BatchRelease:
    """``draws`` independent releases of the plan's mechanism (``plan.mechanism``) on the
    same data, at once: what an audit needs (Jagielski et al. 2020; Nasr et al. 2021 run a
    mechanism many times on neighbouring datasets). Each row of ``.weights`` (draws, d) is
    distributed as one release of :func:`lop_release`, :func:`lop_clip_release`,
    :func:`amp_release`, :func:`output_perturbation_release` or
    :func:`noisy_gd_release`, through the same code (same checks, same noise, one noise
    vector per release and per step for noisy GD); the minimisers of a batch come from
    :func:`solve_batch_to_tolerance` (each within the plan's tolerance, checked for every
    draw). A batch of one with a seed draws the same noise as one release with that seed.
    ``iterations`` is the largest solver iteration count of the batch."""
    method = plan.mechanism if isinstance(plan, PeerPlan) else "peer"
    w, cert, used, seconds, n_clipped, seeded = _run(method, X, y, plan, rng, clip, draws)
    return BatchRelease(np.ascontiguousarray(w.T), plan, cert, used, seconds, n_clipped, seeded)
