"""Model files of a multinomial PrivateLogisticRegression: its one plan re-derived from the
model's parameters and the plan's public n (:func:`objpert.estimators._multinomial.
multinomial_plan`), its certificate recomputed from those constants and checked against
the stored one and the target."""

from __future__ import annotations

import dataclasses
from typing import Any

from objpert.estimators._base import FitSettings, public_zeta
from objpert.estimators._multinomial import multinomial_plan
from objpert.exceptions import ModelFileError, ObjpertError
from objpert.mechanisms._certificates.multinomial import MultinomialPlan
from objpert.persistence._fileformat import (
    _check_model_certificate,
    _not_public,
    quote_value,
    require_same,
)

__all__ = ["is_multinomial", "recertify_multinomial"]


def is_multinomial(plans_data: Any) -> bool:
    """Whether a file's plans are one multinomial plan (it names its ``n_classes``)."""
    return (
        isinstance(plans_data, list)
        and len(plans_data) == 1
        and isinstance(plans_data[0], dict)
        and "n_classes" in plans_data[0]
    )


def recertify_multinomial(
    plans_data: list[Any], stored: Any, model: Any, p: FitSettings, n_classes: int
) -> tuple[list[MultinomialPlan], Any]:
    """The file's plan re-derived from the model's parameters (epsilon, delta, mu,
    comparator_norm (with a prior, "auto" is min(3, epsilon)), the row bound), its classes
    and the plan's n, required to
    equal the stored plan; its certificate, with the stored ``not_public``, required to
    equal the stored certificate and to meet the target."""
    if not model._multinomial_for(n_classes, False, p):
        raise ModelFileError(
            "the file holds a multinomial plan, but the model's parameters train one-vs-rest "
            "releases"
        )
    data = plans_data[0]
    try:
        plan = MultinomialPlan.from_dict(data)
        zeta = public_zeta(p, model.n_features_in_)
        d = model.n_features_in_ + (1 if p.fit_intercept else 0)
        expected = multinomial_plan(plan.n, d, n_classes, plan.zeta if zeta is None else zeta, p)
    except (TypeError, ValueError, ObjpertError) as exc:
        raise ModelFileError(
            f"plan 0 is refused: {quote_value(' '.join(str(exc).split()), 200, quote=False)}"
        ) from None
    return [expected], matching_certificate(expected, data, stored, p, "the plan")


def matching_certificate(expected: Any, data: Any, stored: Any, p: FitSettings, what: str) -> Any:
    """The certificate of ``expected`` (the plan re-derived from the model's public
    parameters) once the stored plan ``data`` equals it and the stored certificate matches
    its recomputation at the target (ModelFileError naming the first difference)."""
    require_same(
        expected, data, f"plan 0 differs from {what} re-derived from the model's parameters"
    )
    if not isinstance(stored, dict):
        raise ModelFileError("certificate must be a JSON object")
    cert = dataclasses.replace(expected.certificate, not_public=_not_public(stored, "certificate"))
    _check_model_certificate(cert, stored, p.epsilon, p.delta, what)
    return cert
