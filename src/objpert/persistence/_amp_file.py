"""Model files of an AMP release (approximate minima perturbation, Iyengar et al. 2019,
Algorithm 1: the default release of the Spark estimators, ``objpert.spark``).

The file holds one AMP plan (``"mechanism": "amp"``). At load the plan is re-derived by
the registry's planner (``objpert.plan("amp", ...)``) from the model's parameters
(epsilon, delta, ``data_norm`` and the intercept column: zeta, ``mu``, the loss and its
``scale``) and the plan's public settings (n, the solver's tolerance gamma and its
iteration budget ``max_iter``); every other number of the stored plan must equal the
re-derived one, and its certificate, recomputed from those constants with the stored
``not_public``, must equal the stored certificate and meet the target. The solver's
iteration count is the plan's public budget: the passes the fit made (a statistic of the
rows) are not saved.
"""

from __future__ import annotations

from typing import Any

from objpert.estimators._base import FitSettings, public_zeta
from objpert.exceptions import ModelFileError, ObjpertError
from objpert.mechanisms._certificates.plan import AMPPlan
from objpert.mechanisms._registry import plan as plan_release
from objpert.persistence._fileformat import (
    quote_value,
)
from objpert.persistence._multinomial import matching_certificate

__all__ = ["amp_iterations", "is_amp", "recertify_amp"]


def is_amp(plans_data: Any) -> bool:
    """Whether a file's plans are one AMP plan (it names its mechanism ``"amp"``)."""
    return (
        isinstance(plans_data, list)
        and len(plans_data) == 1
        and isinstance(plans_data[0], dict)
        and plans_data[0].get("mechanism") == "amp"
    )


def amp_iterations(plan: Any) -> int:
    """The iteration count a file records for a plan: a Watkins & Arora or multinomial
    plan's ``iterations``, an AMP plan's public budget ``max_iter``."""
    return plan.max_iter if isinstance(plan, AMPPlan) else plan.iterations


def recertify_amp(
    plans_data: list[Any], stored: Any, model: Any, p: FitSettings
) -> tuple[list[AMPPlan], Any]:
    """The file's AMP plan re-derived from the model's parameters and the plan's public
    n, tolerance and max_iter, required to equal the stored plan; its certificate, with the
    stored ``not_public``, required to equal the stored certificate and meet the target
    (``p.epsilon``, ``p.delta``: the one-row target of a release per privacy unit)."""
    data = plans_data[0]
    try:
        if data.get("loss") != model._loss:
            raise ModelFileError(
                f"the plan's loss {quote_value(data.get('loss'))} is not the model's "
                f"{model._loss!r}"
            )
        plan = AMPPlan.from_dict(data)
        zeta = public_zeta(p, model.n_features_in_)
        if zeta is None:
            raise ModelFileError("an AMP release needs a declared data_norm (zeta is public)")
        d = model.n_features_in_ + (1 if p.fit_intercept else 0)
        expected = plan_release(
            "amp", loss=model._loss, n=plan.n, d=d, zeta=zeta, epsilon=p.epsilon,
            delta=p.delta, mu=p.mu, max_iter=plan.max_iter, gamma=plan.tolerance,
            **({} if p.scale is None else {"loss_params": {"scale": p.scale}}),
        )  # fmt: skip
    except ModelFileError as exc:
        raise ModelFileError(f"plan 0 is refused: {exc}") from None
    except (TypeError, ValueError, ObjpertError) as exc:
        raise ModelFileError(
            f"plan 0 is refused: {quote_value(' '.join(str(exc).split()), 200, quote=False)}"
        ) from None
    return [expected], matching_certificate(expected, data, stored, p, "the AMP plan")
