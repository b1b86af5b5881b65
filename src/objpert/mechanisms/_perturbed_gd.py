"""The Watkins & Arora (2026) release, Section 3.2.

Draw z ~ N(0, sigma^2 I_d) once, run exactly N steps of
w_{k+1} = w_k - eta (grad F(w_k; S) + z) from w_0 = 0 (eq. 4), release w_N. With a public
``prior`` w_pub the ridge of eq. (1) is centred at w_pub and the descent starts there: in
v = w - w_pub it is the same release for a GLM with public margin offsets <x_i, w_pub>, so
the plan and its certificate are unchanged (docs/priors.md). The plan's
certificate is recomputed from its public constants before any data is touched; a plan
that does not certify, or data that break Assumption 1, are refused. :func:`release_batch`
runs many independent releases in one sweep over X per step, and
:func:`release_one_vs_rest` many releases with their own labels (the K one-vs-rest
releases of a multiclass model) in one sweep, :func:`release_plans` many plans (seeds,
epsilon grids) that share the step size and N; with d > n they run the recursion in the
span of the features (Lemma B.6) when that is cheaper. ``n_jobs``: the engine's threads
(:func:`~objpert._engines.threads.choose_threads`: None automatic, 1 one thread, -1
every core); it changes the speed only.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from objpert._data import as_targets, encode_binary, for_plan
from objpert._engines.blocked import single_threaded_blas
from objpert._engines.factory import AUTO_MIN_STEPS, check_engine
from objpert._engines.glm import GLMObjective
from objpert._engines.span import FeatureSpan, span_reduction_pays
from objpert._losses import Loss
from objpert._randomness import make_rng
from objpert.accounting._certificate import ReleaseCertificate
from objpert.certify._plan import WatkinsAroraPlan, checked_plan, rederive_plan
from objpert.exceptions import DataError, ParameterError, PrivacyError
from objpert.mechanisms._progress import show_progress, step_progress, sweep_work

__all__ = [
    "BatchRelease",
    "CertifiedRelease",
    "Release",
    "centred",
    "check_prior",
    "finite_or_refused",
    "perturbed_gradient_descent",
    "release_batch",
    "release_one_vs_rest",
    "release_plans",
    "release_targets",
    "run_gradient_descent",
    "run_in_feature_span",
]


class _Certified:
    """The (epsilon, delta) a release's certificate gives."""

    certificate: Any

    @property
    def epsilon(self) -> float:
        return self.certificate.epsilon

    @property
    def delta(self) -> float:
        return self.certificate.delta


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
    prior: np.ndarray | None = None  # the public centre w_pub (d,); None: w_pub = 0


@dataclass(frozen=True)
class Release(_Certified, _Released):
    """What a mechanism hands back: the weights (d,) and everything that certifies them.

    ``seconds`` and ``n_clipped`` are statistics of the private rows for the caller who
    holds the data (the timing is a side channel): not covered by the certificate. What
    a fitted model keeps is :meth:`certified`, without them."""

    def certified(self) -> CertifiedRelease:
        """The release without its statistics of the private rows (``seconds``,
        ``n_clipped``): what the certificate covers."""
        return CertifiedRelease(
            self.weights, self.plan, self.certificate, self.iterations, self.seeded, self.prior
        )

    def to_dict(self) -> dict[str, Any]:
        return _with_prior(
            {
                "weights": self.weights.tolist(),
                "plan": self.plan.to_dict(),
                "certificate": self.certificate.to_dict(),
                "iterations": self.iterations,
                "seconds": self.seconds,
                "n_clipped": self.n_clipped,
                "seeded": self.seeded,
            },
            self.prior,
        )


@dataclass(frozen=True)
class CertifiedRelease(_Certified):
    """A release as a fitted model keeps it (``releases_``): the weights (d,), the plan,
    the certificate, the iteration count (the plan's N), whether a testing seed drew
    the noise and the public prior w_pub the ridge was centred at (None: 0), a public
    input. No statistic of the private rows: no clipping count, no timing."""

    weights: np.ndarray
    plan: Any
    certificate: Any
    iterations: int
    seeded: bool
    prior: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        return _with_prior(
            {
                "weights": self.weights.tolist(),
                "plan": self.plan.to_dict(),
                "certificate": self.certificate.to_dict(),
                "iterations": self.iterations,
                "seeded": self.seeded,
            },
            self.prior,
        )


def _with_prior(record: dict[str, Any], prior: np.ndarray | None) -> dict[str, Any]:
    """A release's record with its public prior (only when it has one)."""
    if prior is not None:
        record["prior"] = np.asarray(prior, dtype=np.float64).tolist()
    return record


def centred(prior: np.ndarray | None, z: np.ndarray, mu: float) -> tuple[np.ndarray, Any]:
    """(w_0, z - mu w_pub): the start and the noise of eq. (4) for the ridge centred at the
    public prior w_pub, since mu (w - w_pub) + z = mu w + (z - mu w_pub); ``prior`` None
    (w_pub = 0): (0, z). ``prior`` (d,) is shared by every column of z (d, B), or (d, B)."""
    if prior is None:
        return np.zeros_like(z), z
    w0 = np.array(np.broadcast_to(_as_columns(prior, z), z.shape), dtype=np.float64)
    return w0, z - mu * w0


def _as_columns(prior: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``prior`` (d,) as a column against z (d, B) (broadcast), else unchanged."""
    prior = np.asarray(prior, dtype=np.float64)
    return prior[:, None] if z.ndim == 2 and prior.ndim == 1 else prior


def run_gradient_descent(
    objective: GLMObjective,
    z: np.ndarray,
    eta: float,
    iterations: int,
    progress: bool | None = False,
    *,
    prior: np.ndarray | None = None,
) -> np.ndarray:
    """Exactly ``iterations`` steps of eq. (4) from w_0 = 0; no stopping rule of any kind.

    z has shape (d,) or (d, B) (B runs at once). ``prior``: a public point w_pub ((d,), or
    (d, B) one per run) at which the ridge is centred, the descent starting from w_0 =
    w_pub (:func:`centred`; docs/priors.md). BLAS runs one thread throughout: the engines
    thread their sweeps themselves, and a small product split over BLAS threads costs more
    than it saves (far more on a busy machine).
    """
    descend = getattr(objective.engine, "descend", None)
    w, z = centred(prior, z, objective.mu)
    with single_threaded_blas():
        if descend is not None:  # an engine running the whole descent on its device
            start = {} if prior is None else {"start": w}
            return descend(z, eta, iterations, objective.loss, objective.mu, objective.y, **start)
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
    *,
    prior: np.ndarray | None = None,
) -> np.ndarray:
    """Eq. (4) for F on X, run in a subspace holding every row (Lemma B.6, item 1).

    ``objective`` is F restricted to the span, i.e. built on ``span.features``; z has shape
    (d,) or (d, B). Returns M(z) = Q M^C(Q^T z) - B_N (z - Q Q^T z), B_N = (1 - rho^N)/mu,
    rho = 1 - eta mu: the same w_N as :func:`run_gradient_descent` on X, up to rounding.
    With a public ``prior`` w_pub (the ridge centred there, the descent started there):
    the span part runs from Q^T w_pub centred at Q^T w_pub, and the complement p = w -
    w_pub follows the same affine recursion from p_0 = 0 (the ridge pulls towards w_pub),
    so M(z) = Q M^C(Q^T z) + (w_pub - Q Q^T w_pub) - B_N (z - Q Q^T z).
    """
    zc = span.project(z)
    pc = None if prior is None else span.project(_as_columns(prior, z))
    v = run_gradient_descent(objective, zc, eta, iterations, progress, prior=pc)
    b_n = -math.expm1(iterations * math.log1p(-eta * objective.mu)) / objective.mu
    w = span.lift(v + b_n * zc)
    w -= b_n * z
    if prior is not None:  # the complement of the span stays at w_pub's component
        w += _as_columns(prior, z) - span.lift(pc)
    return w


def _prepare(
    X: Any, y: Any, plan: WatkinsAroraPlan, clip: bool
) -> tuple[ReleaseCertificate, Any, np.ndarray, Loss, int]:
    """Every check before the noise: the plan certifies, the data meet its shape, labels and
    Assumption 1 (rows clipped when ``clip``). (certificate, X, y, loss, rows clipped)."""
    cert = rederive_plan(plan)  # the privacy boundary: the plan re-derived from the loss
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
    plan: WatkinsAroraPlan,
    z: np.ndarray,
    span_reduction: bool | None,
    verbose: bool | None,
    n_jobs: int | None = None,
    engine: str = "default",
    dtype: str = "float64",
    prior: np.ndarray | None = None,
) -> np.ndarray:
    """w_N for noise z of shape (d,) or (d, B) (labels y of shape (n,), or (n, B): one
    column per release), in the feature span when ``span_reduction`` (None: when
    :func:`~objpert._engines.span.span_reduction_pays`), on ``n_jobs`` threads, on the
    ``engine`` computing in ``dtype`` (:func:`~objpert._engines.factory.build_engine`),
    with the ridge centred at the public ``prior`` ((d,) or (d, B); None: at 0)."""
    N, mu, eta = plan.iterations, plan.constants.mu, plan.constants.eta
    if engine == "auto" and N < AUTO_MIN_STEPS:  # shaping would cost more than it saves
        engine = "default"
    kind = {"engine": engine, "dtype": dtype}
    draws = z.shape[1] if z.ndim == 2 else 1
    progress = show_progress(verbose, N, sweep_work(M, N, draws))
    if span_reduction is None:
        span_reduction = span_reduction_pays(M, N, draws)
    if not span_reduction:
        objective = GLMObjective(M, y, loss, mu, n_jobs=n_jobs, **kind)
        w = run_gradient_descent(objective, z, eta, N, progress, prior=prior)
        return finite_or_refused(w)
    span = FeatureSpan(M)
    objective = GLMObjective(span.features, y, loss, mu, n_jobs=n_jobs, **kind)
    return finite_or_refused(run_in_feature_span(span, objective, z, eta, N, progress, prior=prior))


def check_prior(prior: Any, d: int, columns: int | None = None) -> np.ndarray | None:
    """A public prior for the mechanism: None, or finite float64 of shape (d,) (every
    release) or, with ``columns`` releases, (columns, d) (one row each); ParameterError
    otherwise. It is a public input: no bound on it enters the certificate
    (docs/priors.md)."""
    if prior is None:
        return None
    try:
        arr = np.array(prior, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError("prior must be an array of numbers") from None
    shapes = [(d,)] if columns is None else [(d,), (columns, d)]
    if arr.shape not in shapes:
        raise ParameterError(
            f"prior must have shape {' or '.join(map(str, shapes))}; got {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ParameterError("prior must be finite")
    return arr


def perturbed_gradient_descent(
    X: Any,
    y: Any,
    plan: WatkinsAroraPlan,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
    span_reduction: bool | None = None,
    n_jobs: int | None = None,
    engine: str = "default",
    dtype: str = "float64",
    prior: Any = None,
) -> Release:
    """Release w_N of Section 3.2 for data (X, y) under ``plan``.

    X must have the plan's public shape (n, d) and rows of norm <= plan.zeta (clipped to it
    when ``clip``, otherwise refused). Labels: two classes for the logistic loss (mapped to
    -1/+1), real targets otherwise. ``rng``: None (OS entropy), or a seed/Generator for
    testing (warns). The noise is drawn exactly once, after every check has passed.
    ``span_reduction``: run in the span of the features (Lemma B.6; the same w_N up to
    rounding); None does so when d > n and it is cheaper, False never. ``engine``
    ("default", "auto", "shaped", "xp", "gpu") and ``dtype`` ("float64", "float32"): where
    and in which precision the N steps run (:func:`~objpert._engines.factory.build_engine`;
    "auto" shapes a descent of at least ``AUTO_MIN_STEPS`` steps when the cost model says it
    pays); they change the speed and the rounding only, not the certificate (the noise is
    drawn in float64 either way). ``prior``: a public point w_pub of shape (d,) at which the
    ridge of eq. (1) is centred and the descent starts (None: 0); the plan and the
    certificate are those without it (docs/priors.md), and the release records it.
    """
    engine, dtype = check_engine(engine, dtype)
    prior = check_prior(prior, checked_plan(plan).constants.d)
    return _release(X, y, plan, rng, clip, verbose, span_reduction, n_jobs, engine, dtype, prior)


def _release(X: Any, y: Any, plan: WatkinsAroraPlan, rng: Any, clip: bool, verbose: bool | None,
             span_reduction: bool | None, n_jobs: int | None, engine: str, dtype: str,
             prior: np.ndarray | None) -> Release:  # fmt: skip
    """:func:`perturbed_gradient_descent` with its engine and prior checked already."""
    cert, M, yy, loss, clipped = _prepare(X, y, plan, clip)
    generator, seeded = make_rng(rng)
    start = time.perf_counter()
    z = generator.normal(0.0, plan.sigma, size=plan.constants.d)  # the one and only draw
    w = _descend(M, yy, loss, plan, z, span_reduction, verbose, n_jobs, engine, dtype, prior)
    seconds = time.perf_counter() - start
    return Release(w, plan, cert, plan.iterations, seconds, clipped, seeded, prior)


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
    plan: WatkinsAroraPlan,
    draws: int,
    rng: Any = None,
    *,
    clip: bool = False,
    verbose: bool | None = None,
    span_reduction: bool | None = None,
    n_jobs: int | None = None,
    engine: str = "default",
    dtype: str = "float64",
    prior: Any = None,
) -> BatchRelease:
    """``draws`` independent releases of :func:`perturbed_gradient_descent`, computed
    together: each step evaluates the gradient at all ``draws`` iterates in one sweep over X.

    Same checks, arguments and refusals as :func:`perturbed_gradient_descent`; the noise
    Z ~ N(0, sigma^2 I), shape (draws, d), is drawn once, after every check, so with a seed
    row 0 equals the single release with that seed. ``prior`` (d,): the public centre of
    every draw's ridge (as for :func:`perturbed_gradient_descent`); all checked by the caller.
    """
    cert, M, yy, loss, clipped = _prepare(X, y, plan, clip)
    generator, seeded = make_rng(rng)
    start = time.perf_counter()
    z = generator.normal(0.0, plan.sigma, size=(draws, plan.constants.d))  # the only draw
    w = _descend(
        M, yy, loss, plan, np.ascontiguousarray(z.T), span_reduction, verbose, n_jobs, engine,
        dtype, prior,
    )  # fmt: skip
    return BatchRelease(
        np.ascontiguousarray(w.T),
        plan,
        cert,
        plan.iterations,
        time.perf_counter() - start,
        clipped,
        seeded,
        prior,
    )


def release_one_vs_rest(
    X: Any,
    Y: Any,
    plan: WatkinsAroraPlan,
    rngs: Sequence[Any],
    *,
    clip: bool = False,
    verbose: bool | None = None,
    span_reduction: bool | None = None,
    n_jobs: int | None = None,
    engine: str = "default",
    dtype: str = "float64",
    prior: Any = None,
) -> list[Release]:
    """K releases of :func:`perturbed_gradient_descent` under one plan, release k with the
    labels Y[:, k] (shape (n, K); each column checked as that function checks y) and the
    noise drawn from ``rngs[k]``, computed together: each step evaluates the K gradients
    in one sweep over X. Release k equals ``perturbed_gradient_descent(X, Y[:, k], plan,
    rngs[k])`` to rounding; a generator passed several times is drawn from in order k =
    0, 1, ..., as by those calls one after the other. The certificate covers each release
    on its own (their composition is the caller's to account for). Every check runs before
    the first draw; ``seconds`` of each release is the time of all of them. ``engine`` and
    ``dtype``: as for :func:`perturbed_gradient_descent` (here and in the functions below).
    ``prior``: the public centre w_pub of every release (d,), or one per release (K, d)."""
    columns = _label_columns(Y, len(rngs))
    return _release_columns(
        X, columns, [plan] * len(columns), rngs, clip, verbose, span_reduction, n_jobs,
        (engine, dtype), prior,
    )  # fmt: skip


def release_plans(
    X: Any,
    y: Any,
    plans: Sequence[WatkinsAroraPlan],
    rngs: Sequence[Any],
    *,
    clip: bool = False,
    verbose: bool | None = None,
    span_reduction: bool | None = None,
    n_jobs: int | None = None,
    engine: str = "default",
    dtype: str = "float64",
) -> list[Release]:
    """``perturbed_gradient_descent(X, y, plans[k], rngs[k])`` for every k (seeds, or a
    grid of epsilons), in order: the plans that share the descent (the problem constants,
    so mu and the step size eta, and N; only sigma and the certified target differ) run as
    one batched descent, one sweep over X per step for all of them. Each release equals
    its own call to rounding."""
    if len(plans) != len(rngs) or not plans:
        raise ParameterError(f"{len(plans)} plans and {len(rngs)} generators: one each, >= 1")
    kind = (engine, dtype)  # checked by the caller
    groups: dict[Any, list[int]] = {}
    for k, plan in enumerate(plans):
        groups.setdefault(_descent(plan), []).append(k)
    out: list[Release | None] = [None] * len(plans)
    for members in groups.values():
        got = _release_columns(
            X, [y] * len(members), [plans[k] for k in members], [rngs[k] for k in members],
            clip, verbose, span_reduction, n_jobs, kind,
        )  # fmt: skip
        for k, release in zip(members, got, strict=True):
            out[k] = release
    return [r for r in out if r is not None]


def _descent(plan: WatkinsAroraPlan) -> tuple[Any, int]:
    """What fixes the descent of eq. (4) apart from the noise: the constants and N."""
    return plan.constants, int(plan.iterations)


def _release_columns(
    X: Any,
    labels: Sequence[Any],
    plans: Sequence[WatkinsAroraPlan],
    rngs: Sequence[Any],
    clip: bool,
    verbose: bool | None,
    span_reduction: bool | None,
    n_jobs: int | None,
    kind: tuple[str, str] = ("default", "float64"),
    prior: np.ndarray | None = None,
) -> list[Release]:
    """Release k for labels[k], plans[k] and rngs[k], all in one batched descent (the plans
    share :func:`_descent`): every plan re-derived and every label column checked, then
    each noise drawn once, then N steps for all columns at once. ``prior``: checked by
    :func:`check_prior`, (d,) for all or (K, d) one row per release."""
    first = plans[0]
    if any(_descent(p) != _descent(first) for p in plans[1:]):
        raise ParameterError("one batched descent needs plans with the same constants and N")
    cert, M, y0, loss, clipped = _prepare(X, labels[0], first, clip)
    certs: dict[int, ReleaseCertificate] = {id(first): cert}
    for p in plans[1:]:
        if id(p) not in certs:
            certs[id(p)] = rederive_plan(p)
    pc = first.constants
    if all(lab is labels[0] for lab in labels):
        y = y0  # shared labels: the kernels' one-label-per-row path
    else:  # the rows were checked with the first column: the other columns' labels alone
        y = np.column_stack([y0] + [_labels(c, loss, pc.n) for c in labels[1:]])
    draws = [make_rng(rng) for rng in rngs]
    start = time.perf_counter()
    Z = np.column_stack(
        [g.normal(0.0, p.sigma, size=pc.d) for (g, _), p in zip(draws, plans, strict=True)]
    )  # each release's one and only draw
    priors = None if prior is None else np.broadcast_to(prior, (len(plans), pc.d))
    columns = None if priors is None else np.ascontiguousarray(priors.T)
    W = _descend(M, y, loss, first, Z, span_reduction, verbose, n_jobs, *kind, columns)
    seconds = time.perf_counter() - start
    return [
        Release(np.ascontiguousarray(W[:, k]), p, certs[id(p)], p.iterations, seconds,
                clipped, seeded, None if priors is None else priors[k].copy())
        for k, (p, (_, seeded)) in enumerate(zip(plans, draws, strict=True))
    ]  # fmt: skip


def _labels(y: Any, loss: Loss, n: int) -> np.ndarray:
    """One label column checked as :func:`~objpert._data.for_plan` checks y (the loss's
    label kind, n labels), without checking the rows again."""
    yy = encode_binary(y)[0] if loss.label_kind == "binary" else as_targets(y)
    if yy.shape[0] != n:
        raise DataError(f"X has {n} rows but y has {yy.shape[0]} labels")
    return yy


def _label_columns(Y: Any, k: int) -> list[np.ndarray]:
    """The K label columns of Y (n, K): refused unless there is one per generator."""
    if k < 1:
        raise ParameterError("release_one_vs_rest needs at least one generator in rngs")
    try:
        arr = np.asarray(Y)
    except (TypeError, ValueError):
        raise DataError("Y must be an (n, K) array of labels") from None
    if arr.ndim != 2 or arr.shape[1] != k:
        raise DataError(
            f"Y must have shape (n, {k}): one label column per generator; got {arr.shape}"
        )
    return [arr[:, j] for j in range(k)]


def release_targets(
    X: Any,
    targets: Sequence[Any],
    plan: WatkinsAroraPlan,
    rngs: Sequence[Any],
    *,
    verbose: bool | None = None,
    n_jobs: int | None = None,
    engine: str = "default",
    dtype: str = "float64",
    prior: Any = None,
) -> list[Release]:
    """One release per target under one plan (release k: labels ``targets[k]``, noise from
    ``rngs[k]``): in-memory data with several targets go through
    :func:`release_one_vs_rest` (one sweep per step for all of them), anything else (one
    target; Dask data) through :func:`perturbed_gradient_descent`, one after the other.
    Either way release k equals ``perturbed_gradient_descent(X, targets[k], plan,
    rngs[k], prior=prior[k])`` to rounding. ``prior``: None, (d,) for every release or
    (K, d) one row per release (the public centre of each ridge); ``engine``: checked by fit."""
    if len(targets) != len(rngs):
        raise ParameterError(f"{len(targets)} targets but {len(rngs)} generators")
    prior = check_prior(prior, plan.constants.d, len(targets))
    kind = {"n_jobs": n_jobs, "engine": engine, "dtype": dtype}
    in_memory = isinstance(X, np.ndarray) or sparse.issparse(X)
    if len(targets) > 1 and in_memory and all(isinstance(t, np.ndarray) for t in targets):
        return release_one_vs_rest(X, np.column_stack(targets), plan, rngs, verbose=verbose,
                                   prior=prior, **kind)  # fmt: skip
    rows = [None] * len(targets) if prior is None else np.array(np.broadcast_to(
        prior, (len(targets), plan.constants.d)
    ))  # fmt: skip
    return [
        _release(X, t, plan, rng, False, verbose, None, n_jobs, engine, dtype, w0)
        for t, rng, w0 in zip(targets, rngs, rows, strict=True)
    ]
