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
from objpert.persistence._fileformat import quote_value

__all__ = ["UNIT_KEY", "release_certificate", "unit_from_record", "unit_record"]

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
    wa_forms = ("c13", "theorem41", "limit")  # Watkins & Arora's: recomputed at load
    if cert.route == "group" and getattr(cert.release, "form", "") not in wa_forms:
        raise ModelFileError(
            "a model certified per privacy unit by group privacy of a multinomial release "
            "cannot be saved yet (its plan is for the one-row target): use multi_class='ovr'"
        )
    return {"unit": cert.unit, "rows_per_unit": cert.rows, "route": cert.route}


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
    cert = unit_certificate(certificate, plans, k, record["unit"])
    if cert.route != record["route"]:
        raise ModelFileError(
            f"{UNIT_KEY}: the file says route {quote_value(record['route'])}, the plans "
            f"give {cert.route!r}"
        )
    return cert
