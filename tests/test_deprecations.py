"""Former names keep working for one release, each with a DeprecationWarning."""

from __future__ import annotations

import pytest

from objpert.certify.calibration import tight
from objpert.errors import ParameterError
from objpert.mechanisms import registry

COMMON = dict(n=2000, d=3, zeta=1.0, epsilon=1.0, delta=1e-6, max_iterations=300)


def test_radius_is_the_former_name_of_comparator_norm():
    new = tight("logistic", comparator_norm=2.0, **COMMON)
    with pytest.warns(DeprecationWarning, match="comparator_norm"):
        old = tight("logistic", radius=2.0, **COMMON)
    assert old == new and new.comparator_radius == 2.0
    with pytest.raises(ParameterError, match="comparator_norm only"):
        tight("logistic", radius=2.0, comparator_norm=2.0, **COMMON)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("wa", "watkins_arora"),
        ("lop-clip", "lop_clip"),
        ("output", "output_perturbation"),
        ("noisy-gd", "noisy_gd"),
    ],
)
def test_former_mechanism_names(old, new):
    with pytest.warns(DeprecationWarning, match=new):
        assert registry.get(old) is registry.get(new)


def test_an_unknown_mechanism_is_refused_with_the_names():
    with pytest.raises(ParameterError, match="watkins_arora, lop"):
        registry.get("dp-sgd")
