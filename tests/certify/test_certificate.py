"""Certificates serialise to JSON and back (objpert.certify), against independent computations."""

from __future__ import annotations

import json
import re

import mpmath
import pytest
from certify_cases import (
    SETTINGS,
)

from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13

mpf = mpmath.mpf

SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
REQUIRED = {
    "form",
    "iterations",
    "threshold_iterations",
    "epsilon",
    "delta",
    "truncation_mass",
    "divergence_term",
    "certified",
}


def _certificates():
    s = SETTINGS[0]
    pc, sigma, u = s.pc, s.sigma, s.u
    return {
        "theorem41": theorem41.certify(pc, sigma, u, 400, 1.0),
        "theorem41-failed": theorem41.certify(pc, sigma, u, 3, 1.0),
        "c13": theorem_c13.certify(pc, sigma, 100, 1.0, u=u),
        "c13-failed": theorem_c13.certify(pc, sigma, 2, 1.0, u=u),
        "c13-exact": theorem_c13.certify(pc, sigma, 100, 1.0, u=u, truncation="exact"),
        "limit": theorem_c13.certify_limit(pc, sigma, 1.0),
    }


@pytest.mark.parametrize("label", list(_certificates()))
def test_certificates_serialise(label):
    cert = _certificates()[label]
    d = cert.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert json.loads(cert.to_json()) == back
    assert all(SNAKE.match(k) for k in back), [k for k in back if not SNAKE.match(k)]
    assert set(back) >= REQUIRED
    assert back["form"] == cert.form
    assert back["certified"] is cert.certified
    assert isinstance(back["constants"], dict) and back["constants"]["n"] == SETTINGS[0].n
    if cert.form == "theorem41":
        assert "epsilon0" in back
    if cert.form == "c13":
        assert {"alpha_bar", "s_n", "tau", "radius_ok"} <= set(back)
        assert isinstance(back["radius_ok"], bool)
    if cert.certified:
        assert back["delta"] == pytest.approx(back["truncation_mass"] + back["divergence_term"])
    else:
        assert back["delta"] == 1.0 and back["reasons"]
