"""The fuzz suite: hypothesis profiles and the ``fuzz`` marker.

Every test here is marked ``fuzz`` (``pytest -m fuzz`` runs the suite alone, ``-m "not
fuzz"`` skips it). The default profile is deterministic (``derandomize=True``) with small
example counts, so the whole suite runs in well under two minutes on two cores. Run it long
with ``HYPOTHESIS_PROFILE=long`` (every count times 40, new examples each run) or
``OBJPERT_FUZZ_EXAMPLES=N`` (every test N examples); ``HYPOTHESIS_PROFILE=random`` draws
new examples each run, ``HYPOTHESIS_PROFILE=noshrink`` reports a failure unshrunk (fast,
for debugging), ``HYPOTHESIS_PROFILE=random-noshrink`` both. The profiles apply to the fuzz
tests only. ``OBJPERT_FUZZ_SCALE=F`` multiplies every test's own count by F (after the two
settings above; rounded up), so the slow tests (Dask clusters, the command line in a
subprocess) keep their small share of a long campaign: the default counts sum to about 5,000,
``OBJPERT_FUZZ_SCALE=7`` runs about 34,000 examples. A campaign, file by file::

    for f in tests/fuzz/test_fuzz_*.py; do
        HYPOTHESIS_PROFILE=random-noshrink OBJPERT_FUZZ_SCALE=7 timeout 900 \
            python3 -m pytest -q -n 0 -p no:cacheprovider --hypothesis-show-statistics "$f"
    done
"""

from __future__ import annotations

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
# Only the fuzz tests use these (fuzz_support.fuzz); hypothesis' own default is untouched.
settings.register_profile("objpert-fuzz", derandomize=True, **_COMMON)
settings.register_profile("objpert-fuzz-random", derandomize=False, **_COMMON)
# for debugging: the first failure as found, unshrunk
settings.register_profile(
    "objpert-fuzz-noshrink",
    derandomize=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_COMMON,
)
# for long random campaigns: new examples each run, failures reported unshrunk
settings.register_profile(
    "objpert-fuzz-random-noshrink",
    derandomize=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    **_COMMON,
)

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.fuzz)
