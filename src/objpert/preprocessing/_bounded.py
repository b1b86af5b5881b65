"""Transformers with public bounds: every row they output has a norm bound that follows
from their parameters alone, never from the data.

Assumption 1 of Watkins & Arora (2026) needs ||x|| <= zeta for a *public* zeta. A scaler
or an encoder fitted on the private rows (scikit-learn's ``StandardScaler``,
``OneHotEncoder`` with ``categories="auto"``) reads statistics of those rows into the
model, which no certificate covers. These transformers read only the width of X at fit:

- :class:`BoundedScaler` maps each feature from declared bounds [lo, hi] onto [-1, 1]
  (values outside are clipped to the bounds): rows have norm <= sqrt(d);
- :class:`BoundedOneHotEncoder` one-hot encodes declared category lists: each encoded
  column contributes at most one 1, so rows have norm <= sqrt(number of columns).

:func:`row_norm_bound` reads the bound of one of them, or of a ``ColumnTransformer``,
``Pipeline`` or ``FeatureUnion`` built from them (the square root of the sum of the
squared bounds of the parts), before anything is fitted.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import (
    _check_feature_names,
    _check_n_features,
    check_is_fitted,
)

from objpert._data import as_feature_matrix
from objpert._validation import _shown, check_finite
from objpert.exceptions import ClippingNotice, DataError, ParameterError
from objpert.preprocessing._parameters import ValidatedParameters

__all__ = [
    "CLIPPING_NOTICE_SHARE",
    "BoundedOneHotEncoder",
    "BoundedScaler",
    "check_bounds",
    "clip_to_bounds",
    "clipping_notice",
    "row_norm_bound",
    "scale_to_unit",
]

#: Above this share of clipped rows, ``fit`` tells whoever runs it (:class:`ClippingNotice`).
CLIPPING_NOTICE_SHARE = 0.01


def check_bounds(bounds: Any, name: str = "bounds") -> np.ndarray:
    """Declared per-feature bounds as an array of shape (d, 2): finite lo < hi, with a
    finite width (ParameterError otherwise)."""
    if isinstance(bounds, str | bytes) or not hasattr(bounds, "__len__"):
        raise ParameterError(f"{name} must be a list of (lo, hi) pairs; got {bounds!r:.80}")
    out = np.empty((len(bounds), 2))
    if len(bounds) == 0:
        raise ParameterError(f"{name} must list at least one (lo, hi) pair; got none")
    for j, pair in enumerate(bounds):
        if isinstance(pair, str | bytes) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ParameterError(f"{name}[{j}] must be a pair (lo, hi); got {pair!r:.80}")
        lo, hi = (check_finite(f"{name}[{j}][{k}]", v) for k, v in enumerate(pair))
        if not lo < hi or not math.isfinite(hi / 2 - lo / 2) or not hi / 2 - lo / 2 > 0:
            raise ParameterError(f"{name}[{j}] must have lo < hi; got ({lo!r}, {hi!r})")
        out[j] = lo, hi
    return out


def clip_to_bounds(X: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, int]:
    """X (dense) with each column clipped to its bounds, and the number of rows changed."""
    lo, hi = bounds[:, 0], bounds[:, 1]
    outside = np.less(X, lo) | np.greater(X, hi)
    rows = int(np.count_nonzero(outside.any(axis=1)))
    return (np.clip(X, lo, hi) if rows else X), rows


def scale_to_unit(X: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each column clipped to its bounds [lo, hi], then mapped affinely onto [-1, 1]:
    (x - m) / h with m = (lo + hi)/2, h = (hi - lo)/2 (computed without overflow)."""
    lo, hi = bounds[:, 0], bounds[:, 1]
    mid, half = lo / 2 + hi / 2, hi / 2 - lo / 2
    return np.clip((np.clip(X, lo, hi) - mid) / half, -1.0, 1.0)


def clipping_notice(rows: int, n: int, what: str, stacklevel: int = 3) -> None:
    """Warn :class:`ClippingNotice` when more than :data:`CLIPPING_NOTICE_SHARE` of the n
    rows were clipped. The count is a statistic of the private data: it is shown to whoever
    runs fit, never stored."""
    if n and rows > CLIPPING_NOTICE_SHARE * n:
        warnings.warn(
            f"{rows} of {n} training rows ({100 * rows / n:.1f}%) had {what} and were "
            "clipped: the model may be poor. Check the declared bounds against public "
            "knowledge of the data (this count is a statistic of the private rows: do not "
            "publish it)",
            ClippingNotice,
            stacklevel=stacklevel,
        )


def _check_width(est: BaseEstimator, X: Any, width: int, reset: bool) -> None:
    """n_features_in_ and feature_names_in_ as scikit-learn sets them; the width checked
    against the declared one (DataError; X must be 2-D, which scikit-learn leaves to the
    caller)."""
    shape = getattr(X, "shape", None) or np.shape(X)
    if len(shape) != 2:
        hint = " (one column: X.reshape(-1, 1))" if len(shape) == 1 else ""
        raise DataError(f"X must be 2-D (rows by columns); got shape {tuple(shape)}{hint}")
    try:
        _check_feature_names(est, X, reset=reset)
        _check_n_features(est, X, reset=reset)
    except ValueError as exc:
        raise DataError(" ".join(str(exc).split())) from None
    if est.n_features_in_ != width:
        raise DataError(
            f"X has {est.n_features_in_} columns but {width} were declared "
            f"({type(est).__name__} needs one declaration per column)"
        )


class _BoundsTransform(ValidatedParameters, TransformerMixin, BaseEstimator):
    """Shared by the scalers: ``bounds_`` to [-1, 1], the public row-norm bound sqrt(d)."""

    _notice = True

    def transform(self, X: Any) -> np.ndarray:
        """Each feature clipped to its bounds and mapped onto [-1, 1]."""
        check_is_fitted(self, "bounds_")
        _check_width(self, X, len(self.bounds_), reset=False)
        return scale_to_unit(as_feature_matrix(_dense(X)), self.bounds_)

    def fit_transform(self, X: Any, y: Any = None, **params: Any) -> np.ndarray:
        """fit, then transform; a :class:`ClippingNotice` when many rows were clipped."""
        self.fit(X, y, **params)
        M = as_feature_matrix(_dense(X))
        if self._notice:
            _, rows = clip_to_bounds(M, self.bounds_)
            clipping_notice(rows, M.shape[0], "values outside the declared bounds")
        return scale_to_unit(M, self.bounds_)

    def public_row_norm_bound(self) -> float:
        """sqrt(d): every output coordinate is in [-1, 1]."""
        return math.sqrt(self._width())

    def _width(self) -> int:
        raise NotImplementedError


class BoundedScaler(OneToOneFeatureMixin, _BoundsTransform):
    """Scale each feature from declared public bounds onto [-1, 1], clipping into them.

    Parameters
    ----------
    bounds : list of (lo, hi), one per feature
        Public bounds (a codebook's range, a physical limit), never read from the data.
        [lo, hi] maps onto [-1, 1] (the midpoint to 0, so the ridge pulls towards the
        middle of the range); values outside are clipped to the nearer bound.

    Attributes
    ----------
    bounds_ : ndarray of shape (n_features, 2)
    row_norm_bound_ : float
        sqrt(n_features): the norm bound of every output row (public).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names (pandas).

    ``fit`` reads only the width of X (and its column names). ``fit_transform`` warns
    :class:`objpert.exceptions.ClippingNotice` when more than 1% of the rows had a value
    outside the bounds (shown to whoever runs it, never stored).
    """

    _parameter_constraints: ClassVar[dict] = {"bounds": ["array-like"]}

    def __init__(self, *, bounds):
        self.bounds = bounds

    def fit(self, X: Any, y: Any = None) -> BoundedScaler:
        """Check the declared bounds and the width of X; nothing is read from the values."""
        self._validate_params()
        bounds = check_bounds(self.bounds)
        _check_width(self, X, len(bounds), reset=True)
        self.bounds_ = bounds
        self.row_norm_bound_ = math.sqrt(len(bounds))
        return self

    def _width(self) -> int:
        return len(check_bounds(self.bounds))


class BoundedOneHotEncoder(ValidatedParameters, TransformerMixin, BaseEstimator):
    """One-hot encode declared public category lists (pandas categorical or string
    columns, or any 2-D array of labels).

    Parameters
    ----------
    categories : list of lists, one per column
        The public categories of each column, in the order of the output columns.
    handle_unknown : {"error", "ignore"}, default="error"
        A value outside its column's list: a :class:`objpert.exceptions.DataError` ("error") or
        an all-zero block for that column ("ignore"). Missing values (None, NaN) are
        unknown unless listed.

    Attributes
    ----------
    categories_ : list of ndarray
    row_norm_bound_ : float
        sqrt(number of columns encoded): each column contributes at most one 1.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names (pandas).
    """

    _parameter_constraints: ClassVar[dict] = {
        "categories": ["array-like"],
        "handle_unknown": [StrOptions({"error", "ignore"})],
    }

    def __init__(self, *, categories, handle_unknown="error"):
        self.categories = categories
        self.handle_unknown = handle_unknown

    def _checked_categories(self) -> list[list[Any]]:
        cats = self.categories
        if not _sized(cats):
            raise ParameterError(
                f"categories must be a non-empty list of category lists; got {_shown(cats)}"
            )
        out = []
        for j, values in enumerate(cats):
            if not _sized(values):
                raise ParameterError(
                    f"categories[{j}] must be a non-empty list of categories; got {_shown(values)}"
                )
            listed = list(values)
            try:
                unique = len({_category_key(c) for c in listed}) == len(listed)
            except TypeError:
                raise ParameterError(f"categories[{j}] must hold hashable values") from None
            if not unique:
                raise ParameterError(f"categories[{j}] lists a category twice: {listed!r:.80}")
            out.append(listed)
        return out

    def fit(self, X: Any, y: Any = None) -> BoundedOneHotEncoder:
        """Check the declared categories and the width of X; nothing is read from the
        values."""
        self._validate_params()
        cats = self._checked_categories()
        _check_width(self, _as_2d(X), len(cats), reset=True)
        self.categories_ = [np.asarray(c, dtype=object) for c in cats]
        self.row_norm_bound_ = math.sqrt(len(cats))
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The one-hot matrix (float64, one block of columns per input column)."""
        check_is_fitted(self, "categories_")
        X = _as_2d(X)
        _check_width(self, X, len(self.categories_), reset=False)
        blocks = []
        for j, cats in enumerate(self.categories_):
            index = {_category_key(c): k for k, c in enumerate(cats.tolist())}
            column = _column(X, j)
            codes = np.array(
                [index.get(_category_key(v), -1) if _hashable(v) else -1 for v in column]
            )
            unknown = int(np.count_nonzero(codes < 0))
            if unknown and self.handle_unknown == "error":
                name = self.feature_names_in_[j] if hasattr(self, "feature_names_in_") else j
                raise DataError(
                    f"column {name!r} has {unknown} value(s) outside its declared categories: "
                    "add them to categories or set handle_unknown='ignore' (all-zero block)"
                )
            block = np.zeros((len(column), len(cats)))
            known = np.flatnonzero(codes >= 0)
            block[known, codes[known]] = 1.0
            blocks.append(block)
        return np.hstack(blocks)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        check_is_fitted(self, "categories_")
        if input_features is None:
            input_features = getattr(
                self, "feature_names_in_", [f"x{j}" for j in range(len(self.categories_))]
            )
        return np.asarray(
            [f"{f}_{c}" for f, cats in zip(input_features, self.categories_, strict=True)
             for c in cats],
            dtype=object,
        )  # fmt: skip

    def public_row_norm_bound(self) -> float:
        """sqrt(number of columns encoded)."""
        return math.sqrt(len(self._checked_categories()))


def _dense(X: Any) -> Any:
    return X.toarray() if hasattr(X, "toarray") else X


def _as_2d(X: Any) -> Any:
    """A frame as given; anything else as a 2-D object array (DataError otherwise)."""
    if hasattr(X, "iloc") and hasattr(X, "columns"):
        return X
    try:
        arr = np.asarray(X, dtype=object)
    except (TypeError, ValueError):
        raise DataError("X must be a 2-D table of category labels") from None
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise DataError(f"X must be 2-D with at least one row; got shape {arr.shape}")
    return arr


def _column(X: Any, j: int) -> list[Any]:
    values = X.iloc[:, j].to_numpy(dtype=object) if hasattr(X, "iloc") else X[:, j]
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def _sized(value: Any) -> bool:
    """A non-empty sequence (not text; a 0-d array has no length)."""
    if isinstance(value, str | bytes):
        return False
    try:
        return len(value) > 0
    except TypeError:
        return False


#: The key of every NaN: NaN equals no value, itself included, so a dict finds the
#: listed NaN only for that very object.
_NAN = object()


def _category_key(v: Any) -> Any:
    """``v`` as a lookup key: every float NaN (Python's or numpy's) the same key."""
    return _NAN if isinstance(v, float | np.floating) and np.isnan(v) else v


def _hashable(v: Any) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _named(steps: Any) -> list[tuple[str, Any]]:
    return [(n, t) for n, t, *_ in steps]


def row_norm_bound(transformer: Any) -> float:
    """The public bound on the norm of every row ``transformer`` outputs, from its
    parameters alone (fitted or not).

    A transformer of :mod:`objpert.preprocessing` declares its own; a ``ColumnTransformer``
    or ``FeatureUnion`` concatenates its parts, each times its ``transformer_weights``
    entry w_k (1 if none), so its bound is sqrt(sum (w_k b_k)^2) ("drop" parts count 0;
    ``remainder`` must be "drop" or bounded); a ``Pipeline`` has the bound of its last
    step. Anything else ("passthrough", a ``StandardScaler``) has no public bound:
    ParameterError.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(transformer, str) and transformer == "drop":
        return 0.0
    if hasattr(transformer, "public_row_norm_bound"):
        return float(transformer.public_row_norm_bound())
    if isinstance(transformer, Pipeline):
        return row_norm_bound(transformer.steps[-1][1])
    if isinstance(transformer, ColumnTransformer | FeatureUnion):
        parts = _named(
            transformer.transformers
            if isinstance(transformer, ColumnTransformer)
            else transformer.transformer_list
        )
        if isinstance(transformer, ColumnTransformer):
            parts.append(("remainder", transformer.remainder))
        weights = transformer.transformer_weights or {}  # each part's output times its weight
        return math.sqrt(
            math.fsum((abs(weights.get(n, 1.0)) * row_norm_bound(t)) ** 2 for n, t in parts)
        )
    raise ParameterError(
        f"{transformer!r:.80} declares no public row-norm bound: use BoundedScaler, "
        "BoundedOneHotEncoder or PrivateFeatureBounds (remainder='drop' in a ColumnTransformer)"
    )
