"""Save and load fitted private models as JSON, with their plans and certificates.

A model file (format ``objpert-model``, version 2; docs/persistence.md) holds the
estimator's class and parameters, the released weights (``coef_``, ``intercept_``),
``classes_`` (values and dtype, so string, integer and boolean labels round-trip),
``n_features_in_`` (and ``feature_names_in_``), every release's
:class:`~objpert.certify.WatkinsAroraPlan` (a multinomial or an AMP release: its one plan,
re-derived at load from the parameters, :mod:`._multinomial`, :mod:`._amp_file`), each
release's iteration count and whether
its
noise came from a testing seed, the certificate (a
:class:`~objpert.accounting.Certificate` or a
:class:`~objpert.accounting._composition.ComposedCertificate`, with its ``not_public`` items),
a SHA-256 ``digest`` of the canonical JSON (sorted keys, compact separators) of everything
but the digest and the signature, and a ``signature``: an HMAC-SHA-256 of the canonical
JSON of everything but the signature, or ``null`` for an unsigned file.

Signing: ``save(model, path, key)`` signs with ``key`` (bytes or str) or, when ``key`` is
None, with the value of the environment variable ``OBJPERT_MODEL_KEY``; with neither the
file is unsigned. ``load(path, key)`` takes its key the same way. A signed file whose HMAC
does not verify under the key is refused; an unsigned file, or a signed one loaded without
a key, loads with an :class:`~objpert.exceptions.UnverifiedModelWarning`.

:func:`load` refuses, with :class:`ModelFileError`, a file larger than ``max_bytes``
(default :data:`MAX_BYTES`, 64 MiB; checked before the file is read), a file that is not
JSON, of another format or version, with missing or unknown keys, whose signature or
digest does not match, whose arrays have inconsistent shapes, or whose plans do not
re-derive: every plan is
re-derived by :func:`~objpert.certify.rederive_plan` (constants rebuilt from
the loss registry, eta <= 1/L, the certificate recomputed) and checked against the
estimator's parameters and the other plans (n, d, zeta, loss, mu, the per-release
epsilon/delta split, the calibration). Its error messages quote at most a short, escaped
prefix of a value of the file (:func:`quote_value`).

What the checks mean:

- The digest detects corruption. It is not a signature: anyone who edits the file can
  recompute it.
- The signature proves that the file was written by a holder of the key, unchanged.
- Re-derivation proves that the stored *numbers* are a valid certificate of a release with
  the model's parameters; without a signature it cannot prove that the stored weights came
  from that release.

Not saved: ``n_clipped_`` and each release's ``n_clipped`` (statistics of the training
data that no certificate covers), each release's ``seconds`` (timing is a side channel on
the data), and the release weights themselves (they are ``coef_``/``intercept_``).
"""

from objpert._jsonable import canonical_json
from objpert.persistence._fileformat import (
    FORMAT,
    KEY_ENV,
    MAX_BYTES,
    SIGNATURE_ALGORITHM,
    VERSION,
    LoadedModel,
    digest,
    plan_from_dict,
    quote_value,
    signature,
    signing_key,
)
from objpert.persistence._load import from_payload, load, read
from objpert.persistence._save import save, to_payload

__all__ = [
    "FORMAT",
    "KEY_ENV",
    "MAX_BYTES",
    "SIGNATURE_ALGORITHM",
    "VERSION",
    "LoadedModel",
    "canonical_json",
    "digest",
    "from_payload",
    "load",
    "plan_from_dict",
    "quote_value",
    "read",
    "save",
    "signature",
    "signing_key",
    "to_payload",
]
