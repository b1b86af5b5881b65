"""The audit report of ``objpert audit``: a mechanism's certificate, an attack's lower bound
and, for the Watkins & Arora release, the exact pairwise privacy profile, as tables and one
figure.

The attack is :func:`objpert.audit.audit_mechanism` (Jagielski et al. 2020; Nasr et
al. 2021; Clopper & Pearson 1934 intervals); the exact profile is
:func:`objpert.audit.pairwise_profile` (eq. 6 of Watkins & Arora 2026, change of
variables), measured at :func:`profile_grid` against the plan's Theorem C.13 delta(epsilon).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert._files import save_figure
from objpert.audit._attacks import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    AttackResult,
    NeighbouringPair,
    audit_mechanism,
    audit_plan,
    certified_budget,
    make_pair,
    parse_pair,
    unit_pair,
)
from objpert.mechanisms import _registry as registry

__all__ = [
    "DEFAULT_DELTA",
    "DEFAULT_DRAWS",
    "DEFAULT_EPSILON",
    "DEFAULT_SAMPLES",
    "PROFILE_FRACTIONS",
    "AuditReport",
    "plot_audit",
    "profile_grid",
    "run_audit",
]

#: Releases per dataset for the attack, noise samples per direction for the profile.
DEFAULT_DRAWS = 20000
DEFAULT_SAMPLES = 4000
#: The exact profile is measured at these fractions of the certified epsilon.
PROFILE_FRACTIONS: tuple[float, ...] = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


def profile_grid(epsilon: float) -> tuple[float, ...]:
    """The epsilons of the exact profile: :data:`PROFILE_FRACTIONS` times ``epsilon``."""
    return tuple(f * epsilon for f in PROFILE_FRACTIONS)


@dataclass(frozen=True, eq=False)
class AuditReport:
    """One audit: the plan, the pair, the attack and (W&A only) the exact profile."""

    mechanism: str
    plan: Any
    pair: NeighbouringPair
    attack: AttackResult
    profile: Any = None  # objpert.audit.PairwiseProfile (W&A), else None
    jacobian: Any = None  # objpert.audit.JacobianReport on S (W&A), else None

    @property
    def epsilon_certified(self) -> float:
        return self.attack.epsilon_certified

    @property
    def delta_certified(self) -> float:
        return self.attack.delta

    @property
    def flagged(self) -> bool:
        """The attack, the exact profile or the Jacobian check contradicts the certificate."""
        return (
            self.attack.flagged
            or bool(self.profile is not None and self.profile.flagged)
            or bool(self.jacobian is not None and not self.jacobian.clean)
        )

    def to_dict(self) -> dict[str, Any]:
        plan = self.plan.to_dict()
        if isinstance(plan.get("certificate"), dict):
            plan["certificate"].pop("constants", None)
        return {
            "mechanism": self.mechanism,
            "epsilon_certified": self.epsilon_certified,
            "delta_certified": self.delta_certified,
            "flagged": self.flagged,
            "pair": self.pair.to_dict(),
            "attack": self.attack.to_dict(),
            "profile": None if self.profile is None else self.profile.to_dict(),
            "jacobian": None if self.jacobian is None else self.jacobian.to_dict(),
            "plan": plan,
        }


def run_audit(
    mechanism: str,
    pair: str = "canonical",
    *,
    epsilon: float = DEFAULT_EPSILON,
    delta: float = DEFAULT_DELTA,
    draws: int = DEFAULT_DRAWS,
    samples: int = DEFAULT_SAMPLES,
    rng: Any = None,
    confidence: float = 0.95,
    rows: int = 1,
) -> AuditReport:
    """Plan ``mechanism`` for the audit problem at (epsilon, delta), build ``pair``
    (``canonical``, ``worst``, ``random:SEED``), attack with ``draws`` releases per dataset
    and, for a map of one noise draw (W&A), measure the exact pairwise profile with
    ``samples`` noise draws per direction at :func:`profile_grid`. One generator (``rng``)
    drives everything. ``rows`` = k > 1: the pair's differing row is one person's k rows
    and the certificate audited is the person-level one (:func:`audit_mechanism`)."""
    draws = int(draws)
    samples = int(samples)
    parse_pair(pair)
    mech = registry.get(mechanism)
    mechanism = mech.name
    rows = int(rows)
    generator = np.random.default_rng(rng)
    plan = audit_plan(mechanism, epsilon=epsilon, delta=delta, rows=rows)
    found = make_pair(pair, loss=mech.audit_loss, epsilon=epsilon, delta=delta, rng=generator)
    attack = audit_mechanism(
        mechanism, found, plan=plan, draws=draws, rng=generator, confidence=confidence,
        rows=rows,
    )  # fmt: skip
    if rows > 1:
        found = unit_pair(found, rows)
    profile = jacobian = None
    if mech.release_map is not None:  # a map of one noise draw: the exact profile applies
        from objpert.audit._jacobian import check_jacobian
        from objpert.audit._pairwise import pairwise_profile

        profile = pairwise_profile(
            found.X,
            found.y,
            found.X_prime,
            found.y_prime,
            plan,
            profile_grid(certified_budget(plan, rows)[0]),
            samples=samples,
            rng=generator,
            confidence=confidence,
        )
        jacobian = check_jacobian(found.X, found.y, plan, rng=generator)
    return AuditReport(mechanism, plan, found, attack, profile, jacobian)


# ---------------------------------------------------------------- the figure


def plot_audit(report: AuditReport, path: str, *, floor: float = 1e-6) -> str:
    """One figure (PNG at ``path``): the certified delta(epsilon) (W&A: the plan's Theorem
    C.13 profile; other mechanisms: their certified point), the exact pairwise profile with
    its confidence band (W&A), and the attack's lower bound: the segment delta = certified
    delta for epsilon in [0, epsilon_lower], which no (epsilon, delta) with epsilon <
    epsilon_lower can satisfy. Log scale in delta, values below ``floor`` drawn at it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    a, p = report.attack, report.profile
    eps_c, delta_c = a.epsilon_certified, a.delta
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    top = 1.3 * max(eps_c, a.epsilon_lower)
    if p is not None:
        from objpert.audit._pairwise import certified_delta

        grid = np.linspace(0.0, top, 300)[1:]
        cert = np.clip(certified_delta(report.plan, grid), floor, 1.0)
        ax.semilogy(grid, cert, c="C0", label="certified delta(epsilon) (Theorem C.13)")
        eps = np.array(p.epsilons)
        lo = np.maximum(np.array(p.lower), np.array(p.lower_reverse))
        hi = np.maximum(np.array(p.upper), np.array(p.upper_reverse))
        mid = np.array(p.measured)
        ax.fill_between(
            eps,
            np.clip(lo, floor, 1.0),
            np.clip(hi, floor, 1.0),
            color="C1",
            alpha=0.25,
            label=f"pair profile, {100 * p.confidence:g}% band",
        )
        ax.semilogy(eps, np.clip(mid, floor, 1.0), "o-", c="C1", label="exact pair delta(epsilon)")
    ax.semilogy(
        [eps_c], [max(delta_c, floor)], "*", c="C0", ms=14, label="certified (epsilon, delta)"
    )
    ax.hlines(max(delta_c, floor), 0.0, a.epsilon_lower, colors="C3", lw=3)
    ax.semilogy(
        [a.epsilon_lower],
        [max(delta_c, floor)],
        "|",
        c="C3",
        ms=18,
        mew=3,
        label=f"attack lower bound, epsilon >= {a.epsilon_lower:.3g}",
    )
    ax.set_xlim(0.0, top)
    ax.set_ylim(floor / 2, 2.0)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("delta")
    ax.set_title(f"{report.mechanism} on the {report.pair.name} pair: certified vs measured")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
