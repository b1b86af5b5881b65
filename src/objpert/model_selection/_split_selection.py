"""The certificate of the split method of :class:`~objpert.model_selection.PrivateGridSearch`
(parallel selection; the reasoning is in :mod:`objpert.model_selection._search`): the
candidates' own certificates, composed in parallel with the exponential mechanism's
selection epsilon, and the public sizes of the parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from objpert._validation import count, validated
from objpert.accounting._certificate import Certificate
from objpert.accounting._composition import budget_text, parallel

__all__ = ["METHOD", "SelectionCertificate", "split_certificate", "split_sizes"]

METHOD = "parallel selection (Chaudhuri, Monteleoni & Sarwate 2011, Section 6)"


@dataclass(frozen=True)
class SelectionCertificate(Certificate):
    """The guarantee of a private selection: the chosen index and the chosen model.

    ``epsilon = max(max_i epsilon_i, selection_epsilon)``, ``delta = max_i delta_i`` (see
    the module docstring); ``candidates`` holds each candidate's own certificate.
    """

    method: str
    epsilon: float
    delta: float
    selection_epsilon: float
    candidates: tuple[Any, ...]
    part_sizes: tuple[int, ...]
    not_public: tuple[str, ...] = ()

    @property
    def certified(self) -> bool:
        return all(c.certified for c in self.candidates) and self.delta < 1.0

    @property
    def rows_per_unit(self) -> int:
        """The candidates' privacy unit (rows per unit; 1: one row)."""
        units = sorted({c.rows_per_unit for c in self.candidates})
        return units[0] if len(units) == 1 else max(units)

    @property
    def covers(self) -> str:
        k = self.rows_per_unit
        what = "rows" if k == 1 else f"units (one person, up to {k} rows)"
        return (
            f"the choice among {len(self.candidates)} candidates, each trained on its own "
            f"part of the {what}, and the chosen model"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "selection_epsilon": self.selection_epsilon,
            "certified": self.certified,
            "part_sizes": list(self.part_sizes),
            "candidates": [c.to_dict() for c in self.candidates],
            "not_public": list(self.not_public),
        }

    def summary(self) -> str:
        """What :func:`str` prints: the guarantee in a few lines."""
        return str(self)

    def __repr__(self) -> str:
        """One line: the selection and its totals (``to_dict`` has every candidate)."""
        return (
            f"SelectionCertificate(candidates={len(self.candidates)}, epsilon={self.epsilon!r}, "
            f"delta={self.delta!r}, certified={self.certified})"
        )

    def __str__(self) -> str:
        status = "certified" if self.certified else "NOT certified"
        lines = [
            f"{budget_text(self.epsilon, self.delta)}, {status} (private selection among "
            f"{len(self.candidates)} candidates, each on its own part of the "
            f"{_unit_words(self.rows_per_unit)})",
            f"  {self.method}; selection epsilon {self.selection_epsilon:.4g}",
        ]
        if self.not_public:
            lines.append(f"  not covered (read from the data): {', '.join(self.not_public)}")
        return "\n".join(lines)


def _unit_words(k: int) -> str:
    """What the parts are parts of: rows, or persons of up to k rows."""
    return "rows" if k == 1 else f"persons (the guarantee is for one person, up to {k} rows)"


def split_certificate(
    candidates: Any, selection_epsilon: float, part_sizes: Any
) -> SelectionCertificate:
    """The guarantee of a split selection (the module docstring): (max(max_i epsilon_i,
    selection_epsilon), max_i delta_i), from the candidates' own certificates; what a
    search records and what a model file's record is recomputed into."""
    certs = tuple(candidates)
    epsilon, delta = parallel([*(c.epsilon for c in certs), selection_epsilon],
                              [*(c.delta for c in certs), 0.0])  # fmt: skip
    return SelectionCertificate(
        METHOD,
        epsilon,
        delta,
        selection_epsilon,
        certs,
        tuple(part_sizes),
        tuple(dict.fromkeys(r for c in certs for r in c.not_public)),
    )


@validated(n=count(0), parts=count(1))
def split_sizes(n: int, parts: int) -> tuple[int, ...]:
    """Sizes of ``parts`` near-equal parts of n rows (a function of public n only; parts
    of 0 rows when parts > n, for the caller to refuse)."""
    base, extra = divmod(n, parts)
    return tuple(base + (1 if i < extra else 0) for i in range(parts))
