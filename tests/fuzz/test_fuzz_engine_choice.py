"""Fuzz: the estimators' ``engine`` / ``dtype`` parameters and the ``engine`` / ``dtype``
of the batched releases: a one-line objpert error, or the default engine's weights (to
1e-12 relative; 1e-4 in float32) with the same certificate."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_support import check_certificate, choice, draw_args, fuzz, outcome
from hypothesis import given
from hypothesis import strategies as st

from objpert.certify import _calibration as calibration
from objpert.estimators import PrivateLogisticRegression
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, release_one_vs_rest

pytestmark = pytest.mark.filterwarnings("ignore")

ENGINE = choice(("default", "auto", "shaped", "xp"), bad=("bogus", 3, None, "gpu", ["auto"]))
DTYPE = choice(("float64", "float32"), bad=("float16", 64, None, np.float64))


def one_hot(seed: int, n: int = 80):
    """A continuous column and a one-hot group of 3, rows from a pool of 12."""
    rng = np.random.default_rng(seed)
    pool = np.column_stack([np.round(rng.uniform(-0.5, 0.5, 12), 1),
                            0.5 * np.eye(3)[rng.integers(0, 3, 12)]])  # fmt: skip
    X = pool[rng.integers(0, 12, n)]
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def tol(dtype: str) -> float:
    return 1e-4 if dtype == "float32" else 1e-10


@fuzz(12)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_estimator_engine_choice(data, seed):
    X, y = one_hot(seed)
    kw = draw_args(data, engine=ENGINE, dtype=DTYPE)
    common = dict(epsilon=2.0, data_norm=1.0, classes=[0, 1], random_state=1, max_iter=40)
    ok, got = outcome(PrivateLogisticRegression(**common, **kw).fit, X, y)
    if ok:
        base = PrivateLogisticRegression(**common).fit(X, y)
        check_certificate(got.certificate_)
        assert got.certificate_ == base.certificate_
        scale = np.abs(base.coef_).max()
        assert np.abs(got.coef_ - base.coef_).max() <= tol(kw["dtype"]) * scale


PLAN = calibration.tight("logistic", n=80, d=4, zeta=1.0, epsilon=2.0, delta=1e-5, mu=0.2,
                         max_iter=40, objective="empirical")  # fmt: skip


@fuzz(12)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_one_vs_rest_engine_choice(data, seed):
    X, y = one_hot(seed)
    Y = np.column_stack([np.where(y == 1, 1.0, -1.0), np.where(X[:, 1] > 0, 1.0, -1.0)])
    kw = draw_args(data, engine=ENGINE, dtype=DTYPE)
    ok, got = outcome(release_one_vs_rest, X, Y, PLAN, [5, 6], **kw)
    if ok:
        for k, release in enumerate(got):
            ref = perturbed_gradient_descent(X, Y[:, k], PLAN, 5 + k).weights
            assert np.abs(release.weights - ref).max() <= tol(kw["dtype"]) * np.abs(ref).max()
