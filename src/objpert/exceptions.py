"""Every error and warning objpert raises, in one place.

Errors are ``ValueError`` subclasses (the input was wrong) and name what would fix it;
nothing is released when one is raised during a fit. Warnings mark what a certificate
does not cover.
"""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "CliError",
    "ClippingNotice",
    "ClusterError",
    "CryptoUnavailableError",
    "DataError",
    "DataTypeError",
    "ExternalPeerError",
    "IterationBudgetWarning",
    "LossError",
    "ModelFileError",
    "ObjpertError",
    "ParameterError",
    "PrivacyError",
    "PrivacyLeakWarning",
    "TestingSeedWarning",
    "ToleranceError",
    "UnreachableTargetError",
    "UnverifiedModelWarning",
]


class ObjpertError(ValueError):
    """Base class of objpert's errors (a ``ValueError``: the input was wrong)."""


class ParameterError(ObjpertError):
    """A public constant is outside the range its theorem allows."""


class UnreachableTargetError(ObjpertError):
    """No admissible choice certifies the requested (epsilon, delta)."""


class DataError(ObjpertError):
    """The data break the contract (non-finite values, wrong shapes, labels, norms)."""


class DataTypeError(DataError, TypeError):
    """Data of a type that is not numbers (a dict among the features): a DataError, and a
    TypeError as scikit-learn's conventions expect."""


class ClusterError(ObjpertError):
    """The Dask cluster failed during a fit: a worker was lost and its partitions could not
    be remade, a step timed out (a frozen or unreachable worker), or the scheduler went
    away. Nothing was released; the message says what happened and what to do."""


class PrivacyError(ObjpertError):
    """The release would not be covered by its certificate; nothing was released."""


class BudgetExceededError(PrivacyError):
    """A release would take a privacy accountant past its (epsilon, delta) budget; it was
    refused before anything was released (the message says what remains and what was
    asked)."""


class ToleranceError(PrivacyError):
    """The solver did not reach the plan's gradient-norm tolerance; nothing was released."""


class LossError(ParameterError):
    """A loss cannot be used: unregistered, a name taken by another loss, or constants
    (L1, L2, L3) that its derivatives violate."""


class CryptoUnavailableError(ImportError):
    """The cryptographic bit generator (``randomgen.ChaCha``) cannot be loaded: nothing is
    drawn (objpert never falls back to a non-cryptographic generator)."""


class ModelFileError(ObjpertError):
    """A model file cannot be saved or loaded: it is malformed, altered or not certified."""


class ExternalPeerError(ObjpertError):
    """An external peer's environment could not be built or the peer failed."""


class CliError(ObjpertError):
    """A command-line usage error, reported in one line (exit code 2)."""


class PrivacyLeakWarning(UserWarning):
    """A structural choice of the model (the label set, a bound) was read from the private
    data instead of being declared by the caller: the certificate does not cover it, and the
    model records it as not public."""


class UnverifiedModelWarning(PrivacyLeakWarning):
    """A model file was loaded without a signature check: its weights are unverified (the
    numbers of its plans are re-derived and checked, but anyone could have written them)."""


class TestingSeedWarning(UserWarning):
    """A seed was given: the noise is reproducible, so the output is for testing only."""

    __test__ = False  # a warning, not a test class


class ClippingNotice(UserWarning):
    """Many training values or rows were clipped to their declared bounds: the model may
    be poor. Shown to whoever runs ``fit`` (a statistic of the private data): it is never
    stored in the model or its file."""


class IterationBudgetWarning(UserWarning):
    """The knee of the calibration's bound lies beyond the iteration budget and doubling it
    would lower that bound materially (computed from public constants:
    :func:`objpert.certify._budget.ceiling`)."""
