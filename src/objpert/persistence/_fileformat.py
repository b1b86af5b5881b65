"""The model file format: constants, the canonical JSON, the digest and the HMAC-SHA-256
signature, and the checks of a file before its model is rebuilt."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import reprlib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from objpert._jsonable import canonical_json, to_json_value
from objpert.accounting._accountant import PrivacyAccountant
from objpert.accounting._composition import (
    certificate_from_dict,
)
from objpert.certify._plan import WatkinsAroraPlan
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ModelFileError

__all__ = [
    "FORMAT",
    "KEY_ENV",
    "MAX_BYTES",
    "SIGNATURE_ALGORITHM",
    "VERSION",
    "LoadedModel",
    "check_tree",
    "digest",
    "plan_from_dict",
    "quote_value",
    "require_same",
    "signature",
    "signing_key",
]


FORMAT = "objpert-model"
#: The format version written and read: a file of any other version is refused.
VERSION = 2
KEY_ENV = "OBJPERT_MODEL_KEY"
SIGNATURE_ALGORITHM = "hmac-sha256"
_RTOL = 1e-9  # recomputed certificates may differ from stored ones by rounding only

#: The largest model file :func:`~objpert.persistence.load` reads (64 MiB; ``max_bytes=``
#: changes it). A saved model takes about 25 bytes per weight plus a few KB: 54 KB for 10
#: classes of 100 features, 280 KB for 10 classes of 1,000, so 64 MiB holds about 2.5
#: million weights. The size is checked before the file is read.
MAX_BYTES = 64 * 1024 * 1024


def quote_value(value: Any, limit: int = 60, *, quote: bool = True) -> str:
    """A value read from a file as error messages show it: its repr (control and other
    non-printable characters escaped), at most ``limit`` characters of it, followed by
    "... (N characters)" when a string is cut, or "(N items)" for a list or dict.
    ``quote=False``: a string as it is (an error's own message), only its non-printable
    characters escaped. The cost is bounded whatever the value's size (a string is cut
    before it is escaped, a list or dict summarised with :mod:`reprlib`)."""
    if isinstance(value, str):
        head = value[: limit + 1]
        if quote:
            body = repr(head)
        else:
            body = "".join(c if c.isprintable() else repr(c)[1:-1] for c in head)
        if len(value) <= limit and len(body) <= limit + (2 if quote else 0):
            return body
        return f"{body[:limit]}... ({len(value)} characters)"
    if isinstance(value, bool | int | float) or value is None:
        text = repr(value)
        return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
    brief = reprlib.Repr()
    brief.maxstring = brief.maxother = max(limit // 2, 12)
    brief.maxlist = brief.maxdict = brief.maxtuple = brief.maxset = 4
    text = brief.repr(value)
    if len(text) > limit:
        text = f"{text[:limit]}..."
    if isinstance(value, list | dict | tuple | set):
        text = f"{text} ({len(value)} items)"
    return text


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
    "releases",
    "digest",
    "signature",
)
# preprocessing: a pipeline's steps; selection: the private search that chose the model
_OPTIONAL = ("objpert_version", "preprocessing", "selection", "privacy_unit")
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
        what = "entries" if isinstance(self.model, PrivacyAccountant) else "weights"
        if self.signature == "verified":
            return "signed and verified"
        if self.signature == "no key":
            return f"signed, not verified (no key: pass one or set {KEY_ENV}): {what} unverified"
        return f"unsigned: {what} unverified"

    @property
    def warning(self) -> str:
        """The :class:`UnverifiedModelWarning` text of an unverified file."""
        if self.signature == "no key":
            what = f"signed, but no key was given to verify it (pass key= or set {KEY_ENV})"
        else:
            what = "the file is unsigned"
        if isinstance(self.model, PrivacyAccountant):
            return (
                f"{what}: anyone could have written this ledger (its releases were "
                f"re-derived and its composition replayed within its budget); sign ledger "
                f"files with a key (save(..., key=...) or {KEY_ENV})"
            )
        return (
            f"{what}: its weights are unverified (its plans were re-derived and check out, "
            f"but anyone could have written the file); sign model files with a key "
            f"(save(..., key=...) or {KEY_ENV})"
        )


# ---------------------------------------------------------------- JSON helpers


def _jsonable(value: Any) -> Any:
    """Plain JSON values (:func:`objpert._jsonable.to_json_value`); anything else refused."""
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


def plan_from_dict(data: dict[str, Any]) -> WatkinsAroraPlan:
    """Inverse of :meth:`WatkinsAroraPlan.to_dict` (the certificate rebuilt from its flat dict)."""
    if not isinstance(data, dict):
        raise ModelFileError(f"a plan must be a JSON object; got {type(data).__name__}")
    names = {f.name for f in fields(WatkinsAroraPlan)}
    required = {f.name for f in fields(WatkinsAroraPlan) if f.name not in ("objective", "rows")}
    missing = sorted(required - set(data))
    if missing:
        raise ModelFileError(f"plan is missing keys {missing}")
    unknown = sorted(set(data) - names)
    if unknown:
        raise ModelFileError(f"plan has unknown keys {quote_value(unknown)}")
    kwargs = dict(data)
    kwargs["certificate"] = certificate_from_dict(data["certificate"])
    return WatkinsAroraPlan(**kwargs)


def _close(a: Any, b: Any, path: str = "") -> str | None:
    """Where two JSON values differ beyond rounding (a path), or None when they agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path or '.'} keys {quote_value(sorted(set(a) ^ set(b)))}"
        for k in sorted(a):
            where = _close(a[k], b[k], f"{path}.{quote_value(k, quote=False)}")
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


def require_same(recomputed: Any, stored: Any, what: str) -> None:
    """ModelFileError ``"{what} at <path>"`` unless ``recomputed.to_dict()`` equals the
    stored record ``stored`` (a dict as read from the file), naming the first difference."""
    where = _close(_normal(recomputed.to_dict()), _normal(stored))
    if where:
        raise ModelFileError(f"{what} at {quote_value(where, 200, quote=False)}")


def _not_public(data: dict[str, Any], where: str) -> tuple[str, ...]:
    """The ``not_public`` items stored in a certificate's dict."""
    if "not_public" not in data:
        raise ModelFileError(f"{where}: the certificate is missing its not_public list")
    items = data["not_public"]
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise ModelFileError(
            f"{where}: not_public must be a list of strings; got {quote_value(items)}"
        )
    if len(set(items)) != len(items):
        raise ModelFileError(f"{where}: not_public lists an item twice: {quote_value(items)}")
    return tuple(items)


def _check_model_certificate(
    cert: Any, stored: dict[str, Any], epsilon: float, delta: float, source: str
) -> None:
    """ModelFileError unless the certificate recomputed from ``source`` (e.g. "the plans")
    equals the stored one and stays within the model's target (epsilon, delta)."""
    require_same(
        cert, stored, f"the stored certificate differs from the one recomputed from {source}"
    )
    if cert.epsilon > epsilon * (1 + _RTOL) or cert.delta > delta:
        raise ModelFileError(
            f"the certificate ({cert.epsilon:g}, {cert.delta:.3g}) exceeds the model's target "
            f"(epsilon={epsilon:g}, delta={delta:.3g})"
        )


# ---------------------------------------------------------------- load


def check_max_bytes(max_bytes: Any) -> int:
    """``max_bytes`` of :func:`~objpert.persistence.load`: a positive integer."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ModelFileError(
            f"max_bytes must be a positive integer (bytes); got {quote_value(max_bytes)}"
        )
    return max_bytes


def _too_large(path: str | Path, size: int | str, max_bytes: int) -> ModelFileError:
    return ModelFileError(
        f"{path}: {size} bytes is more than a model file may have ({max_bytes} bytes; a "
        f"saved model takes about 25 bytes per weight: 54 KB for 10 classes of 100 "
        f"features); refused unread (to read it, raise the limit: max_bytes= of load, or "
        "--max-bytes of the command line)"
    )


def _read_bytes(path: str | Path, max_bytes: int) -> bytes:
    """The file's bytes, refusing one of more than ``max_bytes`` bytes: its size is
    checked first (``os.fstat``), and at most ``max_bytes + 1`` bytes are ever read (a
    file that grows, a pipe). ``path`` is a file name: an int (a file descriptor, which
    ``open`` would read and close) is refused."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"a model file's path must be a str or os.PathLike; got {path!r:.40}")
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > max_bytes:
            raise _too_large(path, size, max_bytes)
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(path, f"more than {max_bytes}", max_bytes)
    return data


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: a file with a key twice is refused
    (readers disagree on which value counts, so a signature over one would not cover
    the other)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ModelFileError(f"the key {quote_value(key, 60)} is given twice")
        out[key] = value
    return out


def _read(path: str | Path, max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    data = _read_bytes(path, check_max_bytes(max_bytes))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFileError(f"{path}: not a JSON model file (not UTF-8 text)") from None
    del data
    try:
        payload = json.loads(
            text, parse_constant=_no_constant, parse_float=_finite_float,
            parse_int=_bounded_int, object_pairs_hook=_unique_keys,
        )  # fmt: skip
    except (json.JSONDecodeError, ModelFileError) as exc:
        raise ModelFileError(f"{path}: not a JSON model file ({exc})") from None
    except (RecursionError, ValueError) as exc:  # nesting, Python's integer-digits limit
        what = "nested too deeply" if isinstance(exc, RecursionError) else f"{exc}"[:200]
        raise ModelFileError(f"{path}: not a JSON model file ({what})") from None
    if not isinstance(payload, dict):
        raise ModelFileError(f"{path}: not a model file (a JSON {type(payload).__name__})")
    try:
        check_tree(payload)
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: not a model file ({exc})") from None
    return payload


#: The deepest nesting of arrays and objects a model file may have (its own is about 6).
MAX_DEPTH = 32
#: The most digits an integer of a model file may have (counts, seeds: far fewer).
MAX_INT_DIGITS = 100


def _no_constant(name: str) -> Any:
    raise ModelFileError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or exponent; one beyond the float64 range (1e400,
    read as inf by Python) is refused."""
    value = float(text)
    if not math.isfinite(value):
        raise ModelFileError(f"{text[:40]} is beyond the float64 range")
    return value


def _bounded_int(text: str) -> int:
    """A JSON integer of at most :data:`MAX_INT_DIGITS` digits."""
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ModelFileError(
            f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS} allowed)"
        )
    return int(text)


def check_tree(payload: Any) -> None:
    """Refuse (ModelFileError) a JSON value nested more than :data:`MAX_DEPTH` levels, or
    holding a non-finite float, an integer of more than :data:`MAX_INT_DIGITS` digits or a
    value JSON does not have. Iterative: no recursion on hostile input."""
    stack = [(payload, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level > MAX_DEPTH:
                raise ModelFileError(
                    f"nested more than {MAX_DEPTH} levels deep (a model file has about 6)"
                )
            if isinstance(item, dict) and not all(isinstance(k, str) for k in item):
                raise ModelFileError("an object has a key that is not a string")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, level + 1) for c in children)
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        elif isinstance(item, int):
            if abs(item) >= 10**MAX_INT_DIGITS:
                raise ModelFileError(f"an integer of more than {MAX_INT_DIGITS} digits")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ModelFileError(f"{item!r} is not a JSON number")
        else:
            raise ModelFileError(f"a {type(item).__name__} is not a JSON value")


def _check_header(payload: dict[str, Any]) -> int:
    if payload.get("format") != FORMAT:
        raise ModelFileError(
            f"wrong format {quote_value(payload.get('format'))}: expected {FORMAT!r} (an "
            "objpert model file)"
        )
    version = payload.get("version")
    if isinstance(version, bool) or version != VERSION:
        raise ModelFileError(
            f"unsupported format version {quote_value(version)}: this objpert reads version "
            f"{VERSION}"
        )
    missing = [k for k in _REQUIRED if k not in payload]
    if missing:
        raise ModelFileError(f"model file is missing keys {missing}")
    unknown = sorted(set(payload) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise ModelFileError(f"model file has unknown keys {quote_value(unknown)}")
    return version


def _check_signature(payload: dict[str, Any], key: bytes | None) -> str:
    """Returns "verified", "unsigned" or "no key"; refuses a signature that does not verify."""
    sig = payload["signature"]
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
            f"unknown signature algorithm {quote_value(sig['algorithm'])}: expected "
            f"{SIGNATURE_ALGORITHM!r}"
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
