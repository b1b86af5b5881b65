"""PrivateFeatureBounds: the exponential mechanism's distribution against its exact
probabilities, its privacy by the exact density ratio on neighbouring data sets, and its
certificate."""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import stats

from objpert.exceptions import ParameterError
from objpert.preprocessing import PrivateFeatureBounds
from objpert.preprocessing._quantiles import (
    MECHANISM,
    private_quantile,
    quantile_log_weights,
)

pytestmark = pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")

VALUES = [0.2, 0.5, 0.55, 0.9, 0.9]  # a tie: an empty interval
LO, HI = 0.0, 1.0


def _exact_interval_probabilities(values, q, epsilon):
    """p_i = |I_i| exp(-epsilon |i - q n| / 2) / Z in 50-digit arithmetic (Smith 2011)."""
    mpmath.mp.dps = 50
    x = sorted(min(max(v, LO), HI) for v in values)
    edges = [LO, *x, HI]
    n = len(x)
    w = [
        (mpmath.mpf(edges[i + 1]) - mpmath.mpf(edges[i]))
        * mpmath.exp(-mpmath.mpf(epsilon) * abs(i - mpmath.mpf(q) * n) / 2)
        for i in range(n + 1)
    ]
    total = mpmath.fsum(w)
    return np.array(edges), np.array([float(v / total) for v in w])


def test_log_weights_match_the_exact_probabilities():
    edges, logw = quantile_log_weights(np.array(VALUES), LO, HI, 0.5, 2.0)
    exact_edges, p = _exact_interval_probabilities(VALUES, 0.5, 2.0)
    np.testing.assert_array_equal(edges, exact_edges)
    implemented = np.exp(logw - np.logaddexp.reduce(logw))
    np.testing.assert_allclose(implemented, p, rtol=1e-12, atol=0)
    assert implemented[4] == 0.0  # the interval between the tied values is empty


def test_draws_follow_the_exponential_mechanism_chi_square():
    rng = np.random.default_rng(12345)
    values = np.array(VALUES)
    draws = np.array([private_quantile(values, LO, HI, 0.3, 3.0, rng) for _ in range(20000)])
    edges, p = _exact_interval_probabilities(VALUES, 0.3, 3.0)
    assert np.all((draws >= LO) & (draws <= HI))
    cells = np.clip(np.searchsorted(edges, draws, side="right") - 1, 0, len(p) - 1)
    keep = p > 0
    counts = np.bincount(cells, minlength=len(p))
    assert counts[~keep].sum() == 0
    result = stats.chisquare(counts[keep], p[keep] * len(draws))
    assert result.pvalue > 1e-3
    # and the test can fail: a mechanism at 2 epsilon is far from these probabilities
    _, wrong = _exact_interval_probabilities(VALUES, 0.3, 6.0)
    assert stats.chisquare(counts[keep], wrong[keep] * len(draws)).pvalue < 1e-6


def _density(values, q, epsilon, y):
    """The implemented output density at y: the chosen interval's probability over its
    width."""
    edges, logw = quantile_log_weights(np.asarray(values), LO, HI, q, epsilon)
    log_p = logw - np.logaddexp.reduce(logw)
    i = np.clip(np.searchsorted(edges, y, side="right") - 1, 0, len(logw) - 1)
    width = np.diff(edges)[i]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(width > 0, np.exp(log_p[i]) / width, 0.0)


@pytest.mark.parametrize("q, epsilon", [(0.5, 1.0), (0.01, 0.5), (0.99, 4.0)])
def test_neighbouring_data_sets_density_ratio_is_at_most_e_epsilon(q, epsilon):
    """Replacing one row changes the output density by a factor <= e^epsilon at every
    output (Smith 2011), computed exactly from the implementation's weights."""
    base = [0.1, 0.2, 0.35, 0.5, 0.5, 0.7, 0.95]
    worst = 0.0
    for k in range(len(base)):
        for replacement in (0.0, 0.42, 0.5, 1.0):
            other = list(base)
            other[k] = replacement
            edges = np.unique(np.concatenate([[LO, HI], base, other]))
            y = np.concatenate([(edges[:-1] + edges[1:]) / 2, edges[:-1] + 1e-9])
            a, b = _density(base, q, epsilon, y), _density(other, q, epsilon, y)
            both = (a > 0) & (b > 0)
            assert np.array_equal(a > 0, b > 0)  # same support
            worst = max(worst, float(np.max(np.abs(np.log(a[both] / b[both])))))
    assert worst <= epsilon * (1 + 1e-9)
    assert worst >= 0.45 * epsilon  # not vacuous: about half of the bound is attained


def test_private_feature_bounds_certificate_and_scaling():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(50, 10, 5000), rng.uniform(-3, 3, 5000)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pfb = PrivateFeatureBounds(
            epsilon=4.0, ranges=[(0, 1000), (-100, 100)], random_state=1
        ).fit(X)
    cert = pfb.certificate_
    assert cert.k == 4 and cert.method == "basic" and cert.delta == 0.0
    assert cert.epsilon <= 4.0 and cert.epsilon == pytest.approx(4.0)
    assert {c.form for c in cert.certificates} == {MECHANISM}
    assert all(c.epsilon == pytest.approx(1.0) for c in cert.certificates)
    # at epsilon 1 per quantile and n = 5000 the draws are near the true quantiles
    true = np.quantile(X, [0.01, 0.99], axis=0).T
    np.testing.assert_allclose(pfb.bounds_, true, rtol=0.1, atol=0.2)
    out = pfb.transform(X)
    assert out.min() >= -1.0 and out.max() <= 1.0
    assert pfb.row_norm_bound_ == pfb.public_row_norm_bound() == math.sqrt(2)


def test_private_feature_bounds_with_delta_may_use_advanced_composition():
    X = np.random.default_rng(0).uniform(size=(200, 30))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pfb = PrivateFeatureBounds(
            epsilon=1.0, delta=1e-6, ranges=[(0, 1)] * 30, random_state=0
        ).fit(X)
    cert = pfb.certificate_
    assert cert.epsilon <= 1.0 and cert.delta <= 1e-6 and cert.k == 60


def test_bad_parameters():
    X = np.zeros((5, 1))
    for kw in (
        dict(epsilon=0.0, ranges=[(0, 1)]),
        dict(epsilon=1.0, delta=1.0, ranges=[(0, 1)]),
        dict(epsilon=1.0, quantiles=(0.9, 0.1), ranges=[(0, 1)]),
        dict(epsilon=1.0, quantiles=(0.5,), ranges=[(0, 1)]),
        dict(epsilon=1.0, ranges=None),
        dict(epsilon=1.0, ranges=[(1, 0)]),
        dict(epsilon=True, ranges=[(0, 1)]),
        dict(epsilon=1.0, ranges=[(0, 1)], random_state=-1),
    ):
        with pytest.raises(ParameterError):
            PrivateFeatureBounds(**kw).fit(X)
    with pytest.raises(TypeError, match="ranges"):  # the public ranges must be declared
        PrivateFeatureBounds(epsilon=1.0)


def test_an_accountant_takes_a_list_of_rows_as_without_one():
    from objpert.accounting import PrivacyAccountant

    rows = np.random.default_rng(0).uniform(0, 5, size=(200, 2)).tolist()
    ledger = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bounds = PrivateFeatureBounds(
            epsilon=0.5, ranges=[(0, 10)] * 2, accountant=ledger, random_state=0
        ).fit(rows)
    assert len(ledger.steps) == 1 and bounds.bounds_.shape == (2, 2)
