"""The comparison's methods and the public rule that chooses each one's hyperparameters.

Every registered mechanism is reached through :mod:`objpert.mechanisms.registry` by its
name and planned by :func:`mechanism_plan` from public constants only (n, d, zeta, the
target (epsilon, delta) and the loss): nothing looks at the test rows or at the private
training rows. The baselines are the non-private fit, diffprivlib (in its own
environment, :mod:`objpert.apps.external`) and ``theta_ref``, the release of the public
reference point a mechanism with a reference point (QOP) starts from.
"""

from __future__ import annotations

import functools
import inspect
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert.data import PreparedData
from objpert.engines.blocked import single_threaded_blas
from objpert.mechanisms import registry

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
#: LOP-Clip's public clip level: this share of the largest per-sample gradient L1 zeta.
LOP_CLIP_SHARE = 0.5


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
    from objpert.estimators import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITERATIONS, plan_for

    return plan_for(
        "logistic", None, "tight", n, d, zeta, eps, delta,
        DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITERATIONS, None,
    )  # fmt: skip


@functools.lru_cache(maxsize=256)
def mechanism_plan(name: str, n: int, d: int, zeta: float, eps: float, delta: float) -> Any:
    """A registered mechanism's plan by the comparison's public rule (cached; see
    :func:`rules`): Watkins & Arora the estimators' default plan; every other mechanism
    with the logistic loss its planner's defaults with the same ridge mu as that plan and,
    for LOP-Clip, clip = LOP_CLIP_SHARE * L1 zeta; a mechanism without the logistic loss
    its planner's defaults for the squared loss. The comparison and the mechanism
    benchmark both plan with it."""
    if name == "watkins_arora":
        return _wa_plan(n, d, zeta, eps, delta)
    mech = registry.get(name)
    options: dict[str, Any] = {}
    if fit_loss(name) == "logistic":
        options["mu"] = _wa_plan(n, d, zeta, eps, delta).mu
        if name == "lop_clip":
            options["clip"] = LOP_CLIP_SHARE * zeta
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


def _timed_release(name: str) -> FitFn:
    """A registered mechanism on the plan of :func:`mechanism_plan`."""
    mech = registry.get(name)

    def fit(P: PreparedData, eps: float, delta: float, seed: int) -> Fit:
        plan = mechanism_plan(name, P.n, P.d, P.zeta, eps, delta)
        # one BLAS thread: small products lose more to waking BLAS threads than they gain
        with warnings.catch_warnings(), single_threaded_blas():
            warnings.simplefilter("ignore")  # seeded noise: a measurement, not a release
            t0, c0 = time.perf_counter(), time.process_time()
            release = mech.release(P.X, P.y, plan, np.random.default_rng(seed))
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        cert = release.certificate
        w = np.asarray(release.weights, dtype=float)
        return Fit(w, cert.epsilon, cert.delta, seconds, cpu)

    return fit


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
    **{name: _timed_release(name) for name in registry.names()},
    "nonprivate": _fit_nonprivate,
    THETA_REF: _fit_theta_ref,
}
#: Methods whose output does not depend on the seed (one fit, repeated for pairing).
DETERMINISTIC = frozenset({"nonprivate", THETA_REF})


def canonical_method(name: str) -> str:
    """A method's registered name (a former mechanism name warns), or a baseline's."""
    return name if name in BASELINES or name in FITTERS else registry.get(name).name


def register(name: str, fn: FitFn) -> None:
    """Add a fitter ``fn(P, epsilon, delta, seed) -> Fit`` under ``name``."""
    FITTERS[name] = fn
