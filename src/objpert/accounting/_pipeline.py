"""One certificate for all the private steps of a fitted scikit-learn pipeline."""

from __future__ import annotations

from typing import Any

from objpert._validation import check_choice, check_open_unit, optional, rule, validated
from objpert.accounting import _pld as pldlib
from objpert.accounting._accountant import AccountedCertificate, Step, _merged, as_losses
from objpert.accounting._composition import ComposedCertificate, compose, same_unit
from objpert.exceptions import ParameterError

__all__ = [
    "COMPOSITIONS",
    "any_seeded",
    "file_certificate",
    "pipeline_certificate",
    "released_certificates",
    "released_steps",
]

#: How :func:`pipeline_certificate` composes the releases.
COMPOSITIONS = ("basic", "pld")


def released_steps(step: Any) -> list[Any]:
    """The fitted releases inside ``step`` (a pipeline, a column transformer, a feature
    union, nested as deep as they go, or one fitted step): the steps with a
    ``certificate_``, in pipeline order."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(step, Pipeline):
        return [r for _, s in step.steps for r in released_steps(s)]
    if isinstance(step, ColumnTransformer):
        parts = getattr(step, "transformers_", None)
        if parts is None:
            raise ParameterError("the ColumnTransformer is not fitted: fit the pipeline first")
        return [r for _, t, _ in parts for r in released_steps(t)]
    if isinstance(step, FeatureUnion):
        return [r for _, t in step.transformer_list for r in released_steps(t)]
    return [] if getattr(step, "certificate_", None) is None else [step]


def released_certificates(step: Any) -> list[Any]:
    """The certificates of the fitted releases inside ``step`` (:func:`released_steps`)."""
    return [r.certificate_ for r in released_steps(step)]


def any_seeded(step: Any) -> bool:
    """Whether a testing seed drew the noise of any release inside ``step`` (a private
    step before the model as well as the model: then the file is not private)."""
    return any(bool(getattr(r, "seeded_", False)) for r in released_steps(step))


@validated(composition=rule(check_choice, COMPOSITIONS), delta=optional(check_open_unit))
def pipeline_certificate(
    pipeline: Any,
    *,
    composition: str = "basic",
    delta: float | None = None,
    discretization: float = pldlib.DEFAULT_DISCRETIZATION,
) -> Any:
    """The guarantee of everything a fitted pipeline released on the same data (private
    bounds, the model; nested pipelines, column transformers and feature unions included),
    with the ``not_public`` items of every release joined.

    ``composition="basic"``: the basic composition (Dwork & Roth 2014, Theorem 3.16) of
    the releases' certificates (one release: its certificate as it is). ``"pld"``: the
    composition of their privacy-loss distributions queried at ``delta`` (needs
    dp-accounting), an :class:`~objpert.accounting.AccountedCertificate` listing
    each release in pipeline order; tighter than the basic composition.
    """
    if composition == "pld":
        if delta is None:
            raise ParameterError("composition='pld' needs the delta to query: delta=...")
        discretization = pldlib.check_discretization(discretization)
    elif delta is not None:
        raise ParameterError("delta is for composition='pld' (the basic composition adds deltas)")
    certs = released_certificates(pipeline)
    if not certs:
        raise ParameterError("the pipeline holds no fitted private release (certificate_)")
    same_unit(certs)  # a pipeline's releases for different units do not compose
    if composition == "basic":
        if len(certs) == 1:
            return certs[0]
        not_public = tuple(dict.fromkeys(item for c in certs for item in c.not_public))
        composed: ComposedCertificate = compose(certs, "basic", not_public=not_public)
        return composed
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


def file_certificate(model: Any) -> Any | None:
    """The guarantee of everything a loaded pipeline file released when a step before its
    model released privately too (:func:`pipeline_certificate`, basic composition; a
    ``ParameterError`` for releases of different privacy units); None for an estimator's
    file or a pipeline whose model is its only release."""
    steps = getattr(model, "steps", None)
    if not steps or not any(released_certificates(s) for _, s in steps[:-1]):
        return None
    return pipeline_certificate(model)
