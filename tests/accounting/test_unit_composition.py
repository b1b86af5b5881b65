"""Person-level releases compose like any releases, for one unit: compose() and the
pipeline certificate take releases certified for the same person of k rows (basic
composition and their grouped privacy-loss distributions) and refuse to mix units."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

import objpert
from objpert.accounting import _pld as pld
from objpert.accounting import (
    compose_certificates,
    group_certificate,
    pipeline_certificate,
)
from objpert.accounting._composition import compose
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import ClippingNotice, ParameterError
from objpert.preprocessing import BoundedScaler, PrivateFeatureBounds

pytestmark = pytest.mark.skipif(not pld.available(), reason="needs dp-accounting")

K = 3
PUBLIC = dict(loss="logistic", n=2000, d=5, zeta=1.0, epsilon=1.0 / K, delta=1e-7)


@pytest.fixture(scope="module")
def units():
    return {
        name: group_certificate(objpert.plan(name, **PUBLIC).certificate, K)
        for name in ("watkins_arora", "dp_newton", "noisy_gd")
    }


def test_compose_person_level_releases_of_one_unit(units):
    parts = list(units.values())
    basic = compose(parts, "basic")
    assert basic.rows_per_unit == K and "one person, up to 3 rows" in basic.covers
    assert basic.epsilon == pytest.approx(sum(u.epsilon for u in parts))
    assert basic.delta == pytest.approx(sum(u.delta for u in parts))
    losses = basic.privacy_losses()
    assert len(losses) == 3 and all(x.rows == K for x in losses)
    # their privacy-loss distributions compose to at most the basic composition's delta
    dist = pld.compose(losses)
    assert pld.delta_for_epsilon(dist, basic.epsilon) <= basic.delta
    accounted = compose_certificates(parts, basic.epsilon)
    assert accounted.delta == pytest.approx(pld.delta_for_epsilon(dist, basic.epsilon))
    assert accounted.rows_per_unit == K
    # the Gaussian parts grouped exactly: dp_newton's 2K steps at k times the sensitivity
    newton = units["dp_newton"].release
    (gauss,) = units["dp_newton"].privacy_losses()
    assert (
        dict(gauss.parameters)["sensitivity"] == K and gauss.count == newton.details["mechanisms"]
    )


def test_compose_refuses_mixed_units(units):
    row = objpert.plan("lop", **PUBLIC).certificate
    with pytest.raises(ParameterError, match="different privacy units"):
        compose([units["noisy_gd"], row], "basic")
    other = group_certificate(row, K + 1)
    with pytest.raises(ParameterError, match="different privacy units"):
        compose([units["noisy_gd"], other], "basic")
    with pytest.raises(ParameterError, match="different privacy units"):
        compose_certificates([units["noisy_gd"], row], 2.0)


def panel(seed=0, m=150, most=5):
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(m), rng.integers(1, most + 1, m))
    X = rng.uniform(-1, 1, size=(ids.size, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=ids.size) > 0).astype(int)
    return X, y, ids


def model(**kw):
    return PrivateLogisticRegression(
        epsilon=2.0, delta=1e-5, data_norm=2.0, classes=[0, 1], random_state=1, **kw
    )


def test_the_pipeline_certificate_composes_one_unit_and_refuses_a_row_level_step():
    X, y, ids = panel()
    pipe = Pipeline([("scale", BoundedScaler(bounds=[[-1.0, 1.0]] * 3)),
                     ("clf", model(max_rows_per_unit=K))])  # fmt: skip
    with pytest.warns(ClippingNotice):
        pipe.fit(X, y, clf__privacy_unit=ids)
    cert = pipeline_certificate(pipe, composition="pld", delta=1e-5)
    assert all(x.rows == K for step in cert.steps for x in step.losses)
    assert cert.epsilon <= 2.0 * (1 + 1e-2)  # the release's own losses at its delta
    # a private step certified per row does not compose with the person-level model: the
    # fit refuses it, and so does the composition of the two fitted apart
    bounds = PrivateFeatureBounds(epsilon=0.5, ranges=[(-1.0, 1.0)] * 3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ParameterError, match="different privacy units"):
            Pipeline([("bounds", bounds), ("clf", model(max_rows_per_unit=K))]).fit(
                X, y, clf__privacy_unit=ids
            )
        bounds.fit(X)
        clf = model(max_rows_per_unit=K).fit(bounds.transform(X), y, privacy_unit=ids)
    mixed = Pipeline([("bounds", bounds), ("clf", clf)])
    for composition, delta in (("basic", None), ("pld", 1e-5)):
        with pytest.raises(ParameterError, match="different privacy units"):
            pipeline_certificate(mixed, composition=composition, delta=delta)


def test_grouping_then_composing_is_composing_then_grouping_for_gaussians():
    """k rows of T Gaussian releases: each grouped then composed equals the composition
    grouped (sensitivity k G either way), the exact profile in closed form."""
    from scipy.stats import norm

    sigma, T = 8.0, 5
    grouped = objpert.accounting.group_privacy(pld.gaussian(sigma, 1.0, T), K)
    mu = K * math.sqrt(T) / sigma
    for eps in (0.5, 1.5):
        exact = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
        got = pld.delta_for_epsilon(pld.distribution(grouped), eps)
        assert exact * (1 - 1e-9) <= got <= exact * 1.02


@pytest.mark.parametrize("composition", ["split", "pld"])
def test_a_composed_certificate_reads_back_from_its_dict_per_row_and_per_person(composition):
    """One-vs-rest's K releases, per row or per person: what a Spark model stores."""
    from objpert.accounting._accountant import release_from_dict

    X, _, ids = panel()
    labels = np.digitize(X[:, 0], [-0.3, 0.3])
    for unit in ({}, {"max_rows_per_unit": K}):
        clf = PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=2.0, classes=[0, 1, 2], multi_class="ovr",
            composition=composition, max_iter=20, random_state=0, **unit,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X, labels, **({"privacy_unit": ids} if unit else {}))
        data = clf.certificate_.to_dict()
        assert release_from_dict(data).to_dict() == data
