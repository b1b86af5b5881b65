"""K one-vs-rest releases composed by the tight dominating pair of their profile against
the earlier construction on epsilon >= 0 alone (docs/accounting.md).

Usage: python benchmarks/tight_composition.py [--part sigma|accuracy|tables|all]
       [--mu MU] [--epsilons 0.1,0.3,1,3] [--releases R]
       [--json benchmarks/tight_composition.json]

Digits (1797 rows, 64 pixels), rows scaled to unit norm (data_norm = 1, public), 80/20
stratified split (1437 training rows, d = 65 with the intercept), delta = 1e-6, the ten
classes declared, ``multi_class="ovr"`` (ten releases calibrated jointly by PLD).

- ``sigma``: at a fixed ridge ``mu``, the per-class sigma and the epsilon_i handed to
  the calibration, with the PLDs built as now (the profile's tight dominating pair,
  negative privacy losses kept) and as before (connect-the-dots on epsilon >= 0 only, all
  negative losses at 0; reproduced here by replacing ``objpert.accounting._pld._profile_pld``
  for the run), at each epsilon: the fitted model's plan (the joint search stops within
  3% in epsilon_i, or at 60% of the target delta) and the boundary plan (the largest
  epsilon_i that composes to the target, bisected to 0.2%), the composition's own effect;
  and for Gaussian profiles (exact composition known) the largest mu per release that
  ten releases may have at (epsilon, DELTA) with each construction.
- ``accuracy``: held-out accuracy at epsilon 1 and 3 over R releases (testing seeds
  0..R-1; mean and standard error), for public settings a user could choose: the ridge
  chosen by the calibration (``mu="auto"``) with comparator norms 1, 3 (the default)
  and 10, and fixed ridges mu / 3, mu, 3 mu.
- ``tables``: held-out accuracy with each construction on the four multiclass tables of
  benchmarks/multinomial.py (wine, digits, leaf20, diamonds; its loader and
  preprocessing), ``multi_class="ovr", composition="pld"`` at the settings a user gets by
  default (mu="auto", comparator_norm 3), epsilon 0.1, 0.3, 1, 3, R releases each
  (testing seeds 0..R-1; mean and standard error), with each construction's per-class
  plan (sigma, mu, epsilon_i) and composed delta.

Existing JSON is kept and the part run replaces its own rows, so the parts can run apart.
Calibrations are cached within one process only; each part recalibrates.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from objpert.accounting import _pld as pldlib
from objpert.accounting import _profiles as profiles
from objpert.apps._bench.common import timed_fit
from objpert.certify import _multiclass as multiclass
from objpert.estimators import PrivateLogisticRegression
from objpert.estimators import _planning as planning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from multinomial import load_tables  # the multiclass tables: one loader

DELTA = 1e-6
K = 10
DEFAULT_MU = 0.1  # a fixed ridge (the calibration's own choice at epsilon 1 is ~0.14)


def _data():
    X, y = load_digits(return_X_y=True)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)  # unit-norm rows: data_norm = 1
    return train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)


def _nonnegative_profile_pld(epsilons, deltas, discretization):
    """The earlier construction: connect-the-dots on epsilon_i >= 0 alone, after the
    profile's convex minorant in e^epsilon; every negative privacy loss sits at 0."""
    dist, _, _ = pldlib._dp()
    env = profiles.convex_envelope(epsilons, deltas)
    return dist.PrivacyLossDistribution(pldlib._connect_dots(epsilons, env, discretization))


def _clear_caches() -> None:
    pldlib._single_pld.cache_clear()
    planning.calibration_for.cache_clear()  # the plans themselves stay cached


@contextlib.contextmanager
def _construction(name: str):
    if name == "tight":
        _clear_caches()
        yield
        return
    saved = pldlib._profile_pld
    pldlib._profile_pld = _nonnegative_profile_pld
    _clear_caches()
    try:
        yield
    finally:
        pldlib._profile_pld = saved
        _clear_caches()


def _fit(data, epsilon, seed, classes=tuple(range(K)), **kw):
    Xtr, Xte, ytr, yte = data
    est = PrivateLogisticRegression(
        epsilon=epsilon, delta=DELTA, data_norm=1.0, classes=list(classes),
        multi_class="ovr", composition="pld", random_state=seed, **kw,
    )  # fmt: skip
    return timed_fit(est, Xtr, ytr, Xte, yte)


def _boundary(plan_at, epsilon: float, rtol: float = 2e-3) -> tuple[float, object, float]:
    """The largest epsilon_i (log-bisection to ``rtol``) whose plan at (epsilon_i,
    delta / K) composes K-fold to delta <= DELTA at ``epsilon`` by PLD: the noise the
    composition itself allows, free of the search's stopping rule."""
    delta_i = multiclass.release_delta(DELTA, K)

    def composed(eps_i):
        plan = plan_at(eps_i, delta_i)
        return plan, multiclass.composed_delta(plan, K, epsilon, pldlib.DEFAULT_DISCRETIZATION)

    lo, hi = epsilon / K, epsilon
    plan_lo, d_lo = composed(lo)
    while d_lo > DELTA:  # the basic share may not pass on the grid: step down
        hi, lo = lo, lo * 0.9
        plan_lo, d_lo = composed(lo)
    while hi / lo > 1.0 + rtol:
        mid = math.sqrt(lo * hi)
        plan, got = composed(mid)
        if got <= DELTA:
            lo, plan_lo, d_lo = mid, plan, got
        else:
            hi = mid
    return lo, plan_lo, d_lo


def _gaussian_profile(mu: float, eps: np.ndarray) -> np.ndarray:
    """delta(epsilon) of a Gaussian mechanism of sensitivity / sigma = mu (Balle & Wang
    2018, Theorem 8)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = ndtr(-eps / mu + mu / 2) - np.exp(eps) * ndtr(-eps / mu - mu / 2)
    return np.clip(np.nan_to_num(out, nan=0.0), 0.0, 1.0)


def gaussian_rows(epsilons) -> list[dict]:
    """For Gaussian profiles (whose ten-fold composition is exactly Gaussian): the largest
    mu per release whose ten-fold PLD composition has delta <= DELTA at epsilon, with each
    construction (and the exact value, mu_total / sqrt(K))."""
    step = pldlib.DEFAULT_DISCRETIZATION
    rows = []
    for eps in epsilons:
        row: dict = {"epsilon": eps, "delta": DELTA, "k": K}
        for name, build in (("tight", pldlib._profile_pld),
                            ("nonnegative", _nonnegative_profile_pld)):  # fmt: skip

            def excess(log_mu, build=build, eps=eps):
                mu = math.exp(log_mu)
                grid = np.arange(round((10.0 * mu + 10.0) / step) + 1) * step
                single = build(grid, _gaussian_profile(mu, grid), step)
                return pldlib.delta_for_epsilon(single.self_compose(K), eps) - DELTA

            row[name] = math.exp(brentq(excess, math.log(1e-3), math.log(5.0), xtol=1e-5))

        def exact(log_mu, eps=eps):
            return float(_gaussian_profile(math.exp(log_mu), np.array([eps]))[0]) - DELTA

        row["exact"] = math.exp(brentq(exact, math.log(1e-3), math.log(50.0))) / math.sqrt(K)
        row["mu_ratio"] = row["tight"] / row["nonnegative"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def sigma_rows(data, epsilons, mu) -> list[dict]:
    rows = []
    for eps in epsilons:
        row: dict = {"epsilon": eps, "delta": DELTA, "k": K, "mu": mu}
        for name in ("tight", "nonnegative"):
            with _construction(name):
                est, acc, secs = _fit(data, eps, 0, mu=mu)
                plan, cert = est.plan_[0], est.certificate_

                def plan_at(eps_i, delta_i, plan=plan, est=est):
                    return planning.plan_for(
                        plan.loss, None, "tight", plan.n, plan.d, plan.zeta, eps_i,
                        delta_i, plan.comparator_norm, est.max_iter, mu,
                    )  # fmt: skip

                eps_b, plan_b, d_b = _boundary(plan_at, eps)
            row[name] = {
                "sigma": plan.sigma, "epsilon_i": plan.epsilon, "mu": plan.mu,
                "iterations": plan.iterations, "composed_delta": cert.delta,
                "accuracy_seed0": acc, "fit_seconds_with_calibration": secs,
                "boundary_sigma": plan_b.sigma, "boundary_epsilon_i": eps_b,
                "boundary_composed_delta": d_b,
            }  # fmt: skip
        row["sigma_ratio"] = row["tight"]["sigma"] / row["nonnegative"]["sigma"]
        row["boundary_sigma_ratio"] = (
            row["tight"]["boundary_sigma"] / row["nonnegative"]["boundary_sigma"]
        )
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def accuracy_rows(data, epsilons, releases, mu) -> list[dict]:
    settings = [
        {"mu": "auto", "comparator_norm": 3.0},
        {"mu": "auto", "comparator_norm": 1.0},
        {"mu": "auto", "comparator_norm": 10.0},
        *({"mu": m, "comparator_norm": 3.0} for m in (mu / 3, mu, 3 * mu)),
    ]
    rows = []
    for eps in epsilons:
        for s in settings:
            scores, plan = [], None
            for seed in range(releases):
                est, acc, _ = _fit(data, eps, seed, **s)
                scores.append(acc)
                plan = est.plan_[0]
            se = statistics.stdev(scores) / math.sqrt(len(scores))
            row = {
                "epsilon": eps, "delta": DELTA, "k": K, **s, "releases": releases,
                "accuracy_mean": statistics.fmean(scores), "accuracy_se": se,
                "accuracy": scores, "sigma": plan.sigma, "plan_mu": plan.mu,
                "epsilon_i": plan.epsilon, "iterations": plan.iterations,
            }  # fmt: skip
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "accuracy"}), flush=True)
    return rows


def table_rows(epsilons, releases) -> list[dict]:
    """Per multiclass table, epsilon and construction: R one-vs-rest fits at the default
    settings (mu="auto"), their held-out accuracy and the per-class plan."""
    rows = []
    for name, (Xtr, Xte, ytr, yte, classes) in load_tables().items():
        for eps in epsilons:
            for method in ("tight", "nonnegative"):
                with _construction(method):
                    scores = []
                    for seed in range(releases):
                        est, acc, _ = _fit((Xtr, Xte, ytr, yte), eps, seed, classes)
                        scores.append(acc)
                plan = est.plan_[0]
                row = {
                    "table": name, "k": len(classes), "n_train": len(ytr), "d": Xtr.shape[1],
                    "epsilon": eps, "delta": DELTA, "method": method, "releases": releases,
                    "accuracy_mean": statistics.fmean(scores),
                    "accuracy_se": statistics.stdev(scores) / math.sqrt(len(scores)),
                    "accuracy": scores, "sigma": plan.sigma, "mu": plan.mu,
                    "epsilon_i": plan.epsilon, "iterations": plan.iterations,
                    "composed_delta": est.certificate_.delta,
                }  # fmt: skip
                if method == "nonnegative":  # the same seeds: paired differences
                    diff = [a - b for a, b in zip(rows[-1]["accuracy"], scores, strict=True)]
                    rows[-1]["difference_mean"] = statistics.fmean(diff)
                    rows[-1]["difference_se"] = statistics.stdev(diff) / math.sqrt(len(diff))
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "accuracy"}), flush=True)
    return rows


def _setting(value) -> str:
    return value if isinstance(value, str) else f"{value:.3g}"


def markdown(out: dict) -> str:
    lines = []
    if out.get("sigma"):
        lines += [
            "| epsilon | sigma, tight pair | sigma, epsilon >= 0 only | ratio | "
            "epsilon_i (tight / before) | fitted sigma, tight / before (ratio) | mu |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in out["sigma"]:
            t, b = r["tight"], r["nonnegative"]
            lines.append(
                f"| {r['epsilon']:g} | {t['boundary_sigma']:.4g} | {b['boundary_sigma']:.4g} | "
                f"{r['boundary_sigma_ratio']:.3f} | {t['boundary_epsilon_i']:.4g} / "
                f"{b['boundary_epsilon_i']:.4g} | {t['sigma']:.4g} / {b['sigma']:.4g} "
                f"({r['sigma_ratio']:.3f}) | {r['mu']:g} |"
            )
    if out.get("gaussian"):
        lines += [
            "",
            "| epsilon | Gaussian mu per release: tight pair | epsilon >= 0 only | exact | ratio |",
            "| --- | --- | --- | --- | --- |",
        ]
        for r in out["gaussian"]:
            lines.append(
                f"| {r['epsilon']:g} | {r['tight']:.4g} | {r['nonnegative']:.4g} | "
                f"{r['exact']:.4g} | {r['mu_ratio']:.3f} |"
            )
    if out.get("accuracy"):
        lines += [
            "",
            "| epsilon | mu | comparator_norm | sigma | plan mu | test accuracy (mean +- se) |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in out["accuracy"]:
            lines.append(
                f"| {r['epsilon']:g} | {_setting(r['mu'])} | {r['comparator_norm']:g} | "
                f"{r['sigma']:.4g} | {r['plan_mu']:.3g} | {r['accuracy_mean']:.3f} +- "
                f"{r['accuracy_se']:.3f} ({r['releases']} releases) |"
            )
    if out.get("tables"):
        lines += [
            "",
            "| table | K | epsilon | tight pair: accuracy (sigma) | epsilon >= 0 alone: "
            "accuracy (sigma) | tight - before (paired) |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        by = {(r["table"], r["epsilon"], r["method"]): r for r in out["tables"]}
        for r in out["tables"]:
            if r["method"] == "tight":
                o = by[r["table"], r["epsilon"], "nonnegative"]
                diff = round(r["difference_mean"], 3) + 0.0  # no "-0.000"
                lines.append(
                    f"| {r['table']} | {r['k']} | {r['epsilon']:g} | {r['accuracy_mean']:.3f} "
                    f"+- {r['accuracy_se']:.3f} ({r['sigma']:.4g}) | {o['accuracy_mean']:.3f} "
                    f"+- {o['accuracy_se']:.3f} ({o['sigma']:.4g}) | {diff:+.3f} "
                    f"+- {r['difference_se']:.3f} |"
                )
    if "non_private" in out:
        lines.append(f"\nnon-private LogisticRegression on digits: {out['non_private']:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("sigma", "accuracy", "tables", "all"), default="all")
    ap.add_argument("--mu", type=float, default=DEFAULT_MU)
    ap.add_argument("--epsilons", default=None, help="comma-separated")
    ap.add_argument("--releases", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    data = _data()
    out: dict = {}
    if args.json and Path(args.json).exists():
        out = json.loads(Path(args.json).read_text(encoding="utf-8"))
    out["n_train"], out["d_with_intercept"] = len(data[2]), data[0].shape[1] + 1
    base = LogisticRegression(max_iter=5000).fit(data[0], data[2])
    out["non_private"] = float(base.score(data[1], data[3]))

    def pick(default):
        return [float(e) for e in args.epsilons.split(",")] if args.epsilons else default

    if args.part in ("sigma", "all"):
        out["gaussian"] = gaussian_rows(pick([0.1, 0.3, 1.0, 3.0]))
        out["sigma"] = sigma_rows(data, pick([0.1, 0.3, 1.0, 3.0]), args.mu)
    if args.part in ("accuracy", "all"):
        out["accuracy"] = accuracy_rows(data, pick([1.0, 3.0]), args.releases, args.mu)
    if args.part in ("tables", "all"):
        out["tables"] = table_rows(pick([0.1, 0.3, 1.0, 3.0]), args.releases)
    print(markdown(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
