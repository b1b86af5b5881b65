"""The comparison's methods and the public rule that chooses each one's hyperparameters.

Every registered mechanism is reached through :mod:`objpert.mechanisms._registry` by its
name and planned by :func:`mechanism_plan` from public constants only (n, d, zeta, the
target (epsilon, delta) and the loss): nothing looks at the test rows or at the private
training rows. The baselines are the non-private fit, diffprivlib (in its own
environment, :mod:`objpert.apps._external`) and ``theta_ref``, the release of the public
reference point a mechanism with a reference point (QOP) starts from.
"""

from __future__ import annotations

import functools
import inspect
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert._data import PreparedData
from objpert._engines.blocked import single_threaded_blas
from objpert.exceptions import ParameterError
from objpert.mechanisms import _perturbed_gd as perturbed_gd
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._builtin import LOP_CLIP_SHARE

__all__ = [
    "BASELINES",
    "DEFAULT_METHODS",
    "FITTERS",
    "LOP_CLIP_SHARE",
    "THETA_REF",
    "Fit",
    "FitFn",
    "canonical_method",
    "fit_loss",
    "fit_seeds",
    "mechanism_plan",
    "reference_of",
    "register",
    "rules",
]

#: The release of the public reference point (the origin): no data, privacy cost zero.
THETA_REF = "theta_ref"
#: Methods that are not registered mechanisms.
BASELINES = ("nonprivate", "diffprivlib", THETA_REF)
#: Every registered mechanism, then the baselines.
DEFAULT_METHODS = (*registry.names(), *BASELINES)


@dataclass(frozen=True)
class Fit:
    """One fit: weights on the prepared features, its certified (epsilon, delta), the wall
    time and the CPU time of this process during the release (the plan, computed once per
    cell, is not counted)."""

    weights: np.ndarray
    epsilon: float
    delta: float
    seconds: float
    cpu_seconds: float = float("nan")


FitFn = Callable[[PreparedData, float, float, int], Fit]
#: The note of a row whose releases ran as one batched descent.
BATCHED_NOTE = "batched seeds: time = batch / releases"


def fit_loss(name: str) -> str:
    """The loss a mechanism fits in the comparison: logistic where it accepts it, else
    the squared loss on the +-1 labels (least-squares classification)."""
    losses = registry.get(name).losses
    return "logistic" if "logistic" in losses else "squared"


def _takes_reference(name: str) -> bool:
    return "theta_ref" in inspect.signature(registry.get(name).release).parameters


def reference_of(method: str) -> str:
    """The method a row's paired differences are taken against: ``theta_ref`` for a
    mechanism that starts from a public reference point, Watkins & Arora otherwise."""
    if method in registry.names() and _takes_reference(method):
        return THETA_REF
    return "watkins_arora"


def _wa_plan(n: int, d: int, zeta: float, eps: float, delta: float) -> Any:
    """The estimators' default plan (tight calibration, default W and iteration budget)."""
    from objpert.estimators import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER, plan_for

    return plan_for(
        "logistic", None, "tight", n, d, zeta, eps, delta,
        DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER, None,
    )  # fmt: skip


@functools.lru_cache(maxsize=256)
def mechanism_plan(name: str, n: int, d: int, zeta: float, eps: float, delta: float) -> Any:
    """A registered mechanism's plan by the comparison's public rule (cached; see
    :func:`rules`): Watkins & Arora the estimators' default plan; every other mechanism
    with the logistic loss its planner's defaults with the same ridge mu as that plan (for
    LOP-Clip, its default clip LOP_CLIP_SHARE * L1 zeta); a mechanism without the logistic
    loss its planner's defaults for the squared loss. The comparison and the mechanism
    benchmark both plan with it."""
    if name == "watkins_arora":
        return _wa_plan(n, d, zeta, eps, delta)
    mech = registry.get(name)
    options: dict[str, Any] = {}
    if fit_loss(name) == "logistic":
        options["mu"] = mechanism_plan("watkins_arora", n, d, zeta, eps, delta).mu
    return mech.plan(loss=fit_loss(name), n=n, d=d, zeta=zeta, epsilon=eps, delta=delta, **options)


#: What a planner's defaults are, where the comparison's output spells them out.
_DEFAULTS = {
    "dp_sgd": " (expected batch floor(sqrt(n)), 10 epochs, clip L1 zeta, step 1/(mu + L2 "
    "zeta^2), PLD accounting)",
    "dp_newton": " (5 Newton steps of size 1, PLD accounting)",
}


def rules() -> dict[str, str]:
    """Each method's hyperparameter rule, as written in the comparison's output."""
    out = {
        "watkins_arora": "the estimators' default plan: tight calibration, default "
        "comparator norm W and iteration budget, from (n, d, zeta, epsilon, delta)",
    }
    for name in registry.names():
        if name in out:
            continue
        if fit_loss(name) == "logistic":
            rule = "its planner's defaults, ridge mu = the Watkins & Arora plan's mu"
            if name == "lop_clip":
                rule += f", clip = {LOP_CLIP_SHARE:g} L1 zeta"
            rule += _DEFAULTS.get(name, "")
        else:
            rule = "its planner's defaults for the squared loss on the +-1 labels"
        if _takes_reference(name):
            rule += "; reference point theta_ref = the origin (public)"
        out[name] = rule
    out["nonprivate"] = "scikit-learn LogisticRegression(C=1, no intercept column added)"
    out["diffprivlib"] = "diffprivlib LogisticRegression(epsilon, data_norm = zeta), defaults"
    out[THETA_REF] = "releases the origin: reads no data"
    return out


def _wa_seeds(X: Any, y: Any, plan: Any, rngs: list[Any]) -> list[Any]:
    """The Watkins & Arora releases of one plan, one per generator, as one batched descent
    (:func:`~objpert.mechanisms._perturbed_gd.release_plans`): release k equals
    ``perturbed_gradient_descent(X, y, plan, rngs[k])`` to rounding, its noise drawn from
    ``rngs[k]`` exactly as that call draws it."""
    return perturbed_gd.release_plans(X, y, [plan] * len(rngs), rngs)


#: Releases that run all seeds of a cell in one batched descent, by the registry's release
#: function (the others run seed after seed).
_SEED_BATCHES: dict[Callable[..., Any], Callable[..., list[Any]]] = {
    perturbed_gd.perturbed_gradient_descent: _wa_seeds,
}


def _as_fit(release: Any, seconds: float, cpu: float) -> Fit:
    """A release as a fit; an uncertified one (QOP) with delta 1, the trivial bound."""
    cert = release.certificate
    delta = cert.delta if cert.certified else 1.0
    return Fit(np.asarray(release.weights, dtype=float), cert.epsilon, delta, seconds, cpu)


@dataclass(frozen=True)
class _TimedRelease:
    """A registered mechanism on the plan of :func:`mechanism_plan`: ``fit(P, eps, delta,
    seed)`` one release; :meth:`many` one release per seed in one batched descent, where
    the mechanism's release has a batched form in ``_SEED_BATCHES`` (:meth:`batched`)."""

    name: str

    def _run(self, release: Callable[[], Any]) -> tuple[Any, float, float]:
        # one BLAS thread: small products lose more to waking BLAS threads than they gain
        with warnings.catch_warnings(), single_threaded_blas():
            warnings.simplefilter("ignore")  # seeded noise: a measurement, not a release
            t0, c0 = time.perf_counter(), time.process_time()
            out = release()
            return out, time.perf_counter() - t0, time.process_time() - c0

    def __call__(self, P: PreparedData, eps: float, delta: float, seed: int) -> Fit:
        mech = registry.get(self.name)
        plan = mechanism_plan(self.name, P.n, P.d, P.zeta, eps, delta)
        rng = np.random.default_rng(seed)
        release, seconds, cpu = self._run(lambda: mech.release(P.X, P.y, plan, rng))
        return _as_fit(release, seconds, cpu)

    def batched(self) -> bool:
        """Whether :meth:`many` runs the seeds as one batched descent."""
        return registry.get(self.name).release in _SEED_BATCHES

    def many(self, P: PreparedData, eps: float, delta: float, seeds: list[int]) -> list[Fit]:
        """One release per seed in one batched descent (the same plan, computed once); each
        Fit's wall and CPU times are the batch's divided by the releases."""
        batch = _SEED_BATCHES[registry.get(self.name).release]
        plan = mechanism_plan(self.name, P.n, P.d, P.zeta, eps, delta)
        rngs = [np.random.default_rng(s) for s in seeds]
        releases, seconds, cpu = self._run(lambda: batch(P.X, P.y, plan, rngs))
        k = len(releases)
        return [_as_fit(r, seconds / k, cpu / k) for r in releases]


def fit_seeds(method: str, P: PreparedData, eps: float, delta: float,
              seeds: Sequence[int]) -> tuple[list[Fit], str]:  # fmt: skip
    """``FITTERS[method]`` at each seed, and the note of its row: a registered mechanism
    whose release has a batched form runs its seeds as one batched descent (each release
    the one of its own seed, to rounding; note :data:`BATCHED_NOTE`). An unknown method,
    no seeds, a seed that is not an integer >= 0 or a target out of range is refused."""
    fit = FITTERS.get(method) if isinstance(method, str) else None
    if fit is None:
        raise ParameterError(f"method must be one of {', '.join(FITTERS)}; got {method!r}")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ParameterError(f"seeds must be a non-empty list of integers; got {seeds!r:.80}")
    if isinstance(fit, _TimedRelease) and len(seeds) > 1 and fit.batched():
        return fit.many(P, eps, delta, seeds), BATCHED_NOTE
    return [fit(P, eps, delta, s) for s in seeds], ""


def _fit_nonprivate(P: PreparedData, eps: float, delta: float, seed: int) -> Fit:
    from sklearn.linear_model import LogisticRegression

    with single_threaded_blas():
        t0, c0 = time.perf_counter(), time.process_time()
        m = LogisticRegression(max_iter=10_000, fit_intercept=False).fit(P.X, P.y)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return Fit(m.coef_.ravel(), float("inf"), 1.0, seconds, cpu)


def _fit_theta_ref(P: PreparedData, eps: float, delta: float, seed: int) -> Fit:
    return Fit(np.zeros(P.d), 0.0, 0.0, 0.0, 0.0)


FITTERS: dict[str, FitFn] = {
    **{name: _TimedRelease(name) for name in registry.names()},
    "nonprivate": _fit_nonprivate,
    THETA_REF: _fit_theta_ref,
}
#: Methods whose output does not depend on the seed (one fit, repeated for pairing).
DETERMINISTIC = frozenset({"nonprivate", THETA_REF})


def canonical_method(name: str) -> str:
    """A registered mechanism's or a baseline's name (ParameterError for any other)."""
    return name if name in BASELINES or name in FITTERS else registry.get(name).name


def register(name: str, fn: FitFn) -> None:
    """Add a fitter ``fn(P, epsilon, delta, seed) -> Fit`` under ``name``."""
    FITTERS[name] = fn
