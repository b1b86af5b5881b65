"""Attack-based lower bounds on epsilon for every shipped mechanism.

A distinguishing attack in the style of Jagielski, Ullman & Oprea (2020, "Auditing
differentially private machine learning: how private is private SGD?") and Nasr, Song,
Thakurta, Papernot & Carlini (2021, "Adversary instantiation: lower bounds for differentially
private machine learning"): run the mechanism ``draws`` times on S and ``draws`` times on a
neighbour S' (one batched call each), and test "was it S?" on the outputs.

The releases of each side are split in two halves. On the *calibration* half a statistic is
fitted (the Fisher linear discriminant (mean_S - mean_S')^T Sigma^{-1} w with the pooled
covariance, or the Gaussian log-likelihood ratio with one covariance per side) and a
threshold t is chosen ("S" iff statistic > t), statistic and threshold maximising the bound
below computed on the calibration counts. On the *held-out* half the false positives (S'
called S) and false negatives are counted, and Clopper & Pearson (1934) upper bounds FPR_hi,
FNR_hi are taken at level 1 - (1 - confidence)/2 each (Bonferroni: both hold at once with
probability >= confidence). Any (epsilon, delta)-DP mechanism satisfies
FPR + e^epsilon FNR >= 1 - delta and FNR + e^epsilon FPR >= 1 - delta for every test, so

    epsilon_lower = max(log((1 - delta - FNR_hi) / FPR_hi), log((1 - delta - FPR_hi) / FNR_hi), 0)

(Jagielski et al. 2020, Section 3; Kairouz, Oh & Viswanath 2015) is a lower bound on the
epsilon of the mechanism at that delta with probability >= confidence. The statistic and the
threshold depend on the calibration half only, independent of the held-out half, so a
mechanism that meets its certificate is ``flagged`` (epsilon_lower > epsilon_certified) with
probability <= 1 - confidence.

The audited problem is small and public (:data:`AUDIT_N` rows, d = :data:`AUDIT_D`, rows
of norm <= :data:`AUDIT_ZETA`, logistic loss; QOP: the squared loss with interpolating
targets), the neighbouring pairs are those of :func:`make_pair`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from objpert._validation import check_int, check_open_unit, check_positive, count, validated
from objpert.accounting._group import crude_row_target
from objpert.accounting._unit import group_certificate
from objpert.audit._statistics import (
    bound,
    clopper_pearson,
    epsilon_lower_bound,
    fit_statistic,
    threshold,
)
from objpert.exceptions import ParameterError, TestingSeedWarning
from objpert.mechanisms import _registry as registry

__all__ = [
    "AUDIT_D",
    "AUDIT_N",
    "AUDIT_ZETA",
    "DEFAULT_DELTA",
    "DEFAULT_EPSILON",
    "MECHANISMS",
    "STATISTICS",
    "AttackResult",
    "NeighbouringPair",
    "attack",
    "audit_mechanism",
    "audit_plan",
    "audit_sampler",
    "canonical_pair",
    "certified_budget",
    "clopper_pearson",
    "epsilon_lower_bound",
    "make_pair",
    "parse_pair",
    "random_pair",
    "release_outputs",
    "unit_pair",
    "worst_case_pair",
]

#: The mechanisms ``objpert audit`` knows: every registered one
#: (:mod:`objpert.mechanisms._registry`).
MECHANISMS: tuple[str, ...] = registry.names()
#: The test statistics the attack chooses from (on the calibration half).
STATISTICS: tuple[str, ...] = ("linear", "quadratic")
#: Pair kinds of :func:`make_pair` (``random:SEED`` takes an integer seed).
PAIR_KINDS: tuple[str, ...] = ("canonical", "worst", "random")

#: The documented audit configuration (docs/audit.md): target (epsilon, delta).
DEFAULT_EPSILON = 2.0
DEFAULT_DELTA = 1e-2
# The small public problem of the audits.
AUDIT_N = 50
AUDIT_D = 2
AUDIT_ZETA = 1.0
#: Ridge of the audited W&A plan (a public choice): small, so that eta * (mu + curvature)
#: is small along the differing direction and a release that redraws z each step averages
#: its noise out (the planted bug is then visible), with N ~ 10^2 steps.
WA_MU = 0.03
WA_MAX_ITERATIONS = 3000
#: Planner options of the audited mechanisms: W&A at the public ridge WA_MU within
#: WA_MAX_ITERATIONS steps, LOP-Clip clipping at half the gradient bound; the others use
#: their planners' defaults.
PLAN_OPTIONS: dict[str, dict[str, Any]] = {
    "watkins_arora": {"mu": WA_MU, "max_iter": WA_MAX_ITERATIONS},
    "lop_clip": {"clip": 0.5},
}
#: ``worst`` pairs: :func:`objpert.audit.worst_pair` searches at this fraction
#: of the target epsilon (at the target itself delta_pair is ~0 on every pair of the audited
#: configurations, so the search would be blind), with these (cheap) settings.
WORST_EPSILON_FRACTION = 0.25
WORST_SEARCH: dict[str, Any] = {
    "samples": 300,
    "grid": 4,
    "starts": 1,
    "maxfev": 8,
    "final_samples": 1000,
}
#: QOP: Davis-Yin iterations, the interpolating comparator theta* = e1 and theta_ref = 0.
QOP_ITERATIONS = 300
#: Release options of the audited mechanisms (QOP: deterministic Davis-Yin, theta_ref = 0).
RELEASE_OPTIONS: dict[str, dict[str, Any]] = {"qop": {"iterations": QOP_ITERATIONS}}


def _theta_star(d: int) -> np.ndarray:
    return np.eye(d)[0]


# ---------------------------------------------------------------- neighbouring pairs


@dataclass(frozen=True, eq=False)
class NeighbouringPair:
    """Datasets S = (X, y) and S' = (X_prime, y_prime) that differ in their last row.

    ``loss`` is ``"logistic"`` (labels -1/+1) or ``"squared"`` (targets y_i = <x_i,
    theta*>, theta* = e1: both datasets interpolate, as QOP assumes)."""

    name: str
    X: np.ndarray
    y: np.ndarray
    X_prime: np.ndarray
    y_prime: np.ndarray
    zeta: float
    loss: str = "logistic"

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "loss": self.loss,
            "zeta": self.zeta,
            "n": self.n,
            "d": self.d,
            "x": self.X[-1].tolist(),
            "y": float(self.y[-1]),
            "x_prime": self.X_prime[-1].tolist(),
            "y_prime": float(self.y_prime[-1]),
        }


def _shared_rows(n: int, d: int, zeta: float) -> tuple[np.ndarray, np.ndarray]:
    """n - 1 rows +-zeta e_k (k = 2..d in turn, signs alternating), labels = the signs: all
    shared rows have y_i x_i on e_2..e_d, none along e1, the direction the pairs differ in."""
    k = np.arange(n - 1)
    X = np.zeros((n - 1, d))
    signs = np.where(k % 2 == 0, 1.0, -1.0)
    X[k, 1 + (k // 2) % (d - 1)] = zeta * signs
    return X, signs


def _assemble(name, X_shared, y_shared, x, label, x_prime, label_prime, zeta, loss):
    X = np.vstack([X_shared, x])
    Xp = np.vstack([X_shared, x_prime])
    if loss == "squared":  # interpolating targets, same theta* on both sides
        theta = _theta_star(X.shape[1])
        return NeighbouringPair(name, X, X @ theta, Xp, Xp @ theta, zeta, loss)
    y = np.append(y_shared, label)
    yp = np.append(y_shared, label_prime)
    return NeighbouringPair(name, X, y, Xp, yp, zeta, loss)


def _check_problem(n: int, d: int, zeta: float, loss: str) -> tuple[int, int, float]:
    if loss not in ("logistic", "squared"):
        raise ParameterError(f"loss must be 'logistic' or 'squared'; got {loss!r}")
    return check_int("n", n, 3), check_int("d", d, 2), check_positive("zeta", zeta)


def canonical_pair(
    n: int = AUDIT_N, d: int = AUDIT_D, zeta: float = AUDIT_ZETA, *, loss: str = "logistic"
) -> NeighbouringPair:
    """The canonical pair: shared rows of :func:`_shared_rows`; logistic: x_n = zeta e1 with
    label +1 against x_n' = -zeta e1 with label +1 (y x = +-zeta e1: for the logistic loss
    grad F_S - grad F_S' = -(zeta/n) e1 at every w, a constant shift of the objective,
    half the worst-case 2 L1 zeta / n); squared (QOP): x_n = zeta e1 against x_n' = 0
    (QOP's objective sees a row only through x x^T and <x, theta*>, so +-zeta e1 would be
    the same dataset to it)."""
    n, d, zeta = _check_problem(n, d, zeta, loss)
    X_shared, y_shared = _shared_rows(n, d, zeta)
    e1 = np.eye(d)[0]
    other = np.zeros(d) if loss == "squared" else -zeta * e1
    return _assemble("canonical", X_shared, y_shared, zeta * e1, 1.0, other, 1.0, zeta, loss)


def unit_pair(pair: NeighbouringPair, rows: int) -> NeighbouringPair:
    """``pair`` made a pair of datasets that differ in one privacy unit of ``rows`` rows:
    its last ``rows`` rows are each the differing row (x on one side, x' on the other);
    the audit of a release certified for one person of up to that many rows."""
    rows = check_int("rows", rows, 1)
    if rows >= pair.n:
        raise ParameterError(f"rows must be below n = {pair.n}; got {rows}")
    X, y, Xp, yp = (a.copy() for a in (pair.X, pair.y, pair.X_prime, pair.y_prime))
    X[-rows:], y[-rows:] = X[-1], y[-1]
    Xp[-rows:], yp[-rows:] = Xp[-1], yp[-1]
    name = f"{pair.name} x {rows} rows"
    return NeighbouringPair(name, X, y, Xp, yp, pair.zeta, pair.loss)


def random_pair(
    seed: int,
    n: int = AUDIT_N,
    d: int = AUDIT_D,
    zeta: float = AUDIT_ZETA,
    *,
    loss: str = "logistic",
) -> NeighbouringPair:
    """A random pair from ``seed``: n - 1 shared rows uniform on the zeta-sphere with labels
    +-1 (the first two +1 and -1, the rest fair coins), differing rows two further uniform
    points with fair-coin labels."""
    n, d, zeta = _check_problem(n, d, zeta, loss)
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n + 1, d))
    rows = zeta * G / np.linalg.norm(G, axis=1, keepdims=True)
    labels = np.where(rng.random(n + 1) < 0.5, -1.0, 1.0)
    labels[:2] = (1.0, -1.0)
    return _assemble(
        f"random:{seed}", rows[: n - 1], labels[: n - 1], rows[n - 1], labels[n - 1],
        rows[n], labels[n], zeta, loss,
    )  # fmt: skip


def worst_case_pair(
    plan: Any, *, epsilon: float, rng: Any = None, loss: str = "logistic", **search: Any
) -> NeighbouringPair:
    """The shared rows of :func:`canonical_pair` with the differing rows that
    :func:`objpert.audit.worst_pair` finds for the W&A ``plan`` at ``epsilon``
    (``search``: its search settings). The same rows serve every mechanism (QOP: with
    interpolating targets)."""
    from objpert.audit._worst_pair import worst_pair

    X_shared, y_shared = _shared_rows(plan.n, plan.d, plan.zeta)
    found = worst_pair(X_shared, y_shared, plan, epsilon=epsilon, rng=rng, **search)
    return _assemble(
        "worst", X_shared, y_shared, np.asarray(found.x, dtype=float), float(found.label),
        np.asarray(found.x_prime, dtype=float), float(found.label_prime), plan.zeta, loss,
    )  # fmt: skip


def parse_pair(spec: str) -> tuple[str, int | None]:
    """``"canonical"``, ``"worst"`` or ``"random:SEED"`` (SEED a non-negative integer) ->
    (kind, seed)."""
    kind, sep, rest = str(spec).partition(":")
    if kind == "random" and sep:
        try:
            seed = int(rest)
        except ValueError:
            seed = -1
        if seed >= 0:
            return "random", seed
        raise ParameterError(f"pair 'random:SEED' needs a non-negative integer seed; got {spec!r}")
    if kind in ("canonical", "worst") and not sep:
        return kind, None
    raise ParameterError(f"pair must be canonical, worst or random:SEED; got {spec!r}")


def make_pair(
    spec: str,
    *,
    n: int = AUDIT_N,
    d: int = AUDIT_D,
    zeta: float = AUDIT_ZETA,
    loss: str = "logistic",
    epsilon: float = DEFAULT_EPSILON,
    delta: float = DEFAULT_DELTA,
    rng: Any = None,
) -> NeighbouringPair:
    """The pair named by ``spec`` (see :func:`parse_pair`) for n rows in d dimensions;
    ``worst`` searches with the W&A plan of :func:`audit_plan` at (epsilon, delta), at
    :data:`WORST_EPSILON_FRACTION` epsilon with :data:`WORST_SEARCH` (slow: minutes)."""
    kind, seed = parse_pair(spec)
    if kind == "canonical":
        return canonical_pair(n, d, zeta, loss=loss)
    if kind == "random":
        return random_pair(seed, n, d, zeta, loss=loss)
    plan = audit_plan("watkins_arora", epsilon=epsilon, delta=delta, n=n, d=d, zeta=zeta)
    return worst_case_pair(
        plan, epsilon=WORST_EPSILON_FRACTION * epsilon, rng=rng, loss=loss, **WORST_SEARCH
    )


# ---------------------------------------------------------------- plans and releases


def _check_mechanism(mechanism: str) -> str:
    """The registered name of ``mechanism`` (ParameterError for an unknown name)."""
    return registry.get(mechanism).name


@validated(
    epsilon=check_positive,
    delta=check_open_unit,
    rows=count(1),
    n=count(2),
    d=count(1),
    zeta=check_positive,
)
def audit_plan(
    mechanism: str,
    *,
    epsilon: float,
    delta: float,
    n: int = AUDIT_N,
    d: int = AUDIT_D,
    zeta: float = AUDIT_ZETA,
    rows: int = 1,
) -> Any:
    """The plan of ``mechanism`` for the audit problem at target (epsilon, delta): the
    registered planner on the mechanism's audit loss with :data:`PLAN_OPTIONS` (W&A: the
    tight calibration at the public ridge :data:`WA_MU`; LOP-Clip: clip 0.5; QOP: the
    squared loss, per-sample smoothness zeta^2, m = 2d).

    ``rows`` = k > 1: the target is for one person of up to k rows, as a fit with
    ``max_rows_per_unit=k`` plans it: W&A by Theorem C.13 for k rows (``rows_per_unit``),
    every other mechanism for one row at the classical target (epsilon / k, delta /
    (k e^{(k-1) epsilon / k})), certified for the person by group privacy of its events
    (:func:`certified_budget`). QOP has no person-level certificate (ParameterError)."""
    mech = registry.get(mechanism)
    options = dict(PLAN_OPTIONS.get(mech.name, {}))
    if rows > 1 and mech.name == "watkins_arora":
        options["rows_per_unit"] = rows
    elif rows > 1:
        if mech.name == "qop":
            raise ParameterError("QOP is never certified: it has no person-level certificate")
        epsilon, delta = crude_row_target(epsilon, delta, rows)
    return mech.plan(
        loss=mech.audit_loss, n=n, d=d, zeta=zeta, epsilon=epsilon, delta=delta, **options
    )


def certified_budget(plan: Any, rows: int = 1) -> tuple[float, float]:
    """The (epsilon, delta) a plan certifies (QOP: the plan's total) for datasets that
    differ in up to ``rows`` rows: its certificate's when it is for that many rows, else,
    from a one-row certificate, group privacy of its privacy-loss events at ``rows`` times
    its epsilon (:func:`objpert.accounting.group_certificate`)."""
    rows = check_int("rows", rows, 1)
    cert = plan.certificate
    if rows != cert.rows_per_unit:
        if cert.rows_per_unit != 1:
            raise ParameterError(
                f"a plan certified for {cert.rows_per_unit} rows cannot be audited at {rows}"
            )
        cert = group_certificate(cert, rows)
        if not cert.certified:
            raise ParameterError("an uncertified release has no person-level certificate")
    return float(cert.epsilon), float(cert.delta)


def release_outputs(
    mechanism: str, X: Any, y: Any, plan: Any, draws: int, rng: np.random.Generator
) -> np.ndarray:
    """``draws`` independent releases of ``mechanism`` under ``plan`` on (X, y), as an array
    (draws, d), through the mechanism's own batched release (same checks, same noise:
    the registry's ``release_batch``; QOP with theta_ref = 0, no l1, no box,
    :data:`QOP_ITERATIONS` deterministic Davis-Yin steps). The seeded generator is the
    audit's: its testing-seed warning is silenced here."""
    mech = registry.get(mechanism)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        batch = mech.release_batch(X, y, plan, draws, rng, **RELEASE_OPTIONS.get(mech.name, {}))
    return batch.weights


# ---------------------------------------------------------------- the attack


@dataclass(frozen=True)
class AttackResult:
    """An attack's lower bound on epsilon at the certified delta, with its counts.

    ``draws`` releases were made on each of S and S'; ``calibration`` of each chose the
    ``statistic`` and ``threshold``, the other ``positives`` (S) and ``negatives`` (S')
    gave the counts. ``flagged``: epsilon_lower > epsilon_certified (a violation of the
    certificate, with false-alarm probability <= 1 - confidence for a correct mechanism).
    """

    mechanism: str
    pair: str
    epsilon_lower: float
    epsilon_certified: float
    delta: float
    draws: int
    calibration: int
    statistic: str
    threshold: float
    false_positives: int
    negatives: int
    false_negatives: int
    positives: int
    fpr_upper: float
    fnr_upper: float
    confidence: float

    @property
    def flagged(self) -> bool:
        return self.epsilon_lower > self.epsilon_certified

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "flagged": self.flagged}


def attack(
    outputs: Any,
    outputs_prime: Any,
    *,
    epsilon_certified: float,
    delta: float,
    confidence: float = 0.95,
    statistics: tuple[str, ...] = STATISTICS,
    mechanism: str = "custom",
    pair: str = "custom",
) -> AttackResult:
    """The attack of the module docstring on releases ``outputs`` (from S) and
    ``outputs_prime`` (from S'), arrays (draws, d) of i.i.d. releases: the first half of
    each side calibrates (statistic and threshold), the second half is held out."""
    P = np.atleast_2d(np.asarray(outputs, dtype=float))
    Q = np.atleast_2d(np.asarray(outputs_prime, dtype=float))
    if P.ndim != 2 or P.shape != Q.shape:
        raise ParameterError(
            f"outputs must be two arrays (draws, d) of one shape; got {P.shape}, {Q.shape}"
        )
    if not (np.all(np.isfinite(P)) and np.all(np.isfinite(Q))):
        raise ParameterError("outputs must be finite")
    draws = P.shape[0]
    if draws < 4:
        raise ParameterError(f"the attack needs at least 4 draws per dataset; got {draws}")
    unknown = [s for s in statistics if s not in STATISTICS]
    if unknown or not statistics:
        raise ParameterError(f"statistics must be among {STATISTICS}; got {statistics!r}")
    half = draws // 2
    cal_p, cal_q, out_p, out_q = P[:half], Q[:half], P[half:], Q[half:]
    best = None
    for name in statistics:
        score = fit_statistic(name, cal_p, cal_q)
        t, eps = threshold(score(cal_p), score(cal_q), delta, confidence)
        if best is None or eps > best[0]:
            best = (eps, name, score, t)
    _, name, score, t = best
    fp = int(np.count_nonzero(score(out_q) > t))
    fn = int(np.count_nonzero(score(out_p) <= t))
    eps, fpr_hi, fnr_hi = bound(fp, fn, out_q.shape[0], out_p.shape[0], delta, confidence)
    return AttackResult(
        mechanism=mechanism,
        pair=pair,
        epsilon_lower=float(eps),
        epsilon_certified=float(epsilon_certified),
        delta=delta,
        draws=draws,
        calibration=half,
        statistic=name,
        threshold=t,
        false_positives=fp,
        negatives=int(out_q.shape[0]),
        false_negatives=fn,
        positives=int(out_p.shape[0]),
        fpr_upper=float(fpr_hi),
        fnr_upper=float(fnr_hi),
        confidence=confidence,
    )


@validated(draws=count(4), rows=count(1), confidence=check_open_unit)
def audit_sampler(
    sample: Callable[..., np.ndarray],
    pair: NeighbouringPair,
    plan: Any,
    *,
    draws: int,
    rng: Any = None,
    name: str = "custom",
    confidence: float = 0.95,
    rows: int = 1,
) -> AttackResult:
    """Attack any sampler ``sample(X, y, plan, draws, rng) -> (draws, d)`` (a mechanism, a
    planted bug of :mod:`objpert.audit._planted`) against the (epsilon, delta) that ``plan``
    certifies for datasets that differ in up to ``rows`` rows (:func:`certified_budget`),
    on ``pair``."""
    generator = np.random.default_rng(rng)
    epsilon, delta = certified_budget(plan, rows)
    out = sample(pair.X, pair.y, plan, draws, generator)
    out_prime = sample(pair.X_prime, pair.y_prime, plan, draws, generator)
    return attack(
        out,
        out_prime,
        epsilon_certified=epsilon,
        delta=delta,
        confidence=confidence,
        mechanism=name,
        pair=pair.name,
    )


@validated(confidence=check_open_unit)
def audit_mechanism(
    mechanism: str,
    pair: NeighbouringPair | str = "canonical",
    *,
    epsilon: float = DEFAULT_EPSILON,
    delta: float = DEFAULT_DELTA,
    draws: int = 20000,
    rng: Any = None,
    confidence: float = 0.95,
    plan: Any = None,
    rows: int = 1,
) -> AttackResult:
    """Build ``mechanism``'s plan for the audit problem at (epsilon, delta) (or use
    ``plan``), release ``draws`` times on each side of ``pair`` (a
    :class:`NeighbouringPair` or a spec for :func:`make_pair`) and attack: the lower bound
    on epsilon at the certified delta against the certified epsilon.

    ``rows`` = k > 1 audits the person-level guarantee: the pair's differing row becomes
    one person's k rows (:func:`unit_pair`), the plan is for one person of up to k rows
    (:func:`audit_plan`) and the attack is measured against the person-level certificate
    (:func:`certified_budget`)."""
    mechanism = _check_mechanism(mechanism)
    rows = check_int("rows", rows, 1)  # a count the unit pair needs before any plan
    generator = np.random.default_rng(rng)
    loss = registry.get(mechanism).audit_loss
    if isinstance(pair, str):
        pair = make_pair(pair, loss=loss, epsilon=epsilon, delta=delta, rng=generator)
    if pair.loss != loss:
        raise ParameterError(f"mechanism {mechanism!r} needs a {loss} pair; got {pair.loss}")
    if rows > 1:
        pair = unit_pair(pair, rows)
    if plan is None:
        plan = audit_plan(mechanism, epsilon=epsilon, delta=delta, n=pair.n, d=pair.d,
                          zeta=pair.zeta, rows=rows)  # fmt: skip

    def sample(X: Any, y: Any, plan: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
        return release_outputs(mechanism, X, y, plan, draws, rng)

    return audit_sampler(
        sample, pair, plan, draws=draws, rng=generator, name=mechanism, confidence=confidence,
        rows=rows,
    )  # fmt: skip
