"""The privacy unit in a model file: ``"privacy_unit": {"unit", "rows_per_unit", "route"}``.

A model fitted with ``max_rows_per_unit=k`` (:mod:`objpert.estimators._unit`) is saved with
its plans for k-row neighbours (each plan's ``rows``), the release's own certificate
under ``"certificate"`` (checked like any), and this record. At load the unit certificate
is recomputed from the re-derived plans (both routes) and must name the same route; the
record's k must be the estimator's ``max_rows_per_unit`` and every plan's rows.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from objpert.accounting._unit import ROUTES, UnitCertificate
from objpert.exceptions import ModelFileError
from objpert.persistence._fileformat import quote_value, require_same

__all__ = [
    "UNIT_KEY",
    "multinomial_unit",
    "recertified_unit",
    "release_certificate",
    "unit_from_record",
    "unit_record",
]

UNIT_KEY = "privacy_unit"


def release_certificate(model: Any, cert: Any) -> Any:
    """What ``"certificate"`` holds: a unit certificate's release certificate (the plans'
    own for k rows, whichever route the unit's guarantee took)."""
    if not isinstance(cert, UnitCertificate):
        return cert
    if cert.route == "direct":
        return cert.release
    return dataclasses.replace(model.plan_.certificate, not_public=cert.not_public)


def unit_record(cert: Any) -> dict[str, Any] | None:
    """The record of a unit certificate (None for a row-level one)."""
    if not isinstance(cert, UnitCertificate):
        return None
    return {"unit": cert.unit, "rows_per_unit": cert.rows, "route": cert.route}


def _checked(record: Any, k: int | None, rows: list[int]) -> dict[str, Any]:
    """The file's unit record, checked against the model's ``max_rows_per_unit`` ``k``
    and its plans' ``rows``."""
    if not isinstance(record, dict) or set(record) != {"unit", "rows_per_unit", "route"}:
        raise ModelFileError(
            f"{UNIT_KEY} must be an object with unit, rows_per_unit and route; got "
            f"{quote_value(record)}"
        )
    if record["rows_per_unit"] != k or any(r != k for r in rows):
        raise ModelFileError(
            f"{UNIT_KEY}: rows_per_unit {quote_value(record['rows_per_unit'])} is not the "
            f"model's max_rows_per_unit ({k}) and its plans' rows ({rows})"
        )
    if record["route"] not in ROUTES or not isinstance(record["unit"], str):
        raise ModelFileError(f"{UNIT_KEY}: malformed record {quote_value(record)}")
    return record


def multinomial_unit(
    record: Any, p: Any, recertify: Any, what: str = "a multinomial"
) -> tuple[list[Any], Any]:
    """The plans and certificate of a multinomial (or AMP) model from its file: a model fitted
    per privacy unit (``p.rows_per_unit`` = k > 1) was planned for one row at the
    classical one-row target of its (epsilon, delta) and is certified for k rows by
    group privacy (:func:`objpert.estimators._unit.fit_multinomial_per_unit`): the plan
    is re-derived at that target (``recertify(p)``) and the unit certificate recomputed."""
    from objpert.accounting._group import crude_row_target
    from objpert.estimators._unit import group_unit_certificate

    k = p.rows_per_unit
    if record is None and k == 1:
        return recertify(p)
    if record is None:
        raise ModelFileError(f"max_rows_per_unit is {k} but the file has no {UNIT_KEY!r} record")
    record = _checked(record, k, [k])
    if record["route"] != "group":
        raise ModelFileError(f"{UNIT_KEY}: {what} release per unit takes the group route")
    eps_1, delta_1 = crude_row_target(p.epsilon, p.delta, k)
    plans, one_row = recertify(dataclasses.replace(p, epsilon=eps_1, delta=delta_1))
    named = dataclasses.replace(p, unit_name=record["unit"])
    return plans, group_unit_certificate(one_row, named)


def unit_from_record(record: Any, certificate: Any, plans: list[Any], k: int | None) -> Any:
    """The model's certificate given the file's record (or its absence) and the
    estimator's ``max_rows_per_unit`` ``k``; ModelFileError where they disagree."""
    from objpert.estimators._unit import unit_certificate

    rows = [getattr(p, "rows", 1) for p in plans]
    if record is None:
        if k is not None:
            raise ModelFileError(
                f"max_rows_per_unit is {k} but the file has no {UNIT_KEY!r} record"
            )
        if any(r != 1 for r in rows):
            raise ModelFileError("the plans are for several rows per unit, the model for one")
        return certificate
    record = _checked(record, k, rows)
    cert = unit_certificate(certificate, plans, k, record["unit"])
    if cert.route != record["route"]:
        raise ModelFileError(
            f"{UNIT_KEY}: the file says route {quote_value(record['route'])}, the plans "
            f"give {cert.route!r}"
        )
    return cert


def recertified_unit(data: Any, where: str) -> Any:
    """A stored Watkins & Arora unit certificate (a dict, ``"kind": "privacy_unit"``)
    recomputed from its release's public inputs: the release re-certified
    (:func:`~objpert.persistence._ledger_file.recertified`), the k-row plan rebuilt from it
    (on the group route, Theorem C.13 for k rows at the one-row release's sigma, N and
    radius, the outer radius r + 2 L G_k / mu of :func:`objpert.certify._unit_rows.unit_plan`)
    and both routes evaluated again (:func:`objpert.estimators._unit.unit_certificate`); the
    result must equal the stored one (``where`` names it in the ModelFileError otherwise)."""
    from objpert.accounting._unit import group_certificate, unit_from_dict
    from objpert.certify import _theorem_c13 as theorem_c13
    from objpert.certify._plan import _finish
    from objpert.certify._profile import constants_from_certificate
    from objpert.estimators._unit import unit_certificate
    from objpert.exceptions import ObjpertError
    from objpert.persistence._ledger_file import recertified

    if (
        isinstance(data, dict)
        and isinstance(data.get("release"), dict)
        and ("certificates" in data["release"])
    ):  # one-vs-rest per unit: its releases, each for k rows, composed (the direct route)
        return _recomposed_unit(data, where)
    try:
        stored = unit_from_dict(data)
        release = recertified(data["release"], f"{where}'s release")
        k = stored.rows
        if release.form == "multinomial":  # planned for one row: group privacy, always
            if stored.route != "group" or release.rows_per_unit != 1:
                raise ModelFileError(f"{where}: a multinomial release per unit is grouped")
            cert = group_certificate(release, k, stored.epsilon, unit=stored.unit)
            require_same(cert, stored.to_dict(), f"{where}: its recomputed certificate differs")
            return cert
        if release.rows_per_unit != (k if stored.route == "direct" else 1):
            raise ModelFileError(f"{where}: its release is not for the rows its route needs")
        pc = dataclasses.replace(constants_from_certificate(release), rows=k)
        cert_k = release
        if stored.route == "group":  # the k-row theorem of the same release
            r = float(release.details["radius"])
            cert_k = theorem_c13.certify(
                pc, release.sigma, release.iterations, stored.epsilon, r=r,
                r_outer=r + 2.0 * pc.L * pc.G / pc.mu, truncation=release.truncation,
            )  # fmt: skip
            cert_k = dataclasses.replace(cert_k, not_public=release.not_public)
        plan = _finish(
            "tight", pc, cert_k.sigma, cert_k.iterations, cert_k.epsilon, cert_k.delta, cert_k,
            1.0, 0.01,
        )  # fmt: skip
        cert = unit_certificate(cert_k, [plan], k, stored.unit)
    except ModelFileError:
        raise
    except (ObjpertError, KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where} is refused: {' '.join(str(exc).split())[:200]}") from None
    what = f"{where}: the recomputed unit certificate differs from the stored one"
    require_same(cert, stored.to_dict(), what)
    return cert


def _recomposed_unit(data: dict[str, Any], where: str) -> Any:
    """A stored unit certificate of a composition (one-vs-rest per unit: each release
    calibrated for k rows, the direct route) recomputed from its releases."""
    from objpert.accounting._accountant import release_from_dict
    from objpert.estimators._unit import unit_certificate
    from objpert.exceptions import ObjpertError
    from objpert.persistence._ledger_file import recomposed

    try:
        stored = release_from_dict(data)
    except (ObjpertError, KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where} is refused: {' '.join(str(exc).split())[:200]}") from None
    release = recomposed(data["release"], f"{where}'s release")
    if stored.route != "direct" or release.rows_per_unit != stored.rows:
        raise ModelFileError(f"{where}: a composition per unit takes the direct route for k rows")
    cert = unit_certificate(release, [], stored.rows, stored.unit)
    what = f"{where}: the recomputed unit certificate differs from the stored one"
    require_same(cert, stored.to_dict(), what)
    return cert
