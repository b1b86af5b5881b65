"""The plans, certificates and releases of fixed seeds are bit-identical to those the code
wrote into tests/golden/releases.json before the one-shape redesign of plans and
certificates (``tests/golden/capture.py`` recomputes them; a reshaping changes no number)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "golden"
sys.path.insert(0, str(HERE))
import capture  # noqa: E402

STORED = json.loads((HERE / "releases.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def computed() -> dict:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"registry": capture.registry_cases(), "estimators": capture.estimator_cases()}


@pytest.mark.parametrize("part", ["registry", "estimators"])
def test_bit_identical_to_the_stored_releases(computed, part):
    assert sorted(computed[part]) == sorted(STORED[part])
    for name, values in STORED[part].items():
        assert computed[part][name] == values, name


def test_the_comparison_can_fail(computed):
    first = next(iter(STORED["estimators"]))
    changed = float.fromhex(STORED["estimators"][first]["coef"][0])
    assert computed["estimators"][first]["coef"][0] != (changed + 1e-15 * abs(changed)).hex()
