"""Former names keep working for one release, each with a DeprecationWarning."""

from __future__ import annotations

import pytest

from objpert.certify.calibration import tight
from objpert.exceptions import ParameterError
from objpert.mechanisms import registry

COMMON = dict(n=2000, d=3, zeta=1.0, epsilon=1.0, delta=1e-6, max_iterations=300)


def test_radius_is_no_longer_a_name_of_comparator_norm():
    with pytest.raises(ParameterError, match="radius"):  # not a keyword: a loss parameter
        tight("logistic", radius=2.0, **COMMON)
    assert tight("logistic", comparator_norm=2.0, **COMMON).comparator_radius == 2.0


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
