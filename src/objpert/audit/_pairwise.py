"""Exact pairwise privacy profiles of the Watkins & Arora (2026) release by change of variables.

For neighbouring datasets (S, S') and the release y = M_S(z), z ~ N(0, sigma^2 I_d), the
output density is p_Y^S(y) = p(z) / |det J_S(z)| (Lemma E.5, eq. 6), so the privacy loss at
y = M_S(z) is (eq. 6)

    L(z) = log p(z) - log p(z') + log |det J_S'(z')| - log |det J_S(z)|,   M_S'(z') = y,

with J the Jacobian of eq. (5) and p the N(0, sigma^2 I_d) density. The pairwise privacy
profile (the hockey-stick divergence of eq. (3) for this pair) is

    delta_pair(epsilon) = E_{z ~ N(0, sigma^2 I)} [(1 - e^{epsilon - L(z)})_+],

exact whenever M_S' is injective (Theorem A.13 on the certificate's ball; checked by
:func:`objpert.audit.check_jacobian`); were it not, p_Y^{S'}(y) would sum over
several preimages and the single-preimage L overstates the loss (a conservative error).
Where a preimage z' cannot be found the output may lie outside M_S'(R^d), where
p_Y^{S'} = 0 and the integrand is 1.

The preimage z' is found by Newton's method with the Jacobian of eq. (5), batched over
the samples, with step halving; convergence is verified by the relative residual
||M_S'(z') - y|| / (1 + ||y||) <= tol. A sample whose Newton solve fails is never dropped:
it counts as 1 (the worst case) in the point estimate and the upper bound and as 0 in the
lower bound, and failures are counted per direction.

Confidence intervals are simultaneous over the epsilon grid and both directions
(Bonferroni: each of the 2K two-sided intervals has miscoverage (1 - confidence)/(2K)):

* ``proposal="gaussian"`` (plain Monte Carlo): the integrand lies in [0, 1] and the
  empirical Bernstein bound of Maurer & Pontil (2009, Theorem 4) gives, with probability
  >= 1 - a on each side, |E - mean| <= sqrt(2 V ln(2/a)/n) + 7 ln(2/a)/(3(n - 1)), V the
  sample variance. Rigorous at every sample size, so ``flagged`` has family-wise false
  alarm rate <= 1 - confidence for a mechanism that meets its certificate.
* ``proposal="tilted"``: defensive importance sampling (Hesterberg 1995) for small
  deltas. z = sigma xi with xi from the mixture pi_0 N(0, I) + sum_k pi_k N(m_k, I),
  weighted by p/q <= 1/pi_0 (pi_0 = 0.1), so the estimator stays unbiased. The shifts m_k
  (one per epsilon) come from two cross-entropy pilot rounds (Rubinstein & Kroese 2004) of
  max(500, samples/10) draws each: m_k is the w (1 - e^{epsilon_k - L})_+-weighted mean of the pilot
  xi, extrapolated along the top-loss direction where too few pilot draws reach epsilon_k.
  Its interval is the normal (CLT) one on the weighted samples, approximate: use it to
  measure small deltas, not to flag.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special
from threadpoolctl import threadpool_limits

from objpert._jsonable import to_json_value
from objpert._validation import check_open_unit, check_positive, count, validated
from objpert.audit._maps import GradientDescentMap, ReleaseMap, audit_data, log_abs_det, plan_loss
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import ParameterError

__all__ = [
    "PROPOSALS",
    "LossSamples",
    "PairwiseProfile",
    "Preimage",
    "bernstein_bounds",
    "certified_delta",
    "hockey_stick_integrand",
    "normal_bounds",
    "pairwise_profile",
    "preimage",
    "privacy_loss",
]

PROPOSALS = ("gaussian", "tilted")
_DEFENSIVE = 0.1  # pi_0 of the tilted proposal: importance weights <= 1/pi_0 = 10


# ---------------------------------------------------------------- the result


@dataclass(frozen=True)
class PairwiseProfile:
    """Measured delta_pair(epsilon) for (S, S') and (S', S) against the plan's certificate.

    ``lower``/``upper`` (and their ``_reverse`` twins) are simultaneous confidence bounds
    at level ``confidence`` over the grid and both directions (see the module docstring);
    ``certified`` is the plan's Theorem C.13 (or Theorem 4.1) delta(epsilon).
    """

    epsilons: tuple[float, ...]
    delta: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    delta_reverse: tuple[float, ...]
    lower_reverse: tuple[float, ...]
    upper_reverse: tuple[float, ...]
    certified: tuple[float, ...]
    newton_failures: tuple[int, int]
    samples: int
    confidence: float
    proposal: str = "gaussian"
    interval: str = "empirical-bernstein"
    release: str = "wa"
    max_residual: tuple[float, float] = (0.0, 0.0)

    @property
    def measured(self) -> tuple[float, ...]:
        """max(delta, delta_reverse) per epsilon: the pair's profile (both orders)."""
        return tuple(max(a, b) for a, b in zip(self.delta, self.delta_reverse, strict=True))

    @property
    def flagged(self) -> bool:
        """True iff at some epsilon the lower bound of max(delta, delta_reverse) (which is at
        least the larger of the two lower bounds) exceeds the certified delta."""
        return any(
            max(lo, lr) > c
            for lo, lr, c in zip(self.lower, self.lower_reverse, self.certified, strict=True)
        )

    @property
    def below_certified(self) -> bool:
        """True iff the point estimate max(delta, delta_reverse) <= certified at every epsilon."""
        return all(m <= c for m, c in zip(self.measured, self.certified, strict=True))

    @property
    def looseness(self) -> tuple[float, ...]:
        """certified / max(delta, delta_reverse) per epsilon (inf where nothing was measured)."""
        return tuple(
            c / m if m > 0 else math.inf for c, m in zip(self.certified, self.measured, strict=True)
        )

    def to_dict(self) -> dict[str, Any]:
        out = {k: to_json_value(v) for k, v in asdict(self).items()}
        out["measured"] = to_json_value(self.measured)
        out["looseness"] = to_json_value(self.looseness)
        out["flagged"] = self.flagged
        out["below_certified"] = self.below_certified
        return out


# ---------------------------------------------------------------- the certificate


def certified_delta(plan: WatkinsAroraPlan, epsilons: ArrayLike) -> np.ndarray:
    """The plan's certified delta(epsilon): Theorem C.13 / Section C.4 eq. (50) at the
    plan's radii (r, r') and truncation for a ``c13`` plan, eq. (10) of Theorem 4.1 for a
    ``theorem41`` plan; 1.0 where the theorem gives nothing."""
    pc = plan.constants
    eps = np.asarray(epsilons, dtype=float)
    if plan.certificate.form == "theorem41":
        return theorem41.delta(pc, plan.sigma, plan.u, plan.iterations, eps, plan.truncation)
    return theorem_c13.delta_n(
        pc, plan.sigma, plan.radius, plan.radius_outer, plan.iterations, eps, plan.truncation
    )


# ---------------------------------------------------------------- Newton preimages


@dataclass(frozen=True)
class Preimage:
    """Newton's solution of M(z') = y for a batch: z' (d, B), J(z') (B, d, d), and whether
    the relative residual ||M(z') - y|| / (1 + ||y||) reached the tolerance."""

    Z: np.ndarray
    J: np.ndarray
    converged: np.ndarray
    residual: np.ndarray


def preimage(
    release: ReleaseMap,
    X: Any,
    y: Any,
    target: np.ndarray,
    Z0: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 40,
) -> Preimage:
    """Solve M(z') = target column by column by Newton's method, z' <- z' - J(z')^{-1}
    (M(z') - target), J from eq. (5), halving a step that does not reduce the residual.

    Only unfinished columns are recomputed. A column fails when its Jacobian is singular, a
    step has been halved below 1e-8 without progress, or ``max_iter`` is reached.
    """
    target = np.asarray(target, dtype=np.float64)
    Z = np.array(Z0, dtype=np.float64)
    W, J = release.forward(X, y, Z)
    scale = 1.0 + np.linalg.norm(target, axis=0)
    res = np.linalg.norm(W - target, axis=0) / scale
    res[~np.isfinite(res)] = np.inf
    step = np.ones(Z.shape[1])
    failed = np.zeros(Z.shape[1], dtype=bool)
    for _ in range(max_iter):
        act = np.nonzero((res > tol) & ~failed)[0]
        if act.size == 0:
            break
        singular = ~np.isfinite(log_abs_det(J[act]))
        failed[act[singular]] = True
        act = act[~singular]
        if act.size == 0:
            break
        rhs = (W[:, act] - target[:, act]).T[..., None]
        dz = np.linalg.solve(J[act], rhs)[..., 0].T
        Zt = Z[:, act] - step[act] * dz
        Wt, Jt = release.forward(X, y, Zt)
        rt = np.linalg.norm(Wt - target[:, act], axis=0) / scale[act]
        better = np.isfinite(rt) & (rt < res[act])
        acc, keep = act[better], np.nonzero(better)[0]
        Z[:, acc], W[:, acc], J[acc], res[acc] = Zt[:, keep], Wt[:, keep], Jt[keep], rt[keep]
        step[acc] = 1.0
        rej = act[~better]
        step[rej] *= 0.5
        failed[rej[step[rej] < 1e-8]] = True
    return Preimage(Z, J, (res <= tol) & ~failed, res)


# ---------------------------------------------------------------- privacy loss (eq. 6)


@dataclass(frozen=True)
class LossSamples:
    """Privacy-loss samples L(z) of eq. (6) for one direction, with Newton diagnostics."""

    loss: np.ndarray  # (B,), +inf where the preimage was not found
    converged: np.ndarray
    residual: np.ndarray
    preimage: np.ndarray  # z' (d, B)


def privacy_loss(
    release: ReleaseMap,
    A: tuple[Any, Any],
    B: tuple[Any, Any],
    Z: np.ndarray,
    *,
    tol: float = 1e-10,
    max_iter: int = 40,
) -> LossSamples:
    """L(z) = log p(z) - log p(z') + log|det J_B(z')| - log|det J_A(z)| (eq. 6) at the
    columns z of Z, for the release y = M_A(z) and its preimage M_B(z') = y.

    With p the N(0, sigma^2 I) density, log p(z) - log p(z') = (||z'||^2 - ||z||^2)/(2 sigma^2).
    """
    W, J = release.forward(A[0], A[1], Z)
    guess = getattr(release, "preimage_guess", None)
    Z0 = Z if guess is None else guess(A, B, Z, W)
    pre = preimage(release, B[0], B[1], W, Z0, tol=tol, max_iter=max_iter)
    s2 = release.sigma**2
    with np.errstate(over="ignore", invalid="ignore"):  # failed solves may have diverged
        gauss = (np.sum(pre.Z**2, axis=0) - np.sum(Z**2, axis=0)) / (2.0 * s2)
        loss = gauss + log_abs_det(pre.J) - log_abs_det(J)
    loss = np.where(pre.converged & np.isfinite(loss), loss, np.inf)
    return LossSamples(loss, pre.converged, pre.residual, pre.Z)


def hockey_stick_integrand(loss: np.ndarray, epsilons: np.ndarray) -> np.ndarray:
    """(1 - e^{epsilon - L})_+ of eq. (3) for every sample and epsilon: an array (B, K);
    1 where L = +inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        v = -np.expm1(epsilons[None, :] - loss[:, None])
    return np.clip(np.where(np.isinf(loss)[:, None], 1.0, v), 0.0, 1.0)


# ---------------------------------------------------------------- intervals


def bernstein_bounds(x: np.ndarray, alpha: float, scale: float = 1.0) -> tuple[np.ndarray, ...]:
    """Empirical Bernstein bounds (Maurer & Pontil 2009, Theorem 4) on the mean of i.i.d.
    samples in [0, scale] (columns of x, shape (B, K)): each side holds with probability
    >= 1 - alpha. Returns (lower, upper) clipped to [0, scale]."""
    n = x.shape[0]
    mean = x.mean(axis=0)
    var = x.var(axis=0, ddof=1) if n > 1 else np.full_like(mean, scale**2)
    log_term = math.log(2.0 / alpha)
    half = np.sqrt(2.0 * var * log_term / n) + 7.0 * scale * log_term / (3.0 * max(n - 1, 1))
    return np.clip(mean - half, 0.0, scale), np.clip(mean + half, 0.0, scale)


def normal_bounds(x: np.ndarray, alpha: float) -> tuple[np.ndarray, ...]:
    """mean -+ z_{1-alpha} s / sqrt(n) (CLT), clipped to [0, 1]."""
    n = x.shape[0]
    half = special.ndtri(1.0 - alpha) * x.std(axis=0, ddof=1) / math.sqrt(n)
    mean = x.mean(axis=0)
    return np.clip(mean - half, 0.0, 1.0), np.clip(mean + half, 0.0, 1.0)


# ---------------------------------------------------------------- proposals


def _draw_standard(
    rng: np.random.Generator, d: int, count: int, tilt: Any
) -> tuple[np.ndarray, np.ndarray]:
    """xi (d, count) from N(0, I) (``tilt`` None) or from the defensive mixture
    pi_0 N(0, I) + sum_k pi_k N(m_k, I), with the importance weights p/q <= 1/pi_0."""
    xi = rng.standard_normal((d, count))
    if tilt is None:
        return xi, np.ones(count)
    means, weights = tilt
    probs = np.concatenate([[_DEFENSIVE], weights])
    comp = rng.choice(probs.size, size=count, p=probs)
    xi = xi + np.vstack([np.zeros((1, d)), means])[comp].T
    # q/p = pi_0 + sum_k pi_k exp(<xi, m_k> - |m_k|^2 / 2)
    expo = means @ xi - 0.5 * np.sum(means**2, axis=1)[:, None]
    log_ratio = special.logsumexp(np.vstack([np.zeros((1, count)), expo]), axis=0, b=probs[:, None])
    return xi, np.exp(-log_ratio)


def _shifts(xi: np.ndarray, w: np.ndarray, loss: np.ndarray, epsilons: np.ndarray) -> list:
    """Cross-entropy mean shifts, one per epsilon: the weighted mean of xi under
    w (1 - e^{epsilon - L})_+ (the Gaussian closest in KL to the zero-variance proposal);
    where fewer than 10 pilot samples reach epsilon, extrapolate along the mean direction u
    of the top 1% losses with a linear fit of L against <xi, u> on the top 10%."""
    V = hockey_stick_integrand(loss, epsilons) * w[:, None]
    finite = np.isfinite(loss)
    order = np.argsort(-np.where(finite, loss, -np.inf))
    order = order[: int(np.count_nonzero(finite))]
    fit = None
    if order.size >= 20:
        top = order[: max(10, order.size // 100)]
        u = xi[:, top].mean(axis=1)
        if np.linalg.norm(u) > 0:
            u /= np.linalg.norm(u)
            sel = order[: max(20, order.size // 10)]
            slope, icpt = np.polyfit(xi[:, sel].T @ u, loss[sel], 1)
            fit = (u, slope, icpt) if slope > 0 else None
    out = []
    for k, eps in enumerate(epsilons):
        if np.count_nonzero(V[:, k] > 0) >= 10:
            out.append(xi @ V[:, k] / V[:, k].sum())
        elif fit is not None:
            u, slope, icpt = fit
            out.append(max((eps - icpt) / slope, 0.0) * u)
    return out


def _tilt(
    release: ReleaseMap,
    A: tuple[Any, Any],
    B: tuple[Any, Any],
    epsilons: np.ndarray,
    d: int,
    tol: float,
    rng: np.random.Generator,
    pilot: int,
    stages: int = 2,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The tilted proposal: mean shifts (K', d) in units of sigma and their mixture weights,
    adapted by ``stages`` cross-entropy pilot rounds of ``pilot`` draws each (the first from
    N(0, I), the next from the mixture found so far); None when no shift was found."""
    tilt = None
    for _ in range(stages):
        xi, w = _draw_standard(rng, d, pilot, tilt)
        ls = privacy_loss(release, A, B, release.sigma * xi, tol=tol)
        shifts = _shifts(xi, w, ls.loss, epsilons)
        if not shifts:
            return tilt
        means = np.unique(np.round(np.array(shifts), 6), axis=0)
        tilt = (means, np.full(means.shape[0], (1.0 - _DEFENSIVE) / means.shape[0]))
    return tilt


# ---------------------------------------------------------------- the profile


@dataclass(frozen=True)
class _Direction:
    delta: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    failures: int
    max_residual: float


def _direction(
    release: ReleaseMap,
    A: tuple[Any, Any],
    B: tuple[Any, Any],
    epsilons: np.ndarray,
    samples: int,
    rng: np.random.Generator,
    alpha: float,
    proposal: str,
    tol: float,
    batch: int,
) -> _Direction:
    d = np.shape(A[0])[1]
    tilt = None
    if proposal == "tilted":
        tilt = _tilt(release, A, B, epsilons, d, tol, rng, pilot=max(500, samples // 10))
    hi_parts, lo_parts, fails, worst = [], [], 0, 0.0
    for start in range(0, samples, batch):
        xi, w = _draw_standard(rng, d, min(batch, samples - start), tilt)
        ls = privacy_loss(release, A, B, release.sigma * xi, tol=tol)
        v = hockey_stick_integrand(ls.loss, epsilons)  # failures: L = inf, v = 1
        hi_parts.append(w[:, None] * v)
        lo_parts.append(w[:, None] * np.where(ls.converged[:, None], v, 0.0))
        fails += int(np.count_nonzero(~ls.converged))
        if ls.converged.any():
            worst = max(worst, float(ls.residual[ls.converged].max()))
    hi, lo = np.vstack(hi_parts), np.vstack(lo_parts)
    if tilt is None:
        lower, _ = bernstein_bounds(lo, alpha)
        _, upper = bernstein_bounds(hi, alpha)
    else:
        lower, _ = normal_bounds(lo, alpha)
        _, upper = normal_bounds(hi, alpha)
    return _Direction(hi.mean(axis=0), lower, upper, fails, worst)


def _neighbours(
    X: np.ndarray, y: np.ndarray, Xp: np.ndarray, yp: np.ndarray, rows: int = 1
) -> None:
    """Refuse datasets that are not neighbours of the plan: the same shape, at most
    ``rows`` rows different (one privacy unit's rows for a plan of k rows)."""
    if X.shape != Xp.shape:
        raise ParameterError(f"S and S' must have the same shape; got {X.shape} and {Xp.shape}")
    differ = np.any(np.not_equal(X, Xp), axis=1) | np.not_equal(y, yp)
    if np.count_nonzero(differ) > rows:
        raise ParameterError(
            f"S and S' must differ in at most {'one row' if rows == 1 else f'{rows} rows'} "
            f"(neighbouring); they differ in {int(np.count_nonzero(differ))}"
        )


@validated(samples=count(2), confidence=check_open_unit, tol=check_positive, batch=count(1))
def pairwise_profile(
    X: Any,
    y: Any,
    X_prime: Any,
    y_prime: Any,
    plan: WatkinsAroraPlan,
    epsilons: ArrayLike,
    *,
    samples: int = 20000,
    rng: Any = None,
    confidence: float = 0.95,
    release_map: ReleaseMap | None = None,
    proposal: str = "gaussian",
    tol: float = 1e-10,
    batch: int = 20000,
) -> PairwiseProfile:
    """delta_pair(epsilon) = E[(1 - e^{epsilon - L(z)})_+] (eq. 6) for (S, S') and (S', S),
    with simultaneous confidence bounds, against the plan's certified delta(epsilon).

    ``release_map``: the map z -> w under audit (default: the plan's Watkins & Arora release,
    :class:`objpert.audit._maps.GradientDescentMap`); its ``sigma`` is the noise drawn.
    ``proposal``: ``"gaussian"`` (plain Monte Carlo, rigorous empirical-Bernstein bounds)
    or ``"tilted"`` (defensive importance sampling, normal bounds); see the module
    docstring. Both datasets must have the plan's public shape (n, d) and rows of norm
    <= zeta, and differ in at most one row (at most k for a plan certified for units of up
    to k rows, ``plan.rows``: the exact unit-pair check).
    """
    if proposal not in PROPOSALS:
        raise ParameterError(f"proposal must be one of {PROPOSALS}; got {proposal!r}")
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps)):
        raise ParameterError("epsilons must be a non-empty 1-D array of finite numbers")
    loss = plan_loss(plan)
    S = audit_data(X, y, zeta=plan.zeta, loss=loss)
    Sp = audit_data(X_prime, y_prime, zeta=plan.zeta, loss=loss)
    for M in (S[0], Sp[0]):
        if M.shape != (plan.n, plan.d):
            raise ParameterError(
                f"the plan is for data of shape ({plan.n}, {plan.d}); got {M.shape}"
            )
    _neighbours(S[0], S[1], Sp[0], Sp[1], plan.rows)
    release = GradientDescentMap.from_plan(plan, loss) if release_map is None else release_map
    generator = np.random.default_rng(rng)
    alpha = (1.0 - confidence) / (4.0 * eps.size)  # per side, 2K two-sided intervals
    with threadpool_limits(limits=1, user_api="blas"):
        fwd = _direction(release, S, Sp, eps, samples, generator, alpha, proposal, tol, batch)
        rev = _direction(release, Sp, S, eps, samples, generator, alpha, proposal, tol, batch)
    as_tuple = lambda a: tuple(float(v) for v in a)  # noqa: E731
    return PairwiseProfile(
        epsilons=as_tuple(eps),
        delta=as_tuple(fwd.delta),
        lower=as_tuple(fwd.lower),
        upper=as_tuple(fwd.upper),
        delta_reverse=as_tuple(rev.delta),
        lower_reverse=as_tuple(rev.lower),
        upper_reverse=as_tuple(rev.upper),
        certified=as_tuple(certified_delta(plan, eps)),
        newton_failures=(fwd.failures, rev.failures),
        samples=samples,
        confidence=confidence,
        proposal=proposal,
        interval="empirical-bernstein" if proposal == "gaussian" else "normal",
        release=release.name,
        max_residual=(fwd.max_residual, rev.max_residual),
    )
