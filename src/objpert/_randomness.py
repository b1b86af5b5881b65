"""Where the noise comes from: a cryptographic generator unless a seed is given (testing).

``make_rng(None)`` is a numpy :class:`~numpy.random.Generator` over the ChaCha20 stream
cipher (Bernstein 2008, 20 rounds; ``randomgen.ChaCha``) keyed directly with 256 bits
from the operating system (:func:`secrets.randbits`): the key is the whole secret state,
not a seed expanded by a non-cryptographic generator. Anything else (an int, a
``SeedSequence``, a ``Generator``, a ``RandomState``) gives the same numpy generator as
before, warns :class:`TestingSeedWarning` and is for testing only: whoever knows the seed
knows the noise. There is no fallback: without ``randomgen`` an unseeded release is
refused.
"""

from __future__ import annotations

import secrets
import warnings
from typing import Any

import numpy as np

from objpert.exceptions import CryptoUnavailableError, TestingSeedWarning

__all__ = ["KEY_BITS", "ROUNDS", "CryptoUnavailableError", "TestingSeedWarning", "make_rng"]

#: Bits of OS entropy in the ChaCha key.
KEY_BITS = 256
#: ChaCha rounds (ChaCha20).
ROUNDS = 20


try:
    from randomgen import ChaCha as _ChaCha
except ImportError as _exc:  # pragma: no cover - depends on the environment
    _ChaCha = None
    _IMPORT_ERROR = str(_exc)
else:
    _IMPORT_ERROR = ""

if _ChaCha is not None:

    class ChaCha20(_ChaCha):
        """``randomgen.ChaCha`` whose ``state`` holds plain lists instead of numpy arrays
        (so two states compare with ``==``); the stream, the key and pickling are
        ChaCha's."""

        @property
        def state(self) -> dict[str, Any]:
            raw = _ChaCha.state.__get__(self)
            inner = {
                k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in raw["state"].items()
            }
            return {**raw, "state": inner}

        @state.setter
        def state(self, value: dict[str, Any]) -> None:
            raw = _ChaCha.state.__get__(self)["state"]
            inner = {
                k: np.asarray(v, dtype=raw[k].dtype) if isinstance(raw.get(k), np.ndarray) else v
                for k, v in value["state"].items()
            }
            _ChaCha.state.__set__(self, {**value, "state": inner})

    __all__ += ["ChaCha20"]


def _chacha_generator() -> np.random.Generator:
    """ChaCha20 keyed directly (``key=``, not through a SeedSequence) with 256 OS bits."""
    if _ChaCha is None:  # pragma: no cover - depends on the environment
        raise CryptoUnavailableError(
            "unseeded noise needs the cryptographic generator randomgen.ChaCha: "
            "pip install 'randomgen>=2.0' (objpert does not fall back to a "
            f"non-cryptographic generator); import failed: {_IMPORT_ERROR}"
        )
    return np.random.Generator(ChaCha20(key=secrets.randbits(KEY_BITS), counter=0, rounds=ROUNDS))


def make_rng(seed: Any = None) -> tuple[np.random.Generator, bool]:
    """(generator, seeded). ``None``: ChaCha20 keyed with 256 OS bits, seeded False.

    Anything else (an int, a ``SeedSequence``, a ``Generator``, a ``RandomState``) works as
    with numpy (``np.random.default_rng``; a ``Generator`` is used as given), warns that
    the release is reproducible and must not be published as private, seeded True.
    """
    if seed is None:
        return _chacha_generator(), False
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
