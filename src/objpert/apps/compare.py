"""``objpert compare``: the private training methods side by side on real data.

Every method gets the same public preprocessing, the same public train/test split and the
same target (epsilon, delta); each is tuned from public information only (its own default
calibration; nothing is chosen by looking at test data). Each row reports the
(epsilon, delta) the method actually certifies: diffprivlib's is pure epsilon-DP.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from objpert.apps.datasets import Dataset, load
from objpert.apps.demo import split
from objpert.data import PreparedData, prepare
from objpert.engines.glm import GLMObjective
from objpert.errors import ParameterError, check_int, check_open_unit, check_positive
from objpert.mechanisms import registry

__all__ = [
    "BASELINES",
    "DEFAULT_METHODS",
    "FITTERS",
    "LOP_CLIP_SHARE",
    "NOT_APPLICABLE",
    "CompareRow",
    "Fit",
    "FitFn",
    "canonical_method",
    "compare_dataset",
    "markdown",
    "mechanism_plan",
    "plot",
    "register",
    "run",
]

#: Methods that are not registered mechanisms: the non-private fit and diffprivlib.
BASELINES = ("nonprivate", "diffprivlib")
#: Every registered mechanism, then the baselines.
DEFAULT_METHODS = (*registry.names(), *BASELINES)


@dataclass(frozen=True)
class Fit:
    weights: np.ndarray  # on the prepared features (intercept column last)
    epsilon: float  # certified
    delta: float  # certified
    seconds: float


@dataclass(frozen=True)
class CompareRow:
    dataset: str
    method: str
    epsilon: float  # target
    delta: float  # target
    accuracy_mean: float
    accuracy_std: float
    objective_mean: float  # unregularised mean training loss
    objective_std: float
    seconds: float
    certified_epsilon: float
    certified_delta: float
    runs: int
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


FitFn = Callable[[PreparedData, float, float, int], Fit]


def _cached_plan(n, d, zeta, eps, delta):
    """The estimators' default plan (tight, empirical objective, default W and budget)."""
    from objpert.estimators import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITERATIONS, plan_for

    return plan_for(
        "logistic",
        None,
        "tight",
        n,
        d,
        zeta,
        eps,
        delta,
        DEFAULT_COMPARATOR_NORM,
        DEFAULT_MAX_ITERATIONS,
        None,
    )


def _fit_nonprivate(P: PreparedData, eps: float, delta: float, seed: int) -> Fit:
    from sklearn.linear_model import LogisticRegression

    t0 = time.perf_counter()
    m = LogisticRegression(max_iter=10_000, fit_intercept=False).fit(P.X, P.y)
    return Fit(m.coef_.ravel(), float("inf"), 1.0, time.perf_counter() - t0)


LOP_CLIP_SHARE = 0.5  # LOP-Clip's public clip level: half the largest per-sample gradient


@functools.lru_cache(maxsize=256)
def mechanism_plan(name: str, n: int, d: int, zeta: float, eps: float, delta: float):
    """A registered mechanism's plan for the logistic loss by a public rule (cached):
    Watkins & Arora the estimators' default plan; every peer the same public ridge mu as
    that plan (raised to the peer's own privacy floor where it has one), clip level
    LOP_CLIP_SHARE * L1 zeta for LOP-Clip, the planners' defaults otherwise. No rule looks
    at the data. The comparison and the mechanism benchmark both plan with it."""
    wa = _cached_plan(n, d, zeta, eps, delta)
    if name == "watkins_arora":
        return wa
    options: dict = {"mu": wa.mu}
    if name == "lop_clip":
        options["clip"] = LOP_CLIP_SHARE * zeta
    return registry.get(name).plan(
        loss="logistic", n=n, d=d, zeta=zeta, epsilon=eps, delta=delta, **options
    )


def _mechanism_fitter(name: str) -> FitFn:
    """A registered mechanism on the plan of :func:`mechanism_plan`."""
    mech = registry.get(name)

    def fit(P: PreparedData, eps: float, delta: float, seed: int) -> Fit:
        plan = mechanism_plan(name, P.n, P.d, P.zeta, eps, delta)
        release = mech.release(P.X, P.y, plan, np.random.default_rng(seed))
        cert = release.certificate
        return Fit(release.weights, cert.epsilon, cert.delta, release.seconds)

    return fit


FITTERS: dict[str, FitFn] = {
    **{name: _mechanism_fitter(name) for name in registry.names()
       if "logistic" in registry.get(name).losses},
    "nonprivate": _fit_nonprivate,
}  # fmt: skip
NOT_APPLICABLE = {
    "qop": "QOP needs a public reference point near a common minimiser of the per-sample "
    "losses (interpolation); logistic classification on survey data has none",
}


def canonical_method(name: str) -> str:
    """A method's registered name (a former mechanism name warns), or a baseline's."""
    return name if name in BASELINES or name in FITTERS else registry.get(name).name


def register(name: str, fn: FitFn) -> None:
    FITTERS[name] = fn


def _evaluate(P: PreparedData, Pte: PreparedData, w: np.ndarray) -> tuple[float, float]:
    acc = float(np.mean(np.where(Pte.X @ w > 0, 1.0, -1.0) == Pte.y))
    obj = float(GLMObjective(P.X, P.y, "logistic", 0.0).value(w))
    return acc, obj


def compare_dataset(
    ds: Dataset, epsilons, delta: float, seeds: int, methods, progress=None, env_dir=None
) -> tuple[list[CompareRow], dict]:
    Xtr, Xte, ytr, yte = split(ds)
    P = prepare(Xtr, ytr, data_norm=ds.data_norm)
    Pte = prepare(Xte, yte, data_norm=ds.data_norm)
    rows: list[CompareRow] = []
    meta: dict = {}
    for method in map(canonical_method, methods):
        if method in NOT_APPLICABLE:
            rows += [
                CompareRow(
                    ds.name,
                    method,
                    e,
                    delta,
                    *[np.nan] * 5,
                    np.nan,
                    np.nan,
                    0,
                    NOT_APPLICABLE[method],
                )
                for e in epsilons
            ]
            continue
        if method == "diffprivlib":
            r, meta["diffprivlib"] = _diffprivlib_rows(
                ds, P, Pte, Xtr, ytr, Xte, yte, epsilons, delta, seeds, env_dir
            )
            rows += r
            if progress:
                progress(len(epsilons) * seeds)
            continue
        fit = FITTERS[method]
        for eps in epsilons:
            accs, objs, secs, cert = [], [], [], (np.nan, np.nan)
            runs = 1 if method == "nonprivate" else seeds
            for s in range(runs):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # seeded noise: a measurement, not a release
                    f = fit(P, eps, delta, 1000 * s + 17)
                a, o = _evaluate(P, Pte, f.weights)
                accs.append(a)
                objs.append(o)
                secs.append(f.seconds)
                cert = (f.epsilon, f.delta)
            rows.append(
                CompareRow(
                    ds.name,
                    method,
                    eps,
                    delta,
                    float(np.mean(accs)),
                    float(np.std(accs)),
                    float(np.mean(objs)),
                    float(np.std(objs)),
                    float(np.mean(secs)),
                    *cert,
                    runs,
                )
            )
            if progress:
                progress(seeds)
    return rows, meta


def _diffprivlib_rows(ds, P, Pte, Xtr, ytr, Xte, yte, epsilons, delta, seeds, env_dir):
    from objpert.apps.external import run_diffprivlib

    out = run_diffprivlib(
        Xtr, ytr, Xte, yte, epsilons=epsilons, seeds=seeds, data_norm=ds.data_norm, env_dir=env_dir
    )
    rows = []
    for eps in epsilons:
        rs = [r for r in out["rows"] if r["epsilon"] == eps]
        accs = [r["accuracy"] for r in rs]
        # its model on the raw features: w . x + b; objective on the same training rows
        objs = []
        for r in rs:
            w = np.asarray(r["coef"])
            m = Xtr @ w + r["intercept"]
            objs.append(float(np.mean(np.logaddexp(0.0, -np.where(ytr == 1, 1.0, -1.0) * m))))
        rows.append(
            CompareRow(
                ds.name,
                "diffprivlib",
                eps,
                delta,
                float(np.mean(accs)),
                float(np.std(accs)),
                float(np.mean(objs)),
                float(np.std(objs)),
                float(np.mean([r["seconds"] for r in rs])),
                eps,
                0.0,
                len(rs),
                "pure epsilon-DP",
            )
        )
    return rows, {"versions": out["versions"], "privacy": out["privacy"]}


def run(names, epsilons, delta, seeds, methods=DEFAULT_METHODS, progress=None, env_dir=None):
    """The comparison of ``methods`` on each dataset of ``names`` at each target epsilon,
    ``seeds`` releases each. An empty list of datasets, epsilons or methods, a seed count
    below 1 or a target out of range is a ParameterError (never an empty or NaN table)."""
    names, epsilons, methods = list(names), list(epsilons), list(methods)
    for what, items in (("datasets", names), ("epsilons", epsilons), ("methods", methods)):
        if not items:
            raise ParameterError(f"the comparison needs at least one of its {what}; got none")
    epsilons = [check_positive(f"epsilons[{i}]", e) for i, e in enumerate(epsilons)]
    delta = check_open_unit("delta", delta)
    seeds = check_int("seeds", seeds, 1)
    rows, meta = [], {}
    for name in names:
        r, m = compare_dataset(load(name), epsilons, delta, seeds, methods, progress, env_dir)
        rows += r
        meta.update(m)
    return rows, meta


def markdown(rows: list[CompareRow]) -> str:
    head = (
        "| dataset | method | epsilon | test accuracy | train objective | s/fit | "
        "certified (epsilon, delta) | note |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        if r.runs == 0:
            lines.append(f"| {r.dataset} | {r.method} | {r.epsilon:g} | n/a | n/a | | | {r.note} |")
            continue
        cert = (
            "non-private"
            if not np.isfinite(r.certified_epsilon)
            else f"({r.certified_epsilon:.3g}, {r.certified_delta:.2g})"
        )
        lines.append(
            f"| {r.dataset} | {r.method} | {r.epsilon:g} | {r.accuracy_mean:.4f} +- "
            f"{r.accuracy_std:.4f} | {r.objective_mean:.4f} +- {r.objective_std:.4f} | "
            f"{r.seconds:.3f} | {cert} | {r.note} |"
        )
    return "\n".join(lines)


def plot(rows: list[CompareRow], path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r.dataset for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for method in dict.fromkeys(r.method for r in rows if r.dataset == name):
            rs = [r for r in rows if r.dataset == name and r.method == method and r.runs]
            if not rs:
                continue
            if method == "nonprivate":
                ax.axhline(rs[0].accuracy_mean, color="k", ls="--", label="non-private")
                continue
            ax.errorbar(
                [r.epsilon for r in rs],
                [r.accuracy_mean for r in rs],
                yerr=[r.accuracy_std for r in rs],
                marker="o",
                capsize=3,
                label=method,
            )
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("test accuracy")
        ax.set_title(name)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
