"""scikit-learn's complaints about the data, as objpert's one-line errors that quote none
of the private rows' values."""

from __future__ import annotations

from typing import Any

from objpert.exceptions import DataError, DataTypeError

__all__ = ["as_data_error", "data_errors"]


def as_data_error(exc: Exception, what: str = "") -> Exception:
    """scikit-learn's ValueError or TypeError about the data as a one-line DataError
    (:class:`DataTypeError` for a TypeError); an objpert error unchanged."""
    if isinstance(exc, DataError):
        return exc
    msg = _without_values(" ".join(str(exc).split()))
    msg = f"{what}: {msg}" if what else msg
    return DataTypeError(msg) if isinstance(exc, TypeError) else DataError(msg)


def _without_values(msg: str) -> str:
    """``msg`` with every ``array=[...]`` that scikit-learn quotes (the private rows'
    values, up to a thousand of them) replaced by a placeholder. (Complex X, whose
    array scikit-learn quotes too, is refused before it: the data contract's message.)"""
    out, start = [], 0
    while (at := msg.find("array=[", start)) >= 0:
        depth, first = 0, at + len("array=")
        end = first
        for end in range(first, len(msg)):
            depth += {"[": 1, "]": -1}.get(msg[end], 0)
            if depth == 0:
                break
        out.append(msg[start:at] + "array=[values not shown]")
        start = end + 1
    return "".join(out) + msg[start:]


def data_errors(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, scikit-learn's ValueError/TypeError about the data (lengths,
    label types) raised as a one-line DataError saying ``what`` failed."""
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise as_data_error(exc, what) from None
