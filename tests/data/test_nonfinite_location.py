"""A NaN or inf among the features is refused with the first one's row and column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from objpert._data import as_feature_matrix
from objpert.exceptions import DataError


def test_a_frame_names_the_column():
    df = pd.DataFrame({"age": [1.0, 2, 3, 4], "income": [1, 2, np.nan, np.inf]})
    with pytest.raises(
        DataError, match=r"2 non-finite .* row 2 \(counting from 0\), column 'income'"
    ):
        as_feature_matrix(df)


@pytest.mark.parametrize("wrap", [np.asarray, sparse.csr_matrix])
def test_an_array_gives_the_column_index(wrap):
    X = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, -np.inf], [np.nan, 1.0, 1.0]])
    with pytest.raises(DataError, match=r"2 non-finite .* row 1 \(counting from 0\), column 2"):
        as_feature_matrix(wrap(X))
