"""Nothing was released under an older name, so the library keeps none: no module warns
DeprecationWarning, and former names are refused like any unknown name."""

from __future__ import annotations

from pathlib import Path

import pytest

from objpert.certify.calibration import tight
from objpert.exceptions import ParameterError
from objpert.mechanisms import registry

SRC = Path(__file__).resolve().parents[1] / "src" / "objpert"
COMMON = dict(n=2000, d=3, zeta=1.0, epsilon=1.0, delta=1e-6, max_iterations=300)


def test_no_module_warns_a_deprecation():
    warns = sorted(
        str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if "DeprecationWarning" in p.read_text()
    )
    assert warns == []


def test_radius_is_not_a_name_of_comparator_norm():
    with pytest.raises(ParameterError, match="radius"):  # not a keyword: a loss parameter
        tight("logistic", radius=2.0, **COMMON)
    assert tight("logistic", comparator_norm=2.0, **COMMON).comparator_radius == 2.0


@pytest.mark.parametrize("old", ["wa", "lop-clip", "output", "noisy-gd"])
def test_former_mechanism_names_are_unknown(old):
    with pytest.raises(ParameterError, match="watkins_arora, lop"):
        registry.get(old)
