"""The neighbouring relation of every objpert certificate: replace-one, n public.

Two datasets are neighbours when they have the same number of rows n and differ in one
row, features and label (docs/threat-model.md). n is public: adding or removing a row is
not the relation certified.

Under this relation a query that sums (or averages) one term per row moves by the
difference of two rows' terms, not by one row's term: if every row's term has norm at
most B, two neighbouring values differ by at most ||t - t'|| <= ||t|| + ||t'|| <= 2 B, and
the bound is attained (t' = -t). Every certificate form therefore takes its l2
sensitivity from the per-row bound through :func:`replace_one_sensitivity`: the
per-sample gradient bound L1 zeta (or a clip level c) of a gradient, or of the
first-order condition of objective perturbation, becomes 2 L1 zeta (or 2 c); divided by
n in objpert's mean form.

A theorem stated for datasets that differ by one added or removed row, or with the
per-row bound in the place of the sensitivity, certifies replace-one neighbours only
with 2 B in that place. Kifer, Smith & Thakurta (2012, Theorem 2) is such a case: its
noise scale zeta sqrt(8 log(2/delta) + 4 epsilon) / epsilon bounds the Gaussian ratio of
the privacy loss for a gradient difference of norm zeta, so objpert evaluates it at
2 zeta (:mod:`objpert.mechanisms._certificates.kifer`).

Not every factor 2 in a certificate is this one: two points that each lie within r of a
reference point are within 2 r of each other beyond the references' own distance, whatever
the relation (the solver's stopping error in output perturbation's and AMP's output
noise); :func:`two_radii` names that factor.
"""

from __future__ import annotations

from objpert._validation import check_nonnegative, validated

__all__ = ["REPLACE_ONE", "replace_one_sensitivity", "two_radii"]

#: The neighbouring relation of every objpert certificate: same n, one row replaced.
REPLACE_ONE = "replace-one"


@validated(per_row_bound=check_nonnegative)
def replace_one_sensitivity(per_row_bound: float) -> float:
    """2 B: the l2 sensitivity, under replace-one neighbours, of a sum of per-row terms
    of norm <= B = ``per_row_bound`` (the two differing rows' terms can point in opposite
    directions). Divide by n for a mean."""
    return 2.0 * per_row_bound


def two_radii(radius: float) -> float:
    """2 r: how much farther apart two points can be than their reference points when
    each lies within ``radius`` r of its own (a triangle inequality; independent of the
    neighbouring relation)."""
    return 2.0 * float(radius)
