"""A fitted pipeline in a model file: the preprocessing steps as their declared parameters.

A scikit-learn ``Pipeline`` whose steps are objpert's bounded transformers
(:class:`~objpert.preprocessing.BoundedScaler`,
:class:`~objpert.preprocessing.BoundedOneHotEncoder`,
:class:`~objpert.preprocessing.BoundedBinner`), alone or in a ``ColumnTransformer`` (columns
by name or position), a ``FeatureUnion`` or a nested ``Pipeline``, and ends in an objpert
estimator, is saved as the estimator's file with one more key, ``preprocessing``: each
step's declared bounds, category lists and bin edges and the input's column names. Their
fit reads nothing but the width and the names of the input, so the file holds all of the
pipeline; :func:`rebuild` refits the steps on one synthetic row made of the declared
values only (the declared parameters are re-checked as any fit checks them).

A :class:`~objpert.preprocessing.PrivateFeatureBounds` is saved as its release (its
parameters, the bounds it released, the public n and the seed flag; the certificate is
recomputed at load). A step that reads statistics of the data (scikit-learn's
``StandardScaler``, a ``OneHotEncoder`` whose categories come from the rows) is refused at
save with the reason.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np

from objpert.exceptions import ClippingNotice, ModelFileError
from objpert.persistence._fileformat import quote_value
from objpert.preprocessing import BoundedScaler
from objpert.preprocessing._width import declared_width

__all__ = ["encode_preprocessing", "rebuild", "text_columns"]

_KEEP = ("passthrough", "drop")


def _types() -> dict[str, type]:
    from objpert.preprocessing import BoundedBinner, BoundedOneHotEncoder, BoundedScaler

    return {c.__name__: c for c in (BoundedScaler, BoundedOneHotEncoder, BoundedBinner)}


def _columns(value: Any) -> list[Any]:
    """A ColumnTransformer's column selection as a JSON list of names or positions."""
    items = [value] if isinstance(value, str | int | np.integer) else value
    try:
        out = [v if isinstance(v, str) else int(v) for v in items]
    except TypeError:
        out = None
    if out is None or any(isinstance(v, bool) for v in items):
        raise ModelFileError(
            f"cannot save a column selection {quote_value(value)}: give column names or positions"
        )
    return out


def encode_step(step: Any) -> Any:
    """One preprocessing step as JSON: its type and parameters (a fitted bounded step's
    bounds, categories or edges as it was fitted with them)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if step is None or (isinstance(step, str) and step in _KEEP):
        return "passthrough" if step is None else step
    name = type(step).__name__
    if _types().get(name) is type(step):
        params = step.get_params(deep=False)
        for key in ("bounds", "categories", "edges"):  # as fitted: what the step applies
            fitted = getattr(step, key + "_", None)
            if key in params and fitted is not None and _plain(fitted) != _plain(params[key]):
                params[key] = fitted  # changed by set_params after fit
        return {"type": name, "params": _plain(params)}
    if isinstance(step, Pipeline):
        return {"type": "Pipeline", "steps": [[n, encode_step(s)] for n, s in step.steps]}
    if isinstance(step, FeatureUnion):
        parts = [[n, encode_step(t)] for n, t in step.transformer_list]
        return {"type": "FeatureUnion", "transformer_list": parts, **_weights(step)}
    if isinstance(step, ColumnTransformer):
        fitted = getattr(step, "named_transformers_", {})  # the fitted parts (releases)
        return {
            "type": "ColumnTransformer",
            "transformers": [
                [n, encode_step(fitted.get(n, t)), _columns(c)] for n, t, c in step.transformers
            ],
            "remainder": encode_step(step.remainder),
            **_weights(step),
        }
    if name == "PrivateFeatureBounds" and hasattr(step, "bounds_"):  # a release: its record
        params = step.get_params(deep=False)
        params["accountant"] = None  # the caller's ledger: not part of the model
        if not isinstance(params.get("random_state"), int | type(None)):
            params["random_state"] = None  # a Generator's state is not saved
        return {
            "type": name,
            "params": _plain(params),
            "bounds": _plain(step.bounds_),
            "n": int(step.certificate_.certificates[0].constants["n"]),
            "seeded": bool(step.seeded_),
        }
    raise ModelFileError(
        f"cannot save a pipeline step {name}: it is not one of objpert's bounded "
        "transformers, so what it does may depend on statistics of the private rows; use "
        "BoundedScaler, BoundedOneHotEncoder or BoundedBinner with public parameters"
    )


def _weights(step: Any) -> dict[str, Any]:
    """A ColumnTransformer's or FeatureUnion's ``transformer_weights``, when it has any."""
    weights = step.transformer_weights
    return {} if weights is None else {"transformer_weights": _plain(dict(weights))}


def _decoded_weights(spec: dict[str, Any]) -> dict[str, float] | None:
    """The ``transformer_weights`` of a file's step: finite numbers by part name."""
    weights = spec.get("transformer_weights")
    if weights is None:
        return None
    if not isinstance(weights, dict) or not all(
        isinstance(w, int | float) and not isinstance(w, bool) and math.isfinite(w)
        for w in weights.values()
    ):
        raise ModelFileError(
            f"transformer_weights must map part names to finite numbers; got {quote_value(weights)}"
        )
    return {str(n): float(w) for n, w in weights.items()}


def _plain(value: Any) -> Any:
    """Parameters as JSON values (tuples and arrays to lists, numpy scalars to Python)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def encode_preprocessing(pipeline: Any) -> tuple[dict[str, Any], Any]:
    """The ``preprocessing`` entry of a fitted pipeline's file, and its estimator (a
    pipeline ending in a pipeline is read as one: the inner steps follow the outer)."""
    from sklearn.pipeline import Pipeline

    steps: list[tuple[str, Any]] = []
    last = pipeline
    while isinstance(last, Pipeline):  # "passthrough" steps pass their input on: left out
        steps += [(n, s) for n, s in last.steps[:-1] if s is not None and s != "passthrough"]
        final, last = last.steps[-1]
    if not steps:
        raise ModelFileError("the pipeline has no preprocessing step: save its estimator")
    names = getattr(pipeline, "feature_names_in_", None)
    first = pipeline[0]
    spec = {
        "steps": [[n, encode_step(s)] for n, s in steps],
        "final": final,
        "columns": None if names is None else [str(c) for c in names],
        "n_features_in": int(first.n_features_in_) if hasattr(first, "n_features_in_") else None,
    }
    return spec, last


def _decode(spec: Any) -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(spec, str) and spec in _KEEP:
        return spec
    if not isinstance(spec, dict) or "type" not in spec:
        raise ModelFileError(f"malformed preprocessing step {quote_value(spec)}")
    kind = spec["type"]
    if kind == "PrivateFeatureBounds":  # refitted as a scaler of its released bounds
        return _ReleasedBounds(bounds=spec.get("bounds"), record=spec)
    if kind in _types():
        params = spec.get("params")
        if not isinstance(params, dict):
            raise ModelFileError(f"{kind}: params must be a JSON object")
        return _types()[kind](**params)
    if kind == "Pipeline":
        return Pipeline([(str(n), _decode(s)) for n, s in spec["steps"]])
    if kind == "FeatureUnion":
        return FeatureUnion(
            [(str(n), _decode(t)) for n, t in spec["transformer_list"]],
            transformer_weights=_decoded_weights(spec),
        )
    if kind == "ColumnTransformer":
        parts = [(str(n), _decode(t), c) for n, t, c in spec["transformers"]]
        return ColumnTransformer(
            parts, remainder=_decode(spec["remainder"]), transformer_weights=_decoded_weights(spec)
        )
    raise ModelFileError(f"unknown preprocessing step {quote_value(kind)}")


class _ReleasedBounds(BoundedScaler):
    """Stands in for a PrivateFeatureBounds while the steps are refitted on the synthetic
    row (a scaler of its released bounds), then is swapped for the restored release
    (:func:`_restored`); ``record`` is the release's entry of the file."""

    _parameter_constraints: ClassVar[dict] = {
        **BoundedScaler._parameter_constraints,
        "record": [None, dict],
    }

    def __init__(self, *, bounds, record=None):
        super().__init__(bounds=bounds)
        self.record = record


def _restored(step: Any) -> Any:
    """``step`` with every stand-in of a private-bounds release (as refitted) replaced by
    the release restored from its record (:meth:`PrivateFeatureBounds.restore`)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    from objpert.preprocessing import PrivateFeatureBounds

    record = getattr(step, "record", None)
    if isinstance(record, dict) and record.get("type") == "PrivateFeatureBounds":
        params = record.get("params")
        if not isinstance(params, dict):
            raise ModelFileError("PrivateFeatureBounds: params must be a JSON object")
        released = PrivateFeatureBounds(**params).restore(
            record.get("bounds"), record.get("n"), record.get("seeded")
        )
        released.n_features_in_ = step.n_features_in_
        if hasattr(step, "feature_names_in_"):
            released.feature_names_in_ = step.feature_names_in_
        return released
    if isinstance(step, Pipeline):
        step.steps = [(n, _restored(s)) for n, s in step.steps]
    elif isinstance(step, FeatureUnion):
        step.transformer_list = [(n, _restored(t)) for n, t in step.transformer_list]
    elif isinstance(step, ColumnTransformer):
        step.transformers_ = [(n, _restored(t), c) for n, t, c in step.transformers_]
    return step


#: The most input columns a pipeline file may declare (a public limit on the work of
#: loading one: its synthetic row is built before the steps are checked).
MAX_COLUMNS = 100_000


def _check_width(names: Any, width: Any) -> None:
    """The input columns: a count in [1, MAX_COLUMNS], and their names (if any) as many
    distinct strings, checked before anything of that size is built."""
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= MAX_COLUMNS:
        raise ModelFileError(
            f"preprocessing: n_features_in must be an integer in [1, {MAX_COLUMNS}]; got "
            f"{quote_value(width)}"
        )
    if names is None:
        return
    if not isinstance(names, list) or len(names) != width:
        raise ModelFileError(
            f"preprocessing: columns must be a list of {width} names (n_features_in)"
        )
    if not all(isinstance(c, str) for c in names) or len(set(names)) != width:
        raise ModelFileError("preprocessing: columns must be distinct strings")


def _declared_categories(step: Any, columns: list[Any]) -> dict[Any, list[Any]]:
    """The declared categories of every input column a one-hot encoder reads directly."""
    from objpert.preprocessing import BoundedOneHotEncoder
    from objpert.preprocessing._columns import column_readers

    out: dict[Any, list[Any]] = {}
    for col, reader, j in column_readers(step, columns):
        if isinstance(reader, BoundedOneHotEncoder) and j < len(reader.categories):
            out.setdefault(col, list(reader.categories[j]))
    return out


def text_columns(pipeline: Any) -> list[Any]:
    """The input columns whose declared categories are all text (a reader of a CSV gives
    them as text, whatever they look like)."""
    names = getattr(pipeline, "feature_names_in_", None)
    columns = list(names) if names is not None else list(range(pipeline.n_features_in_))
    declared = _declared_categories(pipeline.steps[0][1], columns)
    return [c for c, cats in declared.items() if all(isinstance(v, str) for v in cats)]


def rebuild(spec: Any, estimator: Any) -> Any:
    """The fitted pipeline of a file's ``preprocessing`` entry and its loaded estimator."""
    import pandas as pd
    from sklearn.pipeline import Pipeline

    from objpert.preprocessing import row_norm_bound

    if not isinstance(spec, dict) or not isinstance(spec.get("steps"), list):
        raise ModelFileError("preprocessing must be an object with a list of steps")
    steps = [(str(n), _decode(s)) for n, s in spec["steps"]]
    names, width = spec.get("columns"), spec.get("n_features_in")
    _check_width(names, width)
    out_width = declared_width(steps[-1][1])  # from the parameters: before any work
    if out_width is not None and out_width != estimator.n_features_in_:
        raise ModelFileError(
            f"the preprocessing declares {out_width} output columns but the estimator takes "
            f"{estimator.n_features_in_}"
        )
    columns = list(names) if names is not None else list(range(int(width)))
    declared = _declared_categories(steps[0][1], columns)
    values = {c: cats[0] for c, cats in declared.items()}  # one declared category each
    row = [values.get(c, 0.0) for c in columns]
    frame = (
        pd.DataFrame([row], columns=columns)
        if names is not None
        else np.asarray([row], dtype=object if values else np.float64)
    )
    preprocessing = Pipeline(steps)
    try:
        with warnings.catch_warnings():  # the synthetic row is ours: no notice about it
            warnings.simplefilter("ignore", ClippingNotice)
            out = preprocessing.fit_transform(frame)  # the declared parameters, checked
        row_norm_bound(preprocessing)  # every step declares its bound
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"invalid preprocessing: {' '.join(str(exc).split())}") from None
    _restored(preprocessing)
    if out.shape[1] != estimator.n_features_in_:
        raise ModelFileError(
            f"the preprocessing outputs {out.shape[1]} columns but the estimator takes "
            f"{estimator.n_features_in_}"
        )
    return Pipeline([*preprocessing.steps, (str(spec.get("final", "model")), estimator)])
