"""The mechanisms objpert ships, registered under their names (see :mod:`.registry`).

Each entry adapts the mechanism's own planner and releases to the registry's uniform
calls: ``plan(loss=, n=, d=, zeta=, epsilon=, delta=, **options)``,
``release(X, y, plan, rng=None, **options)`` and
``release_batch(X, y, plan, draws, rng=None, **options)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objpert._losses import _param_names, get_loss
from objpert._validation import count, validated
from objpert.certify._calibration import WatkinsAroraPlan
from objpert.certify._calibration import planned_corollary_413 as corollary_413
from objpert.certify._calibration import planned_tight as tight
from objpert.certify._plan import CALIBRATIONS, DEFAULT_COMPARATOR_NORM
from objpert.certify._unit_rows import unit_plan
from objpert.exceptions import ParameterError
from objpert.mechanisms import _dp_newton as dp_newton
from objpert.mechanisms import _dp_sgd as dp_sgd
from objpert.mechanisms import _peers as peers
from objpert.mechanisms import _perturbed_gd as perturbed_gd
from objpert.mechanisms import _qop as qop
from objpert.mechanisms._certificates import PLAN_TYPES
from objpert.mechanisms._certificates.calibrate import calibrate_peer
from objpert.mechanisms._certificates.dp_newton import DPNewtonPlan, plan_dp_newton
from objpert.mechanisms._certificates.dp_sgd import DPSGDPlan, plan_dp_sgd
from objpert.mechanisms._certificates.multinomial import MultinomialPlan, plan_multinomial
from objpert.mechanisms._certificates.qop import QOPPlan, plan_qop
from objpert.mechanisms._peers.multinomial import multinomial_release, multinomial_release_batch
from objpert.mechanisms._registry import Mechanism, register

# the mechanisms are reached through objpert.mechanisms._registry; the estimators share
# the Watkins & Arora plan's defaults
__all__ = ["CALIBRATIONS", "DEFAULT_COMPARATOR_NORM", "DEFAULT_MAX_ITER"]

#: The most gradient steps a tight plan may take (a public compute budget).
DEFAULT_MAX_ITER = 5000


#: The calibrations' own options that :func:`_wa_plan` passes on (besides the loss's).
_CALIBRATION_OPTIONS = ("delta_sample", "rtol", "knee_tolerance")


@validated(rows_per_unit=count(1))  # a whole number: never rounded down
def _wa_plan(
    *,
    loss: str,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    calibration: str = "tight",
    mu: float | None = None,
    comparator_norm: float = DEFAULT_COMPARATOR_NORM,
    max_iter: int = DEFAULT_MAX_ITER,
    objective: str = "empirical",
    rows_per_unit: int = 1,
    **kw: Any,
) -> WatkinsAroraPlan:
    """The Watkins & Arora plan; its defaults are the estimators' (an estimator's fit
    plans here with its own ``calibration``, ``mu``, ``comparator_norm``, ``max_iter`` and,
    for the pseudo-Huber loss, ``scale``).

    ``calibration="tight"``: :func:`~objpert.certify.tight`, which minimises the
    ``objective`` bound ("empirical": for accuracy; "population": Theorem 4.7) within
    ``max_iter`` steps, with mu chosen against comparators of norm <= ``comparator_norm``
    (``mu=None``) or given. ``"corollary413"``: Corollary 4.13 as stated (epsilon <= 1); it
    chooses mu and N itself (``max_iter`` and ``objective`` do not apply). ``kw``: the
    loss's parameters (``scale``) and the calibration's own (``delta_sample``, ``rtol``,
    ``knee_tolerance``). ``rows_per_unit`` = k > 1: certified for replacing one privacy
    unit of up to k rows (:func:`objpert.certify._unit_rows.unit_plan`; tight only).
    """
    common = dict(n=n, d=d, zeta=zeta, epsilon=epsilon, delta=delta)
    loss_options = _param_names(type(get_loss(loss)))
    for key in kw:
        if key not in (*loss_options, *_CALIBRATION_OPTIONS):
            raise ParameterError(
                f"watkins_arora has no option {key!r}: its options are calibration, mu, "
                "comparator_norm, max_iter, objective, rows_per_unit, "
                f"{', '.join(_CALIBRATION_OPTIONS)} and the loss's parameters "
                f"({', '.join(loss_options) or f'loss {loss!r} takes none'})"
            )
    if rows_per_unit != 1:
        if calibration != "tight":
            raise ParameterError(
                f"rows_per_unit={rows_per_unit!r} needs calibration='tight' (Corollary 4.13 "
                f"is stated for one row); got calibration={calibration!r}"
            )
        try:
            return unit_plan(
                loss, rows=rows_per_unit, **common, mu=mu, comparator_norm=comparator_norm,
                max_iter=max_iter, objective=objective, **kw,
            )  # fmt: skip
        except TypeError as exc:
            raise ParameterError(f"watkins_arora: {exc}") from None
    try:
        if calibration == "tight":
            return tight(
                loss, **common, comparator_norm=comparator_norm, max_iter=max_iter,
                objective=objective, mu=mu, **kw,
            )  # fmt: skip
        if calibration == "corollary413":
            if mu is not None:
                raise ParameterError(
                    "calibration='corollary413' chooses mu itself (Corollary 4.13): leave mu "
                    f"automatic; got mu={mu!r}"
                )
            return corollary_413(loss, **common, comparator_norm=comparator_norm, **kw)
    except TypeError as exc:  # an option no calibration takes
        raise ParameterError(f"watkins_arora: {exc}") from None
    raise ParameterError(f"calibration must be one of {CALIBRATIONS}; got {calibration!r}")


register(
    Mechanism(
        name="watkins_arora",
        title="Watkins & Arora: gradient descent on a perturbed objective",
        reference="Watkins & Arora (2026), Section 3.2, Theorems 4.1 and C.13",
        plan_type=WatkinsAroraPlan,
        plan=_wa_plan,
        release=perturbed_gd.perturbed_gradient_descent,
        release_batch=perturbed_gd.release_batch,
        release_map="objpert.audit._maps:GradientDescentMap.from_plan",
    )
)


#: LOP-Clip's public default clip level: this share of the per-sample gradient bound
#: L1 zeta (of zeta itself for a loss with unbounded l', such as the squared loss).
LOP_CLIP_SHARE = 0.5


def _default_clip(loss: str, zeta: float, loss_params: Any = None) -> float:
    """LOP-Clip's default clip c = LOP_CLIP_SHARE * L1 zeta, from public constants only
    (L1 of the loss with its parameters: the robust loss's is its scale)."""
    l1 = get_loss(loss, **(loss_params or {})).L1  # None or inf: l' unbounded, c = share zeta
    bounded = l1 is not None and bool(np.isfinite(float(l1)))
    return LOP_CLIP_SHARE * zeta * (float(l1) if bounded else 1.0)


def _peer(method: str, title: str, reference: str, release: Any, **options: Any) -> None:
    def plan(*, loss: str, n: int, d: int, zeta: float, epsilon: float, delta: float, **kw):
        if method == "lop_clip" and kw.get("clip") is None:
            kw["clip"] = _default_clip(loss, zeta, kw.get("loss_params"))
        return calibrate_peer(method, n, d, zeta, loss, epsilon, delta, **{**options, **kw})

    register(
        Mechanism(
            name=method,
            title=title,
            reference=reference,
            plan_type=PLAN_TYPES[method],
            plan=plan,
            release=release,
            release_batch=peers.peer_release_batch,
            options=dict(options),
        )
    )


_peer(
    "lop",
    "Gaussian objective perturbation (exact minimiser)",
    "Chaudhuri et al. (2011); Redberg, Koskela & Wang (2023); Kifer et al. (2012)",
    peers.lop_release,
)
_peer(
    "lop_clip",
    "Objective perturbation with clipped per-sample gradients",
    "Redberg, Koskela & Wang (2023)",
    peers.lop_clip_release,
)
_peer(
    "amp",
    "Approximate minima perturbation",
    "Iyengar et al. (2019), Algorithm 1",
    peers.amp_release,
)
_peer(
    "output_perturbation",
    "Gaussian output perturbation",
    "Chaudhuri et al. (2011)",
    peers.output_perturbation_release,
)
_peer(
    "noisy_gd",
    "Noisy full-batch gradient descent",
    "Dong, Roth & Su (2022); Mironov (2017)",
    peers.noisy_gd_release,
)


register(
    Mechanism(
        name="dp_sgd",
        title="Minibatch DP-SGD (Poisson subsampling, per-example clipping)",
        reference="Abadi et al. (2016), Algorithm 1; Zhu, Dong & Wang (2022)",
        plan_type=DPSGDPlan,
        plan=plan_dp_sgd,  # called with the registry's keywords
        release=dp_sgd.dp_sgd_release,
        release_batch=dp_sgd.dp_sgd_release_batch,
    )
)
register(
    Mechanism(
        name="dp_newton",
        title="Noisy Newton method (noisy gradients and Hessians)",
        reference="Avella-Medina, Bradshaw & Loh (2023)",
        plan_type=DPNewtonPlan,
        plan=plan_dp_newton,
        release=dp_newton.dp_newton_release,
        release_batch=dp_newton.dp_newton_release_batch,
    )
)


def _multinomial_plan(
    *, loss: str, n: int, d: int, zeta: float, epsilon: float, delta: float, **kw: Any
) -> MultinomialPlan:
    """The softmax release's plan; ``n_classes`` (K >= 2) is a required option."""
    if loss != "softmax":
        raise ParameterError(f"the multinomial release trains the 'softmax' loss; got {loss!r}")
    if "n_classes" not in kw:
        raise ParameterError("the multinomial release needs n_classes= (the public K)")
    return plan_multinomial(n=n, d=d, zeta=zeta, epsilon=epsilon, delta=delta, **kw)


register(
    Mechanism(
        name="multinomial",
        title="Multinomial logistic regression: softmax objective perturbation (AMP)",
        reference=(
            "Kifer, Smith & Thakurta (2012); Redberg, Koskela & Wang (2023), "
            "Section 3; Iyengar et al. (2019), Algorithm 1"
        ),
        plan_type=MultinomialPlan,
        plan=_multinomial_plan,
        release=multinomial_release,
        release_batch=multinomial_release_batch,
        losses=("softmax",),
        audit_loss="softmax",
        multiclass=True,
    )
)


def _qop_plan(*, loss: str, n: int, d: int, zeta: float, epsilon: float, delta: float, **kw):
    smoothness = kw.pop("smoothness", float(get_loss(loss).L2) * zeta**2)
    return plan_qop(d, epsilon, delta, smoothness=smoothness, **kw)


def _reference(plan: QOPPlan, theta_ref: Any) -> np.ndarray:
    """QOP's public reference point (default: the origin, a data-independent choice)."""
    return np.zeros(plan.d) if theta_ref is None else np.asarray(theta_ref, dtype=float)


def _qop_release(X: Any, y: Any, plan: QOPPlan, rng: Any = None, *, theta_ref=None, **kw):
    return qop.qop_release(X, y, plan, _reference(plan, theta_ref), rng=rng, **kw)


def _qop_release_batch(
    X: Any, y: Any, plan: QOPPlan, draws: int, rng: Any = None, *, theta_ref=None, **kw
):
    return qop.qop_release_batch(X, y, plan, _reference(plan, theta_ref), draws, rng=rng, **kw)


register(
    Mechanism(
        name="qop",
        title="Quadratic objective perturbation",
        reference="Cortild & Cartis (2026)",
        plan_type=QOPPlan,
        plan=_qop_plan,
        release=_qop_release,
        release_batch=_qop_release_batch,
        losses=("squared",),
        audit_loss="squared",
    )
)
