"""Pipelines of bounded transformers and a private estimator, and their one certificate."""

from __future__ import annotations

from typing import Any

from sklearn.base import clone
from sklearn.pipeline import Pipeline

from objpert.certify.composition import ComposedCertificate, compose
from objpert.errors import ParameterError
from objpert.preprocessing.bounded import row_norm_bound

__all__ = ["pipeline_certificate", "private_pipeline"]


def private_pipeline(preprocessor: Any, estimator: Any) -> Pipeline:
    """``Pipeline([("preprocess", preprocessor), ("model", estimator)])`` with the
    estimator's ``data_norm`` set to :func:`row_norm_bound` of ``preprocessor`` (a copy of
    the estimator: the one passed is unchanged). The bound follows from the transformers'
    parameters, so the model's certificate covers it."""
    if not hasattr(estimator, "data_norm"):
        raise ParameterError(
            f"the estimator must take data_norm (an objpert estimator); got {estimator!r:.80}"
        )
    model = clone(estimator).set_params(data_norm=row_norm_bound(preprocessor))
    return Pipeline([("preprocess", preprocessor), ("model", model)])


def _released(step: Any) -> list[Any]:
    """The certificates of the fitted releases inside ``step``, in pipeline order."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion

    if isinstance(step, Pipeline):
        return [c for _, s in step.steps for c in _released(s)]
    if isinstance(step, ColumnTransformer):
        parts = getattr(step, "transformers_", None)
        if parts is None:
            raise ParameterError("the ColumnTransformer is not fitted: fit the pipeline first")
        return [c for _, t, _ in parts for c in _released(t)]
    if isinstance(step, FeatureUnion):
        return [c for _, t in step.transformer_list for c in _released(t)]
    cert = getattr(step, "certificate_", None)
    return [] if cert is None else [cert]


def pipeline_certificate(pipeline: Any) -> Any:
    """The guarantee of everything a fitted pipeline released on the same data: the basic
    composition (Dwork & Roth 2014, Theorem 3.16) of the certificates of its steps
    (private bounds, the model), with their ``not_public`` items joined; one certificate
    as it is."""
    certs = _released(pipeline)
    if not certs:
        raise ParameterError("the pipeline holds no fitted private release (certificate_)")
    if len(certs) == 1:
        return certs[0]
    not_public = tuple(dict.fromkeys(item for c in certs for item in c.not_public))
    composed: ComposedCertificate = compose(certs, "basic", not_public=not_public)
    return composed
