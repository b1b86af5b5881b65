"""Public or private feature bounds, never silent: feature_bounds, data_norm=None, the
clipping notice, pipelines, and model files with the new parameters."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from sklearn.pipeline import Pipeline

from objpert import PrivacyLeakWarning
from objpert.accounting import pipeline_certificate
from objpert.estimators import (
    PrivateLogisticRegression,
    PrivateRobustRegression,
    fit_statistics,
)
from objpert.exceptions import ClippingNotice, DataError, ModelFileError
from objpert.persistence import load, save
from objpert.preprocessing import BoundedScaler

pytestmark = pytest.mark.filterwarnings(
    "ignore::objpert.exceptions.TestingSeedWarning",
    "ignore::objpert.exceptions.UnverifiedModelWarning",
)

BOUNDS = [(0.0, 100.0), (-50.0, 50.0), (1000.0, 3000.0)]


def _raw(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.uniform(0, 100, n), rng.uniform(-50, 50, n), rng.uniform(1000, 3000, n)]
    )
    z = (X[:, 0] - 50) / 50 - (X[:, 1]) / 50 + (X[:, 2] - 2000) / 1000
    y = (z + 0.3 * rng.logistic(size=n) > 0).astype(int)
    return X, y, z


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClippingNotice)
        return fn(*args)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_feature_bounds_predict_as_the_scaled_model(fit_intercept):
    """coef_/intercept_ in raw units; predictions on raw X (values outside the bounds
    included) equal those of the same release trained on BoundedScaler output."""
    X, y, _ = _raw()
    kw = dict(epsilon=2.0, mu=0.2, classes=[0, 1], random_state=5, fit_intercept=fit_intercept)
    direct = PrivateLogisticRegression(feature_bounds=BOUNDS, **kw).fit(X, y)
    pipe = Pipeline(
        [
            ("scale", BoundedScaler(bounds=BOUNDS)),
            ("clf", PrivateLogisticRegression(data_norm=math.sqrt(3), **kw)),
        ]
    ).fit(X, y)
    assert direct.plan_ == pipe[-1].plan_  # the same public constants: zeta from sqrt(d)
    assert direct.certificate_.not_public == ()
    Xt, _, _ = _raw(200, seed=1)
    Xt[:10] *= 3.0  # outside the bounds: clipped, as at training
    np.testing.assert_allclose(
        direct.decision_function(Xt), pipe.decision_function(Xt), rtol=1e-9, atol=1e-12
    )
    np.testing.assert_array_equal(direct.predict(Xt), pipe.predict(Xt))
    # the raw-unit coefficients are the scaled ones divided by the half-widths
    half = np.array([50.0, 50.0, 1000.0])
    np.testing.assert_allclose(direct.coef_ * half, pipe[-1].coef_, rtol=1e-12)


def test_feature_bounds_regression_in_raw_units():
    X, _, z = _raw(800)
    model = PrivateRobustRegression(epsilon=4.0, feature_bounds=BOUNDS, random_state=0).fit(X, z)
    assert model.coef_.shape == (3,) and isinstance(model.intercept_, float)
    assert model.score(X, z) > 0.8
    # the true model in raw units: z = x0/50 - x1/50 + x2/1000 - 3
    np.testing.assert_allclose(model.coef_, [1 / 50, -1 / 50, 1 / 1000], rtol=0.3)


def test_feature_bounds_width_is_checked():
    X, y, _ = _raw(50)
    with pytest.raises(DataError, match="feature_bounds declares 2"):
        PrivateLogisticRegression(feature_bounds=BOUNDS[:2], classes=[0, 1]).fit(X, y)


def test_data_norm_read_from_the_data_warns_and_is_recorded():
    X, y, _ = _raw(400)
    Xs = X / 1000.0
    with pytest.warns(PrivacyLeakWarning, match="data_norm=None"):
        model = PrivateLogisticRegression(epsilon=2.0, classes=[0, 1], random_state=0).fit(Xs, y)
    assert model.certificate_.not_public == ("data norm",)
    largest = float(np.max(np.linalg.norm(Xs, axis=1)))
    assert model.plan_.zeta == pytest.approx(math.hypot(largest, largest))  # c = data norm


def test_clipping_notice_is_shown_and_not_stored(tmp_path):
    X, y, _ = _raw(500)
    Xs = X / np.array([100.0, 50.0, 3000.0]) / math.sqrt(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingNotice)  # none: rows within data_norm = 1
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0).fit(Xs, y)
    with pytest.warns(ClippingNotice, match="training rows"), fit_statistics() as fits:
        model = PrivateLogisticRegression(data_norm=0.3, classes=[0, 1], random_state=0)
        model.fit(Xs, y)
    clipped = fits[0].n_clipped
    assert clipped > 5 and not hasattr(model, "n_clipped_")
    with pytest.warns(ClippingNotice):
        PrivateLogisticRegression(feature_bounds=[(0, 50), (-50, 50), (1000, 3000)],
                                  classes=[0, 1], random_state=0).fit(X, y)  # fmt: skip
    text = save(model, tmp_path / "m.json").read_text()
    assert "clipped" not in text and str(clipped) not in json.loads(text)["params"]


def test_feature_bounds_model_file_round_trip(tmp_path):
    X, y, _ = _raw(400)
    model = PrivateLogisticRegression(feature_bounds=BOUNDS, classes=[0, 1], random_state=0)
    _quiet(model.fit, X, y)
    loaded = load(save(model, tmp_path / "m.json"))
    Xt = _raw(100, seed=3)[0] * 1.5
    np.testing.assert_array_equal(loaded.decision_function(Xt), model.decision_function(Xt))
    assert loaded.feature_bounds == [list(b) for b in BOUNDS]


def test_read_data_norm_round_trips_and_must_stay_recorded(tmp_path):
    X, y, _ = _raw(400)
    with pytest.warns(PrivacyLeakWarning):
        model = PrivateLogisticRegression(classes=[0, 1], random_state=0).fit(X / 1000, y)
    path = save(model, tmp_path / "m.json")
    assert load(path).certificate_.not_public == ("data norm",)
    payload = json.loads(path.read_text())
    payload["certificate"]["not_public"] = []
    payload.pop("digest")
    from objpert.persistence._fileformat import digest

    payload["digest"] = digest(payload)
    path.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match="data norm"):
        load(path)


def test_a_pipeline_gives_the_public_bound_and_one_certificate():
    from sklearn.pipeline import make_pipeline

    from objpert.preprocessing import PrivateFeatureBounds

    X, y, _ = _raw(1000)
    pipe = make_pipeline(BoundedScaler(bounds=BOUNDS), PrivateLogisticRegression(classes=[0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        pipe.fit(X, y)
    assert pipe[-1].pipeline_data_norm_ == pytest.approx(math.sqrt(3))
    pfb = PrivateFeatureBounds(
        epsilon=0.5, ranges=[(0, 1000), (-1000, 1000), (0, 10000)], random_state=0
    )
    pipe = make_pipeline(
        pfb, PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        pipe.fit(X, y)
    cert = pipeline_certificate(pipe)
    assert cert.method == "basic" and cert.k == 2 and cert.not_public == ()
    assert cert.epsilon == pytest.approx(1.5) and cert.epsilon <= 1.5
    assert cert.delta <= 1e-6
    assert pipe.score(X, y) > 0.7
