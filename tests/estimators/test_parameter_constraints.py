"""Every estimator and transformer of objpert takes keyword-only parameters, declares each
of them in scikit-learn's ``_parameter_constraints``, and validates them when ``fit``
starts (ParameterError naming the parameter, before any data are read).

The classes are found by walking objpert's library packages for scikit-learn estimators
(subclasses of ``BaseEstimator`` with their own ``__init__``), so a new one is checked
without being listed here; :data:`MAKE` says how to build a valid one.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator

import objpert
from objpert import (
    PrivateLogisticRegression,
    PrivateRobustRegression,
)
from objpert.exceptions import ParameterError
from objpert.model_selection import PrivateGridSearch
from objpert.persistence._pipeline_file import _ReleasedBounds
from objpert.preprocessing import (
    BoundedBinner,
    BoundedOneHotEncoder,
    BoundedScaler,
    PrivateFeatureBounds,
)

#: Application packages: no estimators (and their imports are heavy).
APPLICATIONS = ("objpert.apps", "objpert.cli", "objpert.__main__")


def _library_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(objpert.__path__, prefix="objpert."):
        if not info.name.startswith(APPLICATIONS):
            names.append(info.name)
    return names


def _estimator_classes() -> list[type]:
    found: dict[str, type] = {}
    for name in _library_modules():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module(name)
        except ImportError:  # an optional dependency (pyspark, dask, ...) is missing
            continue
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseEstimator)
                and obj.__module__.startswith("objpert.")
                and obj.__init__ is not object.__init__
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return [found[k] for k in sorted(found)]


CLASSES = _estimator_classes()

#: A valid instance of each class (its required parameters).
MAKE = {
    PrivateLogisticRegression: lambda: PrivateLogisticRegression(),
    PrivateRobustRegression: lambda: PrivateRobustRegression(),
    PrivateGridSearch: lambda: PrivateGridSearch(
        estimator=PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
        param_grid={"comparator_norm": [1.0, 3.0]},
    ),
    BoundedScaler: lambda: BoundedScaler(bounds=[(0.0, 1.0)] * 2),
    BoundedOneHotEncoder: lambda: BoundedOneHotEncoder(categories=[["a", "b"]] * 2),
    BoundedBinner: lambda: BoundedBinner(edges=[[0.0, 0.5, 1.0]] * 2),
    PrivateFeatureBounds: lambda: PrivateFeatureBounds(epsilon=1.0, ranges=[(0.0, 1.0)] * 2),
    # a model file's stand-in for a PrivateFeatureBounds release while it is refitted
    _ReleasedBounds: lambda: _ReleasedBounds(bounds=[(0.0, 1.0)] * 2),
}


def _ids(cls: type) -> str:
    return cls.__name__


def test_the_walk_finds_every_estimator_and_transformer():
    assert set(MAKE) <= set(CLASSES)
    assert set(CLASSES) <= set(MAKE), "a new estimator: add a valid instance to MAKE"


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
def test_parameters_are_keyword_only(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert params, cls
    positional = [p.name for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert positional == [], f"{cls.__name__}: {positional} can be passed by position"


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
def test_constraints_cover_every_parameter(cls):
    declared = set(cls._parameter_constraints)
    params = set(cls._get_param_names())
    assert declared == params, (
        f"{cls.__name__}: undeclared {sorted(params - declared)}, "
        f"not parameters {sorted(declared - params)}"
    )


def _checked_parameters(cls: type) -> list[str]:
    return sorted(
        name
        for name, constraint in cls._parameter_constraints.items()
        if constraint != "no_validation"
    )


def _fit_data(cls: type) -> tuple[np.ndarray, np.ndarray]:
    if cls is BoundedOneHotEncoder:
        return np.array([["a", "b"], ["b", "a"]] * 5, dtype=object), np.zeros(10)
    X = np.random.default_rng(0).uniform(0.0, 1.0, size=(40, 2))
    return X, (X[:, 0] > 0.5).astype(int)


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
def test_fit_refuses_each_invalid_parameter_by_name(cls):
    """Each checked parameter set to a value no constraint allows: ``fit`` raises
    ParameterError naming it (scikit-learn's message), before it reads the data."""
    X, y = _fit_data(cls)
    for name in _checked_parameters(cls):
        est = MAKE[cls]().set_params(**{name: object()})
        with pytest.raises(ParameterError, match=f"'{name}' parameter of {cls.__name__}"):
            est.fit(X, y)


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
def test_validation_runs_even_when_scikit_learn_skips_its_own(cls):
    """Privacy parameters are checked whatever scikit-learn's global configuration says."""
    import sklearn

    X, y = _fit_data(cls)
    name = _checked_parameters(cls)[0]
    est = MAKE[cls]().set_params(**{name: object()})
    with (
        sklearn.config_context(skip_parameter_validation=True),
        pytest.raises(ParameterError, match=name),
    ):
        est.fit(X, y)


@pytest.mark.parametrize("cls", CLASSES, ids=_ids)
def test_a_positional_argument_is_refused(cls):
    first = list(inspect.signature(cls.__init__).parameters)[1]
    with pytest.raises(TypeError):
        cls(getattr(MAKE[cls](), first))
