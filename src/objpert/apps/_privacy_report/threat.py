"""What no objpert certificate covers: the threat model, summarised for the reports."""

from __future__ import annotations

__all__ = ["NOT_COVERED", "PERSON_RELATION", "not_covered"]

#: What no objpert certificate covers (objpert's threat model, summarised).
NOT_COVERED: tuple[str, ...] = (
    "The neighbouring relation is the replacement of one row: the number of rows n is "
    "public, enters every plan and is revealed by the release. Adding or removing a person "
    "(which changes n) is not what the certificate is about.",
    "Choices read from the private data: tuning hyperparameters on it, a label set or row "
    "bound taken from it. The items listed as not public in this report are such choices.",
    "Repeated fits on the same data: every fit is a separate release. Model selection "
    "(cross-validation, grid search, refitting with other settings) spends privacy budget "
    "that no single certificate accounts for; the certificates of several fits compose.",
    "Statistics shown to the person who ran the fit, such as the number of rows clipped to "
    "the row-norm bound, run time and iteration counts: they are statistics of the data, not "
    "covered by any certificate, and are not stored in the model file. Do not publish them.",
    "Timing and other side channels: run time, memory use, cache and power behaviour depend "
    "on the data. A refusal because a computation did not finish within its public budget "
    "depends on the data too: do not retry on the same data with fresh noise.",
    "Seeded releases: a testing seed makes the noise reproducible by anyone who knows it; "
    "such a model has no privacy guarantee.",
    "Floating-point arithmetic: the proofs assume exact arithmetic. The released weights are "
    "the floating-point result of an optimisation of the perturbed objective (a fixed number "
    "of gradient steps, or a solver run to a tolerance that the output noise covers), and the "
    "Gaussian noise is a floating-point approximation. No attack on the output of an "
    "optimisation of a perturbed objective is known; nothing more than that is claimed.",
    "The key that signs model files and the noise generator's key live in memory: anyone "
    "who can read that memory can forge a file or reproduce the noise.",
)

#: The first item of :data:`NOT_COVERED` for a guarantee per person (``k`` rows).
PERSON_RELATION = (
    "The neighbouring relation is the replacement of the rows of one person (up to {k}): "
    "the number of persons, and n = persons x {k}, are public, enter every plan and are "
    "revealed by the release. Adding or removing a person (which changes n) is not what "
    "the certificate is about."
)


def not_covered(per_person: bool, rows: int) -> tuple[str, ...]:
    """:data:`NOT_COVERED`, its neighbouring relation that of one person of up to ``rows``
    rows when the guarantee is ``per_person``."""
    if not per_person:
        return NOT_COVERED
    return (PERSON_RELATION.format(k=rows), *NOT_COVERED[1:])
