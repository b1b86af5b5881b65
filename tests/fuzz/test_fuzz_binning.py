"""Fuzz: BoundedBinner. Hostile edges or rows either raise an objpert error or give
indicator rows of exactly the public norm sqrt(number of features)."""

from __future__ import annotations

import math
import warnings

import numpy as np
from fuzz_support import HOSTILE, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st

from objpert.preprocessing import BoundedBinner, row_norm_bound

FINITE = st.floats(-1e300, 1e300, allow_nan=False)
EDGE_LIST = st.lists(FINITE, min_size=2, max_size=5, unique=True).map(sorted)
EDGES = st.one_of(
    st.lists(EDGE_LIST, min_size=1, max_size=3),
    st.lists(st.one_of(EDGE_LIST, st.lists(HOSTILE, max_size=4), HOSTILE), max_size=3),
    HOSTILE,
)


def _fit_transform(edges, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipping notices: out-of-range values by design
        return BoundedBinner(edges=edges).fit_transform(X)


@fuzz(40)
@given(edges=EDGES, data=st.data())
def test_binner_errors_or_rows_of_the_public_norm(edges, data):
    width = len(edges) if isinstance(edges, list) and edges else 1
    rows = data.draw(st.integers(1, 6))
    cells = st.one_of(FINITE, HOSTILE)
    X = data.draw(st.lists(st.lists(cells, min_size=width, max_size=width), min_size=rows,
                           max_size=rows))  # fmt: skip
    ok, Z = outcome(_fit_transform, edges, X)
    if not ok:
        return
    Z = np.asarray(Z)
    assert Z.shape[0] == rows and np.all((Z == 0.0) | (Z == 1.0))
    bound = row_norm_bound(BoundedBinner(edges=edges))
    assert bound == math.sqrt(width)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), bound)
