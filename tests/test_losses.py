"""Tests of objpert._losses: the constants of Assumptions 2 and 3 checked numerically."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import mpmath
import numpy as np
import pytest

from objpert._losses import (
    LOSSES,
    LogisticLoss,
    Loss,
    PseudoHuberLoss,
    SquaredLoss,
    get_loss,
    require_bounded_gradient,
)
from objpert.exceptions import ParameterError

ROUND = 1e-12  # relative slack for rounding when comparing sups with constants
CLOSE = 1e-3  # the grid sup must come within this relative distance of the constant
LIP_SLACK = 1e-9  # relative slack for difference quotients of d2 (cancellation)

N_GRID = 200_001
SCALES = (0.1, 1.0, 3.0)
REAL_LABELS = (-2.0, 0.0, 1.5)


def _cases() -> list[tuple[Loss, float, np.ndarray]]:
    """(loss, label, grid of t) covering each loss's extremal points."""
    cases: list[tuple[Loss, float, np.ndarray]] = []
    for y in (-1.0, 1.0):
        cases.append((LogisticLoss(), y, np.linspace(-50.0, 50.0, N_GRID)))
    for c in SCALES:
        for y in REAL_LABELS:
            # |t - y| up to 50 c: sup |l'| = c |z| / sqrt(1 + z^2) is then within 2e-4 of c.
            cases.append((PseudoHuberLoss(scale=c), y, y + c * np.linspace(-50.0, 50.0, N_GRID)))
    for y in REAL_LABELS:
        cases.append((SquaredLoss(), y, np.linspace(-50.0, 50.0, N_GRID)))
    return cases


CASES = _cases()
IDS = [f"{loss.name}-{loss.params()}-y={y}" for loss, y, _ in CASES]


def _check_sup(sup: float, bound: float) -> None:
    assert sup <= bound * (1 + ROUND), (sup, bound)
    assert sup >= bound * (1 - CLOSE), (sup, bound)


@pytest.mark.parametrize(("loss", "y", "t"), CASES, ids=IDS)
def test_L1_sup_of_abs_d1(loss: Loss, y: float, t: np.ndarray) -> None:
    g = np.abs(loss.d1(t, y))
    assert np.all(np.isfinite(g))
    if loss.L1 is None:
        # Unbounded: |l'| grows without limit (here linearly in |t - y|).
        assert g.max() >= 49.0
        assert not loss.has_bounded_gradient
    else:
        assert loss.has_bounded_gradient
        _check_sup(float(g.max()), loss.L1)


@pytest.mark.parametrize(("loss", "y", "t"), CASES, ids=IDS)
def test_L2_sup_of_d2_and_convexity(loss: Loss, y: float, t: np.ndarray) -> None:
    h = loss.d2(t, y)
    assert np.all(h >= 0)
    _check_sup(float(h.max()), loss.L2)


@pytest.mark.parametrize(("loss", "y", "t"), CASES, ids=IDS)
def test_L3_sup_of_abs_d3(loss: Loss, y: float, t: np.ndarray) -> None:
    k = np.abs(loss.d3(t, y))
    if loss.L3 == 0:
        assert np.all(k == 0)
    else:
        _check_sup(float(k.max()), loss.L3)


@pytest.mark.parametrize(("loss", "y", "t"), CASES, ids=IDS)
def test_L3_as_lipschitz_constant_of_d2(loss: Loss, y: float, t: np.ndarray) -> None:
    h = loss.d2(t, y)
    q = np.abs(np.diff(h)) / np.diff(t)
    lip = float(q.max())
    if loss.L3 == 0:
        assert lip == 0
    else:
        assert lip <= loss.L3 * (1 + LIP_SLACK), (lip, loss.L3)
        assert lip >= loss.L3 * (1 - CLOSE), (lip, loss.L3)


def test_exact_constants() -> None:
    lg = LogisticLoss()
    assert lg.L1 == 1.0
    assert lg.L2 == 0.25
    assert math.isclose(lg.L3, 1 / (6 * math.sqrt(3)), rel_tol=1e-15)
    for c in SCALES:
        ph = PseudoHuberLoss(scale=c)
        assert ph.params() == {"scale": c}
        assert c == ph.L1
        assert ph.L2 == 1.0
        assert math.isclose(ph.L3, 48 / (25 * math.sqrt(5) * c), rel_tol=1e-15)
        # Attained at |t - y| = c/2.
        for y in REAL_LABELS:
            at = np.abs(ph.d3(np.array([y - c / 2, y + c / 2]), y))
            np.testing.assert_allclose(at, ph.L3, rtol=1e-13)
        # L2 attained at t = y.
        assert ph.d2(0.7, 0.7) == 1.0
    sq = SquaredLoss()
    assert (sq.L1, sq.L2, sq.L3) == (None, 1.0, 0.0)
    assert lg.label_kind == "binary"
    assert ph.label_kind == sq.label_kind == "real"


FD_LOSSES = [
    (LogisticLoss(), (-1.0, 1.0)),
    *[(PseudoHuberLoss(scale=c), REAL_LABELS) for c in SCALES],
    (SquaredLoss(), REAL_LABELS),
]
FD_IDS = [f"{loss.name}-{loss.params()}" for loss, _ in FD_LOSSES]


@pytest.mark.parametrize(("loss", "labels"), FD_LOSSES, ids=FD_IDS)
def test_derivatives_match_central_differences(loss: Loss, labels: tuple[float, ...]) -> None:
    unit = loss.params().get("scale", 1.0)
    funcs = (loss.value, loss.d1, loss.d2, loss.d3)
    for y in labels:
        t = y + unit * np.linspace(-8.0, 8.0, 161)
        step = 1e-5 * unit
        for lower, upper in itertools.pairwise(funcs):
            fd = (lower(t + step, y) - lower(t - step, y)) / (2 * step)
            exact = upper(t, y)
            scale = max(1.0, float(np.abs(exact).max()))
            np.testing.assert_allclose(fd, exact, rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("y", [-1, 1])
@pytest.mark.parametrize("t", [-30.0, -2.5, -1e-3, 0.0, 0.4, 7.0, 40.0])
def test_logistic_matches_mpmath(t: float, y: int) -> None:
    mpmath.mp.dps = 40
    loss = LogisticLoss()

    def f(s: mpmath.mpf) -> mpmath.mpf:
        return mpmath.log(1 + mpmath.exp(-y * s))

    ref_value = f(mpmath.mpf(t))
    ref_d1 = mpmath.diff(f, mpmath.mpf(t))
    ref_d2 = mpmath.diff(f, mpmath.mpf(t), 2)
    assert float(loss.value(t, y)) == pytest.approx(float(ref_value), rel=1e-13, abs=0)
    assert float(loss.d1(t, y)) == pytest.approx(float(ref_d1), rel=1e-13, abs=0)
    assert float(loss.d2(t, y)) == pytest.approx(float(ref_d2), rel=1e-12, abs=1e-300)


def test_logistic_no_overflow_for_large_t() -> None:
    loss = LogisticLoss()
    t = np.concatenate([np.linspace(-1e4, 1e4, 20_001), [-1e4, 1e4, -745.0, 745.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            for y in (-1.0, 1.0):
                vals = [loss.value(t, y), loss.d1(t, y), loss.d2(t, y), loss.d3(t, y)]
                for v in vals:
                    assert np.all(np.isfinite(v))
                assert np.all(np.abs(vals[1]) <= 1)
                # log(1 + exp(-y t)) -> max(0, -y t) for |t| large.
                np.testing.assert_allclose(vals[0][[0, -4]], np.maximum(0, -y * t[[0, -4]]))
                np.testing.assert_allclose(vals[0][[-3]], np.maximum(0, -y * t[[-3]]))


def test_broadcasting() -> None:
    t = np.linspace(-2, 2, 5)[:, None]
    y = np.array([-1.0, 1.0])[None, :]
    for loss in (LogisticLoss(), PseudoHuberLoss(scale=0.5), SquaredLoss()):
        for fn in (loss.value, loss.d1, loss.d2, loss.d3):
            out = fn(t, y)
            assert out.shape == (5, 2)
            np.testing.assert_allclose(out[:, 1], fn(t[:, 0], 1.0))


def test_pseudo_huber_value_formula_and_no_overflow() -> None:
    ph = PseudoHuberLoss(scale=2.0)
    # The textbook form cancels for tiny |r|; compare where it is accurate.
    r = np.array([-10.0, -1.0, 0.0, 0.3, 5.0])
    np.testing.assert_allclose(
        ph.value(r + 1.0, 1.0), 4.0 * (np.sqrt(1 + (r / 2) ** 2) - 1), rtol=1e-12, atol=1e-300
    )
    # For tiny r, l ~ r^2 / 2 (no cancellation to 0).
    assert ph.value(1e-9, 0.0) == pytest.approx(0.5e-18, rel=1e-12)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        big = ph.d1(np.array([-1e200, 1e200]), 0.0)
    np.testing.assert_allclose(big, [-2.0, 2.0])


# ---------------------------------------------------------------- get_loss and friends


def test_get_loss_names() -> None:
    assert LOSSES == ("logistic", "robust", "squared")
    assert isinstance(get_loss("logistic"), LogisticLoss)
    assert isinstance(get_loss("squared"), SquaredLoss)
    loss = get_loss("robust")
    assert isinstance(loss, PseudoHuberLoss)
    assert loss.scale == 1.0
    assert loss.name == "robust"
    assert get_loss("robust", scale=0.25) == PseudoHuberLoss(scale=0.25)
    assert get_loss("robust", scale=3).params() == {"scale": 3.0}
    for name in LOSSES:
        assert get_loss(name).name == name


@pytest.mark.parametrize(
    "other", ["pseudo_huber", "pseudo-huber", "Pseudo-Huber", "Logistic", " robust"]
)
def test_a_loss_has_one_name(other) -> None:
    with pytest.raises(ParameterError, match="loss must be one of 'logistic', 'robust'"):
        get_loss(other)


def test_get_loss_returns_instance_unchanged() -> None:
    loss = PseudoHuberLoss(scale=0.5)
    assert get_loss(loss) is loss
    with pytest.raises(ParameterError, match="loss"):
        get_loss(loss, scale=2.0)


def test_get_loss_unknown_name() -> None:
    with pytest.raises(ParameterError) as info:
        get_loss("foo")
    # the built-in losses first, then any registered since (in registration order)
    assert str(info.value).startswith("loss must be one of 'logistic', 'robust', 'squared'")
    assert str(info.value).endswith("; got 'foo'")
    with pytest.raises(ParameterError, match="loss must be one of"):
        get_loss(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("logistic", {"scale": 1.0}),
        ("squared", {"scale": 1.0}),
        ("robust", {"width": 1.0}),
    ],
)
def test_get_loss_unknown_param(name: str, params: dict[str, float]) -> None:
    (key,) = params
    with pytest.raises(ParameterError) as info:
        get_loss(name, **params)
    msg = str(info.value)
    assert repr(key) in msg
    assert name in msg
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "wide"])
def test_scale_must_be_positive(bad: object) -> None:
    with pytest.raises(ParameterError, match="scale"):
        get_loss("robust", scale=bad)
    with pytest.raises(ParameterError, match="scale"):
        PseudoHuberLoss(scale=bad)  # type: ignore[arg-type]


def test_scale_error_names_range() -> None:
    with pytest.raises(ParameterError, match=r"scale must be > 0; got -1"):
        PseudoHuberLoss(scale=-1)


@pytest.mark.parametrize("loss", [LogisticLoss(), PseudoHuberLoss(scale=0.3), SquaredLoss()])
def test_to_dict_json_round_trip(loss: Loss) -> None:
    d = loss.to_dict()
    assert set(d) == {"name", "params", "L1", "L2", "L3"}
    back = json.loads(json.dumps(d))
    assert back == d
    assert get_loss(back["name"], **back["params"]) == loss
    assert (back["L1"], back["L2"], back["L3"]) == (loss.L1, loss.L2, loss.L3)


def test_losses_are_frozen() -> None:
    loss = PseudoHuberLoss(scale=1.0)
    with pytest.raises(AttributeError):
        loss.scale = 2.0  # type: ignore[misc]


def test_require_bounded_gradient() -> None:
    with pytest.raises(ParameterError) as info:
        require_bounded_gradient(SquaredLoss(), "the Watkins & Arora certificate")
    msg = str(info.value)
    assert "squared" in msg
    assert "L1" in msg
    assert "Assumption 2" in msg
    assert "the Watkins & Arora certificate" in msg
    assert "robust" in msg
    with pytest.raises(ParameterError):
        require_bounded_gradient("squared", "this plan")
    for loss in (LogisticLoss(), PseudoHuberLoss(scale=2.0)):
        assert require_bounded_gradient(loss, "this plan") is loss
    assert isinstance(require_bounded_gradient("robust", "this plan"), PseudoHuberLoss)
