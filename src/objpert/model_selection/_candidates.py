"""Checks of a private search's candidates from their parameters alone, before any fit:
what every candidate may carry, and the labels the search scores against."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import DataConversionWarning
from sklearn.pipeline import Pipeline

from objpert.exceptions import DataError, ParameterError

__all__ = ["final", "private_steps", "refuse_unaccounted", "rows_and_labels", "same_structure"]


def final(model: Any) -> Any:
    """The private estimator of a candidate: the candidate, or its pipeline's last step."""
    return model[-1] if isinstance(model, Pipeline) else model


def private_steps(estimator: Any) -> list[str]:
    """The names of the private releases of objpert's (any step with an ``epsilon``)
    among the steps before a pipeline's last (:func:`.bounds.preprocessing_parts`)."""
    from objpert.estimators._bounds import preprocessing_parts

    if not isinstance(estimator, Pipeline):
        return []
    parts = [p for _, s in estimator.steps[:-1] for p in preprocessing_parts(s)]
    return list(dict.fromkeys(
        type(p).__name__ for p in parts
        if type(p).__module__.startswith("objpert.") and hasattr(p, "epsilon")
    ))  # fmt: skip


def refuse_unaccounted(models: list[Any]) -> None:
    """Refuse (ParameterError, before any fit) candidates with a private step before the
    model (the search's certificate covers the models only) or an accountant (the search
    charges nothing: its ``certificate_`` is what to charge), in any grid point."""
    private = list(dict.fromkeys(name for m in models for name in private_steps(m)))
    if private:
        raise ParameterError(
            f"the pipeline's step(s) {', '.join(private)} release privately on their "
            "own, and the search's certificate covers the candidates' models only "
            "(random stopping would release them again in every run, a split search "
            "once per part): release them once before the search (PrivateFeatureBounds"
            "(...).fit(X).bounds_ as a BoundedScaler's bounds, both charged to one "
            "accountant) and search a pipeline of public steps"
        )
    if any(getattr(final(m), "accountant", None) is not None for m in models):
        raise ParameterError(
            "a private search cannot charge its fits to the estimator's accountant (a ledger "
            "of random stopping's runs would record their hidden count; a split search's "
            "candidates are fitted on disjoint parts and its choice is a release of its "
            "own): fit without one and charge the search's certificate_ to the ledger"
        )


def _reads_rows(model: Any) -> tuple[bool, bool, tuple[str, ...]]:
    """What a candidate reads from the private rows by its parameters alone: its label
    set (classes=None), its row bound (no data_norm, feature_bounds or bounded step before
    it) and the names of its steps fitted on the rows. Every ``not_public`` item of its
    fit follows from these."""
    from objpert.estimators._bounds import _fitted_on_rows
    from objpert.preprocessing import row_norm_bound

    estimator = final(model)
    steps = [
        s for _, s in (model.steps[:-1] if isinstance(model, Pipeline) else [])
        if s is not None and not (isinstance(s, str) and s == "passthrough")
    ]  # fmt: skip
    try:
        bounded = bool(steps) and row_norm_bound(steps[-1]) is not None
    except ParameterError:
        bounded = False
    declared = (
        bounded
        or getattr(estimator, "data_norm", None) is not None
        or getattr(estimator, "feature_bounds", None) is not None
    )
    labels = hasattr(estimator, "classes") and estimator.classes is None
    return labels, not declared, tuple(n for s in steps for n in _fitted_on_rows(s))


def same_structure(models: list[Any], grid: list[dict]) -> None:
    """Refuse (ParameterError, before any run) a random-stopping grid whose points differ
    in what they read from the private rows: the certificate names the chosen run's
    ``not_public`` items, and naming those of the runs drawn would tell how many ran."""
    first = _reads_rows(models[0])
    for model, params in zip(models[1:], grid[1:], strict=True):
        if _reads_rows(model) != first:
            raise ParameterError(
                f"the grid point {params} reads other things from the private rows (a "
                "label set, a row bound or preprocessing fitted on them) than "
                f"{grid[0]}: random stopping's certificate can name only the chosen "
                "run's; declare classes, data_norm or bounded steps on the base estimator, "
                "or use method='split'"
            )


def rows_and_labels(X: Any, y: Any) -> tuple[int, np.ndarray]:
    """(n, the labels as one value per row) of a search's in-memory data (DataError for
    Dask input or a y of another length): a column vector flattened (DataConversionWarning,
    as scikit-learn's estimators do), anything else not 1-D refused. A score of a column
    against a vector would broadcast to n x n comparisons, far above the sensitivity its
    noise is calibrated for."""
    from objpert._data import is_dask

    if is_dask(X) or is_dask(y):
        raise DataError("PrivateGridSearch needs in-memory data (compute the Dask input)")
    n = _rows(X)
    if y is None or _rows(y) != n:
        raise DataError("y must have one label per row of X")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn(
            "a column-vector y was passed when a 1d array was expected: flattened to "
            "shape (n_samples,)",
            DataConversionWarning,
            stacklevel=3,
        )
        arr = arr.ravel()
    if arr.ndim != 1:
        raise DataError(f"y must hold one label per row (1-D); got shape {arr.shape}")
    return n, arr


def _rows(a: Any) -> int:
    shape = getattr(a, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(a)
    except TypeError:
        raise DataError(f"expected an array of rows; got {type(a).__name__}") from None
