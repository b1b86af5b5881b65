"""A fitted model keeps no statistic of the private rows, in any serialisation.

Two neighbouring datasets (one row replaced) that differ in how many rows get clipped are
fitted with the same seed: the clipping count and the timings must be absent from the
model's object graph, its pickle, its ``joblib.dump``, a deep copy, ``get_params`` and its
repr, and the two models' bytes may differ only where the released weights do. The data
holder sees the count at fit time (:func:`objpert.estimators.fit_statistics` and the
:class:`~objpert.exceptions.ClippingNotice` warning), never on the model.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import pickle
import types
import warnings

import joblib
import numpy as np
import pytest

from objpert import PrivateLogisticRegression, PrivateRobustRegression
from objpert.exceptions import ClippingNotice

N, D = 200, 4
CLIPPED = 13  # oversized rows of the first dataset; the neighbour has one more
FORBIDDEN = ("clipped", "seconds", "timing", "bound_rows")  # in any attribute or key
PUBLIC_NAMES = {"max_seconds"}  # a public parameter (the time budget), not a timing


def _datasets(kind: str, bounded: bool):
    """(X, y) and its neighbour (the last row replaced by an oversized one): CLIPPED and
    CLIPPED + 1 rows above the declared bound (norm 1, or the feature bounds [-1, 1])."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, D))
    X *= 0.5 / np.max(np.abs(X)) if bounded else 0.9 / np.linalg.norm(X, axis=1).max()
    X[:CLIPPED] *= 2.5 / np.max(np.abs(X[:CLIPPED]), axis=1, keepdims=True)  # |x_j| = 2.5
    w = np.array([1.0, -2.0, 0.5, 1.5])
    score = X @ w + 0.1 * rng.normal(size=N)
    if kind == "binary":
        y = (score > 0).astype(int)
    elif kind == "ovr":
        y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3]))
    else:
        y = np.clip(score, -1.0, 1.0)
    X2, y2 = X.copy(), y.copy()
    X2[-1] = [3.0, -1.0, 0.5, 2.0]  # norm > 1 and outside [-1, 1]
    y2[-1] = y[0]
    return (X, y), (X2, y2)


CASES = {
    "logistic-binary": ("binary", False),
    "logistic-ovr": ("ovr", False),
    "logistic-ovr-feature-bounds": ("ovr", True),
    "robust": ("real", False),
    "robust-feature-bounds": ("real", True),
}


def _model(kind: str, bounded: bool):
    common = {"epsilon": 1.0, "delta": 1e-6, "max_iter": 200, "random_state": 12345}
    common |= {"feature_bounds": [(-1.0, 1.0)] * D} if bounded else {"data_norm": 1.0}
    if kind == "real":
        return PrivateRobustRegression(**common)
    return PrivateLogisticRegression(classes=[0, 1] if kind == "binary" else [0, 1, 2], **common)


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the testing seed, the clipping notice
        return model.fit(X, y)


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    return request.param


@pytest.fixture(scope="module")
def pair(case):
    """The models of the two neighbouring datasets, fitted with the same seed."""
    (X, y), (X2, y2) = _datasets(*CASES[case])
    return _fit(_model(*CASES[case]), X, y), _fit(_model(*CASES[case]), X2, y2)


def _walk(obj, path="model", seen=None):
    """(path, name, value) of everything reachable from obj: attributes (``__dict__``,
    ``__slots__``, dataclass fields), dict keys and values, sequence items."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, type | types.ModuleType | types.FunctionType):
        return
    seen.add(id(obj))
    children: list[tuple[str, object]] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            children += [(str(k), k), (str(k), v)]
    elif isinstance(obj, list | tuple | set | frozenset):
        children = [(f"[{i}]", v) for i, v in enumerate(obj)]
    elif not isinstance(obj, str | bytes | int | float | complex | np.ndarray | np.generic):
        names = set(getattr(obj, "__dict__", {}))
        for cls in type(obj).__mro__:
            slots = cls.__dict__.get("__slots__", ())
            names |= {slots} if isinstance(slots, str) else set(slots)
        if dataclasses.is_dataclass(obj):
            names |= {f.name for f in dataclasses.fields(obj)}
        for name in sorted(names):
            try:
                children.append((name, getattr(obj, name)))
            except AttributeError:
                continue
    for name, value in children:
        yield path, name, value
        yield from _walk(value, f"{path}.{name}", seen)


def _integers(obj) -> set[int]:
    out: set[int] = set()
    for _, _, v in _walk({"root": obj}):
        if isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_):
            out.add(int(v))
        elif isinstance(v, np.ndarray) and v.dtype.kind in "iu":
            out |= {int(x) for x in v.ravel()}
    return out


def _check_graph(obj):
    for path, name, _ in _walk(obj):
        low = name.lower()
        assert name in PUBLIC_NAMES or not any(w in low for w in FORBIDDEN), f"{path}.{name}"


def _without_weights(model):
    """A deep copy with the released weights (coef_, intercept_, each release's weights)
    zeroed: what remains must not depend on the private rows beyond the certificate."""
    out = copy.deepcopy(model)
    out.coef_ = np.zeros_like(out.coef_)
    out.intercept_ = np.zeros_like(out.intercept_) if np.ndim(out.intercept_) else 0.0
    out.releases_ = [
        dataclasses.replace(r, weights=np.zeros_like(r.weights)) for r in out.releases_
    ]
    return out


def _joblib_bytes(model) -> bytes:
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    return buffer.getvalue()


SERIALISATIONS = {
    "pickle": pickle.dumps,
    "joblib": _joblib_bytes,
    "deepcopy-then-pickle": lambda m: pickle.dumps(copy.deepcopy(m)),
}


def test_the_neighbours_clip_a_different_number_of_rows(case):
    """The premise: the two fits see CLIPPED and CLIPPED + 1 clipped rows."""
    from objpert.estimators import fit_statistics

    first, neighbour = _datasets(*CASES[case])
    with fit_statistics() as fits:
        _fit(_model(*CASES[case]), *first)
        _fit(_model(*CASES[case]), *neighbour)
    assert [f.n_clipped for f in fits] == [CLIPPED, CLIPPED + 1]


@pytest.mark.parametrize("how", sorted(SERIALISATIONS))
def test_serialised_neighbours_differ_only_in_their_weights(pair, how):
    a, b = pair
    dump = SERIALISATIONS[how]
    assert dump(a) != dump(b)  # the weights differ
    assert dump(_without_weights(a)) == dump(_without_weights(b))


@pytest.mark.parametrize("how", ["object", "pickle", "joblib", "deepcopy", "get_params"])
def test_no_clipping_count_or_timing_in_the_object_graph(pair, how):
    for model in pair:
        if how == "object":
            graph = model
        elif how == "pickle":
            graph = pickle.loads(pickle.dumps(model))
        elif how == "joblib":
            graph = joblib.load(io.BytesIO(_joblib_bytes(model)))
        elif how == "deepcopy":
            graph = copy.deepcopy(model)
        else:
            graph = model.get_params(deep=True)
        _check_graph(graph)


def test_no_attribute_holds_the_clipping_count(pair):
    for model, clipped in zip(pair, (CLIPPED, CLIPPED + 1), strict=True):
        found = _integers(vars(model))
        assert clipped not in found, sorted(found)


def test_repr_shows_no_statistic(pair):
    a, b = pair
    assert repr(a) == repr(b)
    for model in pair:
        for name, value in vars(model).items():
            text = repr(value)
            assert not any(w in text for w in ("clipped", "seconds=", "timing")), name


def test_the_data_holder_sees_the_count_at_fit_time(case):
    """The count reaches whoever runs fit: recorded by fit_statistics (one record per fit,
    also for the K releases of one-vs-rest) and in the ClippingNotice, not on the model."""
    from objpert.estimators import fit_statistics

    kind, bounded = CASES[case]
    _, (X2, y2) = _datasets(kind, bounded)
    model = _model(kind, bounded)
    with warnings.catch_warnings(record=True) as caught, fit_statistics() as fits:
        warnings.simplefilter("always")
        model.fit(X2, y2)
    assert len(fits) == 1
    assert fits[0].n_clipped == CLIPPED + 1 and fits[0].seconds > 0
    notices = [str(w.message) for w in caught if issubclass(w.category, ClippingNotice)]
    assert len(notices) == 1 and notices[0].startswith(f"{CLIPPED + 1} of {N} training rows")
    assert "do not publish" in notices[0]
    _check_graph(model)
    with fit_statistics() as later:
        pass
    assert later == []  # nothing recorded outside a fit


def test_fits_outside_a_block_are_not_recorded():
    from objpert.estimators import fit_statistics

    (X, y), _ = _datasets("binary", False)
    with fit_statistics() as fits:
        pass
    _fit(_model("binary", False), X, y)
    assert fits == []


@pytest.mark.parametrize("est", [PrivateLogisticRegression, PrivateRobustRegression])
def test_errors_about_the_data_quote_none_of_its_values(est):
    """scikit-learn quotes up to a thousand of the rows' values in some complaints (a 1-D
    X); the DataError objpert raises keeps the complaint and drops the values."""
    from objpert.exceptions import DataError

    x = 1000.0 + np.random.default_rng(3).random(60)  # values that stand out in a message
    y = (x > 1000.5).astype(int)
    fitted = est(epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0)
    if est is PrivateLogisticRegression:
        fitted.set_params(classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(np.full((60, 1), 0.5), y)
    for call in (
        lambda: est(epsilon=1.0, delta=1e-6, data_norm=1.0).fit(x, y),
        lambda: fitted.predict(x),
    ):
        with pytest.raises(DataError, match="1D array") as err:
            call()
        assert "1000." not in str(err.value) and "values not shown" in str(err.value)
