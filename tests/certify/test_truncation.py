"""Truncation mass and its inverse (objpert.certify), against independent computations."""

from __future__ import annotations

import math

import pytest

from objpert.certify import _truncation as truncation


@pytest.mark.parametrize("kind", ["paper", "exact"])
def test_radius_for_mass_inverts_truncation_mass(kind):
    sigma, d_star = 0.3, 77
    for mass in (0.5, 1e-3, 1e-9, 1e-30):
        r = truncation.radius_for_mass(sigma, d_star, mass, kind)
        assert truncation.truncation_mass(sigma, d_star, r, kind) == pytest.approx(mass, rel=1e-9)
    # paper: exp(-u^2/2) at r = sigma (sqrt(d*) + u); 1 inside sigma sqrt(d*)
    assert truncation.truncation_mass(sigma, d_star, sigma * math.sqrt(d_star) * 0.9) == 1.0
