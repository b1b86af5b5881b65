"""Preprocessing with public or private bounds, for pipelines before the private estimators.

Watkins & Arora (2026) certify a release for rows of norm <= zeta with zeta public. These
scikit-learn transformers give that bound from their parameters, never from the data:

- :class:`BoundedScaler`: declared per-feature bounds onto [-1, 1] (norm <= sqrt(d));
- :class:`BoundedOneHotEncoder`: declared category lists (norm <= sqrt(columns encoded));
- :class:`BoundedBinner`: declared bin edges, indicator columns (norm <= sqrt(d));
- :class:`PrivateFeatureBounds`: bounds from differentially private quantiles (its own
  certificate), then scaling as :class:`BoundedScaler`;
- :func:`row_norm_bound`: the bound of any of them, or of a ``ColumnTransformer`` of
  them. A private estimator that ends a ``Pipeline`` after them takes that bound itself
  (the one certificate of a fitted pipeline: :func:`objpert.accounting.pipeline_certificate`).

See docs/pipeline.md.
"""

from objpert.preprocessing._binning import BoundedBinner
from objpert.preprocessing._bounded import (
    BoundedOneHotEncoder,
    BoundedScaler,
    check_bounds,
    row_norm_bound,
)
from objpert.preprocessing._quantiles import PrivateFeatureBounds

__all__ = [
    "BoundedBinner",
    "BoundedOneHotEncoder",
    "BoundedScaler",
    "PrivateFeatureBounds",
    "check_bounds",
    "row_norm_bound",
]
