"""Fixtures shared by the accounting tests."""

from __future__ import annotations

import math

import pytest

from objpert.certify._calibration import tight


@pytest.fixture(scope="module")
def plan():
    """A small Watkins & Arora plan whose profile the accounting tests compose."""
    return tight(
        "logistic", n=400, d=6, zeta=math.sqrt(2.0), epsilon=0.5, delta=1e-7,
        comparator_norm=3.0, max_iter=2000, objective="empirical",
    )  # fmt: skip
