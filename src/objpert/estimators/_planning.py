"""The estimators' plans: every fit plans through :func:`objpert.plan` (the mechanism
registry, :func:`objpert.mechanisms._registry.plan`), with the estimator's public settings
as the plan's options.

So ``objpert.plan("watkins_arora", loss=, n=, d=, zeta=, epsilon=, delta=, calibration=,
mu=, comparator_norm=, max_iter=)`` (and ``scale=`` for the pseudo-Huber loss) is the plan
of a one-release fit, and the plan of each of K one-vs-rest releases at that release's
(epsilon_i, delta_i); ``objpert.plan("multinomial", loss="softmax", ..., n_classes=K, mu=,
comparator_norm=comparator_norm)`` that of a multinomial fit. n is the number of rows, d the
number of features (plus one with the intercept column) and zeta the public row bound
(with the intercept column). The registry's defaults are the estimators' defaults.

Plans are pure functions of public constants, so they are cached here: repeated fits of
the same shape (cross-validation folds, ``GridSearchCV``) calibrate once.
"""

from __future__ import annotations

import functools
from typing import Any

from objpert.certify._calibration import WatkinsAroraPlan
from objpert.certify._multiclass import Calibration, calibrate_releases
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._builtin import (
    CALIBRATIONS,
    DEFAULT_COMPARATOR_NORM,
    DEFAULT_MAX_ITER,
)

__all__ = [
    "CALIBRATIONS",
    "DEFAULT_COMPARATOR_NORM",
    "DEFAULT_MAX_ITER",
    "PRIOR_COMPARATOR_SLOPE",
    "calibration_for",
    "comparator_norm_for",
    "plan_for",
    "prior_comparator_norm",
    "release_comparator_norm",
]

#: With a public prior, ``comparator_norm="auto"`` is W = min(3, PRIOR_COMPARATOR_SLOPE *
#: epsilon) for each release, epsilon its own target: the distance from the prior the
#: calibrated ridge competes with grows linearly with the budget of the release
#: (docs/priors.md, "The default with a prior").
PRIOR_COMPARATOR_SLOPE = 1.0


def comparator_norm_for(setting: Any, prior: bool) -> float | None:
    """The comparator norm W of a fit's releases: ``setting`` when it is a number;
    ``"auto"``: :data:`DEFAULT_COMPARATOR_NORM` without a prior and None with one (each
    release's own :func:`prior_comparator_norm`). A public function of public settings:
    the plan re-derives it from them. Both arrive checked (the estimator's constraints, a
    model file's loader)."""
    if isinstance(setting, str):  # "auto", the only string the constraints allow
        return None if prior else DEFAULT_COMPARATOR_NORM
    return float(setting)


def prior_comparator_norm(epsilon: float) -> float:
    """W = min(:data:`DEFAULT_COMPARATOR_NORM`, PRIOR_COMPARATOR_SLOPE * epsilon): the
    comparator norm of a release with a public prior and ``comparator_norm="auto"``, for
    that release's epsilon (the fit's target for a single release; each one-vs-rest
    release's share for several)."""
    return min(DEFAULT_COMPARATOR_NORM, PRIOR_COMPARATOR_SLOPE * float(epsilon))


def release_comparator_norm(norm: float | None, epsilon: float) -> float:
    """The comparator norm of one release of epsilon ``epsilon``: ``norm`` (a fit's
    :func:`comparator_norm_for`), or :func:`prior_comparator_norm` when it is None."""
    return prior_comparator_norm(epsilon) if norm is None else norm


@functools.lru_cache(maxsize=512)
def plan_for(
    loss: str,
    scale: float | None,
    calibration: str,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float,
    max_iter: int,
    mu: float | None,
    rows_per_unit: int = 1,
) -> WatkinsAroraPlan:
    """The plan of one release: ``objpert.plan("watkins_arora", ...)`` with these
    settings (``mu=None``: chosen by the calibration; ``scale``: the pseudo-Huber loss's;
    ``rows_per_unit``: for one privacy unit of up to that many rows), a pure (cached)
    function of public constants."""
    options: dict[str, Any] = {} if scale is None else {"scale": scale}
    if rows_per_unit != 1:
        options["rows_per_unit"] = rows_per_unit
    return registry.get("watkins_arora").plan(  # its planner: the settings are checked already
        loss=loss, n=n, d=d, zeta=zeta, epsilon=epsilon, delta=delta,
        calibration=calibration, mu=mu, comparator_norm=comparator_norm,
        max_iter=max_iter, **options,
    )  # fmt: skip


@functools.lru_cache(maxsize=256)
def calibration_for(k: int, composition: str, *plan_args: Any) -> Calibration:
    """The plan of each of k releases meeting (epsilon, delta) together and how they
    compose (:func:`objpert.certify._multiclass.calibrate_releases`): a pure (cached)
    function of public constants. ``plan_args`` are those of :func:`plan_for`, their
    (epsilon, delta) the fit's target; each release's plan is :func:`plan_for` at that
    release's (epsilon_i, delta_i), and at :func:`prior_comparator_norm` (epsilon_i) when
    the comparator norm is None ("auto" with a prior)."""
    head, (epsilon, delta), (norm, *tail) = plan_args[:6], plan_args[6:8], plan_args[8:]

    def plan_at(eps_i: float, delta_i: float) -> WatkinsAroraPlan:
        return plan_for(*head, eps_i, delta_i, release_comparator_norm(norm, eps_i), *tail)

    return calibrate_releases(plan_at, epsilon, delta, k, composition)
