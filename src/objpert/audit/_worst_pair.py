"""Worst-case neighbouring pair search for the pairwise privacy profile.

For fixed shared rows (x_1, y_1), ..., (x_{n-1}, y_{n-1}), S = shared + (x, y) and
S' = shared + (x', y') (the differing sample last, Section 3.1), the search maximises the
exact pairwise delta_pair(epsilon) of eq. (6) (:mod:`objpert.audit._pairwise`) over the
differing features on the zeta-sphere (Assumption 1 allows ||x|| <= zeta; the sphere is
where the gradient difference of Lemma B.5 and the Hessian change can be largest) and the
labels.

* Parametrisation: hyperspherical angles, x = zeta (cos t_1, sin t_1 cos t_2, ...).
* Common random numbers: one fixed noise sample Z is used for every candidate, so the
  objective is a smooth deterministic function of the angles (the Newton preimages are).
* Stage 1: a grid of directions (equally spaced for d = 2, a Fibonacci sphere for d = 3,
  random directions above) for x and x', every ordered pair. Stage 2: Nelder-Mead in the
  2(d - 1) angles from the best ``starts`` grid pairs.
* Labels: for a binary loss with l(t, y) = l(-t, -y) (logistic, linear), (x, y) and
  (-x, -y) are the same sample, so labels (+1, +1) with x, x' over the whole sphere cover
  every pair; the default searches just that. Other label pairs can be given.
* The maximised value is biased upward (a maximum of noisy estimates): the reported
  profile is re-estimated on fresh noise.
* A plan certified for one person of up to k rows (``plan.rows`` = k, Theorem C.13 for k
  rows): the n - k shared rows are fixed and the person's k rows are k copies of the
  differing sample (x, label) against k copies of (x', label'), the alignment at which
  the k gradient differences add up to the k G of the k-row theorem; the search is over
  the same angles.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize
from threadpoolctl import threadpool_limits

from objpert._validation import check_positive, count, validated
from objpert.audit._maps import GradientDescentMap, ReleaseMap, audit_data, plan_loss
from objpert.audit._pairwise import (
    PairwiseProfile,
    hockey_stick_integrand,
    pairwise_profile,
    privacy_loss,
)
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import ParameterError

__all__ = [
    "WorstPair",
    "grid_directions",
    "sphere_angles",
    "sphere_point",
    "worst_pair",
]


@dataclass(frozen=True)
class WorstPair:
    """The worst differing sample found and its re-estimated pairwise profile."""

    x: tuple[float, ...]
    label: float
    x_prime: tuple[float, ...]
    label_prime: float
    epsilon: float
    delta: float  # re-estimated max(delta, delta_reverse) at epsilon (fresh noise)
    search_delta: float  # the maximised common-random-numbers estimate (biased upward)
    profile: PairwiseProfile
    evaluations: int
    trace: tuple[dict[str, Any], ...]
    rows: int = 1  # the differing sample's copies: one person's rows

    def datasets(
        self, X_shared: ArrayLike, y_shared: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(X, y, X', y') with the differing sample last (``rows`` copies of it)."""
        return _datasets(
            np.asarray(X_shared, float),
            np.asarray(y_shared, float),
            np.asarray(self.x),
            self.label,
            np.asarray(self.x_prime),
            self.label_prime,
            self.rows,
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["x"], out["x_prime"] = list(self.x), list(self.x_prime)
        out["profile"] = self.profile.to_dict()
        out["trace"] = [dict(t) for t in self.trace]
        return out


def sphere_point(angles: ArrayLike, zeta: float) -> np.ndarray:
    """zeta times the unit vector with hyperspherical angles t_1..t_{d-1}:
    (cos t_1, sin t_1 cos t_2, ..., sin t_1 ... sin t_{d-2} cos t_{d-1},
    sin t_1 ... sin t_{d-1})."""
    t = np.atleast_1d(np.asarray(angles, dtype=float))
    out = np.empty(t.size + 1)
    s = 1.0
    for i, a in enumerate(t):
        out[i] = s * math.cos(a)
        s *= math.sin(a)
    out[-1] = s
    return zeta * out


def sphere_angles(x: ArrayLike) -> np.ndarray:
    """Inverse of :func:`sphere_point` (up to zeta): the d-1 angles of direction x."""
    x = np.asarray(x, dtype=float)
    d = x.size
    t = np.empty(d - 1)
    for i in range(d - 1):
        rest = np.linalg.norm(x[i + 1 :])
        t[i] = math.atan2(rest, x[i])
    if d >= 2 and x[-1] < 0:
        t[-1] = 2 * math.pi - t[-1]
    return t


def grid_directions(d: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` unit directions (count, d): equally spaced (d = 2), Fibonacci sphere (d = 3),
    uniform random (d > 3)."""
    if d == 1:
        return np.array([[1.0], [-1.0]])
    if d == 2:
        a = 2 * math.pi * np.arange(count) / count
        return np.column_stack([np.cos(a), np.sin(a)])
    if d == 3:
        k = np.arange(count) + 0.5
        z = 1 - 2 * k / count
        phi = math.pi * (1 + math.sqrt(5)) * k
        r = np.sqrt(1 - z * z)
        return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])
    u = rng.standard_normal((count, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def _datasets(Xs, ys, x, label, xp, label_p, rows=1):
    X = np.vstack([Xs, np.repeat(x[None, :], rows, axis=0)])
    Xp = np.vstack([Xs, np.repeat(xp[None, :], rows, axis=0)])
    return X, np.append(ys, [label] * rows), Xp, np.append(ys, [label_p] * rows)


@validated(
    epsilon=check_positive,
    samples=count(2),
    grid=count(2),
    starts=count(0),
    maxfev=count(1),
    tol=check_positive,
)
def worst_pair(
    X_shared: ArrayLike,
    y_shared: ArrayLike,
    plan: WatkinsAroraPlan,
    *,
    epsilon: float,
    samples: int = 1000,
    grid: int = 8,
    starts: int = 1,
    maxfev: int = 24,
    labels: tuple[tuple[float, float], ...] | None = None,
    epsilons: ArrayLike | None = None,
    final_samples: int = 5000,
    final_proposal: str = "gaussian",
    rng: Any = None,
    release_map: ReleaseMap | None = None,
    tol: float = 1e-10,
) -> WorstPair:
    """The differing sample (x, label) vs (x', label') on the zeta-sphere maximising the
    pairwise delta_pair(epsilon) of eq. (6) for direction (S, S') (the reverse direction is
    the same search with x and x' swapped), with shared rows (X_shared, y_shared) of
    n - 1 rows. Returns the pair and its profile at ``epsilons`` (default: [epsilon]),
    re-estimated with ``final_samples`` fresh draws.

    Cost: about grid^2 |labels| + starts * maxfev evaluations (88 at the defaults, d = 2),
    each a batched forward run of eq. (4)-(5) on ``samples`` noise vectors and a Newton
    solve (typically 2-3 more runs).
    """
    loss = plan_loss(plan)
    Xs, ys = audit_data(X_shared, y_shared, zeta=plan.zeta, loss=loss)
    rows = plan.rows
    if Xs.shape != (plan.n - rows, plan.d):
        raise ParameterError(
            f"the shared rows must have shape ({plan.n - rows}, {plan.d}) (n - {rows} rows); "
            f"got {Xs.shape}"
        )
    if labels is None:
        if loss.label_kind != "binary":
            raise ParameterError("give the label pairs to search for a loss with real labels")
        labels = ((1.0, 1.0),)
    release = GradientDescentMap.from_plan(plan, loss) if release_map is None else release_map
    generator = np.random.default_rng(rng)
    d, zeta = plan.d, plan.zeta
    Z = release.sigma * generator.standard_normal((d, samples))  # common random numbers
    eps = np.array([epsilon])
    count = [0]

    def value(x: np.ndarray, lab: float, xp: np.ndarray, lab_p: float) -> float:
        count[0] += 1
        X, y, Xp, yp = _datasets(Xs, ys, x, lab, xp, lab_p, rows)
        ls = privacy_loss(release, (X, y), (Xp, yp), Z, tol=tol)
        return float(hockey_stick_integrand(ls.loss, eps).mean())

    dirs = zeta * grid_directions(d, grid, generator)
    scored: list[tuple[float, int, int, int]] = []
    with threadpool_limits(limits=1, user_api="blas"):
        for li, (lab, lab_p) in enumerate(labels):
            for i, x in enumerate(dirs):
                for j, xp in enumerate(dirs):
                    if i != j or lab != lab_p:
                        scored.append((value(x, lab, xp, lab_p), li, i, j))
        scored.sort(key=lambda s: -s[0])
        trace: list[dict[str, Any]] = [
            {"stage": "grid", "evaluations": count[0], "best": scored[0][0]}
        ]
        best = (scored[0][0], scored[0][1], dirs[scored[0][2]], dirs[scored[0][3]])
        step = math.pi / grid
        for v0, li, i, j in scored[:starts]:
            lab, lab_p = labels[li]
            if d == 1:
                break
            theta0 = np.concatenate([sphere_angles(dirs[i]), sphere_angles(dirs[j])])
            simplex = np.vstack([theta0, theta0 + step * np.eye(theta0.size)])
            before = count[0]

            def objective(theta: np.ndarray, lab: float = lab, lab_p: float = lab_p) -> float:
                x = sphere_point(theta[: d - 1], zeta)
                xp = sphere_point(theta[d - 1 :], zeta)
                return -value(x, lab, xp, lab_p)

            res = optimize.minimize(
                objective,
                theta0,
                method="Nelder-Mead",
                options={"initial_simplex": simplex, "maxfev": maxfev, "xatol": 1e-3, "fatol": 0.0},
            )
            v1 = -float(res.fun)
            trace.append(
                {"stage": "nelder-mead", "from": v0, "to": v1, "evaluations": count[0] - before}
            )
            if v1 > best[0]:
                best = (
                    v1,
                    li,
                    sphere_point(res.x[: d - 1], zeta),
                    sphere_point(res.x[d - 1 :], zeta),
                )
    search_delta, li, x, xp = best
    lab, lab_p = labels[li]
    X, y, Xp, yp = _datasets(Xs, ys, x, lab, xp, lab_p, rows)
    grid_eps = np.union1d([epsilon], [] if epsilons is None else np.asarray(epsilons, float))
    profile = pairwise_profile(
        X,
        y,
        Xp,
        yp,
        plan,
        grid_eps,
        samples=final_samples,
        rng=generator,
        release_map=release_map,
        proposal=final_proposal,
        tol=tol,
    )
    k = int(np.searchsorted(grid_eps, epsilon))
    return WorstPair(
        x=tuple(float(v) for v in x),
        label=float(lab),
        x_prime=tuple(float(v) for v in xp),
        label_prime=float(lab_p),
        epsilon=epsilon,
        delta=float(profile.measured[k]),
        search_delta=float(search_delta),
        profile=profile,
        evaluations=count[0],
        trace=tuple(trace),
        rows=rows,
    )
