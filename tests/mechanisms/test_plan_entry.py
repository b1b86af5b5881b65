"""``objpert.plan``: one planning entry point for every registered mechanism.

Every registered mechanism plans from the same keywords (its options have public default
rules), and its plan's certificate meets the target. The certificate is recomputed here
from the plan's own public fields by the mechanism's registry entry, and the plan is the
one its own planner gives.
"""

from __future__ import annotations

import math
import warnings

import pytest

import objpert
from objpert._losses import get_loss
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._builtin import LOP_CLIP_SHARE

PUBLIC = dict(n=5000, d=10, zeta=1.0, epsilon=1.0, delta=1e-6)


def _loss(name: str) -> str:
    losses = registry.get(name).losses
    return "logistic" if "logistic" in losses else losses[0]


@pytest.fixture(scope="module")
def plans():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: objpert.plan(name, loss=_loss(name), **PUBLIC) for name in registry.names()}


@pytest.mark.parametrize("name", registry.names())
def test_every_registered_mechanism_plans_from_the_same_keywords(plans, name):
    """Every registered mechanism plans from the same keywords, meets the target and
    answers the common certificate interface."""
    plan = plans[name]
    assert isinstance(plan, registry.get(name).plan_type)
    cert = registry.get(name).certificate(plan)
    assert cert.epsilon <= PUBLIC["epsilon"] * (1 + 1e-9)
    assert cert.delta <= PUBLIC["delta"] * (1 + 1e-9)
    # the common certificate interface: epsilon, delta, certified, to_dict
    assert set(cert.to_dict()) >= {"epsilon", "delta", "certified"}
    if name == "qop":  # rests on unchecked assumptions, and fails a pair meeting them
        assert cert.certified is False and any("docs/audit.md" in r for r in cert.reasons)
    else:
        assert cert.certified is True


def test_lop_clip_defaults_to_its_public_clip_rule(plans):
    explicit = registry.get("lop_clip").plan(
        loss="logistic", clip=LOP_CLIP_SHARE * float(get_loss("logistic").L1) * PUBLIC["zeta"],
        **PUBLIC,
    )  # fmt: skip
    assert plans["lop_clip"] == explicit
    other = objpert.plan("lop_clip", loss="logistic", clip=0.25, **PUBLIC)
    assert other != explicit and math.isfinite(other.sigma)


def test_an_unknown_mechanism_is_refused_with_the_names():
    with pytest.raises(objpert.ParameterError, match="watkins_arora"):
        objpert.plan("no_such", loss="logistic", **PUBLIC)
