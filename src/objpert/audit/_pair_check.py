"""The pairwise check: on named neighbouring pairs, the exact pairwise profile of the
Watkins & Arora release (:func:`objpert.audit.pairwise_profile`) measured below
the certified one at every epsilon of a grid (docs/audit-pairwise.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from objpert.audit._pairwise import PairwiseProfile, pairwise_profile
from objpert.certify._plan import WatkinsAroraPlan

__all__ = ["PairCheckReport", "PairCheckRow", "check_pairs"]


@dataclass(frozen=True)
class PairCheckRow:
    """One neighbouring pair of the pairwise check: the differing samples and the measured
    profile."""

    name: str
    x: tuple[float, ...]
    label: float
    x_prime: tuple[float, ...]
    label_prime: float
    profile: PairwiseProfile

    @property
    def passes(self) -> bool:
        """Measured max(delta, delta_reverse) <= certified at every epsilon."""
        return self.profile.below_certified

    @property
    def upper_passes(self) -> bool:
        """Even the upper confidence bounds of both directions are <= certified."""
        p = self.profile
        return all(
            max(u, ur) <= c for u, ur, c in zip(p.upper, p.upper_reverse, p.certified, strict=True)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "x": list(self.x),
            "label": self.label,
            "x_prime": list(self.x_prime),
            "label_prime": self.label_prime,
            "passes": self.passes,
            "upper_passes": self.upper_passes,
            "profile": self.profile.to_dict(),
        }


@dataclass(frozen=True)
class PairCheckReport:
    """The pairwise check: on every pair, measured delta_pair(epsilon) below the certified
    one."""

    rows: tuple[PairCheckRow, ...]

    @property
    def passed(self) -> bool:
        return all(r.passes for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "rows": [r.to_dict() for r in self.rows]}

    def table(self) -> str:
        """A markdown table: pair, epsilon, measured (both orders), CI, certified, looseness."""
        lines = [
            "| pair | epsilon | delta (S,S') | delta (S',S) | upper CI | certified | looseness |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            p = r.profile
            for k, e in enumerate(p.epsilons):
                lines.append(
                    f"| {r.name} | {e:g} | {p.delta[k]:.3g} | {p.delta_reverse[k]:.3g} | "
                    f"{max(p.upper[k], p.upper_reverse[k]):.3g} | {p.certified[k]:.3g} | "
                    f"{p.looseness[k]:.3g} |"
                )
        return "\n".join(lines)


def check_pairs(
    X_shared: ArrayLike,
    y_shared: ArrayLike,
    plan: WatkinsAroraPlan,
    pairs: dict[str, tuple[ArrayLike, float, ArrayLike, float]],
    epsilons: ArrayLike,
    *,
    samples: int = 20000,
    rng: Any = None,
    proposal: str = "tilted",
    confidence: float = 0.95,
) -> PairCheckReport:
    """The pairwise check of the plan's Watkins & Arora release: for each named pair
    ``name: (x, label, x', label')`` (the differing sample appended to the n - 1 shared rows),
    the pairwise profile (eq. 6) at ``epsilons`` against the certified delta (Theorem C.13),
    with the looseness certified / measured."""
    Xs = np.asarray(X_shared, dtype=float)
    ys = np.asarray(y_shared, dtype=float)
    generator = np.random.default_rng(rng)
    rows = []
    for name, (x, lab, xp, lab_p) in pairs.items():
        x, xp = np.asarray(x, dtype=float), np.asarray(xp, dtype=float)
        prof = pairwise_profile(
            np.vstack([Xs, x]),
            np.append(ys, lab),
            np.vstack([Xs, xp]),
            np.append(ys, lab_p),
            plan,
            epsilons,
            samples=samples,
            rng=generator,
            proposal=proposal,
            confidence=confidence,
        )
        rows.append(
            PairCheckRow(
                name,
                tuple(float(v) for v in x),
                float(lab),
                tuple(float(v) for v in xp),
                float(lab_p),
                prof,
            )
        )
    return PairCheckReport(tuple(rows))
