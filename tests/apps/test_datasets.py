"""Offline datasets with public preprocessing."""

import numpy as np
import pytest

from objpert.apps.datasets import _published_ranges, load
from objpert.exceptions import ParameterError


@pytest.mark.parametrize("name", ["tv16", "breast_cancer", "health_insurance"])
def test_rows_within_public_bound_and_binary_labels(name):
    ds = load(name)
    assert ds.X.ndim == 2 and ds.X.shape[0] == ds.y.shape[0] == ds.n
    assert np.all(np.isfinite(ds.X))
    assert set(np.unique(ds.y)) == {0, 1}
    # the public bound follows from the column count: every coordinate is in [-1, 1]
    assert np.abs(ds.X).max() <= 1.0
    assert np.linalg.norm(ds.X, axis=1).max() <= ds.data_norm
    assert len(ds.feature_names) == ds.X.shape[1]


@pytest.mark.parametrize("name", ["tv16", "health_insurance"])
def test_real_datasets_are_large_enough(name):
    ds = load(name)
    assert ds.n >= 10_000
    assert 0.3 < ds.y.mean() < 0.7


def test_breast_cancer_ranges_come_from_the_published_table():
    from sklearn.datasets import load_breast_cancer

    raw = load_breast_cancer()
    ranges = _published_ranges(raw.DESCR)
    assert len(ranges) == 30
    lo, hi = np.array(ranges).T
    # the documentation's table agrees with the data it describes (to its printed digits)
    assert np.allclose(raw.data.min(axis=0), lo, rtol=0.01, atol=1e-3)
    assert np.allclose(raw.data.max(axis=0), hi, rtol=0.01, atol=1e-3)


def test_unknown_dataset():
    with pytest.raises(ParameterError, match="dataset must be one of"):
        load("iris")
