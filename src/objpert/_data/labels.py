"""Labels: public label sets, the binary label map and regression targets.

Which label maps to +1, how many classes a model has and which codes its rows get are
structural choices of the released model: they depend on a declared label set, or on a
fixed rule applied to each label alone, never on which labels the rows happen to hold
(except where the caller declared nothing, which warns
:class:`~objpert.exceptions.PrivacyLeakWarning`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from objpert.exceptions import DataError, PrivacyLeakWarning

__all__ = [
    "as_targets",
    "binary_classes",
    "check_label_set",
    "check_labels",
    "class_codes",
    "encode_binary",
]


def _label_vector(y: Any) -> np.ndarray:
    """Labels as a 1-D array (a column vector is flattened); refuses matrices, NaN, dates
    and times, and labels of mixed kinds (:func:`check_labels`)."""
    try:
        arr = np.asarray(y)
    except (TypeError, ValueError) as exc:
        raise DataError(f"y cannot be read as labels: {' '.join(str(exc).split())}") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise DataError(f"y must be 1-D; got shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise DataError("y has non-finite values (NaN or inf)")
    if arr.dtype.kind in "mM":
        raise DataError("labels cannot be dates or times: encode them as a public label set")
    if arr.dtype.kind == "V":
        raise DataError(f"labels must be numbers, booleans or strings; got dtype {arr.dtype}")
    if arr.dtype.kind == "O":
        _check_object_labels(arr)
    return arr


def _label_kind(v: Any) -> str:
    """'str', 'number' (bools included) or what else a label is (refused)."""
    if isinstance(v, str | np.str_):
        return "str"
    if isinstance(v, bool | np.bool_ | int | float | np.integer | np.floating):
        return "number"
    if v is None:
        return "missing (None)"
    return type(v).__name__


def _check_object_labels(arr: np.ndarray) -> None:
    """Object labels (a pandas column): all strings or all numbers, no None, NaN, dates or
    other objects (numpy cannot order a mix, and a missing label is no class)."""
    kinds = {_label_kind(v) for v in arr.tolist()}
    bad = sorted(kinds - {"str", "number"})
    if bad:
        raise DataError(
            f"labels must be numbers, booleans or strings; y holds {', '.join(bad)}: drop "
            "or encode those rows first"
        )
    if len(kinds) > 1:
        raise DataError("labels must be all strings or all numbers; y mixes strings and numbers")
    if kinds == {"number"}:
        values = np.asarray(arr.tolist(), dtype=float)
        if not np.all(np.isfinite(values)):
            raise DataError("y has non-finite values (NaN or inf)")


def check_labels(y: Any) -> np.ndarray:
    """Classification labels as a 1-D array, or a :class:`DataError`: a column vector is
    flattened; matrices, NaN, dates and times, missing values (None) and labels mixing
    strings and numbers are refused."""
    return _label_vector(y)


def check_label_set(classes: Any) -> np.ndarray:
    """A declared public label set: at least two distinct labels (numbers, booleans or
    strings, no missing values), returned sorted (as scikit-learn orders ``classes_``)."""
    try:
        arr = np.asarray(list(classes))
    except TypeError:
        raise DataError(f"classes must be a list of labels; got {classes!r}") from None
    if arr.ndim != 1 or arr.size < 2:
        raise DataError(f"classes must list at least two labels; got {classes!r}")
    if arr.dtype.kind == "O" or arr.dtype.kind in "mMcV":
        raise DataError(
            f"classes must be numbers, booleans or strings of one kind; got {classes!r}"
        )
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise DataError(f"classes cannot hold NaN or inf; got {classes!r}")
    unique = np.unique(arr)
    if unique.size != arr.size:
        raise DataError(f"classes must be distinct; got {classes!r}")
    return unique


def _as_comparable(values: np.ndarray) -> np.ndarray:
    """Labels as an array numpy compares by value: strings (str or object dtype holding
    str, e.g. a pandas column) as str, everything else unchanged."""
    if values.dtype.kind in "US" or (
        values.dtype.kind == "O" and all(isinstance(v, str) for v in values.tolist())
    ):
        return values.astype(str)
    return values


def _outside(found: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """The labels of ``found`` that are not in ``classes`` (a string equals no number)."""
    f, c = _as_comparable(found), _as_comparable(classes)
    if (f.dtype.kind == "U") != (c.dtype.kind == "U"):
        return found
    try:
        inside = np.isin(f, c)
    except TypeError:
        inside = np.zeros(found.shape, dtype=bool)
    return found[~inside]


def class_codes(y: Any, classes: np.ndarray) -> np.ndarray:
    """Integer codes of y in the declared (sorted) label set; a label outside it is a
    :class:`DataError`. The codes depend only on each label and the declared set."""
    arr = _as_comparable(_label_vector(y))
    bad = _outside(np.unique(arr), classes)
    if bad.size:
        raise DataError(
            f"y holds labels outside the declared classes {classes.tolist()!r}: "
            f"{bad[:5].tolist()!r}"
        )
    return np.searchsorted(_as_comparable(classes), arr)


_FIXED_BINARY = (np.array([-1.0, 1.0]), np.array([0.0, 1.0]))


def binary_classes(found: Any, classes: Any = None) -> np.ndarray:
    """The two classes of a binary loss, classes[1] mapped to +1 and classes[0] to -1.

    ``classes`` declared: that label set (two labels; every found label must be in it).
    Otherwise labels in {-1, +1}, {0, 1} or booleans use the fixed map 1/True -> +1,
    -1/0/False -> -1, which depends on each label alone (a training set of one class is
    fine). Other labels (two strings, {1, 2}) can only be read from the data: that warns
    :class:`~objpert.exceptions.PrivacyLeakWarning`, since which label maps to +1 then depends
    on the rows.
    """
    found = np.unique(_label_vector(found))
    if classes is not None:
        declared = check_label_set(classes)
        if declared.size != 2:
            raise DataError(f"a binary loss needs two declared classes; got {declared.tolist()!r}")
        bad = _outside(found, declared)
        if bad.size:
            raise DataError(
                f"y holds labels outside the declared classes {declared.tolist()!r}: "
                f"{bad[:5].tolist()!r}"
            )
        return declared
    if found.dtype.kind == "b":
        return np.array([False, True])
    if found.dtype.kind in "iuf":
        for fixed in _FIXED_BINARY:
            if np.all(np.isin(found, fixed)):
                return fixed
    if found.size != 2:
        raise DataError(
            f"binary labels need exactly two classes; got {found.size}: {found[:5].tolist()}"
        )
    warnings.warn(
        f"the two classes {found.tolist()!r} were read from the training labels: which label "
        "maps to +1 depends on the private data and is not covered by the certificate; use "
        "labels in {-1, +1} or {0, 1}, or declare the label set",
        PrivacyLeakWarning,
        stacklevel=3,
    )
    return found


def encode_binary(y: Any, classes: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Labels of a binary loss to -1/+1 with :func:`binary_classes` (classes[1] -> +1).

    Returns (y in {-1.0, +1.0}, classes).
    """
    arr = _label_vector(y)
    pair = binary_classes(arr, classes)
    return np.where(arr == pair[1], 1.0, -1.0), pair


def as_targets(y: Any) -> np.ndarray:
    """Real regression targets: 1-D, finite."""
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError("regression targets must be numeric") from None
    arr = arr.ravel() if arr.ndim == 2 and 1 in arr.shape else arr
    if arr.ndim != 1:
        raise DataError(f"y must be 1-D; got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise DataError("y has non-finite values (NaN or inf)")
    return arr
