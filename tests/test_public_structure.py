"""Nothing is released that the certificate does not cover.

Regression tests for structural choices read from the private data (label sets, the binary
label map, a one-class training set) and for constants trusted from a plan (a lying loss,
a step size above 1/L, an edited plan).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

from objpert import PrivacyLeakWarning, PrivateLogisticRegression
from objpert._data import encode_binary
from objpert._losses import LogisticLoss, Loss, get_loss, register_loss, registered_losses
from objpert.certify import _sequences as sequences
from objpert.certify._calibration import rederive_plan, tight
from objpert.certify._constants import ProblemConstants
from objpert.exceptions import DataError, LossError, ParameterError, PrivacyError
from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, release_batch

N_ROWS, DIM = 300, 3


def _data(seed: int = 0, n: int = N_ROWS, d: int = DIM):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, "cat", "dog")
    return X, y


def _fit(X, y, **kw):
    params = {"max_iter": 300, "random_state": 3, "data_norm": 1.0, **kw}
    model = PrivateLogisticRegression(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # testing seeds
        return model.fit(X, y)


def _shape_of(model):
    return (
        model.classes_.tolist(),
        np.shape(model.coef_),
        np.shape(model.intercept_),
        len(model.releases_),
        model.certificate_.to_dict(),
    )


# ---------------------------------------------------------------- label sets


def test_neighbours_with_a_new_class_give_identically_shaped_models():
    """One row relabelled to a class that occurs nowhere else: with declared classes the
    two models have the same classes, shapes, number of releases and certificate."""
    X, y = _data()
    neighbour = y.copy()
    neighbour[0] = "emu"  # a class that occurs in no other row
    classes = ["cat", "dog", "emu"]
    a, b = _fit(X, y, classes=classes), _fit(X, neighbour, classes=classes)
    assert _shape_of(a) == _shape_of(b)
    assert a.coef_.shape == (3, DIM)
    assert a.certificate_.not_public == ()


def test_binary_neighbours_keep_one_release_and_the_same_map():
    X, y = _data()
    neighbour = y.copy()
    neighbour[:] = "cat"  # every row one class: trained, not refused
    a, b = _fit(X, y, classes=["cat", "dog"]), _fit(X, neighbour, classes=["cat", "dog"])
    assert _shape_of(a) == _shape_of(b)
    assert a.coef_.shape == (1, DIM)


def test_all_rows_one_class_is_trained_with_declared_classes():
    X, _ = _data()
    model = _fit(X, np.zeros(N_ROWS, dtype=int), classes=[0, 1])
    assert model.classes_.tolist() == [0, 1]
    assert set(model.predict(X)) <= {0, 1}


def test_declared_binary_map_depends_on_the_list_only():
    """{0, 1} and {1, 2}: the larger declared label is +1, whatever the rows hold."""
    X, y = _data()
    y01 = (y == "dog").astype(int)
    a = _fit(X, y01, classes=[0, 1])
    b = _fit(X, y01 + 1, classes=[1, 2])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict(X) + 1, b.predict(X))


def test_a_label_outside_the_declared_classes_is_refused():
    X, y = _data()
    with pytest.raises(DataError, match="outside the declared classes"):
        _fit(X, y, classes=["cat", "emu"])


@pytest.mark.parametrize(
    "classes", [["a"], ["a", "a"], [1.0, float("nan")], [None, "a"], "ab"[:1], 5]
)
def test_invalid_declared_classes_are_refused(classes):
    X, y = _data()
    with pytest.raises(DataError, match="classes"):
        _fit(X, y, classes=classes)


def test_classes_read_from_data_warn_and_are_recorded_not_public():
    X, y = _data()
    for labels in (y, np.where(np.arange(N_ROWS) % 3 == 0, "emu", y)):
        with pytest.warns(PrivacyLeakWarning, match="label set"):
            model = PrivateLogisticRegression(max_iter=300, data_norm=1.0).fit(X, labels)
        assert model.certificate_.not_public == ("label set",)
        assert not model.certificate_.covers_structure
        assert "label set" in model.certificate_.to_dict()["not_public"]


def test_mechanism_labels_use_a_fixed_map_or_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for y, expected in (([1, 1, 1], [1, 1, 1]), ([0, 0], [-1, -1]), ([-1, 1], [-1, 1])):
            np.testing.assert_array_equal(encode_binary(y)[0], expected)
        np.testing.assert_array_equal(encode_binary([True, False])[0], [1, -1])
    with pytest.warns(PrivacyLeakWarning):
        encode_binary([1, 2, 2])
    with pytest.raises(DataError, match="exactly two"):
        encode_binary([-1, 0, 1])


def test_one_class_release_at_the_mechanism_level():
    plan = tight("logistic", n=N_ROWS, d=DIM, zeta=1.0, epsilon=1.0, delta=1e-6, max_iter=300)
    X, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = perturbed_gradient_descent(X, -np.ones(N_ROWS), plan, 1)
    assert r.weights.shape == (DIM,)


# ---------------------------------------------------------------- constants from the loss


@dataclasses.dataclass(frozen=True)
class _LyingLogistic(LogisticLoss):
    """Named like the logistic loss, claiming a Lipschitz constant 20x too small."""

    @property
    def L1(self) -> float:
        return 0.05


def _plan():
    return tight("logistic", n=N_ROWS, d=DIM, zeta=1.0, epsilon=1.0, delta=1e-6, max_iter=300)


def test_a_loss_named_like_a_builtin_is_refused():
    with pytest.raises(LossError, match="name"):
        tight(_LyingLogistic(), n=N_ROWS, d=DIM, zeta=1.0, epsilon=1.0, delta=1e-6)
    with pytest.raises(LossError, match="taken"):
        register_loss(_LyingLogistic)


def test_a_plan_carrying_a_false_constant_is_refused_before_the_noise():
    plan = _plan()
    constants = dict(plan.certificate.constants, L1=0.05)
    forged = dataclasses.replace(
        plan, certificate=dataclasses.replace(plan.certificate, constants=constants)
    )
    X, y = _data()
    y = (y == "dog").astype(int)
    with pytest.raises(PrivacyError, match="L1"):
        perturbed_gradient_descent(X, y, forged, None)
    with pytest.raises(PrivacyError, match="L1"):
        release_batch(X, y, forged, 4, None)


@pytest.mark.parametrize("factor", [2.5, 5.0])
def test_a_step_above_one_over_l_is_refused(factor):
    plan = _plan()
    pc = plan.constants
    eta = factor / pc.L
    # the plan's eta alone, and the plan's eta together with its certificate's constants
    alone = dataclasses.replace(plan, eta=eta)
    constants = dict(plan.certificate.constants, eta=eta)
    both = dataclasses.replace(
        alone, certificate=dataclasses.replace(plan.certificate, constants=constants)
    )
    X, y = _data()
    y = (y == "dog").astype(int)
    for bad in (alone, both):
        with pytest.raises(PrivacyError, match="eta"):
            perturbed_gradient_descent(X, y, bad, None)
        with pytest.raises(PrivacyError):
            rederive_plan(bad)


def test_a_replaced_step_size_is_never_released_under_the_old_certificate():
    plan = _plan()
    smaller = dataclasses.replace(plan, eta=plan.eta / 2)
    X, y = _data()
    with pytest.raises(PrivacyError, match="eta"):
        perturbed_gradient_descent(X, (y == "dog").astype(int), smaller, None)


@pytest.mark.parametrize("field", ["n", "zeta", "mu", "sigma", "iterations", "epsilon"])
def test_an_edited_plan_field_is_refused(field):
    plan = _plan()
    value = getattr(plan, field)
    edited = dataclasses.replace(plan, **{field: type(value)(value * 2)})
    with pytest.raises(PrivacyError):
        rederive_plan(edited)


def test_certificate_helpers_refuse_eta_l_above_one():
    pc = ProblemConstants("logistic", 1.0, 0.25, 0.1, 100, 3, 1.0, 0.01, eta=2.5 / 0.26)
    with pytest.raises(ParameterError, match="1/L"):
        sequences.gamma_n(pc, 10)
    with pytest.raises(ParameterError, match="1/L"):
        sequences.g_bar_n(pc, 10)


def test_the_genuine_plan_rederives_to_its_certificate():
    plan = _plan()
    cert = rederive_plan(plan)
    assert cert == plan.certificate
    assert cert.certified and cert.delta <= plan.delta


# ---------------------------------------------------------------- custom losses


@dataclasses.dataclass(frozen=True)
class _HalfLogistic(Loss):
    """l(t, y) = 2 log(1 + exp(-y t / 2)): L1 = 1, L2 = 1/8, L3 = 1/(24 sqrt 3)."""

    name = "half_logistic"
    label_kind = "binary"

    @property
    def L1(self) -> float:
        return 1.0

    @property
    def L2(self) -> float:
        return 0.125

    @property
    def L3(self) -> float:
        return 1.0 / (24.0 * math.sqrt(3.0))

    def value(self, t, y):
        return 2.0 * LogisticLoss().value(np.asarray(t) / 2.0, y)

    def d1(self, t, y):
        return LogisticLoss().d1(np.asarray(t) / 2.0, y)

    def d2(self, t, y):
        return LogisticLoss().d2(np.asarray(t) / 2.0, y) / 2.0

    def d3(self, t, y):
        return LogisticLoss().d3(np.asarray(t) / 2.0, y) / 4.0


@dataclasses.dataclass(frozen=True)
class _UnderstatedL2(_HalfLogistic):
    name = "understated_l2"

    @property
    def L2(self) -> float:
        return 0.1


@dataclasses.dataclass(frozen=True)
class _WrongDerivative(_HalfLogistic):
    """Claims l' = 0.5 * the true derivative: its bound L1 would hold for the wrong l'."""

    name = "wrong_derivative"

    @property
    def L1(self) -> float:
        return 0.5

    def d1(self, t, y):
        return 0.5 * super().d1(t, y)


def test_register_loss_checks_constants_and_the_release_uses_it():
    register_loss(_HalfLogistic)
    assert "half_logistic" in registered_losses()
    assert get_loss("half_logistic") == _HalfLogistic()
    plan = tight("half_logistic", n=N_ROWS, d=DIM, zeta=1.0, epsilon=1.0, delta=1e-6, max_iter=300)
    assert plan.constants.L2 == 0.125
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = perturbed_gradient_descent(X, (y == "dog").astype(int), plan, 2)
    assert np.all(np.isfinite(r.weights))


@pytest.mark.parametrize("cls", [_UnderstatedL2, _WrongDerivative])
def test_register_loss_refuses_violated_constants(cls):
    with pytest.raises(LossError, match="violates"):
        register_loss(cls)
    assert cls.name not in registered_losses()
    with pytest.raises(LossError, match="not a registered loss"):
        get_loss(cls())


# ---------------------------------------------------------------- nothing non-finite is released


def test_robust_regression_on_extreme_finite_targets_releases_finite_weights():
    """Targets near +-1.7e308: t - y overflows, the pseudo-Huber derivative stays +-c."""
    from objpert import PrivateRobustRegression
    from objpert._losses import PseudoHuberLoss

    loss = PseudoHuberLoss(0.5)
    t = np.array([0.0, 1e308, -1e308])
    y = np.array([1.7e308, -1.7e308, 1.7e308])
    np.testing.assert_array_equal(loss.d1(t, y), [-0.5, 0.5, -0.5])
    assert np.all(np.isfinite(loss.d1_into(t.copy(), y, np.empty(3))))
    X, _ = _data()
    targets = np.where(np.arange(N_ROWS) % 2 == 0, 1.7e308, -1.7e308)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PrivateRobustRegression(scale=0.5, max_iter=300, random_state=0)
        model.fit(X, targets)
    assert np.all(np.isfinite(model.coef_)) and np.isfinite(model.intercept_)


def test_non_finite_weights_are_never_released(monkeypatch):
    from objpert.mechanisms import _perturbed_gd as perturbed_gd

    plan = _plan()
    X, y = _data()
    monkeypatch.setattr(
        perturbed_gd, "run_gradient_descent", lambda *a, **k: np.array([np.nan, 0.0, 0.0])
    )
    with pytest.raises(PrivacyError, match="non-finite"):
        perturbed_gradient_descent(X, (y == "dog").astype(int), plan, None, span_reduction=False)


@pytest.mark.parametrize("backend", ["numba", "python"])
def test_compiled_robust_kernels_are_finite_on_extreme_targets(backend):
    from objpert._engines import compiled
    from objpert._losses import PseudoHuberLoss

    if backend == "numba" and not compiled.available():
        pytest.skip("numba is not installed")
    loss = PseudoHuberLoss(0.5)
    X = np.ones((4, 2))
    y = np.array([1.7e308, -1.7e308, 1.7e308, 1.0])
    expected = loss.d1(np.zeros(4), y).sum()
    out = np.zeros(2)
    compiled.fused_kernel(loss, backend=backend)(X, np.zeros(2), y, 0, 4, out)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    outs = np.zeros((2, 8))
    compiled.batched_kernel(loss, backend=backend)(X, np.zeros((2, 8)), y, 0, 4, outs)
    np.testing.assert_allclose(outs, expected, rtol=1e-12)
