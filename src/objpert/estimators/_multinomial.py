"""The multinomial fit of :class:`~objpert.estimators.PrivateLogisticRegression`: one
softmax release for K classes (:mod:`objpert.mechanisms._certificates.multinomial`) instead of K
composed one-vs-rest releases, and the public rule of ``multi_class="auto"``."""

from __future__ import annotations

import functools
import time
from dataclasses import replace
from typing import Any

import numpy as np
from scipy import sparse

from objpert.accounting import _pld as pldlib
from objpert.estimators._planning import release_comparator_norm
from objpert.exceptions import ParameterError
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._certificates.multinomial import MultinomialPlan
from objpert.mechanisms._peers.multinomial import multinomial_release
from objpert.mechanisms._progress import check_verbose

__all__ = [
    "AUTO_MIN_CLASSES",
    "MULTI_CLASS",
    "check_multinomial_budget",
    "descent_settings",
    "fit_multinomial",
    "multinomial_plan",
    "use_multinomial",
]

#: The values of ``multi_class``.
MULTI_CLASS = ("auto", "ovr", "multinomial")


#: The fewest classes for which multi_class="auto" trains one multinomial release: every
#: multiclass fit (benchmarks/accuracy_suite.json).
AUTO_MIN_CLASSES = 3


def use_multinomial(
    multi_class: str,
    n_classes: int,
    on_cluster: bool,
    prior: Any = None,
    descent: tuple[str, ...] = (),
) -> bool:
    """Whether a fit with ``n_classes`` declared classes trains one multinomial release.

    ``descent`` names the declared settings that only gradient-descent releases use
    (:func:`descent_settings`). ``"ovr"``: never; ``"multinomial"``: for K >= 3 (two
    classes are one binary release either way), refused on a Dask cluster (the softmax
    solver runs in memory) or with a time budget, an engine or a dtype declared (its
    solver uses none of them); ``"auto"``: for K >= :data:`AUTO_MIN_CLASSES` (3) on
    in-memory data without any of ``descent`` (a declared composition, time budget,
    engine or dtype asks for one-vs-rest releases). A public ``prior`` centres either
    kind of release (docs/priors.md). The rule reads public values only (K). Why: on the
    multiclass tables of benchmarks/accuracy_suite.json (3 to 20 classes, 142 to 32,000
    training rows) one multinomial release is ahead of K one-vs-rest releases composed by
    PLD wherever the two differ by more than their standard errors, with 3 classes on
    palmerpenguins (275 rows) by 2 to 20 points, save on scikit-learn's 142-row wine
    table, where one-vs-rest is ahead; no rule of n, d, K and epsilon separates the two
    3-class tables (docs/multiclass.md).
    """
    if multi_class not in MULTI_CLASS:
        raise ParameterError(f"multi_class must be one of {MULTI_CLASS}; got {multi_class!r}")
    if multi_class == "ovr" or n_classes < 3:
        return False
    auto = multi_class == "auto"
    if auto and n_classes < AUTO_MIN_CLASSES:
        return False
    refused = [name for name in descent if name != "composition"]
    reasons = [
        (on_cluster, "runs in memory: fit in-memory data"),
        (bool(refused), f"does not use {', '.join(refused)} (gradient-descent settings)"),
    ]
    for failed, why in reasons:
        if failed:
            if auto:
                return False
            raise ParameterError(
                f"multi_class='multinomial' {why}: use multi_class='ovr' for these settings"
            )
    return not (auto and descent)


def descent_settings(p: Any, composition: str) -> tuple[str, ...]:
    """The settings declared for gradient-descent releases only: a ``composition`` other
    than "auto", ``max_seconds``, an ``engine`` other than "auto"/"default", a ``dtype``
    other than "float64" (``p`` the fit's FitSettings)."""
    declared = {
        "composition": composition != "auto",
        "max_seconds": p.max_seconds is not None,
        "engine": p.engine not in ("auto", "default"),
        "dtype": p.dtype != "float64",
    }
    return tuple(name for name, on in declared.items() if on)


@functools.lru_cache(maxsize=256)
def multinomial_plan(n: int, d: int, n_classes: int, zeta: float, p: Any) -> MultinomialPlan:
    """The fit's plan: ``objpert.plan("multinomial", loss="softmax", ..., n_classes=,
    mu=, comparator_norm=)`` at the target, ridge and comparator norm of the fit's settings
    ``p`` (with a prior, "auto" is min(3, epsilon): :func:`release_comparator_norm`), the
    release's default solver budget and tolerance: a pure function of public constants."""
    return registry.get("multinomial").plan(  # its planner: the settings are checked already
        loss="softmax", n=n, d=d, zeta=zeta, epsilon=p.epsilon, delta=p.delta,
        n_classes=n_classes, mu=p.mu,
        comparator_norm=release_comparator_norm(p.comparator_norm, p.epsilon),
    )  # fmt: skip


def fit_multinomial(
    model: Any,
    prepared: Any,
    codes: np.ndarray,
    classes: np.ndarray,
    p: Any,
    not_public: tuple[str, ...],
) -> tuple[int, float]:
    """Plan, charge the accountant, release once and set ``model``'s fitted attributes
    (``coef_`` (K, n_features), ``intercept_`` (K,), ``plan_``, ``certificate_``, ...);
    returns the rows scaled down to data_norm and the release's seconds (statistics of
    the private rows, never stored). ``p`` is the fit's FitSettings; ``comparator_norm`` is
    the norm of each class's comparator column in the "auto" ridge."""
    not_public = (*not_public, *model._context_not_public(p))
    k = len(classes)
    plan = multinomial_plan(prepared.n, prepared.d, k, prepared.zeta, p)
    check_verbose(model.verbose)
    prior = model._prior(p, prepared, k, classes)  # ParameterError before any budget or noise
    if model.accountant is not None:  # BudgetExceededError: nothing is released
        cert = plan.certificate
        model.accountant.spend(
            [pldlib.point(cert.epsilon, cert.delta)],
            name=type(model).__name__,
            not_public=not_public,
        )
    centre = None if prior is None else np.ascontiguousarray(prior[1].T).ravel()  # (d K,)
    start = time.perf_counter()
    release = multinomial_release(
        prepared.X, codes.astype(np.float64), plan, model.random_state, n_jobs=p.n_jobs,
        prior=centre,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    W = release.weights.reshape(prepared.d, k).T  # (K, d)
    if p.fit_intercept:
        coef, intercept = W[:, :-1], W[:, -1] * prepared.intercept_scaling
    else:
        coef, intercept = W, np.zeros(k)
    model._set_release_attributes(coef, intercept)
    model._set_prior_attributes(None if prior is None else prior[0])
    model.max_iter_used_ = plan.iterations  # the solver's budget (max_iter does not apply)
    # the solver's count depends on the private rows: the model keeps the public budget
    model.n_iter_ = np.array([plan.iterations], dtype=np.int64)
    model.releases_ = [replace(release.certified(), iterations=plan.iterations)]
    model.seeded_ = bool(release.seeded)
    model.pipeline_data_norm_ = p.data_norm if p.data_norm_from_pipeline else None
    model.plan_ = plan
    model.certificate_ = replace(release.certificate, not_public=not_public)
    model.multi_class_ = "multinomial"
    return int(prepared.n_clipped), seconds


def check_multinomial_budget(model: Any, X: Any, p: Any, n_classes: int) -> None:
    """Before the data are read: refuse (BudgetExceededError) a multinomial fit that does
    not fit in the accountant's budget, when every constant is public (declared label set
    and row bound, the shape of X known); otherwise :func:`fit_multinomial` refuses before
    the release."""
    from objpert.estimators._bounds import public_zeta

    if model.accountant is None or not (isinstance(X, np.ndarray) or sparse.issparse(X)):
        return  # other input (a frame, Dask) is checked before the release
    shape = X.shape
    if len(shape) != 2 or not all(isinstance(v, int | np.integer) for v in shape):
        return
    zeta = public_zeta(p, int(shape[1]))
    if zeta is None or int(shape[0]) < 2:
        return
    d = int(shape[1]) + (1 if p.fit_intercept else 0)
    plan = multinomial_plan(int(shape[0]), d, n_classes, zeta, p)
    cert = plan.certificate
    model.accountant.check([pldlib.point(cert.epsilon, cert.delta)], name=type(model).__name__)
