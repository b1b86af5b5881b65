"""Save and load fitted private models as JSON, with their plans and certificates.

A model file holds the estimator's class and parameters, the released weights
(``coef_``, ``intercept_``), ``classes_`` (values and dtype, so string, integer and
boolean labels round-trip), ``n_features_in_`` (and ``feature_names_in_``), every
release's :class:`~objpert.certify.calibration.Plan` and the certificate
(a :class:`~objpert.certify.certificate.Certificate` or a
:class:`~objpert.certify.composition.ComposedCertificate`), plus a SHA-256 digest of the
canonical JSON (sorted keys, compact separators) of everything else.

:func:`load` refuses, with :class:`ModelFileError`, a file that is not JSON, of another
format or version, with missing keys, whose digest does not match, whose arrays have
inconsistent shapes, or whose plans do not recertify to the stored certificates.

What the checks mean:

- The digest detects corruption and naive edits. It is not a signature: anyone who edits
  the file can recompute it, so it proves nothing about who wrote the file.
- Recertification recomputes every plan's certificate from the plan's public constants
  (as the mechanism does before releasing) and checks that it certifies, matches the
  stored certificate and meets the stored target, and that the plans agree with the
  estimator's parameters (n, d, zeta, loss). It checks that the stored *numbers* are a
  valid certificate; it cannot prove that the stored weights came from that plan.

Not saved: ``n_clipped_`` (a statistic of the training data that no certificate covers)
and ``releases_`` (their weights are ``coef_``/``intercept_``; their plans and
certificates are saved).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

import objpert
from objpert.certify.calibration import Plan
from objpert.certify.certificate import Certificate
from objpert.certify.composition import ComposedCertificate, certificate_from_dict, compose
from objpert.data import total_norm
from objpert.errors import ObjpertError
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression

__all__ = ["FORMAT", "VERSION", "ModelFileError", "load", "plan_from_dict", "save"]

FORMAT = "objpert-model"
VERSION = 1
_RTOL = 1e-9  # recomputed certificates may differ from stored ones by rounding only

_ESTIMATORS = {
    "PrivateLogisticRegression": PrivateLogisticRegression,
    "PrivateRobustRegression": PrivateRobustRegression,
}
_REQUIRED = (
    "format",
    "version",
    "estimator",
    "params",
    "n_features_in",
    "feature_names_in",
    "coef",
    "intercept",
    "classes",
    "n_iter",
    "plans",
    "certificate",
    "digest",
)
_CLASS_KINDS = "biufUO"  # bool, int, uint, float, str, object (of str/int/float/bool)


class ModelFileError(ObjpertError):
    """A model file cannot be saved or loaded: it is malformed, altered or not certified."""


# ---------------------------------------------------------------- JSON helpers


def _jsonable(value: Any) -> Any:
    """Plain JSON values: numpy to Python, tuples to lists, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise ModelFileError(f"cannot save a value of type {type(value).__name__}: {value!r}")


def canonical_json(payload: dict[str, Any]) -> str:
    """The canonical form the digest is computed over: sorted keys, compact separators."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)


def digest(payload: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``payload`` without its ``digest`` key."""
    body = {k: v for k, v in payload.items() if k != "digest"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- plans and certificates


def plan_from_dict(data: dict[str, Any]) -> Plan:
    """Inverse of :meth:`Plan.to_dict` (the certificate rebuilt from its flat dict)."""
    if not isinstance(data, dict):
        raise ModelFileError(f"a plan must be a JSON object; got {type(data).__name__}")
    names = {f.name for f in fields(Plan)}
    required = {f.name for f in fields(Plan) if f.name != "objective"}
    missing = sorted(required - set(data))
    if missing:
        raise ModelFileError(f"plan is missing keys {missing}")
    unknown = sorted(set(data) - names)
    if unknown:
        raise ModelFileError(f"plan has unknown keys {unknown}")
    kwargs = dict(data)
    kwargs["certificate"] = certificate_from_dict(data["certificate"])
    return Plan(**kwargs)


def _close(a: Any, b: Any, path: str = "") -> str | None:
    """Where two JSON values differ beyond rounding (a path), or None when they agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path or '.'} keys {sorted(set(a) ^ set(b))}"
        for k in sorted(a):
            where = _close(a[k], b[k], f"{path}.{k}")
            if where:
                return where
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} length"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            where = _close(x, y, f"{path}[{i}]")
            if where:
                return where
        return None
    numbers = (int, float)
    if (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return None if math.isclose(a, b, rel_tol=_RTOL, abs_tol=0.0) else path
    return None if a == b else path


def _normal(value: Any) -> Any:
    """A value as it reads back from the file (JSON round trip)."""
    return json.loads(json.dumps(_jsonable(value)))


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
            raise ModelFileError(f"cannot save a class label of type {type(v).__name__}: {v!r}")
    return {"values": values, "dtype": arr.dtype.str if arr.dtype.kind != "O" else "object"}


def _params(model: Any) -> dict[str, Any]:
    params = model.get_params(deep=False)
    rs = params.get("random_state")
    if rs is not None and not (isinstance(rs, int | np.integer) and not isinstance(rs, bool)):
        params["random_state"] = None  # a Generator/RandomState: its state is not saved
    return _jsonable(params)


def to_payload(model: Any) -> dict[str, Any]:
    """The model file's content (a JSON object, digest included)."""
    name = type(model).__name__
    if _ESTIMATORS.get(name) is not type(model):
        raise ModelFileError(
            f"can only save {sorted(_ESTIMATORS)}; got {type(model).__module__}.{name}"
        )
    if not hasattr(model, "coef_"):
        raise ModelFileError(f"this {name} is not fitted: call fit before save")
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    cert = model.certificate_
    names = getattr(model, "feature_names_in_", None)
    payload: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "objpert_version": objpert.__version__,
        "estimator": name,
        "params": _params(model),
        "n_features_in": int(model.n_features_in_),
        "feature_names_in": None if names is None else [str(s) for s in names],
        "coef": _jsonable(np.asarray(model.coef_, dtype=np.float64)),
        "intercept": _jsonable(model.intercept_),
        "classes": _encode_classes(model.classes_) if hasattr(model, "classes_") else None,
        "n_iter": _jsonable(np.asarray(model.n_iter_).ravel()),
        "plans": [_jsonable(p.to_dict()) for p in plans],
        "certificate": _jsonable(cert.to_dict()),
    }
    payload["digest"] = digest(payload)
    return payload


def save(model: Any, path: str | Path) -> Path:
    """Write a fitted :class:`PrivateLogisticRegression` or :class:`PrivateRobustRegression`
    to ``path`` as JSON (see the module docstring for the content); returns the path."""
    payload = to_payload(model)
    path = Path(path)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True, allow_nan=False) + "\n")
    return path


# ---------------------------------------------------------------- load


def _read(path: str | Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ModelFileError(f"{path}: not a JSON model file (not UTF-8 text)") from None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"{path}: not a JSON model file ({exc})") from None
    if not isinstance(payload, dict):
        raise ModelFileError(f"{path}: not a model file (a JSON {type(payload).__name__})")
    return payload


def _check_header(payload: dict[str, Any]) -> None:
    if payload.get("format") != FORMAT:
        raise ModelFileError(
            f"wrong format {payload.get('format')!r}: expected {FORMAT!r} (an objpert model file)"
        )
    if payload.get("version") != VERSION:
        raise ModelFileError(
            f"unsupported format version {payload.get('version')!r}: this objpert reads "
            f"version {VERSION}"
        )
    missing = [k for k in _REQUIRED if k not in payload]
    if missing:
        raise ModelFileError(f"model file is missing keys {missing}")
    if not isinstance(payload["digest"], str) or digest(payload) != payload["digest"]:
        raise ModelFileError(
            "digest mismatch: the file was tampered with or corrupted (its SHA-256 digest "
            "does not match its content)"
        )


def _decode_classes(data: Any) -> np.ndarray:
    if not isinstance(data, dict) or set(data) != {"values", "dtype"}:
        raise ModelFileError("classes must be an object with keys 'values' and 'dtype'")
    try:
        dtype = np.dtype(data["dtype"])
    except TypeError:
        raise ModelFileError(f"classes has an unknown dtype {data['dtype']!r}") from None
    if dtype.kind not in _CLASS_KINDS or not isinstance(data["values"], list):
        raise ModelFileError(f"classes cannot have dtype {dtype}")
    try:
        classes = np.array(data["values"], dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"classes do not fit dtype {dtype}: {exc}") from None
    if classes.ndim != 1:
        raise ModelFileError(f"classes must be a list; got shape {classes.shape}")
    return classes


def _array(name: str, value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelFileError(f"{name} must be numbers; got {value!r:.80}") from None
    if not np.all(np.isfinite(arr)):
        raise ModelFileError(f"{name} has non-finite values")
    return arr


def _check_shapes(payload, cls) -> tuple[np.ndarray, Any, np.ndarray | None, int]:
    """coef, intercept, classes, number of releases, after checking they agree."""
    n_features = payload["n_features_in"]
    if not isinstance(n_features, int) or isinstance(n_features, bool) or n_features < 1:
        raise ModelFileError(f"n_features_in must be a positive integer; got {n_features!r}")
    names = payload["feature_names_in"]
    if names is not None and (
        not isinstance(names, list)
        or len(names) != n_features
        or not all(isinstance(s, str) for s in names)
    ):
        raise ModelFileError(f"inconsistent shapes: feature_names_in must list {n_features} names")
    coef = _array("coef", payload["coef"])
    if cls is PrivateRobustRegression:
        if payload["classes"] is not None:
            raise ModelFileError("a regression model has no classes")
        if coef.shape != (n_features,):
            raise ModelFileError(
                f"inconsistent shapes: coef has shape {coef.shape}, expected ({n_features},) "
                f"for n_features_in = {n_features}"
            )
        intercept = payload["intercept"]
        if isinstance(intercept, bool) or not isinstance(intercept, int | float):
            raise ModelFileError(f"intercept must be a number; got {intercept!r:.80}")
        return coef, float(intercept), None, 1
    classes = _decode_classes(payload["classes"])
    k = len(classes)
    if k < 2 or len(np.unique(classes)) != k:
        raise ModelFileError(
            f"inconsistent classes: need at least two distinct labels; got {classes.tolist()!r}"
        )
    rows = 1 if k == 2 else k
    if coef.shape != (rows, n_features):
        raise ModelFileError(
            f"inconsistent shapes: coef has shape {coef.shape}, expected ({rows}, {n_features}) "
            f"for {k} classes and n_features_in = {n_features}"
        )
    intercept = _array("intercept", payload["intercept"])
    if intercept.shape != (rows,):
        raise ModelFileError(
            f"inconsistent shapes: intercept has shape {intercept.shape}, expected ({rows},)"
        )
    return coef, intercept, classes, rows


def _recertify(plans_data: Any, releases: int, model: Any, p: dict[str, Any]) -> list[Plan]:
    """Rebuild each plan, recompute its certificate and check it against the model."""
    if not isinstance(plans_data, list) or len(plans_data) != releases:
        raise ModelFileError(
            f"inconsistent shapes: expected {releases} plan(s), one per release; got "
            f"{len(plans_data) if isinstance(plans_data, list) else plans_data!r}"
        )
    d = model.n_features_in_ + (1 if p["fit_intercept"] else 0)
    c = 0.0
    if p["fit_intercept"]:
        c = p["data_norm"] if p["intercept_scaling"] is None else p["intercept_scaling"]
    zeta = total_norm(p["data_norm"], c)
    plans = []
    for i, data in enumerate(plans_data):
        try:
            plan = plan_from_dict(data)
            pc = plan.constants
            cert = plan.recertify()
        except ModelFileError as exc:
            raise ModelFileError(f"plan {i}: {exc}") from None
        except Exception as exc:  # any garbage in the numbers: refuse, naming it
            raise ModelFileError(f"plan {i} could not be recertified: {exc}") from None
        if not cert.certified:
            raise ModelFileError(
                f"plan {i} does not certify when recomputed: {'; '.join(cert.reasons)}"
            )
        if cert.delta > plan.delta or cert.epsilon != plan.epsilon:
            raise ModelFileError(
                f"plan {i} recertifies to (epsilon={cert.epsilon:g}, delta={cert.delta:.3g}), "
                f"not its target (epsilon={plan.epsilon:g}, delta={plan.delta:.3g})"
            )
        where = _close(_normal(cert.to_dict()), data["certificate"])
        if where:
            raise ModelFileError(
                f"plan {i}: the recomputed certificate differs from the stored one at {where}"
            )
        expected = {
            "loss": model._loss,
            "d": d,
            "method": p["calibration"],
            "loss_params": [] if p["scale"] is None else [["scale", p["scale"]]],
        }
        found = {
            "loss": pc.loss,
            "d": pc.d,
            "method": plan.method,
            "loss_params": _normal(pc.loss_params),
        }
        for key, want in expected.items():
            if found[key] != want:
                raise ModelFileError(
                    f"plan {i} does not match the model: {key} = {found[key]!r}, expected {want!r}"
                )
        checks = [
            ("zeta", pc.zeta, zeta),
            ("plan n", plan.n, pc.n),
            ("plan d", plan.d, pc.d),
            ("plan zeta", plan.zeta, pc.zeta),
            ("plan mu", plan.mu, pc.mu),
            ("plan eta", plan.eta, pc.eta),
            ("plan sigma", plan.sigma, plan.certificate.sigma),
        ]
        if p["mu"] is not None:
            checks.append(("mu (alpha)", pc.mu, p["mu"]))
        for key, got, want in checks:
            if not math.isclose(got, want, rel_tol=_RTOL):
                raise ModelFileError(
                    f"plan {i} does not match the model: {key} = {got!r}, expected {want!r}"
                )
        plans.append(plan)
    ns = {pl.n for pl in plans}
    if len(ns) != 1:
        raise ModelFileError(f"the plans are for different numbers of rows {sorted(ns)}")
    return plans


def _certificate(data: Any, plans: list[Plan], p: dict[str, Any]):
    """The stored certificate, checked against the recertified plans and the target."""
    if not isinstance(data, dict):
        raise ModelFileError("certificate must be a JSON object")
    try:
        if len(plans) == 1:
            cert: Certificate | ComposedCertificate = certificate_from_dict(data)
            recomputed = _normal(plans[0].recertify().to_dict())
        else:
            composed = ComposedCertificate.from_dict(data)
            cert = composed
            recomputed = _normal(
                compose(
                    [pl.recertify() for pl in plans],
                    composed.method,
                    delta_slack=composed.delta_slack or None,
                ).to_dict()
            )
    except ModelFileError:
        raise
    except Exception as exc:
        raise ModelFileError(f"the stored certificate cannot be read: {exc}") from None
    where = _close(recomputed, data)
    if where:
        raise ModelFileError(
            f"the stored certificate differs from the one recomputed from the plans at {where}"
        )
    if cert.epsilon > p["epsilon"] * (1 + _RTOL) or cert.delta > p["delta"]:
        raise ModelFileError(
            f"the certificate ({cert.epsilon:g}, {cert.delta:.3g}) exceeds the model's target "
            f"(epsilon={p['epsilon']:g}, delta={p['delta']:.3g})"
        )
    return cert


def from_payload(payload: dict[str, Any]) -> Any:
    """Rebuild a fitted estimator from a model file's content, checking everything."""
    _check_header(payload)
    cls = _ESTIMATORS.get(payload["estimator"])
    if cls is None:
        raise ModelFileError(
            f"unknown estimator {payload['estimator']!r}: expected one of {sorted(_ESTIMATORS)}"
        )
    params = payload["params"]
    if not isinstance(params, dict):
        raise ModelFileError("params must be a JSON object")
    try:
        model = cls(**params)
        p = model._public_constants()
    except TypeError as exc:
        raise ModelFileError(f"params do not fit {cls.__name__}: {exc}") from None
    except ObjpertError as exc:
        raise ModelFileError(f"invalid params: {exc}") from None
    coef, intercept, classes, releases = _check_shapes(payload, cls)
    model.n_features_in_ = payload["n_features_in"]
    plans = _recertify(payload["plans"], releases, model, p)
    certificate = _certificate(payload["certificate"], plans, p)
    n_iter = _array("n_iter", payload["n_iter"])
    if n_iter.shape != (releases,) or any(
        int(k) != pl.iterations for k, pl in zip(n_iter, plans, strict=True)
    ):
        raise ModelFileError(f"n_iter {n_iter.tolist()} does not match the plans' iteration counts")
    if payload["feature_names_in"] is not None:
        model.feature_names_in_ = np.asarray(payload["feature_names_in"], dtype=object)
    model.coef_ = coef
    model.intercept_ = intercept
    if classes is not None:
        model.classes_ = classes
    model.n_iter_ = n_iter.astype(np.int64)
    model.plan_ = plans[0] if releases == 1 else plans
    model.certificate_ = certificate
    return model


def load(path: str | Path) -> Any:
    """Read a model written by :func:`save`, refusing (:class:`ModelFileError`) any file that
    is not JSON, has another format or version, misses keys, fails its digest, has
    inconsistent shapes, or whose plans do not recertify to the stored certificate."""
    return from_payload(_read(path))
