"""The one JSON helper: plain JSON values from numpy values, and the canonical form.

Certificates, plans, reports and model files all go through :func:`to_json_value`, so a
value reads back the same wherever it was written.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

__all__ = ["canonical_json", "to_json_value"]


def to_json_value(value: Any, *, strict: bool = False) -> Any:
    """``value`` as plain JSON: numpy arrays and scalars to Python, tuples to lists, dict
    keys to str, non-finite floats to None (JSON has no NaN or infinity). Other objects
    are returned unchanged, or refused with ``TypeError`` when ``strict``."""
    if isinstance(value, dict):
        return {str(k): to_json_value(v, strict=strict) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_value(v, strict=strict) for v in value]
    if isinstance(value, np.ndarray):
        return to_json_value(value.tolist(), strict=strict)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if strict:
        raise TypeError(f"not a JSON value: a {type(value).__name__} ({value!r:.80})")
    return value


def canonical_json(payload: Any) -> str:
    """The canonical form that digests and signatures cover: sorted keys, compact
    separators, no NaN or infinity."""
    return json.dumps(
        to_json_value(payload), sort_keys=True, separators=(",", ":"), allow_nan=False
    )
