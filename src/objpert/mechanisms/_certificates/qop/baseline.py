"""QOP against its trivial baseline: releasing the public reference point theta_ref.

QOP (Cortild & Cartis 2026) needs a public, data-independent reference point theta_ref
near a common minimiser of the per-sample losses. Releasing theta_ref itself is
(0, 0)-differentially private: it does not read the data. Any QOP result is worth only
what it gains over that release; where QOP's risk is at least theta_ref's, its noise
swamps the data (the release carries no useful information beyond the public point).

The risks are computed by the caller (the data never enter this module);
:func:`compare_to_reference` turns them into the gain and a plain statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from objpert._validation import check_nonnegative
from objpert.exceptions import ParameterError

__all__ = ["ReferenceComparison", "compare_to_reference"]


@dataclass(frozen=True)
class ReferenceComparison:
    """QOP's risks (one per setting, e.g. per box radius) against theta_ref's.

    ``gain`` per setting is reference_risk - qop_risk (positive: QOP is better);
    ``swamped`` lists the settings where QOP's risk >= theta_ref's; ``all_swamped`` is
    true when that holds at every setting.
    """

    reference_risk: float
    qop_risks: tuple[float, ...]
    labels: tuple[str, ...]
    gains: tuple[float, ...]
    swamped: tuple[str, ...]

    @property
    def all_swamped(self) -> bool:
        return len(self.swamped) == len(self.qop_risks)

    @property
    def best_gain(self) -> float:
        """The largest gain over the settings (negative when QOP never beats theta_ref)."""
        return max(self.gains)

    @property
    def best_relative_gain(self) -> float:
        """best_gain / reference_risk (nan when theta_ref's risk is 0)."""
        return self.best_gain / self.reference_risk if self.reference_risk > 0 else float("nan")

    def statement(self) -> str:
        """One plain sentence: does QOP beat releasing theta_ref, and where not."""
        lo, hi = min(self.qop_risks), max(self.qop_risks)
        ref = f"releasing theta_ref alone (epsilon 0) has risk {self.reference_risk:.4g}"
        if self.all_swamped:
            return (
                f"QOP's noise swamps the data: at every setting its risk ({lo:.4g} .. "
                f"{hi:.4g}) is at least that of the public reference point; {ref}"
            )
        swamped = (
            f"; QOP's noise swamps the data at {len(self.swamped)} of {len(self.qop_risks)} "
            f"settings ({', '.join(self.swamped)})"
            if self.swamped
            else ""
        )
        return (
            f"QOP's risk {lo:.4g} .. {hi:.4g}; {ref}; best gain {self.best_gain:.4g} "
            f"({100 * self.best_relative_gain:.3g}% of theta_ref's risk){swamped}"
        )

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(
            all_swamped=self.all_swamped,
            best_gain=self.best_gain,
            best_relative_gain=self.best_relative_gain,
            statement=self.statement(),
        )
        return out


def compare_to_reference(
    qop_risks: Sequence[float], reference_risk: float, labels: Sequence[str] | None = None
) -> ReferenceComparison:
    """QOP's risks (any loss; one per setting, named by ``labels``) against the risk of
    releasing theta_ref on the same data: the gains and where QOP is swamped."""
    risks = tuple(check_nonnegative("qop risk", r) for r in qop_risks)
    if not risks:
        raise ParameterError("qop_risks must hold at least one risk")
    ref = check_nonnegative("reference_risk", reference_risk)
    names = tuple(str(x) for x in (range(len(risks)) if labels is None else labels))
    if len(names) != len(risks):
        raise ParameterError(f"{len(names)} labels for {len(risks)} risks")
    gains = tuple(float(ref - r) for r in risks)
    swamped = tuple(name for name, r in zip(names, risks, strict=True) if r >= ref)
    return ReferenceComparison(float(ref), tuple(map(float, risks)), names, gains, swamped)
