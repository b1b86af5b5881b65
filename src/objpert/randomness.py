"""Where the noise comes from: a cryptographically seeded generator unless told otherwise."""

from __future__ import annotations

import secrets
import warnings
from typing import Any

import numpy as np


class TestingSeedWarning(UserWarning):
    """A seed was given: the noise is reproducible, so the output is for testing only."""


def make_rng(seed: Any = None) -> tuple[np.random.Generator, bool]:
    """(generator, seeded). ``None``: PCG64 seeded with 128 bits from the OS (``secrets``).

    Anything else (an int, a ``SeedSequence``, a ``Generator``) works and warns that the
    release is reproducible and must not be published as private.
    """
    if seed is None:
        return np.random.default_rng(secrets.randbits(128)), False
    warnings.warn(
        "a seed was given: the noise is reproducible by anyone who knows it; "
        "use this release for testing, not publication",
        TestingSeedWarning,
        stacklevel=3,
    )
    if isinstance(seed, np.random.Generator):
        return seed, True
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**31 - 1)), True
    return np.random.default_rng(seed), True
