"""The sections of a privacy report as format-neutral blocks (paragraphs, notices, tables,
lists, figures), rendered to HTML or Markdown by :mod:`.render`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from objpert.apps._privacy_report.content import (
    PROFILE_COMPOSITIONS,
    PrivacyReport,
    fmt_number,
    fmt_upper,
    profile_rows,
)
from objpert.apps._privacy_report.svg import Series, line_plot
from objpert.apps._privacy_report.threat import not_covered
from objpert.estimators._base import ROWS_LEFT_OUT

__all__ = [
    "Block",
    "Section",
    "attack_text",
    "attacker_section",
    "gaussian_dp_text",
    "sections",
    "sources_section",
]


#: What leaving out incomplete rows means for the guarantee (the model file holds the
#: number of rows trained on, which the certificate treats as public).
ROWS_LEFT_OUT_TEXT = (
    "Rows with missing values were left out before training. The guarantee treats the "
    "number of rows trained on (n above, in the model file) as public, so anyone who knows "
    "how many rows the table had can tell how many were left out, and it does not protect "
    "whether a person's row was complete (and so trained on); it protects the values of the "
    "rows that were trained on."
)


@dataclass(frozen=True)
class Block:
    """One block: ``kind`` is "p", "alert", "ok", "table", "list" or "figure"."""

    kind: str
    text: str = ""
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    items: tuple[str, ...] = ()
    svg: str = ""


@dataclass(frozen=True)
class Section:
    title: str
    blocks: tuple[Block, ...]


def _p(text: str) -> Block:
    return Block("p", text)


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> Block:
    return Block("table", header=header, rows=tuple(rows))


def per_person(r: Any) -> bool:
    """Whether a report's guarantee is for one person (a privacy unit), not one row."""
    return getattr(r, "rows_per_unit", 1) != 1 or bool(getattr(r, "unit", ""))


def _unit_of(r: PrivacyReport) -> str:
    """What one neighbouring dataset replaces: ``one training row`` or ``the rows of one
    person (one person, up to k rows)``."""
    if not per_person(r):
        return "one training row"
    named = f"; privacy unit {r.unit!r}" if r.unit else ""
    return f"the rows of one person (up to {r.rows_per_unit}{named})"


def _headline(r: PrivacyReport) -> list[Block]:
    blocks: list[Block] = []
    if r.certified and not r.seeded:
        caveat = " Except for what is listed next as not covered." if r.not_public else ""
        chosen = ", chosen by a private search, and the choice itself are" if r.selection else (
            " and its privately released preprocessing are" if r.preprocessing else " is"
        )  # fmt: skip
        blocks.append(
            Block(
                "ok",
                f"The released model{chosen} ({fmt_upper(r.epsilon)}, {fmt_upper(r.delta)})-"
                f"differentially private with respect to the replacement of {_unit_of(r)}."
                + caveat,
            )
        )
    elif not r.certified:  # a certified but seeded release: the TESTING SEED block below
        why = "; ".join(r.reasons) or "a condition of the theorem fails"
        blocks.append(Block("alert", f"NOT CERTIFIED: the certificate does not hold ({why})."))
    if r.not_public:
        blocks.append(
            Block(
                "alert",
                "NOT COVERED: these structural choices were read from the private data, not "
                f"declared, and the certificate does not cover them: {', '.join(r.not_public)}.",
            )
        )
    if ROWS_LEFT_OUT in r.not_public:
        blocks.append(Block("alert", ROWS_LEFT_OUT_TEXT))
    if r.seeded:
        blocks.append(
            Block(
                "alert",
                "TESTING SEED: the noise came from a testing seed, reproducible by anyone who "
                "knows it. This model has no privacy guarantee and must not be published; the "
                f"certificate ({fmt_upper(r.epsilon)}, {fmt_upper(r.delta)}) below holds only "
                "for noise that nobody can reproduce.",
            )
        )
    if not r.verified:
        blocks.append(
            Block(
                "alert",
                f"SIGNATURE: {r.signature_status}. The plans were re-derived and check out, "
                "but without a verified signature nothing proves that the stored weights came "
                "from that release.",
            )
        )
    return blocks


def _summary(r: PrivacyReport) -> Section:
    """The page an officer reads first: what was released, for which data, the guarantee
    in one sentence, the attacker's bound at 1% and 10% false-positive rates, and what is
    not covered."""
    what = "a classifier" if r.classes is not None else "a regression model"
    labels = f" over the labels {', '.join(r.classes)}" if r.classes is not None else ""
    names = [c for c, _ in r.features]
    over = (
        f" on the columns {', '.join(names[:12])}{' and more' if len(names) > 12 else ''}"
        if names
        else f" on {r.n_features} features"
    )
    items = [
        "Privacy unit: one row of the training data (one person only where each person has "
        "at most one row). Neighbouring datasets differ in one row, replaced; the number of "
        "rows is public."
        if r.rows_per_unit == 1 and not r.unit
        else f"Privacy unit: {r.unit_text}. Each person kept at most {r.rows_per_unit} "
        "rows (chosen by a keyed hash, not by their values); neighbouring datasets differ in "
        "one person's rows, replaced; the number of persons is public."
    ]
    if r.curator:
        items.append(f"Curator: {r.curator}")
    if r.purpose:
        items.append(f"Purpose: {r.purpose}")
    only = " and the privately released bounds" if r.preprocessing else " only"
    items.append(f"What was released: {what} ({r.estimator}){over}{labels}: its weights{only}.")
    if r.selection:
        items.append(
            "How it was chosen: by a private search among candidate settings on the same "
            "data; the guarantee below covers the choice and the model together."
        )
    if r.prior:
        items.append(
            f"public prior: {r.prior}. The ridge was centred at this public model supplied by "
            "the data holder (a public input: the guarantee holds for the private rows "
            "whatever it is, but a prior fitted on those same rows is not covered)."
        )
    if r.certified and not r.seeded:
        items.append(
            f"The guarantee: ({fmt_upper(r.epsilon)}, {fmt_upper(r.delta)})-differential "
            f"privacy for every {'person' if per_person(r) else 'row'}: "
            f"replacing {_unit_of(r)} changes the probability of any outcome by at most a "
            "factor e^epsilon, except with probability delta."
        )
    else:
        items.append("The guarantee: NONE (see the notices above).")
    attack = attack_text(r, "")
    if attack:
        items.append(attack)
    items.append(gaussian_dp_text(None, "this release", r.mechanism))
    if r.not_public:
        items.append(
            f"Not covered: {', '.join(r.not_public)} (read from the training data), and "
            "what the threat model lists below."
        )
    else:
        items.append(
            "Not covered: what the threat model lists below (no structural choice of this "
            "model, such as its label set or its bounds, was read from the training data)."
        )
    return Section("Summary", (Block("list", items=tuple(items)),))


def attack_text(r: Any, after: str) -> str:
    """The attacker's bound at 1% and 10% false-positive rates in one sentence ("" when the
    report has neither rate); ``after``: what the attacker has seen, if it needs saying."""
    bounds = {round(a, 6): t for a, t in zip(r.fpr_levels, r.tpr_bounds, strict=True)}
    them, one = ("persons whose rows were", "person's rows were") if per_person(r) else (
        "rows that were", "row was")  # fmt: skip
    at = [
        f"at most {fmt_upper(100 * bounds[a], 3)}% of the {them} used while "
        f"wrongly naming {100 * a:g}% of the {them} not"
        for a in (0.01, 0.1)
        if a in bounds
    ]
    if not at:
        return ""
    return (
        f"An attacker testing whether a given {one} used{after} can name "
        + ", or ".join(at)
        + " (guessing at random names as many of each)."
    )


def gaussian_dp_text(mu: float | None, what: str, mechanism: str = "watkins_arora") -> str:
    """The Gaussian-DP headline: mu when it is proven (Gaussian mechanisms only: Dong, Roth
    & Su 2022, Corollary 3.3), else why none is stated (for ``mechanism``)."""
    if mu is not None:
        return (
            f"Gaussian-DP: {what} is {fmt_upper(mu)}-GDP (Dong, Roth & Su 2022): telling "
            "whether a given row was used is no easier than telling apart two normal "
            f"distributions {fmt_upper(mu)} standard deviations apart."
        )
    profile = {
        "multinomial": "a privacy profile with a log-determinant term (softmax objective "
        "perturbation, objpert's documentation on multiclass models)",
        "amp": "a privacy profile of objective perturbation at the exact minimiser with a "
        "log-determinant term, composed with output noise (Iyengar et al. 2019)",
    }.get(
        mechanism, "a privacy profile with a truncation term (Watkins & Arora 2026, Theorem C.13)"
    )
    return (
        f"Gaussian-DP: no mu is stated for {what}. Its guarantee is {profile}, which no "
        "Gaussian trade-off curve is proven to dominate at every epsilon; the attacker's "
        "bounds above are the equivalent headline."
    )


def _selection_section(r: PrivacyReport) -> Section | None:
    if r.preprocessing:
        text = (
            "A step before the model released statistics of the rows (private bounds) with its "
            "own budget. This report's guarantee covers every release in the file; the model's "
            f"own is ({fmt_upper(r.own_epsilon)}, {fmt_upper(r.own_delta)}), and the technical "
            "sections below are about it alone."
        )
        rows = _table(("release", "guarantee"), list(r.preprocessing))
        return Section("Private preprocessing", (_p(text), rows))
    if not r.selection:
        return None
    text = (
        "The model was chosen among candidates by a private search on the same data. The "
        "guarantee stated in this report is the search's: it covers the choice and the "
        "chosen model together. The chosen model's own release is "
        f"({fmt_upper(r.own_epsilon)}, {fmt_upper(r.own_delta)})-differentially private; "
        "the technical sections below (profile, constants) are about that release alone."
    )
    return Section(
        "How the model was chosen",
        (_p(text), _table(("item", "value"), list(r.selection))),
    )


def _features_section(r: PrivacyReport) -> Section | None:
    if not r.features:
        return None
    return Section(
        "The features and their declared bounds",
        (
            _p(
                "Each input column and what the model file declares of it (public values, "
                "chosen before training: no statistic of the rows; except a range released "
                "privately, whose guarantee the report counts)."
            ),
            _table(("column", "declared"), list(r.features)),
        ),
    )


def _released(r: PrivacyReport) -> Section:
    rows = [
        ("estimator", r.estimator),
        ("coefficients", f"array of shape {r.coef_shape}"),
        ("intercept", f"array of shape {r.intercept_shape}" if r.intercept_shape else "a number"),
        ("features", str(r.n_features)),
    ]
    if r.classes is not None:
        origin = (
            "declared by the caller (public)"
            if r.label_set_declared
            else "READ FROM THE TRAINING LABELS (not public)"
        )
        rows.append(("label set", f"{', '.join(r.classes)}: {origin}"))
    rows += [
        ("model file", r.model_path),
        ("file format version", str(r.format_version)),
        ("signature", r.signature_status),
    ]
    return Section(
        "What was released",
        (
            _p(
                "The release is the model's coefficients and intercept: all of it, nothing "
                "else. A released model is public by definition; this report shows its shape, "
                "not its values. The model file holds no statistic of the training rows."
            ),
            _table(("item", "value"), rows),
        ),
    )


def _mechanism(r: PrivacyReport) -> Section:
    composition = {
        "single": "one release",
        "basic": f"{len(r.releases)} one-vs-rest releases, basic composition (Dwork & Roth "
        "2014, Theorem 3.16)",
        "advanced": f"{len(r.releases)} one-vs-rest releases, advanced composition (Dwork, "
        "Rothblum & Vadhan 2010, Theorem III.3)",
        "pld": f"{len(r.releases)} one-vs-rest releases, their privacy-loss distributions "
        "composed (objpert.accounting, with dp-accounting)",
    }.get(r.composition, r.composition)
    forms = ", ".join(sorted({_FORMS.get(x.form, x.form) for x in r.releases}))
    rows = [
        ("mechanism (registry name)", r.mechanism),
        ("what it does", r.mechanism_title),
        ("paper", r.mechanism_reference),
        ("certificate", forms),
        ("releases", composition),
    ]
    text = (
        "The noise z ~ N(0, sigma^2 I) is drawn once; exactly N steps of full-batch gradient "
        "descent run on the training objective plus <z, w>; the last iterate is released. "
        "Every constant below is public: chosen before the data were read, and re-derived "
        "from the loss when the file was loaded."
    )
    if r.mechanism == "multinomial":
        text = (
            "The objective noise Z ~ N(0, sigma^2 I) and the output noise are drawn once; the "
            "softmax cross-entropy plus (mu/2) ||W||^2 + <Z, W> is minimised over the (d, K) "
            "weights until its gradient norm is at most a public tolerance (nothing is "
            "released otherwise), and the minimiser is released on a grid plus discrete "
            "Gaussian noise (objpert's documentation on multiclass models). N is the "
            "solver's public iteration budget. "
            "Every constant below is public: chosen before the data were read, and re-derived "
            "when the file was loaded."
        )
    if r.mechanism == "amp":
        text = (
            "The objective noise b1 ~ N(0, sigma^2 I) and the output noise are drawn once; the "
            "training objective plus (mu/2) ||w||^2 + <b1, w> is minimised until its gradient "
            "norm is at most a public tolerance gamma (nothing is released otherwise), and the "
            "approximate minimiser is released on a grid plus discrete Gaussian noise that "
            "covers the distance gamma / mu to the exact minimiser (Iyengar et al. 2019, "
            "Algorithm 1). N is the solver's public iteration budget. Every constant below is "
            "public: chosen before the data were read, and re-derived when the file was loaded."
        )
    return Section("Mechanism", (_table(("item", "value"), rows), _p(text)))


_FORMS = {
    "c13": "Theorem C.13",
    "theorem41": "Theorem 4.1",
    "limit": "Theorem C.13 (limit)",
    "amp": "Iyengar et al. 2019, Algorithm 1: objective and output noise, basic composition",
}

_CONSTANT_ROWS = (
    ("loss", "loss"),
    ("n", "rows n (public)"),
    ("d", "dimension d (with the intercept column)"),
    ("zeta", "row-norm bound zeta"),
    ("L1", "loss constant L1 (gradient bound)"),
    ("L2", "loss constant L2 (curvature bound)"),
    ("L3", "loss constant L3"),
    ("G", "sensitivity G = 2 L1 zeta / n"),
    ("L", "smoothness L = mu + L2 zeta^2"),
    ("mu", "ridge mu"),
    ("sigma", "noise scale sigma"),
    ("eta", "step size eta"),
    ("iterations", "iterations N"),
    ("calibration", "calibration"),
    ("truncation", "truncation bound"),
    ("radius", "truncation radius r"),
    ("radius_outer", "outer radius r'"),
    ("epsilon", "epsilon of the release"),
    ("delta", "certified delta of the release"),
)


def _constants(r: PrivacyReport) -> Section:
    header = ("constant", *(f"release {i}" for i in range(len(r.releases))))
    rows = []
    for key, label in _CONSTANT_ROWS:
        cells = [getattr(x, key) for x in r.releases]
        show = fmt_upper if key in ("epsilon", "delta") else fmt_number
        rows.append((label, *(c if isinstance(c, str) else show(c) for c in cells)))
    params = {k: v for x in r.releases for k, v in x.loss_params}
    blocks = [_table(header, rows)]
    if params:
        blocks.append(
            _p("Loss parameters: " + ", ".join(f"{k} = {v:g}" for k, v in params.items()))
        )
    blocks.append(_p("Declared settings of the estimator (public):"))
    blocks.append(_table(("setting", "value"), list(r.declared)))
    return Section("Public constants", tuple(blocks))


def _certificate(r: PrivacyReport) -> Section:
    rows = [
        ("epsilon", fmt_upper(r.epsilon)),
        ("delta", fmt_upper(r.delta)),
        ("certified", "yes" if r.certified else "NO"),
        ("composition", r.composition),
        ("not public (not covered)", ", ".join(r.not_public) or "none"),
    ]
    blocks = [_table(("item", "value"), rows)]
    if r.not_public:
        blocks.append(
            Block(
                "alert",
                "The certificate does NOT cover: "
                + ", ".join(r.not_public)
                + ". These were read from the private data; one changed row can change them.",
            )
        )
    return Section("The certificate", tuple(blocks))


_FLOOR = 1e-30  # the smallest delta a report draws or prints


def _profile(r: PrivacyReport) -> Section:
    lo = max(min(r.deltas), _FLOOR)
    svg = line_plot(
        [Series(r.epsilons, r.deltas, "delta(epsilon)")],
        title="Privacy profile",
        xlabel="epsilon",
        ylabel="delta (log scale)",
        xlim=(0.0, max(r.epsilons)),
        ylim=(lo, 1.0),
        logy=True,
        marks=[(r.epsilon, r.delta, f"certificate ({fmt_upper(r.epsilon)}, "
                f"{fmt_upper(r.delta)})")] if r.certified else [],
    )  # fmt: skip
    rows = []
    for e, d in profile_rows(r):
        if d < _FLOOR and rows and rows[-1][1].startswith("<"):
            continue  # one row says where delta falls below the floor
        rows.append((fmt_number(e), fmt_upper(d) if d >= _FLOOR else f"< {_FLOOR:g}"))
    how = {
        "multinomial": "the exact-minimiser profile of softmax objective perturbation at "
        "epsilon minus the output noise's epsilon, plus the output noise's delta (objpert's "
        "documentation on multiclass models)",
        "amp": "the exact-minimiser profile of the objective noise (Redberg, Koskela & Wang "
        "2023, Section 3) at epsilon minus the output noise's epsilon, plus the output "
        "noise's delta, capped by the certified point (by the certified point alone under "
        "Kifer et al.'s accountant)",
    }.get(
        r.mechanism,
        "the smallest delta that Theorem C.13 of Watkins & Arora (2026) (eq. 50) certifies "
        "over a grid of truncation radii",
    )
    text = (
        "The release is (epsilon, delta(epsilon))-differentially private for every epsilon at "
        f"once. For each epsilon, delta(epsilon) is {how}, at the "
        f"public constants above; {PROFILE_COMPOSITIONS[r.profile_composition]}. Values below "
        f"{_FLOOR:g} are drawn at {_FLOOR:g}."
    )
    blocks = [_p(text)]
    if r.profile_composition == "pld" and r.composition != "pld":
        blocks.append(
            _p(
                f"The certificate above was composed by {r.composition} composition when the "
                "model was fitted; composing the releases' whole profiles is tighter, so the "
                "profile can lie below the certificate's delta. Both are valid guarantees."
            )
        )
    blocks += [Block("figure", svg=svg), _table(("epsilon", "delta(epsilon)"), rows)]
    return Section("Privacy profile", tuple(blocks))


def attacker_section(r: Any, what: str = "the released model") -> Section:
    """The attacker's bound (a report with fpr_levels, tpr_bounds and the trade-off curve);
    ``what`` the attacker sees."""
    rows = [
        (f"{100 * a:g}%", f"{fmt_upper(100 * t, 3)}%", fmt_upper(t / a, 3))
        for a, t in zip(r.fpr_levels, r.tpr_bounds, strict=True)
    ]
    svg = line_plot(
        [
            Series(r.tradeoff_alpha, r.tradeoff_tpr, "highest true-positive rate"),
            Series((0.0, 1.0), (0.0, 1.0), "random guessing", dashed=True),
        ],
        title="Membership tests: best achievable true-positive rate",
        xlabel="false-positive rate",
        ylabel="true-positive rate",
        xlim=(0.0, 1.0),
        ylim=(0.0, 1.0),
    )
    text = (
        f"An attacker who sees {what} and wants to tell whether a given "
        f"{'person' if per_person(r) else 'row'} was in the training data runs a test. "
        f"Whatever the test, and even if the attacker knows every other "
        f"{'person' if per_person(r) else 'row'}, at a given "
        "false-positive rate its true-positive rate is at most the number below: "
        "1 - f(alpha), with f the trade-off function that the profile implies (Dong, Roth & "
        "Su 2022, Proposition 2.12: f(alpha) = sup over epsilon of max(0, 1 - delta(epsilon) "
        "- e^epsilon alpha, e^-epsilon (1 - delta(epsilon) - alpha)))."
    )
    header = ("false-positive rate", "highest true-positive rate", "ratio to random guessing")
    return Section(
        "What an attacker can achieve",
        (_p(text), _table(header, rows), Block("figure", svg=svg)),
    )


def _not_covered(r: PrivacyReport) -> Section:
    items = list(not_covered(per_person(r), r.rows_per_unit))
    if r.not_public:
        items.insert(0, "In this model: " + ", ".join(r.not_public) + " (read from the data).")
    return Section(
        "What the certificate does not cover",
        (
            _p("From objpert's threat model:"),
            Block("list", items=tuple(items)),
        ),
    )


#: The papers of a mechanism other than Watkins & Arora's, listed among the sources.
_MECHANISM_SOURCES = {
    "amp": (
        "Iyengar, R., Near, J. P., Song, D., Thakkar, O., Thakurta, A. & Wang, L. (2019). "
        "Towards Practical Differentially Private Convex Optimization. IEEE S&P 2019. AMP, "
        "Algorithm 1.",
        "Redberg, R., Koskela, A. & Wang, Y.-X. (2023). Improving the Privacy and "
        "Practicality of Objective Perturbation for Differentially Private Linear Learners. "
        "NeurIPS 2023. arXiv:2401.00583. The exact-minimiser privacy profile, Section 3.",
    ),
}


def sources_section(mechanism: str = "watkins_arora") -> Section:
    items = (
        *_MECHANISM_SOURCES.get(mechanism, ()),
        *(
            "Watkins, A. & Arora, R. (2026). Differential Privacy of Gradient Descent on Perturbed "
            "Objectives. arXiv:2610.02716. The mechanism and Theorem C.13.",
            "Dong, J., Roth, A. & Su, W. J. (2022). Gaussian Differential Privacy. JRSS B 84. "
            "arXiv:1905.02383. Trade-off functions, Proposition 2.12.",
            "Kairouz, P., Oh, S. & Viswanath, P. (2015). The Composition Theorem for Differential "
            "Privacy. ICML 2015. arXiv:1311.0776. The hypothesis-testing reading of (epsilon, "
            "delta).",
            "Dwork, C. & Roth, A. (2014). The Algorithmic Foundations of Differential Privacy. "
            "Basic composition, Theorem 3.16.",
        ),
    )
    return Section("Sources", (Block("list", items=tuple(items)),))


def sections(report: PrivacyReport) -> tuple[list[Block], list[Section]]:
    """(the headline notices, the sections) of ``report``."""
    first = [
        _summary(report),
        _selection_section(report),
        _features_section(report),
        attacker_section(report),
    ]
    technical = [
        _not_covered(report),
        _released(report),
        _certificate(report),
        _profile(report),
        _mechanism(report),
        _constants(report),
        sources_section(report.mechanism),
    ]
    return _headline(report), [s for s in (*first, *technical) if s is not None]
