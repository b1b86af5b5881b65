"""Pipelines of bounded transformers and a private estimator (their one certificate:
:func:`objpert.accounting.pipeline_certificate`)."""

from __future__ import annotations

from typing import Any

from sklearn.base import clone
from sklearn.pipeline import Pipeline

from objpert.exceptions import ParameterError
from objpert.preprocessing.bounded import row_norm_bound

__all__ = ["private_pipeline"]


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
