"""Save and load fitted private models as JSON, with their plans and certificates.

A model file (format ``objpert-model``, version 2; docs/persistence.md) holds the
estimator's class and parameters, the released weights (``coef_``, ``intercept_``),
``classes_`` (values and dtype, so string, integer and boolean labels round-trip),
``n_features_in_`` (and ``feature_names_in_``), every release's
:class:`~objpert.certify.calibration.Plan`, each release's iteration count and whether its
noise came from a testing seed, the certificate (a
:class:`~objpert.certify.certificate.Certificate` or a
:class:`~objpert.certify.composition.ComposedCertificate`, with its ``not_public`` items),
a SHA-256 ``digest`` of the canonical JSON (sorted keys, compact separators) of everything
but the digest and the signature, and a ``signature``: an HMAC-SHA-256 of the canonical
JSON of everything but the signature, or ``null`` for an unsigned file.

Signing: ``save(model, path, key)`` signs with ``key`` (bytes or str) or, when ``key`` is
None, with the value of the environment variable ``OBJPERT_MODEL_KEY``; with neither the
file is unsigned. ``load(path, key)`` takes its key the same way. A signed file whose HMAC
does not verify under the key is refused; an unsigned file, or a signed one loaded without
a key, loads with an :class:`~objpert.errors.UnverifiedModelWarning`.

:func:`load` refuses, with :class:`ModelFileError`, a file that is not JSON, of another
format or version, with missing or unknown keys, whose signature or digest does not match,
whose arrays have inconsistent shapes, or whose plans do not re-derive: every plan is
re-derived by :func:`~objpert.certify.calibration.rederive_plan` (constants rebuilt from
the loss registry, eta <= 1/L, the certificate recomputed) and checked against the
estimator's parameters and the other plans (n, d, zeta, loss, mu, the per-release
epsilon/delta split, the calibration).

What the checks mean:

- The digest detects corruption. It is not a signature: anyone who edits the file can
  recompute it.
- The signature proves that the file was written by a holder of the key, unchanged.
- Re-derivation proves that the stored *numbers* are a valid certificate of a release with
  the model's parameters; without a signature it cannot prove that the stored weights came
  from that release.

Not saved: ``n_clipped_`` and each release's ``n_clipped`` (statistics of the training
data that no certificate covers), each release's ``seconds`` (timing is a side channel on
the data), and the release weights themselves (they are ``coef_``/``intercept_``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
import os
import warnings
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

import objpert
from objpert.certify.calibration import Plan, rederive_plan
from objpert.certify.certificate import Certificate
from objpert.certify.composition import (
    ComposedCertificate,
    certificate_from_dict,
    compose,
    split_budget,
)
from objpert.data import total_norm
from objpert.estimators import LABEL_SET, PrivateLogisticRegression, PrivateRobustRegression
from objpert.estimators.base import FitSettings
from objpert.exceptions import ModelFileError, ObjpertError, UnverifiedModelWarning
from objpert.jsonable import canonical_json, to_json_value

__all__ = [
    "FORMAT",
    "KEY_ENV",
    "VERSION",
    "LoadedModel",
    "ModelFileError",
    "load",
    "plan_from_dict",
    "read",
    "save",
]

FORMAT = "objpert-model"
VERSION = 2
READABLE_VERSIONS = (1, 2)
KEY_ENV = "OBJPERT_MODEL_KEY"
SIGNATURE_ALGORITHM = "hmac-sha256"
_RTOL = 1e-9  # recomputed certificates may differ from stored ones by rounding only

_ESTIMATORS = {
    "PrivateLogisticRegression": PrivateLogisticRegression,
    "PrivateRobustRegression": PrivateRobustRegression,
}
_REQUIRED_V1 = (
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
_REQUIRED = {1: _REQUIRED_V1, 2: (*_REQUIRED_V1, "releases", "signature")}
_OPTIONAL = ("objpert_version",)
_UNSIGNED = ("digest", "signature")  # the digest covers everything but these
_CLASS_KINDS = "biufUO"  # bool, int, uint, float, str, object (of str/int/float/bool)


@dataclass(frozen=True)
class LoadedModel:
    """A model read by :func:`read`, with what its file proved about it.

    ``signature``: ``"verified"`` (signed, and the HMAC holds under the key),
    ``"unsigned"`` (the file carries no signature) or ``"no key"`` (signed, but no key was
    given and ``OBJPERT_MODEL_KEY`` is unset, so the signature was not checked).
    """

    model: Any
    version: int
    signature: str

    @property
    def verified(self) -> bool:
        return self.signature == "verified"

    @property
    def status(self) -> str:
        """One line for people: what the signature proves."""
        if self.signature == "verified":
            return "signed and verified"
        if self.signature == "no key":
            return f"signed, not verified (no key: pass one or set {KEY_ENV}): weights unverified"
        return "unsigned: weights unverified"

    @property
    def warning(self) -> str:
        """The :class:`UnverifiedModelWarning` text of an unverified file."""
        if self.signature == "no key":
            what = f"signed, but no key was given to verify it (pass key= or set {KEY_ENV})"
        elif self.version < 2:
            what = f"a version {self.version} model file (unsigned; seeding not recorded)"
        else:
            what = "the file is unsigned"
        return (
            f"{what}: its weights are unverified (its plans were re-derived and check out, "
            f"but anyone could have written the file); sign model files with a key "
            f"(save(..., key=...) or {KEY_ENV})"
        )


# ---------------------------------------------------------------- JSON helpers


def _jsonable(value: Any) -> Any:
    """Plain JSON values (:func:`objpert.jsonable.to_json_value`); anything else refused."""
    try:
        return to_json_value(value, strict=True)
    except TypeError as exc:
        raise ModelFileError(f"cannot save {exc}") from None


def digest(payload: dict[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of ``payload`` without ``digest`` and
    ``signature``."""
    body = {k: v for k, v in payload.items() if k not in _UNSIGNED}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def signing_key(key: bytes | str | None = None) -> bytes | None:
    """The HMAC key: ``key`` (str is UTF-8 encoded) or, when None, the value of the
    environment variable ``OBJPERT_MODEL_KEY`` (None when unset or empty)."""
    if key is None:
        text = os.environ.get(KEY_ENV)
        return os.fsencode(text) if text else None
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, bytes | bytearray | memoryview):
        raise ModelFileError(f"a signing key must be bytes or str; got {type(key).__name__}")
    key = bytes(key)
    if not key:
        raise ModelFileError("the signing key is empty")
    return key


def signature(payload: dict[str, Any], key: bytes) -> str:
    """HMAC-SHA-256 (hex) of the canonical JSON of ``payload`` without ``signature``."""
    body = {k: v for k, v in payload.items() if k != "signature"}
    return hmac.new(key, canonical_json(body).encode("utf-8"), hashlib.sha256).hexdigest()


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


def _not_public(data: dict[str, Any], where: str) -> tuple[str, ...]:
    """The ``not_public`` items stored in a certificate's dict (none in version 1 files)."""
    items = data.get("not_public", [])
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise ModelFileError(f"{where}: not_public must be a list of strings; got {items!r:.80}")
    if len(set(items)) != len(items):
        raise ModelFileError(f"{where}: not_public lists an item twice: {items!r:.80}")
    return tuple(items)


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


def _release_records(model: Any, plans: list[Plan]) -> list[dict[str, Any]]:
    """Per release: its iteration count and whether a testing seed drew its noise.

    Not its ``n_clipped`` (a statistic of the private data) nor its ``seconds`` (timing
    is a side channel)."""
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
    name = type(model).__name__
    if _ESTIMATORS.get(name) is not type(model):
        raise ModelFileError(
            f"can only save {sorted(_ESTIMATORS)}; got {type(model).__module__}.{name}"
        )
    if not hasattr(model, "coef_"):
        raise ModelFileError(f"this {name} is not fitted: call fit before save")
    secret = signing_key(key)
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
        "releases": _release_records(model, plans),
        "certificate": _jsonable(cert.to_dict()),
    }
    payload = _normal(payload)
    try:  # the file must load: the params must still be those the plans were fitted with
        _rebuild(payload, VERSION)
    except ModelFileError as exc:
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
    to ``path`` as JSON (see the module docstring for the content); returns the path.

    Signed with HMAC-SHA-256 under ``key`` (bytes or str) or, when ``key`` is None, under
    the value of ``OBJPERT_MODEL_KEY``; unsigned when neither is set. Refuses
    (:class:`ModelFileError`) a model whose parameters no longer match its fitted plans."""
    payload = to_payload(model, key)
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
        payload = json.loads(text, parse_constant=_no_constant)
    except (json.JSONDecodeError, ModelFileError) as exc:
        raise ModelFileError(f"{path}: not a JSON model file ({exc})") from None
    except RecursionError:
        raise ModelFileError(f"{path}: not a JSON model file (nested too deeply)") from None
    if not isinstance(payload, dict):
        raise ModelFileError(f"{path}: not a model file (a JSON {type(payload).__name__})")
    return payload


def _no_constant(name: str) -> Any:
    raise ModelFileError(f"{name} is not a JSON number")


def _check_header(payload: dict[str, Any]) -> int:
    if payload.get("format") != FORMAT:
        raise ModelFileError(
            f"wrong format {payload.get('format')!r}: expected {FORMAT!r} (an objpert model file)"
        )
    version = payload.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise ModelFileError(
            f"unsupported format version {version!r}: this objpert reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    missing = [k for k in _REQUIRED[version] if k not in payload]
    if missing:
        raise ModelFileError(f"model file is missing keys {missing}")
    unknown = sorted(set(payload) - set(_REQUIRED[version]) - set(_OPTIONAL))
    if unknown:
        raise ModelFileError(f"model file has unknown keys {unknown}")
    return version


def _check_signature(payload: dict[str, Any], version: int, key: bytes | None) -> str:
    """Returns "verified", "unsigned" or "no key"; refuses a signature that does not verify."""
    sig = payload.get("signature") if version >= 2 else None
    if sig is None:
        return "unsigned"
    if (
        not isinstance(sig, dict)
        or set(sig) != {"algorithm", "value"}
        or not isinstance(sig["value"], str)
    ):
        raise ModelFileError("signature must be null or an object with 'algorithm' and 'value'")
    if sig["algorithm"] != SIGNATURE_ALGORITHM:
        raise ModelFileError(
            f"unknown signature algorithm {sig['algorithm']!r}: expected {SIGNATURE_ALGORITHM!r}"
        )
    if key is None:
        return "no key"
    if not hmac.compare_digest(sig["value"].encode("ascii", "replace"), _sign(payload, key)):
        raise ModelFileError(
            "signature does not verify: the file was altered after it was signed, or it was "
            "signed with another key"
        )
    return "verified"


def _sign(payload: dict[str, Any], key: bytes) -> bytes:
    return signature(payload, key).encode("ascii")


def _check_digest(payload: dict[str, Any]) -> None:
    if not isinstance(payload["digest"], str) or not hmac.compare_digest(
        digest(payload).encode("ascii"), payload["digest"].encode("ascii", "replace")
    ):
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


def _rederive(i: int, data: Any) -> tuple[Plan, Certificate]:
    """Plan ``i`` and its certificate re-derived from the loss registry and the plan's
    public inputs (:func:`rederive_plan`), checked against the stored certificate."""
    try:
        plan = plan_from_dict(data)
        cert = rederive_plan(plan)
    except ModelFileError as exc:
        raise ModelFileError(f"plan {i}: {exc}") from None
    except Exception as exc:  # PrivacyError or any garbage in the numbers: refuse, naming it
        raise ModelFileError(f"plan {i} is refused: {' '.join(str(exc).split())}") from None
    if not cert.certified:
        raise ModelFileError(
            f"plan {i} does not certify when recomputed: {'; '.join(cert.reasons)}"
        )
    if cert.delta > plan.delta or cert.epsilon != plan.epsilon:
        raise ModelFileError(
            f"plan {i} recertifies to (epsilon={cert.epsilon:g}, delta={cert.delta:.3g}), "
            f"not its target (epsilon={plan.epsilon:g}, delta={plan.delta:.3g})"
        )
    stored = data["certificate"]
    cert = dataclasses.replace(cert, not_public=_not_public(stored, f"plan {i}"))
    where = _close(_normal(cert.to_dict()), _with_not_public(stored))
    if where:
        raise ModelFileError(
            f"plan {i}: the recomputed certificate differs from the stored one at {where}"
        )
    return dataclasses.replace(plan, certificate=cert), cert


def _with_not_public(data: dict[str, Any]) -> dict[str, Any]:
    """A stored certificate dict with ``not_public`` filled in (version 1 files lack it)."""
    out = dict(data)
    out.setdefault("not_public", [])
    if "certificates" in out and isinstance(out["certificates"], list):
        out["certificates"] = [
            _with_not_public(c) if isinstance(c, dict) else c for c in out["certificates"]
        ]
    return out


def _recertify(
    plans_data: Any, releases: int, model: Any, p: FitSettings
) -> tuple[list[Plan], list[Certificate]]:
    """Re-derive each plan and check it against the model's parameters and the others."""
    if not isinstance(plans_data, list) or len(plans_data) != releases:
        raise ModelFileError(
            f"inconsistent shapes: expected {releases} plan(s), one per release; got "
            f"{len(plans_data) if isinstance(plans_data, list) else plans_data!r}"
        )
    d = model.n_features_in_ + (1 if p.fit_intercept else 0)
    c = 0.0
    if p.fit_intercept:
        c = p.data_norm if p.intercept_scaling is None else p.intercept_scaling
    zeta = total_norm(p.data_norm, c)
    try:
        split = split_budget(p.epsilon, p.delta, releases)
    except ObjpertError as exc:
        raise ModelFileError(f"invalid params: {exc}") from None
    plans, certs = [], []
    for i, data in enumerate(plans_data):
        plan, cert = _rederive(i, data)
        pc = plan.constants
        expected = {
            "loss": model._loss,
            "d": d,
            "method": p.calibration,
            "objective": "empirical" if p.calibration == "tight" else "population",
            "loss_params": [] if p.scale is None else [["scale", p.scale]],
        }
        found = {
            "loss": pc.loss,
            "d": pc.d,
            "method": plan.method,
            "objective": plan.objective,
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
            ("epsilon (per release)", plan.epsilon, split.epsilon_i),
            ("delta (per release)", plan.delta, split.delta_i),
            ("comparator_norm", plan.comparator_radius, p.comparator_norm),
        ]
        if p.mu is not None:
            checks.append(("mu (alpha)", pc.mu, p.mu))
        for key, got, want in checks:
            if not math.isclose(got, want, rel_tol=_RTOL):
                raise ModelFileError(
                    f"plan {i} does not match the model: {key} = {got!r}, expected {want!r}"
                )
        if plan.method == "tight" and plan.iterations > p.max_iterations:
            raise ModelFileError(
                f"plan {i} does not match the model: {plan.iterations} iterations, more than "
                f"max_iterations = {p['max_iterations']}"
            )
        plans.append(plan)
        certs.append(cert)
    first = _normal(plans[0].to_dict())
    for i, plan in enumerate(plans[1:], start=1):  # one fit: one plan for all its releases
        where = _close(_normal(plan.to_dict()), first)
        if where:
            raise ModelFileError(
                f"plan {i} differs from plan 0 at {where}: the releases of one fit share a plan"
            )
    return plans, certs


def _certificate(
    data: Any, certs: list[Certificate], p: FitSettings, releases: int
) -> Certificate | ComposedCertificate:
    """The model's certificate recomputed from the re-derived plans, checked against the
    stored one and the target; its ``not_public`` items as stored."""
    if not isinstance(data, dict):
        raise ModelFileError("certificate must be a JSON object")
    not_public = _not_public(data, "certificate")
    split = split_budget(p.epsilon, p.delta, releases)
    if releases == 1:
        cert: Certificate | ComposedCertificate = dataclasses.replace(
            certs[0], not_public=not_public
        )
    else:
        inner = data.get("certificates")
        if not isinstance(inner, list) or len(inner) != releases:
            raise ModelFileError(f"the certificate must compose {releases} certificates")
        if not all(isinstance(c, dict) for c in inner):
            raise ModelFileError("the composed certificates must be JSON objects")
        parts = [
            dataclasses.replace(c, not_public=_not_public(s, f"certificate {i}"))
            for i, (c, s) in enumerate(zip(certs, inner, strict=True))
        ]
        if data.get("method") != split.method:
            raise ModelFileError(
                f"the certificate composes by {data.get('method')!r}, but the model's budget "
                f"is split by {split.method!r}"
            )
        try:
            cert = compose(
                parts, split.method, delta_slack=split.delta_slack or None, not_public=not_public
            )
        except ObjpertError as exc:
            raise ModelFileError(f"the certificates do not compose: {exc}") from None
    where = _close(_normal(cert.to_dict()), _with_not_public(data))
    if where:
        raise ModelFileError(
            f"the stored certificate differs from the one recomputed from the plans at {where}"
        )
    if cert.epsilon > p.epsilon * (1 + _RTOL) or cert.delta > p.delta:
        raise ModelFileError(
            f"the certificate ({cert.epsilon:g}, {cert.delta:.3g}) exceeds the model's target "
            f"(epsilon={p['epsilon']:g}, delta={p['delta']:.3g})"
        )
    return cert


def _check_labels(model: Any, classes: np.ndarray | None, not_public: tuple[str, ...]) -> None:
    """classes=None (labels read from the data) must be listed as not public; declared
    classes must be the model's classes_."""
    if classes is None:
        return
    declared = getattr(model, "classes", None)
    if declared is None:
        if LABEL_SET not in not_public:
            raise ModelFileError(
                f"the label set was read from the training data (classes=None), but the "
                f"certificate does not list {LABEL_SET!r} as not public"
            )
        return
    try:
        listed = np.asarray(declared).ravel().tolist()
        found = classes.tolist()
        same = len(listed) == len(found) and all(v in found for v in listed)
    except (TypeError, ValueError):
        same = False
    if not same:
        raise ModelFileError(
            f"classes_ {classes.tolist()!r} are not the declared classes {declared!r}"
        )


def _releases(data: Any, plans: list[Plan], p: FitSettings, params: dict) -> list[bool]:
    """The per-release records (version 2): iterations as planned; the seeded flags."""
    if not isinstance(data, list) or len(data) != len(plans):
        raise ModelFileError(f"releases must list {len(plans)} record(s), one per plan")
    seeded = []
    for i, (rec, plan) in enumerate(zip(data, plans, strict=True)):
        if not isinstance(rec, dict) or set(rec) != {"iterations", "seeded"}:
            raise ModelFileError(f"release {i} must be an object with 'iterations' and 'seeded'")
        if not isinstance(rec["seeded"], bool):
            raise ModelFileError(f"release {i}: seeded must be true or false")
        it = rec["iterations"]
        if isinstance(it, bool) or not isinstance(it, int) or it != plan.iterations:
            raise ModelFileError(
                f"release {i} ran {it!r} iterations, not its plan's {plan.iterations}"
            )
        seeded.append(rec["seeded"])
    if params.get("random_state") is not None and not all(seeded):
        raise ModelFileError("random_state is a seed, but the releases are recorded as not seeded")
    return seeded


def _rebuild(payload: dict[str, Any], version: int) -> Any:
    """A fitted estimator from a model file's content (header checked), checking it all."""
    try:
        return _rebuild_checked(payload, version)
    except ModelFileError:
        raise
    except Exception as exc:  # malformed content we did not foresee: refuse, never crash
        msg = " ".join(str(exc).split())
        raise ModelFileError(f"malformed model file: {type(exc).__name__}: {msg}") from None


def _rebuild_checked(payload: dict[str, Any], version: int) -> Any:
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
    plans, certs = _recertify(payload["plans"], releases, model, p)
    stored = payload["certificate"]
    if version == 1 and isinstance(stored, dict) and classes is not None:
        stored = {**stored, "not_public": [LABEL_SET]}  # version 1 read labels from the data
    certificate = _certificate(stored, certs, p, releases)
    _check_labels(model, classes, certificate.not_public)
    n_iter = _array("n_iter", payload["n_iter"])
    if n_iter.shape != (releases,) or any(
        int(k) != pl.iterations for k, pl in zip(n_iter, plans, strict=True)
    ):
        raise ModelFileError(f"n_iter {n_iter.tolist()} does not match the plans' iteration counts")
    if version >= 2:
        seeded = _releases(payload["releases"], plans, p, params)
    else:  # version 1 did not record it: an int seed is in params (a Generator was not)
        seeded = [params.get("random_state") is not None] * releases
    if payload["feature_names_in"] is not None:
        model.feature_names_in_ = np.asarray(payload["feature_names_in"], dtype=object)
    model.coef_ = coef
    model.intercept_ = intercept
    if classes is not None:
        model.classes_ = classes
    model.n_iter_ = n_iter.astype(np.int64)
    model.plan_ = plans[0] if releases == 1 else plans
    model.certificate_ = certificate
    model.seeded_ = bool(any(seeded))
    return model


def from_payload(payload: dict[str, Any], key: bytes | str | None = None) -> LoadedModel:
    """Check a model file's content (header, signature, digest, shapes, plans) and rebuild
    the fitted estimator."""
    version = _check_header(payload)
    status = _check_signature(payload, version, signing_key(key))
    _check_digest(payload)
    return LoadedModel(_rebuild(payload, version), version, status)


def read(path: str | Path, key: bytes | str | None = None) -> LoadedModel:
    """Read and check a model file like :func:`load`, without warning: the model with
    whether its signature was verified (:class:`LoadedModel`)."""
    return from_payload(_read(path), key)


def load(path: str | Path, key: bytes | str | None = None) -> Any:
    """Read a model written by :func:`save`, refusing (:class:`ModelFileError`) any file
    that is not JSON, has another format or version, misses keys, fails its signature or
    digest, has inconsistent shapes, or whose plans do not re-derive and match the model.

    ``key`` (bytes or str; None: ``OBJPERT_MODEL_KEY``) verifies the signature. An unsigned
    file, or a signed one without a key, loads with an :class:`UnverifiedModelWarning`."""
    loaded = read(path, key)
    if not loaded.verified:
        warnings.warn(f"{path}: {loaded.warning}", UnverifiedModelWarning, stacklevel=2)
    return loaded.model
