"""The fuzz suite: hypothesis profiles and the ``fuzz`` marker.

Every test here is marked ``fuzz`` (``pytest -m fuzz`` runs the suite alone, ``-m "not
fuzz"`` skips it). The default profile is deterministic (``derandomize=True``) with small
example counts, so the whole suite runs in well under two minutes on two cores. Run it long
with ``HYPOTHESIS_PROFILE=long`` (every count times 40) or ``OBJPERT_FUZZ_EXAMPLES=N``
(every test N examples); ``HYPOTHESIS_PROFILE=random`` draws new examples each run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

_COMMON = dict(
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.function_scoped_fixture,  # capsys: read and reset in every example
    ],
)
settings.register_profile("default", derandomize=True, **_COMMON)
settings.register_profile("long", derandomize=False, **_COMMON)
settings.register_profile("random", derandomize=False, **_COMMON)
# for debugging: the first failure as found, unshrunk
settings.register_profile(
    "noshrink",
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_COMMON,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

_HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    # until pyproject.toml registers it (markers = ["fuzz: ..."])
    config.addinivalue_line(
        "markers", "fuzz: property-based fuzz tests of every public entry point (tests/fuzz)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fuzz)
