"""A privacy accountant's ledger as a file (format ``objpert-ledger``; docs/persistence.md).

``objpert.save(accountant, path, key)`` writes the budget, the grid of the privacy-loss
distributions and every step (its name, its releases, the structural choices it read from
the data), with the digest and the HMAC-SHA-256 signature of model files.
``objpert.load(path, key)`` gives back a :class:`~objpert.accounting.PrivacyAccountant`
that goes on spending where the saved one stopped.

Nothing stored is trusted. At load, each Watkins & Arora release is re-certified from its
public inputs (constants re-derived from the loss registry, the certificate recomputed by
Theorem C.13 or 4.1 and compared with the stored one); Gaussian, Laplace, zCDP and
subsampled Gaussian releases are rebuilt from their noise parameters, a peer's
exact-minimiser profile (kind ``objective``) from its checked public numbers; a release
known only by its (epsilon, delta) point is rebuilt as that point. The ledger is then
replayed, step by step, into a new accountant with the stored budget: a ledger whose
composition exceeds its budget is refused.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from objpert._validation import check_positive, validated
from objpert._validation import count as count_rule
from objpert.accounting import _pld as pldlib
from objpert.accounting._accountant import PrivacyAccountant
from objpert.accounting._certificate import ReleaseCertificate, certificate_from_dict
from objpert.accounting._events import subsampled_gaussian
from objpert.accounting._group import group_privacy
from objpert.certify._plan import certify_plan
from objpert.certify._profile import constants_from_certificate, profile_kind
from objpert.exceptions import ModelFileError, ObjpertError
from objpert.mechanisms._certificates.events import objective_loss
from objpert.persistence._fileformat import (
    SIGNATURE_ALGORITHM,
    LoadedModel,
    _check_digest,
    _check_signature,
    _jsonable,
    _normal,
    check_tree,
    digest,
    quote_value,
    require_same,
    signature,
    signing_key,
)

__all__ = [
    "LEDGER_FORMAT",
    "LEDGER_VERSION",
    "ledger_from_payload",
    "ledger_payload",
    "recertified",
    "recomposed",
]


def _rate(name: str, value: Any) -> float:
    """A sampling rate in (0, 1]."""
    q = check_positive(name, value)
    if q > 1.0:
        raise ModelFileError(f"{name} must be in (0, 1]; got {value!r}")
    return q


LEDGER_FORMAT = "objpert-ledger"
LEDGER_VERSION = 1
_KEYS = ("format", "version", "objpert_version", "budget", "steps", "digest", "signature")
_REBUILD = {
    "gaussian": pldlib.gaussian,
    "laplace": pldlib.laplace,
    "zcdp": pldlib.zcdp,
    "subsampled_gaussian": validated(
        noise_multiplier=check_positive, sampling_rate=_rate, count=count_rule(1)
    )(subsampled_gaussian),
    "objective": objective_loss,
}


def _release_record(loss: pldlib.PrivacyLoss) -> dict[str, Any]:
    """One release of a step: a Watkins & Arora certificate, or the kind and parameters;
    a release grouped for one person of k rows (objpert.accounting.group_privacy) as
    ``rows`` and, for the chain bound, the record of its one-row ``base``."""
    if loss.kind == "group":
        p = dict(loss.parameters)
        base = dataclasses.replace(p["base"], certificate=loss.certificate)
        return {"kind": "group", "count": loss.count, "rows": p["rows"],
                "base": _release_record(base)}  # fmt: skip
    out = _one_row_record(loss)
    if loss.rows != 1:
        out["rows"] = loss.rows
    return out


def _one_row_record(loss: pldlib.PrivacyLoss) -> dict[str, Any]:
    cert = loss.certificate
    if loss.kind in ("watkins_arora", "limit"):
        if not isinstance(cert, ReleaseCertificate):
            raise ModelFileError(
                f"a {loss.kind} release without its certificate cannot be saved: spend the "
                "plan, the certificate or the fitted estimator"
            )
        return {"count": loss.count, "certificate": _jsonable(cert.to_dict())}
    out = loss.to_dict()
    return {k: out[k] for k in ("kind", "count", "parameters")}


def ledger_payload(accountant: PrivacyAccountant, key: bytes | str | None = None) -> dict:
    """The ledger file's content (digest and signature included)."""
    from importlib.metadata import version

    if not accountant.steps:
        raise ModelFileError("nothing was spent: an empty ledger is not saved")
    secret = signing_key(key)
    payload: dict[str, Any] = {
        "format": LEDGER_FORMAT,
        "version": LEDGER_VERSION,
        "objpert_version": version("objpert"),
        "budget": {
            "epsilon": accountant.epsilon,
            "delta": accountant.delta,
            "discretization": accountant.discretization,
        },
        "steps": [
            {
                "name": s.name,
                "not_public": list(s.not_public),
                "releases": [_release_record(x) for x in s.losses],
            }
            for s in accountant.steps
        ],
    }
    payload = _normal(payload)
    check_tree(payload)
    ledger_from_payload({**payload, "digest": "", "signature": None}, check=False)
    payload["digest"] = digest(payload)
    payload["signature"] = (
        None
        if secret is None
        else {"algorithm": SIGNATURE_ALGORITHM, "value": signature(payload, secret)}
    )
    return payload


def recertified(data: Any, where: str) -> ReleaseCertificate:
    """A stored Watkins & Arora certificate (a dict) recomputed from its public inputs:
    constants re-derived from the loss registry, Theorem C.13 or 4.1 evaluated again (a
    softmax release's: its plan's public fields certified again), and the result required
    to certify and to equal the stored one (``where`` names it in the
    :class:`ModelFileError` otherwise)."""
    try:
        stored = certificate_from_dict(data)
        if stored.form == "multinomial":
            cert = _multinomial_recertified(stored)
        elif not profile_kind(stored):
            raise ModelFileError(f"{where}: not a Watkins & Arora certificate")
        else:
            cert = _watkins_arora_recertified(stored)
    except ModelFileError:
        raise
    except Exception as exc:  # garbage in the numbers: refuse, naming where
        raise ModelFileError(f"{where} is refused: {' '.join(str(exc).split())[:200]}") from None
    if not cert.certified:
        raise ModelFileError(f"{where} does not certify when recomputed: {'; '.join(cert.reasons)}")
    cert = dataclasses.replace(cert, not_public=stored.not_public)
    require_same(
        cert, stored.to_dict(), f"{where}: the recomputed certificate differs from the stored one"
    )
    return cert


def _watkins_arora_recertified(stored: ReleaseCertificate) -> ReleaseCertificate:
    """Theorem C.13 or 4.1 evaluated again at a certificate's public inputs, the constants
    re-derived from the loss registry."""
    pc = constants_from_certificate(stored)
    d = stored.details
    return certify_plan(
        pc, float(stored.sigma), stored.iterations, float(stored.epsilon), stored.form,
        d.get("u", 0.0), d.get("radius", 0.0), d.get("radius_outer", 0.0), stored.truncation,
    )  # fmt: skip


def _multinomial_recertified(stored: ReleaseCertificate) -> ReleaseCertificate:
    """A softmax release's certificate recomputed from its public fields: the plan they
    describe (n, d, K, zeta and mu of its constants, sigma, the split of the budget between
    objective and output, the solver's tolerance gamma, the output noise and grid) certified
    again (:func:`~objpert.mechanisms._certificates.multinomial.certify_multinomial`, its
    fields checked first); the loss must be the softmax's."""
    from objpert.mechanisms._certificates.multinomial import MultinomialPlan

    c, d = stored.constants, stored.details
    if c.get("loss") != "softmax":
        raise ModelFileError(f"a multinomial certificate of the loss {c.get('loss')!r}")
    plan = MultinomialPlan(
        n=c["n"], d=c["d"], n_classes=c["n_classes"], zeta=c["zeta"], mu=c["mu"],
        sigma=float(stored.sigma), epsilon=float(stored.epsilon), delta=float(stored.delta),
        epsilon_objective=d["epsilon_objective"], delta_objective=d["delta_objective"],
        epsilon_output=d["epsilon_output"], delta_output=d["delta_output"],
        tolerance=d["gamma"], output_sigma=d["output_sigma"], max_iter=1,
        grid_bits=d["output_grid_bits"],
    )  # fmt: skip
    return plan.recertify()


def recomposed(data: Any, where: str) -> Any:
    """A stored composition of Watkins & Arora releases (one-vs-rest's: basic, advanced or
    PLD) recomputed: each release by :func:`recertified`, the totals composed again by the
    stored method (:func:`~objpert.accounting._accountant.release_from_dict`), the result
    required to equal the stored one."""
    from objpert.accounting._accountant import release_from_dict

    parts = data.get("certificates") if isinstance(data, dict) else None
    if not isinstance(parts, list) or not parts:
        raise ModelFileError(f"{where}: a composition needs a non-empty list of certificates")
    fresh = [recertified(c, f"{where}, release {j}") for j, c in enumerate(parts)]
    try:
        cert = release_from_dict({**data, "certificates": [c.to_dict() for c in fresh]})
    except (ObjpertError, KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where} is refused: {' '.join(str(exc).split())[:200]}") from None
    require_same(cert, data, f"{where}: the recomposed certificate differs from the stored one")
    return cert


def _release(i: int, j: int, data: Any) -> pldlib.PrivacyLoss:
    if not isinstance(data, dict):
        raise ModelFileError(f"step {i}, release {j} must be a JSON object")
    count = data.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ModelFileError(f"step {i}, release {j}: count must be a positive integer")
    rows = data.get("rows", 1)
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise ModelFileError(f"step {i}, release {j}: rows must be a positive integer")
    if data.get("kind") == "group":  # the chain bound over a one-row release
        base = _release(i, j, {**data.get("base", {}), "count": 1})
        try:
            return group_privacy(base, rows).times(count)
        except ObjpertError as exc:
            raise ModelFileError(f"step {i}, release {j} is refused: {exc}") from None
    if rows != 1 and "certificate" not in data:  # a Gaussian grouped: parameters for k rows
        return dataclasses.replace(_release(i, j, {**data, "rows": 1}), rows=rows)
    if "certificate" in data:
        cert = recertified(data["certificate"], f"step {i}, release {j}")
        return pldlib.from_certificate(cert).times(count)
    kind, params = data.get("kind"), data.get("parameters")
    if not isinstance(params, dict):
        raise ModelFileError(f"step {i}, release {j}: parameters must be a JSON object")
    try:
        if kind in _REBUILD:
            return _REBUILD[kind](**params, count=count)
        if kind == "point":
            return pldlib.point(**params, count=count)
    except (ObjpertError, TypeError) as exc:
        raise ModelFileError(f"step {i}, release {j} is refused: {exc}") from None
    raise ModelFileError(f"step {i}, release {j}: unknown kind {quote_value(kind)}")


def _rebuild(payload: dict[str, Any]) -> PrivacyAccountant:
    budget, steps = payload["budget"], payload["steps"]
    if not isinstance(budget, dict) or set(budget) != {"epsilon", "delta", "discretization"}:
        raise ModelFileError("budget must hold epsilon, delta and discretization")
    if not isinstance(steps, list) or not steps:
        raise ModelFileError("steps must be a non-empty list")
    try:
        accountant = PrivacyAccountant(
            budget["epsilon"], budget["delta"], discretization=budget["discretization"]
        )
    except (ObjpertError, TypeError) as exc:
        raise ModelFileError(f"invalid budget: {exc}") from None
    for i, step in enumerate(steps):
        if not isinstance(step, dict) or set(step) != {"name", "not_public", "releases"}:
            raise ModelFileError(f"step {i} must hold name, not_public and releases")
        name, not_public, releases = step["name"], step["not_public"], step["releases"]
        if not isinstance(name, str) or not isinstance(not_public, list):
            raise ModelFileError(f"step {i}: name must be a string, not_public a list")
        if not all(isinstance(x, str) for x in not_public):
            raise ModelFileError(f"step {i}: not_public must list strings")
        if not isinstance(releases, list) or not releases:
            raise ModelFileError(f"step {i}: releases must be a non-empty list")
        losses = [_release(i, j, r) for j, r in enumerate(releases)]
        try:
            accountant.spend(losses, name=name, not_public=not_public)
        except ObjpertError as exc:
            raise ModelFileError(f"step {i} ({quote_value(name)}) is refused: {exc}") from None
    return accountant


def ledger_from_payload(
    payload: dict[str, Any], key: bytes | str | None = None, *, check: bool = True
) -> LoadedModel:
    """Check a ledger file's content (header, signature, digest, every release re-derived,
    the replayed composition within its budget) and rebuild the accountant."""
    if not isinstance(payload, dict):
        raise ModelFileError(f"a ledger file's content is a JSON object; got {type(payload)}")
    check_tree(payload)
    if payload.get("format") != LEDGER_FORMAT:
        raise ModelFileError(f"wrong format {quote_value(payload.get('format'))}")
    version = payload.get("version")
    if isinstance(version, bool) or version != LEDGER_VERSION:
        raise ModelFileError(
            f"unsupported ledger version {quote_value(version)}: this objpert reads version "
            f"{LEDGER_VERSION}"
        )
    missing = [k for k in _KEYS if k not in payload]
    unknown = sorted(set(payload) - set(_KEYS))
    if missing or unknown:
        raise ModelFileError(
            f"ledger file: missing keys {missing}, unknown keys {quote_value(unknown)}"
        )
    status = "unsigned"
    if check:
        status = _check_signature(payload, signing_key(key))
        _check_digest(payload)
    return LoadedModel(_rebuild(payload), LEDGER_VERSION, status)
