"""Saving: the model file of a fitted estimator, checked to load before it is written."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from objpert._files import write_atomically
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import ModelFileError
from objpert.persistence._fileformat import (
    _CLASS_KINDS,
    _ESTIMATORS,
    FORMAT,
    SIGNATURE_ALGORITHM,
    VERSION,
    _jsonable,
    _normal,
    check_tree,
    digest,
    quote_value,
    signature,
    signing_key,
)
from objpert.persistence._load import _rebuild
from objpert.persistence._unit_record import UNIT_KEY, release_certificate, unit_record

__all__ = [
    "save",
    "to_payload",
]


# ---------------------------------------------------------------- save


def _encode_classes(classes: np.ndarray) -> dict[str, Any]:
    arr = np.asarray(classes)
    if arr.dtype.kind not in _CLASS_KINDS:
        raise ModelFileError(
            f"cannot save classes_ of dtype {arr.dtype}: use str, int, float or bool labels"
        )
    values = [v.item() if isinstance(v, np.generic) else v for v in arr.tolist()]
    for v in values:
        if not isinstance(v, bool | int | float | str):
            raise ModelFileError(
                f"cannot save a class label of type {type(v).__name__}: {quote_value(v)}"
            )
    return {"values": values, "dtype": arr.dtype.str if arr.dtype.kind != "O" else "object"}


def _params(model: Any) -> dict[str, Any]:
    params = model.get_params(deep=False)
    for name in ("accountant", "client", "step_timeout"):
        params[name] = None  # the caller's ledger and cluster: not part of the model
    if params.get("data_norm") is None and getattr(model, "pipeline_data_norm_", None):
        params["data_norm"] = model.pipeline_data_norm_  # declared by the pipeline's steps
    if "prior" in params:  # the public prior of the release (not a later set_params)
        fitted = getattr(model, "prior_coef_", None)
        params["prior"] = None if fitted is None else {
            "coef": np.atleast_2d(np.asarray(fitted, dtype=np.float64)).tolist(),
            "intercept": np.atleast_1d(model.prior_intercept_).astype(np.float64).tolist(),
        }  # fmt: skip
    fitted = getattr(model, "feature_bounds_", None)  # the bounds the release was fitted with
    if "feature_bounds" in params and hasattr(model, "feature_bounds_"):
        declared = params["feature_bounds"]
        same = fitted is None if declared is None else fitted is not None and (
            np.shape(declared) == fitted.shape and np.array_equal(declared, fitted)
        )  # fmt: skip
        if not same:  # changed by set_params after fit
            params["feature_bounds"] = None if fitted is None else fitted.tolist()
    rs = params.get("random_state")
    if rs is not None and not (isinstance(rs, int | np.integer) and not isinstance(rs, bool)):
        params["random_state"] = None  # a Generator/RandomState: its state is not saved
    return _jsonable(params)


def _release_records(model: Any, plans: list[WatkinsAroraPlan]) -> list[dict[str, Any]]:
    """Per release: its iteration count and whether a testing seed drew its noise (a
    fitted model's ``releases_`` hold no statistic of the private rows to strip: no
    clipping count, no timing)."""
    releases = getattr(model, "releases_", None)
    if releases is not None:
        records = [{"iterations": int(r.iterations), "seeded": bool(r.seeded)} for r in releases]
    else:  # a loaded model: no Release objects, its recorded flags
        seeded = getattr(model, "seeded_", None)
        if not isinstance(seeded, bool | np.bool_):
            raise ModelFileError(
                "this model records neither releases_ nor seeded_: whether its noise was "
                "seeded is unknown (refit it)"
            )
        n_iter = np.asarray(model.n_iter_).ravel()
        records = [{"iterations": int(k), "seeded": bool(seeded)} for k in n_iter]
    if len(records) != len(plans):
        raise ModelFileError(
            f"the model has {len(records)} release(s) but {len(plans)} plan(s): refit it"
        )
    return records


def to_payload(model: Any, key: bytes | str | None = None) -> dict[str, Any]:
    """The model file's content (a JSON object, digest and signature included).

    Refuses (:class:`ModelFileError`) a model whose file would not load: unfitted, of
    another class, or whose parameters no longer match its fitted plans (``set_params``
    after ``fit``)."""
    from sklearn.pipeline import Pipeline

    from objpert.model_selection import PrivateGridSearch

    selection = None
    if isinstance(model, PrivateGridSearch):  # the chosen model, with the search's record
        from objpert.persistence._selection_file import selection_record

        selection, model = selection_record(model)
    preprocessing = None
    if isinstance(model, Pipeline):  # its declared steps, then its estimator
        from objpert.persistence._pipeline_file import encode_preprocessing

        preprocessing, model = encode_preprocessing(model)
    if selection is None and hasattr(model, "release_certificate_"):
        raise ModelFileError(
            "this model was chosen by a private search, whose certificate covers the choice: "
            "save the PrivateGridSearch itself"
        )
        if not hasattr(model, "coef_"):
            raise ModelFileError("this pipeline is not fitted: call fit before save")
    name = type(model).__name__
    if preprocessing is not None and name == "PrivateGridSearch":
        raise ModelFileError(
            "this pipeline ends in a PrivateGridSearch: search the whole pipeline instead "
            "(PrivateGridSearch(estimator=pipeline, ...), step__param names in the grid) "
            "and save the search"
        )
    if _ESTIMATORS.get(name) is not type(model):
        raise ModelFileError(
            f"can only save {sorted(_ESTIMATORS)}; got {type(model).__module__}.{name}"
        )
    if not hasattr(model, "coef_"):
        raise ModelFileError(f"this {name} is not fitted: call fit before save")
    secret = signing_key(key)
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    cert = model.release_certificate_ if selection is not None else model.certificate_
    unit = unit_record(cert)  # a guarantee per privacy unit: recorded, recomputed at load
    cert = release_certificate(model, cert)
    names = getattr(model, "feature_names_in_", None)
    payload: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "objpert_version": version("objpert"),
        "estimator": name,
        "params": _params(model),
        "n_features_in": int(model.n_features_in_),
        "feature_names_in": None if names is None else [str(s) for s in names],
        "coef": _jsonable(np.asarray(model.coef_, dtype=np.float64)),
        "intercept": _jsonable(model.intercept_),
        "classes": _encode_classes(model.classes_) if hasattr(model, "classes_") else None,
        "n_iter": _jsonable(np.asarray(model.n_iter_).ravel()),
        "plans": [_jsonable(p.to_dict()) for p in plans],
        "releases": _release_records(model, plans),
        "certificate": _jsonable(cert.to_dict()),
    }
    if unit is not None:
        payload[UNIT_KEY] = unit
    if preprocessing is not None:
        payload["preprocessing"] = preprocessing
    if selection is not None:
        payload["selection"] = selection
    payload = _normal(payload)
    try:
        check_tree(payload)  # what load refuses (a seed of 400 digits) is not written
    except ModelFileError as exc:
        raise ModelFileError(f"cannot save this {name}: {exc}") from None
    try:  # the file must load: the params must still be those the plans were fitted with
        _rebuild(payload)
    except ModelFileError as exc:
        if preprocessing is not None and "preprocessing" in str(exc):
            raise ModelFileError(f"cannot save this pipeline: {exc}") from None
        raise ModelFileError(
            f"cannot save this {name}: its parameters no longer match its fitted plans "
            f"({exc}); were they changed with set_params after fit? Refit the model, or "
            "set the parameters back"
        ) from None
    payload["digest"] = digest(payload)
    payload["signature"] = (
        None
        if secret is None
        else {"algorithm": SIGNATURE_ALGORITHM, "value": signature(payload, secret)}
    )
    return payload


def save(model: Any, path: str | Path, key: bytes | str | None = None) -> Path:
    """Write a fitted :class:`PrivateLogisticRegression` or :class:`PrivateRobustRegression`
    (alone or as the last step of a pipeline of bounded steps) to ``path`` as JSON (see the
    module docstring for the content), or a :class:`~objpert.accounting.PrivacyAccountant`'s
    ledger (:mod:`.ledger_file`); returns the path.

    Signed with HMAC-SHA-256 under ``key`` (bytes or str) or, when ``key`` is None, under
    the value of ``OBJPERT_MODEL_KEY``; unsigned when neither is set. Refuses
    (:class:`ModelFileError`) a model whose parameters no longer match its fitted plans."""
    from objpert.accounting._accountant import PrivacyAccountant

    if isinstance(model, PrivacyAccountant):
        from objpert.persistence._ledger_file import ledger_payload

        payload = ledger_payload(model, key)
    else:
        payload = to_payload(model, key)
    path = Path(path)
    write_atomically(path, json.dumps(payload, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return path
