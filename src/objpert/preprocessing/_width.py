"""The width of what a preprocessing step outputs, from its declared parameters alone."""

from __future__ import annotations

from typing import Any

__all__ = ["declared_width"]


def declared_width(step: Any) -> int | None:
    """How many columns ``step`` outputs, from its declared parameters alone (None when
    a step does not say): bounded scalers and private bounds one per feature, encoders
    one per category, binners one per bin."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    from objpert.preprocessing import (
        BoundedBinner,
        BoundedOneHotEncoder,
        BoundedScaler,
        PrivateFeatureBounds,
    )

    try:
        if isinstance(step, BoundedScaler):
            return len(step.bounds)
        if isinstance(step, PrivateFeatureBounds):
            return len(step.ranges)
        if isinstance(step, BoundedOneHotEncoder):
            return sum(len(c) for c in step.categories)
        if isinstance(step, BoundedBinner):
            return sum(len(e) - 1 for e in step.edges)
        if isinstance(step, Pipeline):
            return declared_width(step.steps[-1][1])
        if isinstance(step, FeatureUnion):
            parts = [declared_width(t) for _, t in step.transformer_list]
        elif isinstance(step, ColumnTransformer) and step.remainder == "drop":
            parts = [declared_width(t) for _, t, _ in step.transformers if t != "drop"]
        else:
            return None
    except TypeError:  # a malformed parameter: the steps' own checks name it
        return None
    return None if any(p is None for p in parts) else sum(parts)
