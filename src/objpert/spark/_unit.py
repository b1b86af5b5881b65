"""The privacy unit of a Spark fit: one person of up to k rows (docs/privacy-unit.md).

``privacyUnitCol`` names the column of unit ids and ``maxRowsPerUnit`` = k (public) the
most rows a unit may hold. As the in-memory estimators do
(:mod:`objpert.estimators._unit`), the fit then

1. keeps at most k rows per unit (:func:`bound_units`: DataFrame operations only, so it
   runs on Spark Connect as on a classic session), the count of dropped rows shown to
   whoever runs the fit (:class:`~objpert.exceptions.ClippingNotice`), never stored;
2. takes n = m k, m the number of distinct units (public, as n is for one row): the units
   with fewer than k rows are completed with zero rows, which add nothing to the sums of
   the gradient and the Hessian a pass returns, so only n changes (no row is written);
3. certifies the release for one unit of k rows (:func:`objpert.estimators._unit`).
"""

from __future__ import annotations

import secrets
import warnings
import weakref
from typing import Any

from objpert.exceptions import ClippingNotice, DataError, ParameterError, PrivacyLeakWarning

__all__ = ["SparkUnits", "bound_units", "check_unit_params", "search_unit_record"]

_J, _RANK, _POS = "__objpert_unit_j", "__objpert_unit_rank", "__objpert_unit_pos"


class SparkUnits:
    """A unit-level fit's rows (``frame``, at most k per unit), its public number of units
    ``units`` and the column's name."""

    def __init__(self, frame: Any, units: int, name: str) -> None:
        self.frame, self.units, self.name = frame, units, name


_warned: weakref.WeakSet[Any] = weakref.WeakSet()


def search_unit_record(column: str | None, search: Any, name: str) -> tuple[str, ...]:
    """What a Spark ML search (``name``: ``CrossValidator``, ``TrainValidationSplit``)
    over a stage with ``privacyUnitCol`` = ``column`` records: its folds split rows, not
    persons, so one person's rows may be in a fold's training and validation rows (its
    scores are not held out by person, and each fit is certified for its own rows only).
    Warned once per search (:class:`~objpert.exceptions.PrivacyLeakWarning`); nothing for
    a stage without a privacy unit."""
    if column is None:
        return ()
    record = f"{name} splits rows, not persons (privacy unit {column!r})"
    if search not in _warned:
        _warned.add(search)
        warnings.warn(
            f"{record}: one person's rows may fall in both the training and the validation "
            "rows of a fold, so the scores are not held out by person; tune on public or "
            "pilot data, or split by person before fitting",
            PrivacyLeakWarning,
            stacklevel=4,
        )
    return (record,)


def check_unit_params(column: str | None, k: Any) -> int | None:
    """``maxRowsPerUnit`` (None, or an int >= 1 with ``privacyUnitCol`` set)."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ParameterError(f"maxRowsPerUnit must be an integer >= 1; got {k!r}")
    if not column:
        raise ParameterError(
            f"maxRowsPerUnit={k} needs the privacy unit of every row: set privacyUnitCol "
            "to the column of unit ids"
        )
    return k


def _kept(df: Any, column: str, k: int, key: int) -> Any:
    """The rows of ``df`` kept: per unit, the k of smallest xxhash64(key, id, j), j the
    row's rank among its unit's rows in the frame's order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    unit = sf.col(column)
    by_position = Window.partitionBy(unit).orderBy(sf.col(_POS))
    ranked = (
        df.withColumn(_POS, sf.monotonically_increasing_id())
        .withColumn(_J, sf.row_number().over(by_position))
    )  # fmt: skip
    by_hash = Window.partitionBy(unit).orderBy(sf.xxhash64(sf.lit(key), unit, sf.col(_J)), _J)
    out = ranked.withColumn(_RANK, sf.row_number().over(by_hash))
    return out.filter(sf.col(_RANK) <= k).drop(_POS, _J, _RANK)


def bound_units(df: Any, column: str, k: int | None, *, key: int | None = None) -> SparkUnits:
    """Contribution bounding on a DataFrame: at most ``k`` rows per unit of ``column``.

    The rows kept are, per unit, the k whose keyed hash xxhash64(key, id, j) is smallest,
    j the row's rank among its unit's rows in the frame's order
    (``monotonically_increasing_id``: partition by partition), ``key`` fresh random bits
    from the OS at every fit (``key``: derived from a testing ``seed``, or given by
    tests). The choice is independent of the rows' values: it reads only the unit's id
    and the ranks of its rows, and the keyed hash of the ranks picks a random subset of
    them whatever row holds which rank; it reads nothing of the other units (replacing
    one unit's rows changes no other unit's ranks, hence no other unit's choice). The
    frame's order, which
    ``monotonically_increasing_id`` follows, depends on its partitioning: another
    partitioning may keep other rows of a unit with more than k rows, never more than k,
    and the guarantee is the same. The number of units m and the count of dropped rows
    come from the rows per unit alone, whichever rows are kept; the dropped count is
    shown to whoever runs the fit (ClippingNotice), never returned or stored.

    ``k`` None: a row-level fit; ids that repeat are flagged (PrivacyLeakWarning).
    DataError when the column is missing or holds nulls.
    """
    from pyspark.sql import functions as sf

    if column not in df.columns:
        raise DataError(
            f"the DataFrame has no privacy unit column {column!r} (privacyUnitCol); it has "
            f"{sorted(df.columns)}"
        )
    unit = sf.col(column)
    counts = df.groupBy(unit).count()
    extra = sf.greatest(sf.col("count") - sf.lit(k or 1), sf.lit(0))
    row = counts.agg(
        sf.count(sf.lit(1)).alias("units"),
        sf.sum("count").alias("rows"),
        sf.sum(extra).alias("extra"),
        sf.sum(sf.when(unit.isNull(), sf.col("count")).otherwise(0)).alias("nulls"),
    ).collect()[0]
    nulls, rows, units, extra_rows = (int(row[c] or 0) for c in ("nulls", "rows", "units", "extra"))
    if nulls:
        raise DataError(
            f"the privacy unit column {column!r} has {nulls} missing id(s) (null): every row "
            "needs the id of its unit"
        )
    if k is None:
        if units < rows:
            warnings.warn(
                f"privacyUnitCol {column!r} holds ids with several rows, but maxRowsPerUnit "
                "is not set: the certificate is per row, not per person; set "
                "maxRowsPerUnit=k for a guarantee per person of up to k rows",
                PrivacyLeakWarning,
                stacklevel=4,
            )
        return SparkUnits(df, units, column)
    if extra_rows:
        warnings.warn(
            f"contribution bounding kept at most {k} rows per privacy unit and dropped "
            f"{extra_rows} of {rows} rows (chosen by a keyed hash, not by their values); a "
            "statistic of the private data, shown here only",
            ClippingNotice,
            stacklevel=4,
        )
    if not extra_rows:  # no unit holds more than k rows: every row is kept
        return SparkUnits(df, units, column)
    key = secrets.randbits(63) if key is None else int(key)
    return SparkUnits(_kept(df, column, k, key), units, column)
