"""Which bounded transformer reads each input column of a preprocessing step."""

from __future__ import annotations

from typing import Any

__all__ = ["column_readers"]


def column_readers(step: Any, columns: list[Any]) -> list[tuple[Any, Any, int]]:
    """(input column, the transformer that reads it directly, its position there) for
    every input column of ``step``: a transformer reads its input in order; a
    ``ColumnTransformer`` gives each part its selection (names, or positions in
    ``columns``); a ``Pipeline`` reads through its first step; a ``FeatureUnion`` gives
    every part all of its input. "passthrough" and "drop" read nothing."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if step is None or isinstance(step, str):
        return []
    if isinstance(step, Pipeline):
        return column_readers(step.steps[0][1], columns) if step.steps else []
    if isinstance(step, FeatureUnion):
        return [r for _, part in step.transformer_list for r in column_readers(part, columns)]
    if isinstance(step, ColumnTransformer):
        out = []
        for _, part, chosen in step.transformers:
            chosen = [chosen] if isinstance(chosen, str | int) else list(chosen)
            picked = [columns[c] if isinstance(c, int) else c for c in chosen]
            out += column_readers(part, picked)
        return out
    return [(c, step, j) for j, c in enumerate(columns)]
