"""Declared category columns of a table as text, as the encoder compares them."""

from __future__ import annotations

import numbers
from typing import Any

from objpert.exceptions import CliError

__all__ = ["category_text"]


def _text(value: Any) -> Any:
    """A cell as text: a whole number as an integer ("2" for 2.0, which pandas reads when
    an empty cell makes the column float), a missing cell (None, NaN) left missing."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    whole = isinstance(value, numbers.Real) and not isinstance(value, bool)
    return str(int(value)) if whole and float(value).is_integer() else str(value)


def category_text(df: Any, columns: Any, path: str) -> Any:
    """``df`` with ``columns`` as text (:func:`_text`); an empty cell in one of them is
    refused (CliError naming the column, its count and the first row)."""
    out = df.astype({c: object for c in columns})
    for c in columns:
        text = out[c].map(_text)
        empty = text.isna().to_numpy().nonzero()[0]
        if empty.size:
            raise CliError(
                f"column {c!r} of {path} has {empty.size} empty cell(s), the first at row "
                f"{int(empty[0])} (counting from 0): impute or drop them first"
            )
        out[c] = text
    return out
