"""The comparison's statistics: means with standard errors, paired differences with
Student-t 95% intervals, and wall-time summaries (median, min, max)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import t as student_t

from objpert._validation import check_array
from objpert.exceptions import ParameterError

__all__ = ["CONFIDENCE", "LARGEST", "mean_se", "paired_difference", "time_summary"]

#: Coverage of the paired intervals.
CONFIDENCE = 0.95
#: The largest magnitude accepted (its square stays in the float64 range).
LARGEST = 1e150


def _values(name: str, values: Sequence[float]) -> np.ndarray:
    v = check_array(name, values, minimum=-LARGEST, maximum=LARGEST)
    if v.ndim != 1 or v.size == 0:
        raise ParameterError(f"{name} must be a non-empty list of numbers; got shape {v.shape}")
    return v


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """(mean, standard error s / sqrt(k)) of k values (finite, magnitude at most
    :data:`LARGEST`), s the sample standard deviation (ddof = 1); the standard error of a
    single value is NaN (unknown)."""
    v = _values("values", values)
    se = float(np.std(v, ddof=1) / math.sqrt(v.size)) if v.size > 1 else math.nan
    return float(np.mean(v)), se


def paired_difference(
    values: Sequence[float], reference: Sequence[float], confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """(mean, low, high) of the differences values[s] - reference[s], paired by s: the
    mean plus or minus t_{(1+c)/2, k-1} s_D / sqrt(k) (the paired t interval); NaN bounds
    for k = 1 (Student 1908, the paired t interval; docs/references.md). Equal lengths are
    required."""
    a, b = _values("values", values), _values("reference", reference)
    if a.shape != b.shape:
        raise ParameterError(f"paired values need equal counts; got {a.size} and {b.size}")
    mean, se = mean_se(a - b)
    if a.size == 1:
        return mean, math.nan, math.nan
    half = float(student_t.ppf(0.5 + confidence / 2.0, a.size - 1)) * se
    return mean, mean - half, mean + half


def time_summary(seconds: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max) of wall times."""
    v = _values("seconds", seconds)
    return float(np.median(v)), float(np.min(v)), float(np.max(v))
