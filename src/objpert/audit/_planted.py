"""Planted bugs: wrong implementations of the Watkins & Arora (2026) release that an audit
must catch.

Each :class:`PlantedBug` offers ``sample(X, y, plan, draws, rng)`` (an array (draws, d) of
releases, all draws in one batched sweep) for attacks, and ``release_map(plan)``: the map
z -> w under the bug (a :class:`objpert.audit._maps.ReleaseMap`) for
:func:`objpert.audit.pairwise_profile`, or ``None`` when the bug is not a map of a
single noise draw. The correct release of Section 3.2 is :func:`sample_clean`.

1. ``noise_half``: the noise is scaled by 0.5, w = M_S(z / 2) (eq. 4 run with z/2).
2. ``redrawn_noise``: z is redrawn at every step, w_{k+1} = w_k - eta (grad F(w_k) + z_k)
   with z_k i.i.d. N(0, sigma^2 I): noisy gradient descent without its accounting. Not a
   map of one z (``release_map`` is None); sampler only.
3. ``extra_step``: after the N certified steps of eq. (4), one more gradient step on the
   unperturbed F(.; S) (z forgotten): w = w_N - eta grad F(w_N; S), Jacobian
   (I - eta Hess F(w_N)) J_N by eq. (5). Near the perturbed minimiser grad F(w_N) ~ -z
   (Lemma C.1), so w ~ w*(z) - (H^{-1} - eta I) z: the step removes the noise along
   directions of curvature near L = 1/eta and shrinks it by rho = 1 - eta mu elsewhere,
   while the data-dependent part stays.
4. ``n_doubled``: the certificate is computed for 2n rows (the plan recalibrated with the
   same method, target and mu for n -> 2n, so sigma is about halved) and the release runs
   on the n actual rows, bypassing the shape check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from objpert.audit._maps import (
    GradientDescentMap,
    ReleaseMap,
    hessian_times,
    plan_loss,
    sample_map,
)
from objpert.certify import _calibration as calibration
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import ParameterError

# ---------------------------------------------------------------- bug maps


@dataclass(frozen=True)
class NoiseScaledMap(GradientDescentMap):
    """Bug 1: eq. (4) run with ``scale * z``; Jacobian ``scale * J_N(scale * z)``."""

    scale: float = 0.5

    def forward(
        self, X: Any, y: Any, Z: np.ndarray, *, jacobian: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        W, J = super().forward(
            X, y, self.scale * np.asarray(Z, dtype=np.float64), jacobian=jacobian
        )
        return W, None if J is None else self.scale * J

    def preimage_guess(
        self, A: tuple[Any, Any], B: tuple[Any, Any], Z: np.ndarray, W: np.ndarray
    ) -> np.ndarray:
        """Lemma C.1 for the scaled noise: scale z ~ -grad F(w_N)."""
        return Z + (super().preimage_guess(A, B, Z, W) - Z) / self.scale


@dataclass(frozen=True)
class ExtraStepMap(GradientDescentMap):
    """Bug 3: w_N of eq. (4), then ``extra`` plain steps w <- w - eta grad F(w; S) with z
    forgotten; J <- (I - eta Hess F(w)) J as in eq. (5) without the -eta I term."""

    extra: int = 1

    def forward(
        self, X: Any, y: Any, Z: np.ndarray, *, jacobian: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        W, J = super().forward(X, y, Z, jacobian=jacobian)
        f = self.objective(X, y)
        for _ in range(self.extra):
            if J is not None:
                J = J - self.eta * hessian_times(f, W, J)
            W = W - self.eta * f.gradient(W)
        return W, J

    def preimage_guess(
        self, A: tuple[Any, Any], B: tuple[Any, Any], Z: np.ndarray, W: np.ndarray
    ) -> np.ndarray:
        """Lemma C.1 does not apply after the extra steps: start from z' = z."""
        return np.array(Z, dtype=np.float64)


_DOUBLED: dict[str, WatkinsAroraPlan] = {}  # doubled_plan's cache, keyed by the plan's JSON


def _recalibrate(plan: WatkinsAroraPlan, n: int) -> WatkinsAroraPlan:
    """The plan the same calibration gives for ``n`` rows (same target, loss, d, zeta; the
    tight method keeps the plan's mu)."""
    loss = plan_loss(plan)
    common = {
        "n": n,
        "d": plan.d,
        "zeta": plan.zeta,
        "epsilon": plan.epsilon,
        "delta": plan.delta,
        "comparator_norm": plan.comparator_norm,
        "delta_sample": plan.delta_sample,
    }
    if plan.calibration == "tight":
        return calibration.tight(loss, objective=plan.objective, mu=plan.mu, **common)
    if plan.calibration == "corollary413":
        return calibration.corollary_413(loss, **common)
    raise ParameterError(f"cannot recalibrate a plan of calibration {plan.calibration!r}")


def doubled_plan(plan: WatkinsAroraPlan) -> WatkinsAroraPlan:
    """Bug 4's plan: the plan's calibration redone for 2n rows (cached)."""
    key = plan.to_json(sort_keys=True)
    if key not in _DOUBLED:
        _DOUBLED[key] = _recalibrate(plan, 2 * plan.n)
    return _DOUBLED[key]


# ---------------------------------------------------------------- samplers


def _check_shape(X: Any, plan: WatkinsAroraPlan) -> None:
    if np.shape(X) != (plan.n, plan.d):
        raise ParameterError(
            f"the plan is for data of shape ({plan.n}, {plan.d}); got {np.shape(X)}"
        )


def sample_clean(X: Any, y: Any, plan: WatkinsAroraPlan, draws: int, rng: Any = None) -> np.ndarray:
    """``draws`` releases of the correct mechanism (Section 3.2, eq. 4) on (X, y): one
    N(0, sigma^2 I) draw per release, all draws run as one (d, draws) batch. (draws, d)."""
    _check_shape(X, plan)
    with threadpool_limits(limits=1, user_api="blas"):
        return sample_map(
            GradientDescentMap.from_plan(plan), X, y, draws, np.random.default_rng(rng)
        )


def _sample_redrawn(
    X: Any, y: Any, plan: WatkinsAroraPlan, draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Bug 2: w_{k+1} = w_k - eta (grad F(w_k) + z_k), z_k ~ N(0, sigma^2 I) fresh each step."""
    release = GradientDescentMap.from_plan(plan)
    f = release.objective(X, y)
    W = np.zeros((plan.d, draws))
    for _ in range(plan.iterations):
        g = f.gradient(W)
        g += plan.sigma * rng.standard_normal(W.shape)
        W -= plan.eta * g
    return np.ascontiguousarray(W.T)


# ---------------------------------------------------------------- the catalogue


@dataclass(frozen=True)
class PlantedBug:
    """A planted bug: a sampler for attacks and, when the bug is a map of one noise draw,
    the release map for the pairwise audit."""

    name: str
    description: str
    make_map: Callable[[WatkinsAroraPlan], ReleaseMap] | None = None
    sampler: Callable[[Any, Any, WatkinsAroraPlan, int, np.random.Generator], np.ndarray] | None = (
        None
    )

    def release_map(self, plan: WatkinsAroraPlan) -> ReleaseMap | None:
        """The buggy z -> w map for ``plan``, or None when the bug is not such a map."""
        return None if self.make_map is None else self.make_map(plan)

    def sample(
        self, X: Any, y: Any, plan: WatkinsAroraPlan, draws: int, rng: Any = None
    ) -> np.ndarray:
        """``draws`` releases of the buggy mechanism on (X, y): an array (draws, d)."""
        generator = np.random.default_rng(rng)
        with threadpool_limits(limits=1, user_api="blas"):
            if self.sampler is not None:
                return self.sampler(X, y, plan, draws, generator)
            return sample_map(self.release_map(plan), X, y, draws, generator)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "is_map": self.make_map is not None,
        }


def _noise_half(plan: WatkinsAroraPlan) -> ReleaseMap:
    base = GradientDescentMap.from_plan(plan)
    return NoiseScaledMap(**{**base.__dict__, "name": "noise_half"}, scale=0.5)


def _extra_step(plan: WatkinsAroraPlan) -> ReleaseMap:
    base = GradientDescentMap.from_plan(plan)
    return ExtraStepMap(**{**base.__dict__, "name": "extra_step"}, extra=1)


def _n_doubled(plan: WatkinsAroraPlan) -> ReleaseMap:
    base = GradientDescentMap.from_plan(doubled_plan(plan), plan_loss(plan))
    return GradientDescentMap(**{**base.__dict__, "name": "n_doubled"})


PLANTED_BUGS: dict[str, PlantedBug] = {
    bug.name: bug
    for bug in (
        PlantedBug(
            "noise_half",
            "noise scaled by 0.5: eq. (4) run with z/2",
            make_map=_noise_half,
        ),
        PlantedBug(
            "redrawn_noise",
            "z redrawn at every step (noisy GD without its accounting); not a map of one z",
            sampler=_sample_redrawn,
        ),
        PlantedBug(
            "extra_step",
            "one extra step w - eta grad F(w; S) on the unperturbed objective after the N "
            "certified steps (z forgotten)",
            make_map=_extra_step,
        ),
        PlantedBug(
            "n_doubled",
            "certificate computed for 2n rows (plan recalibrated for 2n), run on the n rows",
            make_map=_n_doubled,
        ),
    )
}

__all__ = [
    "PLANTED_BUGS",
    "ExtraStepMap",
    "NoiseScaledMap",
    "PlantedBug",
    "doubled_plan",
    "sample_clean",
]
