"""Declared public bins: each feature becomes the indicator columns of its bins.

A feature whose effect is not monotone (a measurement that is good within a band and bad
on either side of it) needs large weights when it enters a linear model as one scaled
column, and the ridge of a certified release (Watkins & Arora 2026, the objective F(w; S)
+ mu/2 ||w||^2 of Assumption 1) forbids large weights. Indicator columns of bins need
only weights of order one. The bin edges are public (a grading standard, a codebook),
never read from the rows; every output row has exactly one 1 per input feature, so its
norm is sqrt(number of features) whatever the data (Assumption 1's zeta, public).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from objpert._data import as_feature_matrix
from objpert._validation import check_finite
from objpert.exceptions import ParameterError
from objpert.preprocessing._bounded import _check_width, _dense, clipping_notice
from objpert.preprocessing._parameters import ValidatedParameters

__all__ = ["BoundedBinner", "check_edges"]


def _length(value: Any) -> int | None:
    """len(value) for a sequence; None for text, scalars and 0-d arrays."""
    if isinstance(value, str | bytes):
        return None
    try:
        return len(value)
    except TypeError:
        return None


def check_edges(edges: Any, name: str = "edges") -> list[np.ndarray]:
    """Declared bin edges, one list per feature: at least two finite, strictly increasing
    values each (ParameterError otherwise)."""
    if _length(edges) in (None, 0):
        raise ParameterError(f"{name} must be a non-empty list of edge lists; got {edges!r:.80}")
    out = []
    for j, column in enumerate(edges):
        if (_length(column) or 0) < 2:
            raise ParameterError(f"{name}[{j}] must list at least two edges; got {column!r:.80}")
        values = np.array([check_finite(f"{name}[{j}][{k}]", v) for k, v in enumerate(column)])
        if not np.all(np.diff(values) > 0):
            raise ParameterError(f"{name}[{j}] must be strictly increasing; got {column!r:.80}")
        out.append(values)
    return out


class BoundedBinner(ValidatedParameters, TransformerMixin, BaseEstimator):
    """Indicator columns of declared public bins, one block per feature.

    Parameters
    ----------
    edges : list of lists, one per feature
        The public edges e_0 < e_1 < ... < e_k of each feature: k bins [e_0, e_1), ...,
        [e_{k-2}, e_{k-1}), [e_{k-1}, e_k]. Values below e_0 fall in the first bin and
        values above e_k in the last (clipped into the end bins); never read from the data.

    Attributes
    ----------
    edges_ : list of ndarray
    row_norm_bound_ : float
        sqrt(n_features): each feature contributes exactly one 1 (public).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names (pandas).

    ``fit`` reads only the width of X (and its column names). ``fit_transform`` warns
    :class:`objpert.exceptions.ClippingNotice` when more than 1% of the rows had a value
    outside [e_0, e_k] (shown to whoever runs it, never stored).
    """

    _parameter_constraints: ClassVar[dict] = {"edges": ["array-like"]}

    def __init__(self, *, edges):
        self.edges = edges

    def fit(self, X: Any, y: Any = None) -> BoundedBinner:
        """Check the declared edges and the width of X; nothing is read from the values."""
        self._validate_params()
        edges = check_edges(self.edges)
        _check_width(self, X, len(edges), reset=True)
        self.edges_ = edges
        self.row_norm_bound_ = math.sqrt(len(edges))
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The indicator matrix (float64): one block of k_j columns per feature j."""
        check_is_fitted(self, "edges_")
        _check_width(self, X, len(self.edges_), reset=False)
        return self._indicators(as_feature_matrix(_dense(X)))

    def fit_transform(self, X: Any, y: Any = None, **params: Any) -> np.ndarray:
        """fit, then transform; a :class:`ClippingNotice` when many rows were clipped."""
        self.fit(X, y, **params)
        M = as_feature_matrix(_dense(X))
        lo = np.array([e[0] for e in self.edges_])
        hi = np.array([e[-1] for e in self.edges_])
        rows = int(np.count_nonzero((np.less(M, lo) | np.greater(M, hi)).any(axis=1)))
        clipping_notice(rows, M.shape[0], "values outside the declared edges")
        return self._indicators(M)

    def _indicators(self, M: np.ndarray) -> np.ndarray:
        blocks = []
        for j, e in enumerate(self.edges_):
            # inner edges only: below e_1 is bin 0 (e_0 and below), from e_{k-1} the last bin
            index = np.searchsorted(e[1:-1], M[:, j], side="right")
            block = np.zeros((M.shape[0], len(e) - 1))
            block[np.arange(M.shape[0]), index] = 1.0
            blocks.append(block)
        return np.hstack(blocks)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self, "edges_")
        if input_features is None:
            input_features = getattr(
                self, "feature_names_in_", [f"x{j}" for j in range(len(self.edges_))]
            )
        return np.asarray(
            [f"{f}_[{a:g}, {b:g}{']' if k == len(e) - 2 else ')'}"
             for f, e in zip(input_features, self.edges_, strict=True)
             for k, (a, b) in enumerate(itertools.pairwise(e))],
            dtype=object,
        )  # fmt: skip

    def public_row_norm_bound(self) -> float:
        """sqrt(n_features)."""
        return math.sqrt(len(check_edges(self.edges)))
