"""The privacy report of an accountant's ledger file: every private step on one data set,
each step's spend, and the composed total against the budget (``objpert report``).

The composed profile is the ledger's privacy-loss distribution (the releases' pessimistic
PLDs composed, :mod:`objpert.accounting._pld`) queried on a grid of epsilons; the attacker's
bound is read from it as for a model (:mod:`objpert.certify._tradeoff`). The ledger was
re-derived when its file was read (:mod:`objpert.persistence._ledger_file`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert.accounting import _pld as pld
from objpert.accounting._accountant import PrivacyAccountant
from objpert.accounting._conversions import gaussian_dp_mu
from objpert.apps._privacy_report.content import attack_bounds, fmt_number, fmt_upper
from objpert.apps._privacy_report.sections import (
    Block,
    Section,
    attack_text,
    attacker_section,
    gaussian_dp_text,
    per_person,
    sources_section,
)
from objpert.apps._privacy_report.svg import Series, line_plot
from objpert.apps._privacy_report.threat import not_covered
from objpert.certify import _tradeoff as tradeoff
from objpert.exceptions import ParameterError
from objpert.persistence import LoadedModel

__all__ = ["LedgerReport", "build_ledger_report", "ledger_page"]

_KINDS = {
    "watkins_arora": "Watkins & Arora release (Theorem C.13 profile)",
    "limit": "Watkins & Arora release (exact-minimiser limit profile)",
    "gaussian": "Gaussian mechanism",
    "laplace": "Laplace mechanism",
    "zcdp": "zCDP release",
    "subsampled_gaussian": "Poisson-subsampled Gaussian step",
    "objective": "objective perturbation (exact-minimiser profile)",
    "point": "release known by its (epsilon, delta) point",
    "group": "release grouped for one person's rows",
}


_MULTIPLES = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)  # profile rows: times the budget's epsilon


@dataclass(frozen=True)
class LedgerStep:
    """One step of the ledger as shown: its name, its releases in words, each release's
    own certified point (or its noise), and what it read from the data."""

    name: str
    releases: int
    what: str
    own: str
    not_public: tuple[str, ...]


@dataclass(frozen=True)
class LedgerReport:
    """Everything the report of a ledger file shows, as plain values."""

    path: str
    signature: str
    signature_status: str
    budget_epsilon: float
    budget_delta: float
    epsilon: float  # composed epsilon at the budget's delta
    delta: float  # the budget's delta
    delta_at_budget: float  # composed delta at the budget's epsilon
    steps: tuple[LedgerStep, ...]
    not_public: tuple[str, ...]
    gdp_mu: float | None
    epsilons: tuple[float, ...]
    deltas: tuple[float, ...]
    fpr_levels: tuple[float, ...]
    tpr_bounds: tuple[float, ...]
    tradeoff_alpha: tuple[float, ...]
    tradeoff_tpr: tuple[float, ...]
    title: str | None = None
    purpose: str | None = None
    curator: str | None = None
    date: str | None = None
    rows_per_unit: int = 1  # the releases' privacy unit: one person of up to k rows

    @property
    def certified(self) -> bool:
        return math.isfinite(self.epsilon) and self.delta_at_budget <= self.budget_delta

    @property
    def replaced(self) -> str:
        """What one neighbouring data set replaces, in words."""
        k = self.rows_per_unit
        return "one row" if k == 1 else f"the rows of one person (up to {k})"

    @property
    def verified(self) -> bool:
        return self.signature == "verified"


def _own(loss: pld.PrivacyLoss) -> str:
    p = dict(loss.parameters)
    if loss.kind == "gaussian":
        return f"noise sigma {p['sigma']:.4g} for sensitivity {p['sensitivity']:.4g}"
    if loss.kind == "laplace":
        return f"noise scale {p['scale']:.4g} for sensitivity {p['sensitivity']:.4g}"
    if loss.kind == "zcdp":
        return f"rho = {p['rho']:.4g}"
    if loss.kind == "subsampled_gaussian":
        return f"noise multiplier {p['noise_multiplier']:.4g}, rate {p['sampling_rate']:.4g}"
    if loss.kind == "group":
        return f"{p['rows']} rows of: {_own(p['base'])}"
    return f"({fmt_upper(loss.epsilon)}, {fmt_upper(loss.delta)}) each"


def _mu(accountant: PrivacyAccountant) -> float | None:
    """The ledger's Gaussian-DP mu when every release is a Gaussian mechanism, else None."""
    losses = [x for s in accountant.steps for x in s.losses]
    if not all(x.kind == "gaussian" for x in losses):
        return None
    ratios = []
    for x in losses:
        p = dict(x.parameters)
        ratios += [p["sigma"] / p["sensitivity"]] * x.count
    return gaussian_dp_mu(ratios)


def build_ledger_report(
    path: str,
    loaded: Any,
    *,
    points: int = 401,
    title: str | None = None,
    purpose: str | None = None,
    curator: str | None = None,
    date: str | None = None,
) -> LedgerReport:
    """The report of a ledger file read by :func:`objpert.persistence.read`."""
    accountant = getattr(loaded, "model", None)
    if not isinstance(loaded, LoadedModel) or not isinstance(accountant, PrivacyAccountant):
        raise ParameterError("build_ledger_report needs a ledger file read by objpert.read")
    cert = accountant.certificate()
    composed = pld.compose(
        [x for s in accountant.steps for x in s.losses], accountant.discretization
    )
    top = cert.epsilon if math.isfinite(cert.epsilon) else accountant.epsilon
    epsilons = tradeoff.epsilon_grid(max(float(top), accountant.epsilon), points)
    deltas = np.array([pld.delta_for_epsilon(composed, float(e)) for e in epsilons])
    fprs, tpr, alphas, curve = attack_bounds(epsilons, deltas)
    steps = tuple(
        LedgerStep(
            s.name,
            sum(x.count for x in s.losses),
            "; ".join(
                f"{x.count} x {_KINDS.get(x.kind, x.kind)}"
                if x.count > 1
                else _KINDS.get(x.kind, x.kind)
                for x in s.losses
            ),
            "; ".join(_own(x) for x in s.losses),
            s.not_public,
        )
        for s in accountant.steps
    )
    return LedgerReport(
        path=str(path),
        signature=str(loaded.signature),
        signature_status=str(loaded.status),
        budget_epsilon=accountant.epsilon,
        budget_delta=accountant.delta,
        epsilon=float(cert.epsilon),
        delta=float(cert.delta),
        delta_at_budget=float(cert.delta_at_budget),
        steps=steps,
        not_public=cert.not_public,
        gdp_mu=_mu(accountant),
        epsilons=tuple(float(e) for e in epsilons),
        deltas=tuple(float(d) for d in deltas),
        fpr_levels=tuple(float(a) for a in fprs),
        tpr_bounds=tuple(float(t) for t in tpr),
        tradeoff_alpha=tuple(float(a) for a in alphas),
        tradeoff_tpr=tuple(float(t) for t in curve),
        title=title,
        purpose=purpose,
        curator=curator,
        date=date,
        rows_per_unit=cert.rows_per_unit,
    )


def _headline(r: LedgerReport) -> list[Block]:
    budget = f"({fmt_number(r.budget_epsilon)}, {fmt_number(r.budget_delta)})"
    blocks = [
        Block(
            "ok" if r.certified else "alert",
            f"Everything recorded in this ledger, together, is ({fmt_upper(r.epsilon)}, "
            f"{fmt_number(r.delta)})-differentially private with respect to the replacement "
            f"of {r.replaced} of the data set, within its budget {budget}."
            if r.certified
            else f"OVER BUDGET: the ledger's composition exceeds its budget {budget}.",
        )
    ]
    if r.not_public:
        blocks.append(
            Block(
                "alert",
                "NOT COVERED: these structural choices were read from the private data, not "
                f"declared, and no certificate covers them: {', '.join(r.not_public)}.",
            )
        )
    if not r.verified:
        blocks.append(
            Block(
                "alert",
                f"SIGNATURE: {r.signature_status}. The releases were re-derived and the "
                "composition replayed, but without a verified signature nothing proves that "
                "this ledger records every release that was made.",
            )
        )
    return blocks


def _summary(r: LedgerReport) -> Section:
    k = sum(s.releases for s in r.steps)
    items = [
        f"What was released: {len(r.steps)} private step(s) on one data set, {k} release(s) "
        "in all (listed below); their outputs only.",
    ]
    if r.curator:
        items.append(f"Curator: {r.curator}")
    if r.purpose:
        items.append(f"Purpose: {r.purpose}")
    items.append(
        f"The guarantee: ({fmt_upper(r.epsilon)}, {fmt_number(r.delta)})-differential privacy "
        f"for every {'person' if per_person(r) else 'row'}, for all the steps together (their "
        f"privacy-loss distributions composed); at the budget's epsilon "
        f"{fmt_number(r.budget_epsilon)} the composed delta is "
        f"{fmt_upper(r.delta_at_budget)} (budget {fmt_number(r.budget_delta)})."
    )
    attack = attack_text(r, ", after seeing every release of the ledger,")
    if attack:
        items.append(attack)
    items.append(gaussian_dp_text(r.gdp_mu, "this ledger"))
    covered = f"{', '.join(r.not_public)} (read from the data), and " if r.not_public else ""
    items.append(f"Not covered: {covered}what the threat model lists below.")
    return Section("Summary", (Block("list", items=tuple(items)),))


def _steps(r: LedgerReport) -> Section:
    rows = [
        (str(i), s.name, str(s.releases), s.what, s.own, ", ".join(s.not_public) or "none")
        for i, s in enumerate(r.steps, 1)
    ]
    budget = [
        ("budget", f"({fmt_number(r.budget_epsilon)}, {fmt_number(r.budget_delta)})"),
        ("spent: epsilon at the budget's delta", fmt_upper(r.epsilon)),
        ("spent: delta at the budget's epsilon", fmt_upper(r.delta_at_budget)),
        ("remaining epsilon (headroom)", fmt_number(max(r.budget_epsilon - r.epsilon, 0.0))),
    ]
    header = ("step", "name", "releases", "what", "each release's own guarantee", "not public")
    return Section(
        "The ledger: each step and the total",
        (
            Block("table", header=header, rows=tuple(rows)),
            Block(
                "p",
                "The total is not the sum of the steps: the releases' privacy-loss "
                "distributions are composed (objpert.accounting, with dp-accounting), which "
                "is tighter than adding their epsilons.",
            ),
            Block("table", header=("", "value"), rows=tuple(budget)),
        ),
    )


def _profile(r: LedgerReport) -> Section:
    floor = 1e-30
    svg = line_plot(
        [Series(r.epsilons, r.deltas, "composed delta(epsilon)")],
        title="Composed privacy profile",
        xlabel="epsilon",
        ylabel="delta (log scale)",
        xlim=(0.0, max(r.epsilons)),
        ylim=(max(min(r.deltas), floor), 1.0),
        logy=True,
        marks=[(r.epsilon, r.delta, "spent")] if r.certified else [],
    )
    eps = np.asarray(r.epsilons)
    targets = [m * r.budget_epsilon for m in _MULTIPLES if m * r.budget_epsilon <= eps[-1]]
    picks = sorted({int(np.argmin(np.abs(eps - t))) for t in targets})
    rows = [
        (fmt_number(eps[i]), fmt_upper(r.deltas[i]) if r.deltas[i] >= floor else "< 1e-30")
        for i in picks
    ]
    return Section(
        "Composed privacy profile",
        (
            Block("figure", svg=svg),
            Block("table", header=("epsilon", "delta(epsilon)"), rows=tuple(rows)),
        ),
    )


def ledger_page(r: LedgerReport) -> tuple[str, str, list[Block], list[Section]]:
    """(title, subtitle, headline notices, sections) of a ledger's report."""
    title = r.title or f"Privacy report: {r.path}"
    dated = f"; report of {r.date}" if r.date else ""
    subtitle = f"a privacy ledger of {len(r.steps)} step(s) ({r.path}{dated})"
    uncovered = Section(
        "What the certificate does not cover",
        (Block("list", items=not_covered(per_person(r), r.rows_per_unit)),),
    )
    secs = [_summary(r), _steps(r), attacker_section(r, "every release of the ledger")]
    secs += [_profile(r), uncovered]
    return title, subtitle, _headline(r), [*secs, sources_section()]
