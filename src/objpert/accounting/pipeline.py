"""One certificate for all the private steps of a fitted scikit-learn pipeline, composed
by their privacy-loss distributions."""

from __future__ import annotations

from typing import Any

from objpert.accounting import pld as pldlib
from objpert.accounting.accountant import AccountedCertificate, Step, _merged, as_losses
from objpert.errors import ParameterError, check_open_unit

__all__ = ["pipeline_certificate"]


def pipeline_certificate(
    pipeline: Any, *, delta: float, discretization: float = pldlib.DEFAULT_DISCRETIZATION
) -> AccountedCertificate:
    """The PLD composition of every fitted private release in ``pipeline`` (private
    bounds, the model; nested pipelines, column transformers and feature unions
    included), queried at ``delta``: one certificate listing each release in pipeline
    order and the union of their ``not_public``. Tighter than the basic composition of
    :func:`objpert.preprocessing.pipeline_certificate`."""
    from objpert.preprocessing.pipeline import _released  # the releases, in pipeline order

    delta = check_open_unit("delta", delta)
    discretization = pldlib.check_discretization(discretization)
    certs = _released(pipeline)
    if not certs:
        raise ParameterError("the pipeline holds no fitted private release (certificate_)")
    steps = tuple(
        Step(
            f"{i}: {getattr(c, 'method', None) or getattr(c, 'form', 'release')}",
            _merged(as_losses(c)),
            tuple(getattr(c, "not_public", ())),
        )
        for i, c in enumerate(certs)
    )
    total = pldlib.compose([x for s in steps for x in s.losses], discretization)
    epsilon = pldlib.epsilon_for_delta(total, delta)
    return AccountedCertificate("pld", epsilon, delta, steps, discretization)
