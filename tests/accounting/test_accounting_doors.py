"""The privacy arithmetic's doors: bad input is a ParameterError naming it, never a raw
error, a hang or a finite wrong number."""

from __future__ import annotations

import math
import time

import pytest

from objpert import accounting as acc
from objpert.accounting._group import GROUP_GRID
from objpert.audit import epsilon_lower_bound
from objpert.exceptions import ParameterError


@pytest.mark.parametrize(
    "call",
    [
        lambda: acc.delta_for_epsilon(None, 1.0),
        lambda: acc.delta_for_epsilon(acc.gaussian(1.0), 1.0),
        lambda: acc.epsilon_for_delta([acc.gaussian(1.0)], 1e-6),
        lambda: acc.compose(None),
        lambda: acc.compose(3),
    ],
)
def test_composition_functions_name_a_wrong_argument(call):
    with pytest.raises(ParameterError):
        call()


def test_one_privacy_loss_composes_as_a_list_of_one():
    one, listed = acc.compose(acc.gaussian(1.0)), acc.compose([acc.gaussian(1.0)])
    assert acc.delta_for_epsilon(one, 1.0) == acc.delta_for_epsilon(listed, 1.0)


def test_group_privacy_beyond_its_grid_is_refused_at_once():
    start = time.perf_counter()
    with pytest.raises(ParameterError, match="rows per unit"):
        acc.compose([acc.group_privacy(acc.point(0.01, 1e-9), 4 * GROUP_GRID)])
    assert time.perf_counter() - start < 5.0
    exact = acc.group_privacy(acc.gaussian(100.0 * GROUP_GRID), 10 * GROUP_GRID)  # exactly
    assert 0.0 < acc.delta_for_epsilon(acc.compose([exact]), 1.0) < 1e-3


@pytest.mark.parametrize("fp", [math.nan, 1.5, -1, 101])
def test_an_audit_takes_whole_counts(fp):
    with pytest.raises(ParameterError):
        epsilon_lower_bound(fp, 100, 3, 100, 1e-6)
    assert epsilon_lower_bound(0, 100, 3, 100, 1e-6) > 0


@pytest.mark.parametrize("mechanism", ["output_perturbation", "noisy_gd"])
def test_a_zcdp_release_fits_the_budget_it_was_planned_for(mechanism):
    """The distribution of a zCDP release is never above its own certificate (Canonne,
    Kamath & Steinke 2020, Corollary 13) beyond the grid's rounding, so a ledger of exactly
    its target takes it."""
    import objpert

    plan = objpert.plan(
        mechanism, loss="logistic", n=10_000, d=10, zeta=1.0, epsilon=1.0, delta=1e-6
    )
    pld = acc.compose([acc.from_plan(plan)])
    assert acc.delta_for_epsilon(pld, 1.0) <= plan.certificate.delta * (1 + 1e-9)
    ledger = acc.PrivacyAccountant(epsilon=1.0, delta=1e-6)
    ledger.spend(plan, name=mechanism)
    assert len(ledger.steps) == 1


def test_a_composition_read_back_recomputes_each_releases_point():
    """The profile of a Watkins & Arora release is capped at its certified point: the point
    is recomputed from the release's public inputs, so editing it in a dictionary does not
    lower the composed delta."""
    import copy

    import objpert

    plan = objpert.plan(
        "watkins_arora", loss="logistic", n=1797, d=65, zeta=2**0.5, epsilon=1.0, delta=1e-6
    )
    honest = acc.compose_certificates([plan.certificate] * 2, 2.0)
    edited = copy.deepcopy(honest.to_dict())
    for release in edited["certificates"]:
        release["epsilon"], release["delta"] = 0.5, 1e-30
    assert acc.PLDComposedCertificate.from_dict(edited).delta == pytest.approx(
        honest.delta, rel=1e-9
    )
