"""What a privacy report says about one model file, computed from its public contents.

:func:`build_report` reads a checked model file (:class:`objpert.persistence.LoadedModel`)
and computes the privacy profile of its release and the attacker's bound the profile
implies (:mod:`objpert.certify._tradeoff`). Nothing here reads private data: a model file
holds no statistic of its training rows (docs/persistence.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

import numpy as np

from objpert.accounting import _pld as pld
from objpert.accounting._composition import basic_profile
from objpert.accounting._pipeline import any_seeded, file_certificate, released_certificates
from objpert.accounting._unit import UnitCertificate, group_profile, unit_words
from objpert.certify import _profile as wa_profile
from objpert.certify import _tradeoff as tradeoff
from objpert.certify._plan import WatkinsAroraPlan
from objpert.estimators._base import LABEL_SET
from objpert.estimators._prior import check_public_prior
from objpert.exceptions import ParameterError
from objpert.mechanisms import _registry as registry
from objpert.mechanisms._certificates.multinomial import MultinomialPlan, multinomial_profile
from objpert.mechanisms._certificates.plan import AMPPlan
from objpert.persistence import LoadedModel

__all__ = [
    "PROFILE_COMPOSITIONS",
    "PrivacyReport",
    "ReleaseConstants",
    "attack_bounds",
    "build_report",
    "fmt_number",
    "fmt_upper",
    "profile_rows",
]

#: How the profile of a model with several releases is composed, by the model's method.
PROFILE_COMPOSITIONS = {
    "single": "one release: the profile of its plan",
    "pld": "the releases' profiles composed as pessimistic privacy-loss distributions "
    "(objpert.accounting with dp-accounting)",
    "basic": "basic composition of the releases' profiles (Dwork & Roth 2014, Theorem "
    "3.16) at the even split of epsilon (install dp-accounting for the tighter PLD "
    "composition)",
}


@dataclass(frozen=True)
class ReleaseConstants:
    """The public constants of one release, re-derived from the loss and its plan."""

    loss: str
    loss_params: tuple[tuple[str, float], ...]
    n: int
    d: int
    zeta: float
    L1: float
    L2: float
    L3: float
    G: float
    L: float
    mu: float
    sigma: float
    eta: float
    iterations: int
    calibration: str
    form: str
    truncation: str
    radius: float
    radius_outer: float
    epsilon: float
    delta: float
    certified: bool


@dataclass(frozen=True)
class PrivacyReport:
    """Everything a privacy report shows, as plain values (see :func:`build_report`)."""

    model_path: str
    estimator: str
    format_version: int
    signature: str  # "verified", "unsigned" or "no key"
    signature_status: str  # one line for people
    mechanism: str  # registry name
    mechanism_title: str
    mechanism_reference: str
    coef_shape: tuple[int, ...]
    intercept_shape: tuple[int, ...]
    classes: tuple[str, ...] | None  # None: a regressor
    label_set_declared: bool | None  # None: a regressor
    n_features: int
    declared: tuple[tuple[str, str], ...]  # the estimator's public settings, as text
    releases: tuple[ReleaseConstants, ...]
    composition: str  # "single", "basic" or "advanced"
    epsilon: float
    delta: float
    certified: bool
    reasons: tuple[str, ...]
    not_public: tuple[str, ...]
    seeded: bool
    profile_composition: str  # a key of PROFILE_COMPOSITIONS
    epsilons: tuple[float, ...]
    deltas: tuple[float, ...]
    fpr_levels: tuple[float, ...]
    tpr_bounds: tuple[float, ...]
    tradeoff_alpha: tuple[float, ...]
    tradeoff_tpr: tuple[float, ...]
    features: tuple[tuple[str, str], ...] = ()  # (input column, what is declared of it)
    prior: str | None = None  # the public prior the ridge is centred at, as text
    #: how a private search chose the model (rows of a table; empty: not chosen by one).
    #: With a search, epsilon/delta above are the search's guarantee (choice and model).
    selection: tuple[tuple[str, str], ...] = ()
    own_epsilon: float = math.nan  # the model's own release (with a search or preprocessing)
    own_delta: float = math.nan
    #: each private release of a pipeline file (private bounds, then the model) as rows;
    #: non-empty: epsilon/delta above are their composition (everything the file released).
    preprocessing: tuple[tuple[str, str], ...] = ()
    title: str | None = None
    purpose: str | None = None
    curator: str | None = None
    date: str | None = None
    rows_per_unit: int = 1  # the privacy unit: one person of up to k rows (1: one row)
    unit: str = ""  # the column of the unit ids, when named

    @property
    def verified(self) -> bool:
        return self.signature == "verified"

    @property
    def unit_text(self) -> str:
        """``one training row`` or ``one person, up to k rows``."""
        if self.rows_per_unit == 1 and not self.unit:
            return "one training row"
        return unit_words(self.rows_per_unit, self.unit)


def _mechanism_of(plan: Any) -> registry.Mechanism:
    return registry.for_plan(plan)


def _solved_release(plan: MultinomialPlan | AMPPlan) -> ReleaseConstants:
    """The constants of a multinomial or AMP release (its certificate's; what has no
    meaning for it, such as a step size or a truncation radius, is NaN; N is the solver's
    public iteration budget)."""
    cert = plan.recertify()
    nan = math.nan
    amp = isinstance(plan, AMPPlan)
    return ReleaseConstants(
        loss=plan.loss if amp else "softmax", loss_params=plan.loss_params if amp else (),
        n=plan.n, d=plan.d, zeta=plan.zeta, L1=float(cert.constants["L1"]),
        L2=float(cert.constants["L2"]) if amp else nan, L3=nan,
        G=nan if amp else float(cert.details["sensitivity"]), L=nan, mu=plan.mu,
        sigma=plan.sigma, eta=nan, iterations=plan.max_iter if amp else plan.iterations,
        calibration=plan.mechanism, form=cert.form, truncation="none", radius=nan,
        radius_outer=nan, epsilon=cert.epsilon, delta=cert.delta, certified=cert.certified,
    )  # fmt: skip


def _release(plan: WatkinsAroraPlan) -> ReleaseConstants:
    if isinstance(plan, MultinomialPlan | AMPPlan):
        return _solved_release(plan)
    pc = plan.rebuilt_constants()
    cert = plan.recertify()
    return ReleaseConstants(
        loss=plan.loss,
        loss_params=tuple(pc.loss_params),
        n=plan.n,
        d=plan.d,
        zeta=plan.zeta,
        L1=pc.L1,
        L2=pc.L2,
        L3=pc.L3,
        G=pc.G,
        L=pc.L,
        mu=plan.mu,
        sigma=plan.sigma,
        eta=plan.eta,
        iterations=plan.iterations,
        calibration=plan.calibration,
        form=cert.form,
        truncation=plan.truncation,
        radius=plan.radius,
        radius_outer=plan.radius_outer,
        epsilon=cert.epsilon,
        delta=cert.delta,
        certified=cert.certified,
    )


#: The estimator parameters a report lists as declared public settings.
_DECLARED = (
    ("data_norm", "row-norm bound data_norm (rows scaled down to it)"),
    ("clip", "rows above the bound clipped (else refused)"),
    ("fit_intercept", "intercept column appended"),
    ("intercept_scaling", "value of the intercept column"),
    ("scale", "pseudo-Huber scale c"),
    ("classes", "declared label set"),
    ("feature_bounds", "declared feature bounds"),
    ("mu", "ridge mu ('auto': chosen from public constants)"),
    ("calibration", "calibration"),
    ("comparator_norm", "comparator norm W of the calibration"),
    ("max_iter", "iteration budget"),
    ("composition", "composition of the releases of one fit"),
    ("epsilon", "target epsilon"),
    ("delta", "target delta"),
)


#: What an unset (None) parameter means, where it is not simply the default.
_UNSET = {
    "data_norm": "None: the bound was read from the data (not public) unless feature bounds "
    "were declared",
    "classes": "None: the label set was read from the training labels (not public)",
    "feature_bounds": "None (not declared)",
}


#: The settings of the gradient-descent release, which an AMP release does not use.
_DESCENT_ONLY = ("calibration", "comparator_norm", "max_iter", "composition")


def _declared(
    params: dict[str, Any], pipeline: bool, mechanism: str = "watkins_arora"
) -> tuple[tuple[str, str], ...]:
    """The estimator's declared settings (those the ``mechanism`` uses); in a pipeline, its
    steps declare the columns."""
    unset = {**_UNSET, "feature_bounds": "None: the pipeline's steps declare the columns "
             "(see the columns above)"} if pipeline else _UNSET  # fmt: skip
    skip = _DESCENT_ONLY if mechanism == "amp" else ()
    out = []
    for key, label in _DECLARED:
        if key in params and key not in skip:
            value = params[key]
            text = str(value) if value is not None else unset.get(key, "None (default)")
            out.append((label, text if len(text) <= 300 else text[:297] + "..."))
    if "prior" in params:
        text = prior_text(params["prior"]) or "None: the ridge is centred at 0"
        out.append(("public prior (the centre of the ridge)", text))
    return tuple(out)


def prior_text(prior: Any) -> str | None:
    """A model's public prior (``prior``, as a model file keeps it) in one line: its
    coefficients and intercepts in raw feature units, 4 significant digits, at most 300
    characters; None without a prior."""
    if prior is None:
        return None
    parsed = check_public_prior(prior)

    def row(values: np.ndarray) -> str:
        return "[" + ", ".join(f"{float(v):.4g}" for v in values) + "]"

    coef = "[" + ", ".join(row(r) for r in parsed.coef) + "]"
    text = f"coef {coef}, intercept {row(parsed.intercept)} (raw feature units)"
    return text if len(text) <= 300 else text[:297] + "..."


def _release_profile(plan: WatkinsAroraPlan, epsilons: np.ndarray) -> np.ndarray:
    """delta(epsilon) of one release (Theorem C.13 minimised over truncation radii), from
    constants re-derived from the loss; a multinomial release's by
    :func:`~objpert.mechanisms._certificates.multinomial.multinomial_profile`; an AMP
    release's by :func:`~objpert.mechanisms._certificates.events.objective_profile`)."""
    if isinstance(plan, MultinomialPlan):
        return multinomial_profile(plan, epsilons)
    if isinstance(plan, AMPPlan):  # its registered profile (objective and output noise)
        return pld.one_row_profile(plan.privacy_loss())(epsilons)
    pc = plan.rebuilt_constants()
    return wa_profile.watkins_arora_profile(
        pc, plan.sigma, plan.iterations, epsilons, radius=(plan.radius, plan.radius_outer)
    )


def _profile(plans: list[WatkinsAroraPlan], epsilons: np.ndarray) -> tuple[np.ndarray, str]:
    """The model's profile and how it was composed (a key of :data:`PROFILE_COMPOSITIONS`):
    PLD when dp-accounting is installed, else basic composition at the even split,
    min(1, sum_i delta_i(epsilon / K))."""
    if len(plans) == 1:
        return _release_profile(plans[0], epsilons), "single"
    if pld.available():
        composed = pld.compose([pld.from_plan(p) for p in plans])
        deltas = np.array([pld.delta_for_epsilon(composed, float(e)) for e in epsilons])
        return deltas, "pld"
    k = len(plans)
    return basic_profile([_release_profile(p, epsilons / k) for p in plans]), "basic"


def _features(model: Any, estimator: Any) -> tuple[tuple[str, str], ...]:
    """Each input column and what is declared of it: a pipeline's bounded steps (ranges,
    released bounds, categories, bin edges), or the estimator's feature_bounds."""
    from sklearn.pipeline import Pipeline

    from objpert.preprocessing import (
        BoundedBinner,
        BoundedOneHotEncoder,
        BoundedScaler,
        PrivateFeatureBounds,
    )
    from objpert.preprocessing._columns import column_readers

    names = getattr(model, "feature_names_in_", None)
    width = int(getattr(model, "n_features_in_", estimator.n_features_in_))
    columns = [str(c) for c in names] if names is not None else [str(j) for j in range(width)]
    if isinstance(model, Pipeline):
        readers = column_readers(model.steps[0][1], columns)
    elif getattr(estimator, "feature_bounds", None) is not None:
        readers = column_readers(BoundedScaler(bounds=estimator.feature_bounds), columns)
    else:  # no per-column declaration: each row's norm is bounded as a whole
        norm = getattr(estimator, "data_norm", None)
        text = (
            "numeric, read from the data (no declared bound)" if norm is None
            else f"numeric, each row's norm at most data_norm = {norm:g}"
        )  # fmt: skip
        return tuple((c, text) for c in columns)
    out: dict[str, list[str]] = {}
    for col, step, j in readers:
        record = getattr(step, "record", None)  # a loaded file's stand-in for the release
        if (isinstance(step, PrivateFeatureBounds) and hasattr(step, "bounds_")) or (
            isinstance(record, dict) and record.get("type") == "PrivateFeatureBounds"
        ):  # fmt: skip
            lo, hi = (step.bounds_ if hasattr(step, "bounds_") else step.bounds)[j]
            text = f"numeric, released range [{lo:.4g}, {hi:.4g}] (private quantiles)"
        elif isinstance(step, BoundedScaler):
            lo, hi = step.bounds[j]
            text = f"numeric, declared range [{lo:g}, {hi:g}]"
        elif isinstance(step, BoundedOneHotEncoder):
            text = "categories " + ", ".join(map(str, step.categories[j]))
        elif isinstance(step, BoundedBinner):
            text = "bins at " + ", ".join(f"{v:g}" for v in step.edges[j])
        else:
            continue
        out.setdefault(str(col), []).append(text)
    return tuple((c, "; ".join(out.get(c, ["not used"]))) for c in columns)


def build_report(
    path: str,
    loaded: Any,
    *,
    points: int = 401,
    title: str | None = None,
    purpose: str | None = None,
    curator: str | None = None,
    date: str | None = None,
) -> PrivacyReport:
    """The report of a model file (an estimator's or a pipeline's) read by
    :func:`objpert.persistence.read`; ``title``, ``purpose`` and ``date`` head it.

    The profile is evaluated at :func:`objpert.certify._tradeoff.epsilon_grid` (``points``
    epsilons); the attacker's bound uses every point of it and the model's certificate.
    """
    if not isinstance(loaded, LoadedModel):
        raise ParameterError(
            f"build_report needs a model file read by objpert.persistence.read; got "
            f"{type(loaded).__name__}"
        )
    pipeline = loaded.model
    model = pipeline[-1] if hasattr(pipeline, "steps") else pipeline
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    mech = _mechanism_of(plans[0])
    search = model.certificate_ if hasattr(model, "release_certificate_") else None
    cert = model.release_certificate_ if search is not None else model.certificate_
    epsilons = tradeoff.epsilon_grid(float(cert.epsilon), points)
    deltas, method = _profile(plans, epsilons)
    if isinstance(cert, UnitCertificate) and cert.route == "group":  # one person by group
        grouped = group_profile(cert.release, cert.rows, epsilons)  # privacy of one row's
        # a Watkins & Arora plan is calibrated for k rows (its own profile holds too); a
        # multinomial or AMP plan for one row (its profile is not the person's)
        deltas = np.minimum(deltas, grouped) if isinstance(plans[0], WatkinsAroraPlan) else grouped
    point_eps = np.append(epsilons, float(cert.epsilon))
    point_delta = np.append(deltas, float(cert.delta) if cert.certified else 1.0)
    selection: tuple[tuple[str, str], ...] = ()
    own = (math.nan, math.nan)
    if search is not None:  # the search's guarantee covers the choice: it is the headline
        own = (float(cert.epsilon), float(cert.delta))
        selection = _selection_rows(search)
        cert = search
        point_eps = np.array([float(search.epsilon)])
        point_delta = np.array([float(search.delta) if search.certified else 1.0])
    preprocessing: tuple[tuple[str, str], ...] = ()
    total = file_certificate(pipeline)  # None, unless a step before the model released too
    if total is not None:
        own = (float(cert.epsilon), float(cert.delta))
        certs = released_certificates(pipeline)
        preprocessing = (
            *(("the model" if i == len(certs) - 1 else f"private preprocessing {i + 1}",
               f"({fmt_upper(c.epsilon)}, {fmt_upper(c.delta)})") for i, c in enumerate(certs)),
            ("everything the file released (basic composition)",
             f"({fmt_upper(total.epsilon)}, {fmt_upper(total.delta)})"),
        )  # fmt: skip
        cert = total
        point_eps = np.array([float(total.epsilon)])
        point_delta = np.array([float(total.delta) if total.certified else 1.0])
    fprs, tpr, alphas, curve = attack_bounds(point_eps, point_delta)
    classes = getattr(model, "classes_", None)
    params = model.get_params()
    is_classifier = classes is not None
    not_public = tuple(getattr(cert, "not_public", ()))
    unit_cert = model.certificate_ if search is None else model.release_certificate_
    declared_labels = params.get("classes") is not None and LABEL_SET not in not_public
    return PrivacyReport(
        model_path=str(path),
        estimator=type(model).__name__,
        format_version=int(loaded.version),
        signature=str(loaded.signature),
        signature_status=str(loaded.status),
        mechanism=mech.name,
        mechanism_title=mech.title,
        mechanism_reference=mech.reference,
        coef_shape=tuple(np.shape(model.coef_)),
        intercept_shape=tuple(np.shape(model.intercept_)),
        classes=tuple(str(c) for c in classes) if is_classifier else None,
        label_set_declared=declared_labels if is_classifier else None,
        n_features=int(model.n_features_in_),
        declared=_declared(params, pipeline is not model, mech.name),
        releases=tuple(_release(p) for p in plans),
        composition=str(getattr(getattr(unit_cert, "release", unit_cert), "method", "single")),
        epsilon=float(cert.epsilon),
        delta=float(cert.delta),
        certified=bool(cert.certified),
        reasons=_reasons(cert),
        not_public=not_public,
        seeded=bool(model.seeded_) or any_seeded(pipeline),
        profile_composition=method,
        epsilons=tuple(float(e) for e in epsilons),
        deltas=tuple(float(d) for d in deltas),
        fpr_levels=tuple(float(a) for a in fprs),
        tpr_bounds=tuple(float(t) for t in tpr),
        tradeoff_alpha=tuple(float(a) for a in alphas),
        tradeoff_tpr=tuple(float(t) for t in curve),
        features=_features(pipeline, model),
        prior=prior_text(params.get("prior")),
        selection=selection,
        own_epsilon=own[0],
        preprocessing=preprocessing,
        own_delta=own[1],
        title=title,
        purpose=purpose,
        curator=curator,
        date=date,
        rows_per_unit=int(getattr(unit_cert, "rows_per_unit", 1)),
        unit=str(getattr(unit_cert, "unit", "")),
    )


def _runs_mean(search: Any) -> float:
    from objpert.model_selection._random_stopping import runs_mean_of

    return runs_mean_of(search.runs_mean, search.law)


def _selection_rows(search: Any) -> tuple[tuple[str, str], ...]:
    """How a private search chose the model, as (item, value) rows for people."""
    rows = [("method", str(search.method))]
    if hasattr(search, "runs_mean"):  # random stopping
        rows += [
            ("grid points", str(search.n_candidates)),
            ("runs", f"a {search.law} number of mean {_runs_mean(search):.3g} (not released)"),
            ("rows each run trained on", f"all {search.n_rows}"),
            (
                "each run",
                f"model ({fmt_upper(search.model_epsilon)}, "
                f"{fmt_upper(search.candidate_delta)}) + noisy score epsilon "
                f"{fmt_upper(search.score_epsilon)}",
            ),
        ]
    else:  # split: one part per candidate, the last part scores
        rows += [
            ("candidates", str(len(search.candidates))),
            ("rows per part", ", ".join(str(s) for s in search.part_sizes)),
            ("selection epsilon (exponential mechanism)", fmt_upper(search.selection_epsilon)),
        ]
    rows.append(("guarantee of the search", f"({fmt_upper(search.epsilon)}, "
                 f"{fmt_upper(search.delta)}): the choice and the chosen model"))  # fmt: skip
    return tuple(rows)


def attack_bounds(
    epsilons: np.ndarray, deltas: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The attacker's bound a profile implies (:mod:`objpert.certify._tradeoff`): the
    report's false-positive rates and the highest true-positive rate at each, then a grid
    of false-positive rates and the trade-off curve on it."""
    fprs = np.asarray(tradeoff.FALSE_POSITIVE_RATES)
    tpr = tradeoff.max_true_positive_rate(fprs, epsilons, deltas)
    alphas = np.unique(np.concatenate([np.geomspace(1e-4, 1.0, 161), fprs, [0.0]]))
    return fprs, tpr, alphas, tradeoff.max_true_positive_rate(alphas, epsilons, deltas)


def _reasons(cert: Any) -> tuple[str, ...]:
    inner = getattr(cert, "certificates", (cert,))
    found = [r for c in inner for r in getattr(c, "reasons", ())]
    if not found and not cert.certified:
        found.append("the composed delta is the trivial bound 1")
    return tuple(dict.fromkeys(found))


#: The epsilons of the profile table, as multiples of the certificate's epsilon.
PROFILE_TABLE_MULTIPLES = (0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)


def profile_rows(report: PrivacyReport) -> list[tuple[float, float]]:
    """(epsilon, delta) points of the profile for a table: the grid points nearest to the
    certificate's epsilon times :data:`PROFILE_TABLE_MULTIPLES` (within the grid)."""
    eps = np.asarray(report.epsilons)
    targets = [m * report.epsilon for m in PROFILE_TABLE_MULTIPLES if m * report.epsilon <= eps[-1]]
    picks = {int(np.argmin(np.abs(eps - t))) for t in targets}
    return [(report.epsilons[i], report.deltas[i]) for i in sorted(picks)]


def fmt_upper(value: float, digits: int = 4) -> str:
    """A bound for people, rounded up to ``digits`` significant digits (a delta or a
    true-positive rate shown is never below the computed one)."""
    if not math.isfinite(value) or value <= 0.0:
        return fmt_number(value)
    exact = Decimal(value)
    quantum = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    up = exact.quantize(quantum, rounding=ROUND_CEILING)
    return f"{float(up):.{digits}g}"


def fmt_number(value: float) -> str:
    """A number for people: 4 significant digits, 'inf' for infinity."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "inf" if value > 0 else ("-inf" if value < 0 else "nan")
    return f"{value:.4g}"
