"""Bad public constants and arguments are refused with the parameter named
(objpert.certify), against independent computations."""

from __future__ import annotations

import math
import re

import mpmath
import pytest
from certify_cases import (
    SETTINGS,
    msg_of,
)

from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import min_iterations, problem
from objpert.exceptions import ObjpertError, ParameterError

mpf = mpmath.mpf


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(n=1), "n"),
        (dict(n=1.5), "n"),
        (dict(d=0), "d"),
        (dict(zeta=0.0), "zeta"),
        (dict(zeta=-1.0), "zeta"),
        (dict(zeta=math.inf), "zeta"),
        (dict(mu=0.0), "mu"),
        (dict(mu=-0.1), "mu"),
        (dict(mu=math.nan), "mu"),
        (dict(eta=0.0), "eta"),
        (dict(eta=4.0), "eta"),  # above 1/L = 1/(0.05 + 0.25)
        (dict(eta=(1 / 0.3) * (1 + 1e-9)), "eta"),
    ],
)
def test_problem_rejects_bad_constants(kwargs, name):
    base = dict(n=1000, d=10, zeta=1.0, mu=0.05)
    base.update(kwargs)
    with pytest.raises(ParameterError) as err:
        problem("logistic", **base)
    assert re.search(rf"\b{name}\b", msg_of(err)), msg_of(err)
    assert isinstance(err.value, ObjpertError) and isinstance(err.value, ValueError)


def test_problem_eta_bounds():
    pc = problem("logistic", n=1000, d=10, zeta=1.0, mu=0.05)
    assert pc.eta == 1.0 / pc.L
    # rounding of 1/L from above is accepted and snapped to 1/L
    snapped = problem("logistic", n=1000, d=10, zeta=1.0, mu=0.05, eta=(1 / 0.3) * (1 + 1e-14))
    assert snapped.eta == 1.0 / snapped.L
    # eta mu >= 1 is only possible when mu swamps L2 zeta^2 in floating point (L == mu)
    with pytest.raises(ParameterError, match=r"eta \* mu") as err:
        problem("logistic", n=1000, d=10, zeta=1e-10, mu=1.0)
    assert "mu" in msg_of(err)
    # large mu is otherwise fine at eta = 1/L: eta mu = mu / (mu + L2 zeta^2) < 1
    big = problem("logistic", n=1000, d=10, zeta=1.0, mu=1e3)
    assert big.eta * big.mu < 1.0


def test_problem_rejects_bad_losses():
    with pytest.raises(ParameterError, match="loss") as err:
        problem("hinge", n=1000, d=10, zeta=1.0, mu=0.05)
    assert "logistic" in msg_of(err)
    with pytest.raises(ParameterError, match="L1") as err:
        problem("squared", n=1000, d=10, zeta=1.0, mu=0.05)
    assert "loss" in msg_of(err)
    with pytest.raises(ParameterError, match="scale"):
        problem("robust", n=1000, d=10, zeta=1.0, mu=0.05, scale=-1.0)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(sigma=0.0), "sigma"),
        (dict(sigma=-1e-3), "sigma"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(u=-0.5), "u"),
    ],
)
def test_certify_rejects_bad_arguments(kwargs, name):
    s = SETTINGS[0]
    args = dict(sigma=s.sigma, epsilon=1.0, u=s.u)
    args.update(kwargs)
    pc = s.pc
    calls = [
        lambda: theorem41.certify(pc, args["sigma"], args["u"], 200, args["epsilon"]),
        lambda: theorem_c13.certify(pc, args["sigma"], 200, args["epsilon"], u=args["u"]),
    ]
    for call in calls:
        with pytest.raises(ObjpertError) as err:
            call()
        assert re.search(rf"\b{name}\b", msg_of(err)), msg_of(err)
    if name == "sigma":
        with pytest.raises(ObjpertError, match="sigma"):
            theorem41.threshold_iterations(pc, args["sigma"], 1.0)
    with pytest.raises(ObjpertError, match="truncation"):
        theorem41.certify(pc, s.sigma, s.u, 200, 1.0, truncation="chi")


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(delta=0.0), "delta"),
        (dict(delta=1.0), "delta"),
        (dict(delta=-1e-6), "delta"),
        (dict(delta=2.0), "delta"),
        (dict(n_max=0), "n_max"),
        (dict(n_max=-5), "n_max"),
        (dict(sigma=0.0), "sigma"),
        (dict(epsilon=0.0), "epsilon"),
        (dict(form="nope"), "form"),
    ],
)
def test_min_iterations_rejects_bad_arguments(kwargs, name):
    s = SETTINGS[0]
    args = dict(sigma=s.sigma, epsilon=1.0, delta=1e-6, u=s.u)
    args.update(kwargs)
    sigma, epsilon, delta = args.pop("sigma"), args.pop("epsilon"), args.pop("delta")
    with pytest.raises(ParameterError) as err:
        min_iterations(s.pc, sigma, epsilon, delta, **args)
    assert re.search(rf"\b{name}\b", msg_of(err)), msg_of(err)
    assert isinstance(err.value, ValueError)
