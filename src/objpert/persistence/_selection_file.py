"""A model chosen by a private search, saved with the search's guarantee.

``objpert.save(search, path)`` for a fitted :class:`~objpert.model_selection.PrivateGridSearch`
writes the chosen model's file (its plans, certificate, digest and signature as usual)
with one more key, ``selection``: the search's method, its certificate and the chosen
index. At load the record is re-derived, never trusted, and the model's
``certificate_`` is the search's (its own release's is ``release_certificate_``):

- **split** (Chaudhuri, Monteleoni & Sarwate 2011): every candidate's Watkins & Arora
  certificate is recomputed from its public constants (each trained on a part of the
  stated public size); the chosen candidate's must be the model's own; the guarantee is
  recomputed as (max(max_i epsilon_i, selection epsilon), max_i delta_i);
- **random stopping** (Papernot & Steinke 2022; Liu & Talwar 2019): the model's own
  certificate (re-derived with the file's plans) must fit the per-run budget, and the
  guarantee is recomputed from the per-run budget, the law and the mean run count by
  :func:`~objpert.model_selection.random_stopping_certificate`.

The recomputed certificate must equal the stored one; otherwise :class:`ModelFileError`.
"""

from __future__ import annotations

import math
from typing import Any

from objpert.exceptions import ModelFileError, ObjpertError
from objpert.persistence._fileformat import _close, _jsonable, _normal, quote_value, require_same
from objpert.persistence._ledger_file import recertified, recomposed
from objpert.persistence._unit_record import recertified_unit

__all__ = ["SELECTION_KEY", "attach_selection", "selection_record"]

SELECTION_KEY = "selection"
_RTOL = 1e-12


def selection_record(search: Any) -> tuple[dict[str, Any], Any]:
    """(the ``selection`` record, the chosen model) of a fitted PrivateGridSearch."""
    from objpert.model_selection._split_selection import SelectionCertificate

    if not hasattr(search, "best_estimator_"):
        raise ModelFileError("this PrivateGridSearch is not fitted: call fit before save")
    method = "split" if isinstance(search.certificate_, SelectionCertificate) else "random_stopping"
    record = {
        "method": method,
        "best_index": int(search.best_index_),
        "certificate": _jsonable(search.certificate_.to_dict()),
    }
    return _normal(record), search.best_estimator_


def _number(data: dict[str, Any], key: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ModelFileError(f"selection: {key} must be a finite number")
    return float(value)


def _count(data: dict[str, Any], key: str, low: int = 1) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ModelFileError(f"selection: {key} must be an integer >= {low}")
    return value


def _candidate(data: Any, where: str) -> Any:
    """A candidate's certificate recomputed: its release's, one-vs-rest's composition of
    releases (:func:`~objpert.persistence._ledger_file.recomposed`), or per privacy unit
    its unit certificate (:func:`~objpert.persistence._unit_record.recertified_unit`)."""
    if isinstance(data, dict) and data.get("kind") == "privacy_unit":
        return recertified_unit(data, where)
    if isinstance(data, dict) and "certificates" in data:
        return recomposed(data, where)
    return recertified(data, where)


def _rows(cert: Any) -> Any:
    """The rows a release trained on (n = units x k for a release per privacy unit; a
    composition's releases all trained on the same rows)."""
    cert = getattr(cert, "release", cert)
    parts = getattr(cert, "certificates", None) or (cert,)
    rows = {c.constants.get("n") for c in parts}
    if len(rows) != 1:
        raise ModelFileError(f"selection: the releases of one model trained on {sorted(rows)} rows")
    return rows.pop()


def _split(data: dict[str, Any], index: int, model: Any) -> Any:
    from objpert.model_selection._split_selection import split_certificate

    candidates, sizes = data.get("candidates"), data.get("part_sizes")
    if not isinstance(candidates, list) or not candidates or not isinstance(sizes, list):
        raise ModelFileError("selection: candidates and part_sizes must be non-empty lists")
    if len(sizes) != len(candidates) + 1 or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 2 for s in sizes
    ):
        raise ModelFileError("selection: one part size (>= 2) per candidate and the scoring part")
    if index >= len(candidates):
        raise ModelFileError(f"selection: best_index {index} beyond {len(candidates)} candidates")
    certs = tuple(_candidate(c, f"selection candidate {i}") for i, c in enumerate(candidates))
    for i, (c, size) in enumerate(zip(certs, sizes, strict=False)):
        k, n = c.rows_per_unit, _rows(c)
        if n != size * k:
            raise ModelFileError(
                f"selection candidate {i} was trained on {n} rows, not its part of {size}"
                + ("" if k == 1 else f" units of {k} rows")
            )
    own = getattr(model, "certificate_", None)
    if own is None or _close(_normal(own.to_dict()), _normal(certs[index].to_dict())):
        raise ModelFileError("selection: the chosen candidate's certificate is not the model's")
    eps_sel = _number(data, "selection_epsilon")
    if eps_sel <= 0:
        raise ModelFileError("selection: selection_epsilon must be positive")
    return split_certificate(certs, eps_sel, sizes)


def _random_stopping(data: dict[str, Any], model: Any) -> Any:
    from objpert.model_selection import _random_stopping as rs

    eps_c, delta_c = _number(data, "candidate_epsilon"), _number(data, "candidate_delta")
    model_eps, score_eps = _number(data, "model_epsilon"), _number(data, "score_epsilon")
    runs_mean, n_candidates = _count(data, "runs_mean"), _count(data, "n_candidates")
    law = data.get("law")
    if law not in rs.LAWS:
        raise ModelFileError(f"selection: law must be one of {rs.LAWS}; got {law!r}")
    own = model.certificate_
    if not own.certified or own.epsilon > model_eps or own.delta > delta_c:
        raise ModelFileError(
            f"selection: the model's certificate ({own.epsilon:g}, {own.delta:.3g}) exceeds "
            f"the per-run budget ({model_eps:g}, {delta_c:.3g})"
        )
    if not math.isclose(model_eps + score_eps, eps_c, rel_tol=_RTOL):
        raise ModelFileError("selection: the run's epsilon is not its model's plus its score's")
    if _rows(own) != _count(data, "n_rows", 2):
        raise ModelFileError("selection: the model was not trained on the search's n_rows")
    try:
        return rs.search_certificate(
            eps_c, delta_c, model_eps, score_eps, runs_mean, n_candidates,
            int(data["n_rows"]), own, law,
        )  # fmt: skip
    except ObjpertError as exc:
        raise ModelFileError(f"selection is refused: {exc}") from None


def attach_selection(model: Any, record: Any) -> None:
    """Re-derive a ``selection`` record against the loaded model (a fitted estimator or a
    pipeline ending in one) and make the search's certificate the estimator's
    ``certificate_`` (its release's is kept as ``release_certificate_``)."""
    estimator = model[-1] if hasattr(model, "steps") else model
    if not isinstance(record, dict) or set(record) != {"method", "best_index", "certificate"}:
        raise ModelFileError("selection must hold method, best_index and certificate")
    data = record["certificate"]
    if not isinstance(data, dict):
        raise ModelFileError("selection: certificate must be a JSON object")
    index = _count(record, "best_index", 0)
    if record["method"] == "split":
        cert = _split(data, index, estimator)
    elif record["method"] == "random_stopping":
        cert = _random_stopping(data, estimator)
    else:
        raise ModelFileError(f"selection: unknown method {quote_value(record['method'])}")
    require_same(cert, data, "selection: the stored certificate differs from the recomputed one")
    estimator.release_certificate_ = estimator.certificate_
    estimator.certificate_ = cert
