"""A private search per privacy unit (one person of up to k rows; docs/privacy-unit.md).

Random stopping per unit: every run is fitted per unit on all the rows and scored on at
most k rows per unit (:func:`unit_scoring`), with the score's sensitivity k; each run is
then (epsilon_c, delta_c)-DP for the replacement of one unit, and the random-stopping
theorems hold for any neighbouring relation.

``PrivateGridSearch(method="split").fit(X, y, privacy_unit=ids)``: the units, not the
rows, are split at random (independently of the rows' values) into the m + 1 parts, so
one person's rows all lie in one part; every candidate is fitted for one unit of up to k
rows (its ``max_rows_per_unit``); the scoring part keeps at most k rows per unit (keyed
hash, :func:`objpert.estimators._unit.keep_rows`), so that replacing one unit changes a
score by at most k times one row's change: the exponential mechanism's sensitivity is
multiplied by k. The parallel composition of the module docstring of
:mod:`objpert.model_selection._search` then holds with "unit" in place of "row".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objpert.estimators._unit import keep_rows, unit_codes
from objpert.exceptions import DataError, ParameterError

__all__ = ["check_search_unit", "scoring_rows", "unit_parts", "unit_scoring"]


def check_search_unit(finals: list[Any]) -> int:
    """The k every candidate is certified for (``max_rows_per_unit``); ParameterError
    for candidates that disagree or leave it unset."""
    ks = {getattr(f, "max_rows_per_unit", None) for f in finals}
    if len(ks) != 1 or None in ks:
        raise ParameterError(
            "a search with privacy_unit needs every candidate's max_rows_per_unit set, to "
            f"one value; got {sorted(map(str, ks))}"
        )
    return int(ks.pop())


def unit_parts(
    ids: Any, n: int, sizes_of: Any, parts: int, generator: np.random.Generator
) -> tuple[list[np.ndarray], tuple[int, ...], np.ndarray]:
    """(row indices of each part, units per part, unit ids as text): the m units, in the
    order of their first rows (a dataset is a sequence of units: replacing one keeps its
    place), permuted at random and cut into ``parts`` parts of public sizes
    ``sizes_of(m, parts)``; so replacing one unit changes one part only."""
    _, _, labels = unit_codes(ids, n)
    _, first, codes = np.unique(labels, return_index=True, return_inverse=True)
    place = np.argsort(np.argsort(first, kind="stable"), kind="stable")  # by first row
    codes = place[codes]  # each unit's place: the order of its first row in the table
    units = int(codes.max()) + 1 if codes.size else 0
    sizes = sizes_of(units, parts)
    if min(sizes) < 2:
        raise DataError(
            f"{parts - 1} candidates need at least {2 * parts} privacy units (2 per part); "
            f"got {units}"
        )
    order = generator.permutation(units)  # independent of the rows' values
    part_of = np.empty(units, dtype=np.int64)
    bounds = np.cumsum((0, *sizes))
    for i in range(parts):
        part_of[order[bounds[i] : bounds[i + 1]]] = i
    row_part = part_of[codes]
    return [np.flatnonzero(row_part == i) for i in range(parts)], tuple(sizes), labels


def scoring_rows(
    labels: np.ndarray, rows: np.ndarray, k: int, key: bytes | None = None
) -> np.ndarray:
    """The scoring part's rows, at most k per unit (keyed hash of the unit's id and the
    row's rank in it, under ``key``: fresh unless the search is seeded,
    :func:`objpert.estimators._unit.keep_rows`)."""
    return rows[keep_rows(labels[rows], k, key)]


def unit_scoring(ids: Any, n: int, k: int, key: bytes | None = None) -> tuple[np.ndarray, int]:
    """Random stopping per unit: the rows every run is scored on (at most k per unit, a
    keyed hash; replacing one unit changes at most k of them, so a count of correct
    predictions moves by at most k) and the public n = units x k the runs train on."""
    codes, _, labels = unit_codes(ids, n)
    units = int(codes.max()) + 1 if codes.size else 0
    return scoring_rows(labels, np.arange(n), k, key), units * k
