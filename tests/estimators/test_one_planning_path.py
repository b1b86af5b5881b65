"""One planning path: a fitted estimator's plan is exactly (==) what ``objpert.plan``
returns for the same public constants and the estimator's settings, and
``objpert.plan``'s defaults are the estimators' defaults.

For a fit on n rows of n_features features, ``objpert.plan`` is called with n, d =
n_features (+ 1 with the intercept column) and zeta, the public row bound with the
intercept column (hypot(data_norm, c), c = intercept_scaling or data_norm). The mechanism
is the one the registry says releases the fitted plan's type.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import objpert
from objpert import PrivateLogisticRegression, PrivateRobustRegression
from objpert.accounting._composition import split_budget
from objpert.mechanisms import _registry as registry

pytestmark = pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")

DELTA = 1e-6


def _data(n: int, n_features: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows of norm <= 1; k class labels (k >= 2) or real targets in [-1, 1] (k = 1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, n_features)) / math.sqrt(n_features)
    w = rng.normal(size=(n_features, max(k, 1)))
    if k == 1:
        return X, np.clip(X @ w[:, 0], -1.0, 1.0)
    return X, np.argmax(X @ w + 0.3 * rng.normal(size=(n, k)), axis=1)


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y)


def _public(model, X) -> dict:
    """n, d and zeta of ``model``'s fit on X, from the public settings."""
    p = model.get_params()
    n, n_features = X.shape
    norm = p["data_norm"]
    c = p["intercept_scaling"] if p["intercept_scaling"] is not None else norm
    if not p["fit_intercept"]:
        return {"n": n, "d": n_features, "zeta": float(norm)}
    return {"n": n, "d": n_features + 1, "zeta": math.hypot(norm, c)}


def _settings(model, epsilon: float) -> dict:
    """The estimator's planning settings as ``objpert.plan``'s Watkins & Arora options for a
    release of epsilon ``epsilon`` (``comparator_norm="auto"`` without a prior: the
    planner's default, left out)."""
    p = model.get_params()
    out = {
        "calibration": p["calibration"],
        "mu": None if p["mu"] == "auto" else p["mu"],
        "max_iter": p["max_iter"],
    }
    if p["comparator_norm"] != "auto":
        out["comparator_norm"] = p["comparator_norm"]
    elif p.get("prior") is not None:  # with a prior: W = min(3, the release's epsilon)
        out["comparator_norm"] = min(3.0, epsilon)
    if "scale" in p:
        out["scale"] = p["scale"]
    return out


def _plan(model, X, loss: str, epsilon: float, delta: float):
    """``objpert.plan`` for one Watkins & Arora release of ``model``'s fit on X."""
    return objpert.plan(
        "watkins_arora", loss=loss, epsilon=epsilon, delta=delta, **_public(model, X),
        **_settings(model, epsilon),
    )  # fmt: skip


# ---------------------------------------------------------------- one release

SHAPES = [(300, 3), (900, 8)]
SETTINGS = [
    {},
    {"mu": 0.5},
    {"comparator_norm": 1.5, "max_iter": 800},
    {"intercept_scaling": 0.5},
    {"fit_intercept": False},
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("epsilon", [0.5, 3.0])
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: ",".join(s) or "defaults")
def test_a_binary_fit_uses_the_plan_objpert_plan_returns(shape, epsilon, settings):
    X, y = _data(*shape, 2)
    model = PrivateLogisticRegression(
        epsilon=epsilon, delta=DELTA, data_norm=1.0, classes=[0, 1], random_state=0, **settings
    )
    _fit(model, X, y)
    expected = _plan(model, X, "logistic", epsilon, DELTA)
    assert model.plan_ == expected
    assert registry.for_plan(model.plan_).name == "watkins_arora"


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 5.0])
def test_a_fit_with_a_prior_uses_the_plan_objpert_plan_returns(epsilon):
    """With a public prior, ``comparator_norm="auto"`` is W = min(3, epsilon): the plan is
    ``objpert.plan`` at that W (for a one-vs-rest fit, at each release's own epsilon), and
    a declared W is kept."""
    X, y = _data(700, 5, 2)
    prior = (np.full(5, 0.2), 0.1)
    model = _fit(
        PrivateLogisticRegression(
            epsilon=epsilon, data_norm=1.0, classes=[0, 1], prior=prior, random_state=0
        ),
        X,
        y,
    )
    assert model.plan_.comparator_norm == min(3.0, epsilon)
    assert model.plan_ == _plan(model, X, "logistic", epsilon, DELTA)
    model.set_params(comparator_norm=2.0)
    assert _fit(model, X, y).plan_.comparator_norm == 2.0
    X3, y3 = _data(600, 4, 3)
    ovr = PrivateLogisticRegression(
        epsilon=epsilon, data_norm=1.0, classes=[0, 1, 2], multi_class="ovr",
        prior=(np.zeros((3, 4)), np.zeros(3)), composition="split", random_state=0,
    )  # fmt: skip
    _fit(ovr, X3, y3)
    split = split_budget(epsilon, DELTA, 3)
    assert ovr.plan_[0].comparator_norm == min(3.0, split.epsilon_i) < min(3.0, epsilon)
    assert ovr.plan_[0] == _plan(ovr, X3, "logistic", split.epsilon_i, split.delta_i)


@pytest.mark.parametrize("shape", SHAPES)
def test_corollary_413_fits_use_the_plan_objpert_plan_returns(shape):
    X, y = _data(*shape, 2)
    model = PrivateLogisticRegression(
        epsilon=0.8, data_norm=1.0, classes=[0, 1], calibration="corollary413", random_state=0
    )
    _fit(model, X, y)
    assert model.plan_ == _plan(model, X, "logistic", 0.8, DELTA)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("settings", [{}, {"scale": 0.5}, {"mu": 0.3, "max_iter": 600}])
def test_a_robust_fit_uses_the_plan_objpert_plan_returns(shape, settings):
    X, y = _data(*shape, 1)
    model = PrivateRobustRegression(epsilon=2.0, data_norm=1.0, random_state=0, **settings)
    _fit(model, X, y)
    assert model.plan_ == _plan(model, X, "robust", 2.0, DELTA)


# ---------------------------------------------------------------- K releases


@pytest.mark.parametrize("composition", ["pld", "split"])
@pytest.mark.parametrize("epsilon", [1.0, 3.0])
def test_each_one_vs_rest_release_uses_objpert_plan_at_its_own_budget(composition, epsilon):
    """Joint calibration plans K releases: each release's plan is ``objpert.plan`` at that
    release's (epsilon_i, delta_i), and the K plans are one plan."""
    X, y = _data(600, 4, 3)
    model = PrivateLogisticRegression(
        epsilon=epsilon, data_norm=1.0, classes=[0, 1, 2], multi_class="ovr",
        composition=composition, max_iter=1000, random_state=0,
    )  # fmt: skip
    _fit(model, X, y)
    plans = model.plan_
    assert isinstance(plans, list) and len(plans) == 3
    assert all(p == plans[0] for p in plans)
    eps_i, delta_i = plans[0].epsilon, plans[0].delta
    assert eps_i < epsilon and delta_i < DELTA  # a share of the fit's budget
    assert plans[0] == _plan(model, X, "logistic", eps_i, delta_i)
    if composition == "split":
        split = split_budget(epsilon, DELTA, 3)
        assert (eps_i, delta_i) == (split.epsilon_i, split.delta_i)


# ---------------------------------------------------------------- multinomial


@pytest.mark.parametrize(("n", "n_features", "k"), [(400, 3, 4), (800, 6, 5)])
@pytest.mark.parametrize("settings", [{}, {"mu": 0.2}, {"comparator_norm": 1.0}])
def test_a_multinomial_fit_uses_the_plan_objpert_plan_returns(n, n_features, k, settings):
    X, y = _data(n, n_features, k)
    model = PrivateLogisticRegression(
        epsilon=2.0, data_norm=1.0, classes=list(range(k)), multi_class="multinomial",
        random_state=0, **settings,
    )  # fmt: skip
    _fit(model, X, y)
    assert registry.for_plan(model.plan_).name == "multinomial"
    s = _settings(model, 2.0)
    expected = objpert.plan(
        "multinomial", loss="softmax", epsilon=2.0, delta=DELTA, **_public(model, X),
        n_classes=k, mu=s["mu"], **({} if "comparator_norm" not in s else
                                    {"comparator_norm": s["comparator_norm"]}),
    )  # fmt: skip
    assert model.plan_ == expected


# ---------------------------------------------------------------- defaults


def test_objpert_plan_defaults_are_the_estimators_defaults():
    """The Watkins & Arora planner's options that are estimator parameters default to the
    estimators' defaults (``mu=None`` is ``mu="auto"``; ``comparator_norm="auto"`` is 3
    without a prior, the planners' default), and so does the multinomial planner's
    comparator norm."""
    options = inspect.signature(registry.get("watkins_arora").plan).parameters
    for cls in (PrivateLogisticRegression, PrivateRobustRegression):
        params = cls().get_params()
        for name in ("calibration", "max_iter"):
            assert options[name].default == params[name], (cls.__name__, name)
        assert options["mu"].default is None and params["mu"] == "auto"
        assert options["comparator_norm"].default == 3.0 and params["comparator_norm"] == "auto"
    multinomial = inspect.signature(
        objpert.mechanisms._certificates.multinomial.plan_multinomial
    ).parameters
    assert multinomial["comparator_norm"].default == 3.0
    assert multinomial["mu"].default is None


def test_the_default_plan_is_the_default_estimators_plan():
    """``objpert.plan("watkins_arora", ...)`` with no option is the plan of a default
    estimator on that shape (the digits shape: n = 1797, 64 features, zeta = sqrt 2)."""
    X, y = _data(1797, 64, 2)
    model = _fit(
        PrivateLogisticRegression(epsilon=3.0, data_norm=1.0, classes=[0, 1], random_state=0),
        X,
        y,
    )
    plan = objpert.plan(
        "watkins_arora", loss="logistic", n=1797, d=65, zeta=2**0.5, epsilon=3, delta=1e-6
    )
    assert model.plan_ == plan


def test_the_estimators_refuse_what_the_plan_refuses():
    """Corollary 4.13 chooses mu itself: both entry points refuse a given mu."""
    with pytest.raises(objpert.ParameterError, match="mu"):
        objpert.plan(
            "watkins_arora", loss="logistic", n=500, d=3, zeta=1.0, epsilon=0.5,
            delta=DELTA, calibration="corollary413", mu=0.1,
        )  # fmt: skip
    X, y = _data(500, 2, 2)
    model = PrivateLogisticRegression(
        epsilon=0.5, data_norm=1.0, classes=[0, 1], calibration="corollary413", mu=0.1
    )
    with pytest.raises(objpert.ParameterError, match="mu"):
        model.fit(X, y)
