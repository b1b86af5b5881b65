"""One-vs-rest on digits at epsilon = 1: the PLD composition of the K releases against the
basic/advanced split of the budget (docs/accounting.md has the figures measured).

Usage: python benchmarks/multiclass_composition.py [--rounds R] [--epsilon E] [--json out.json]

For K = 3 (digits 0-2) and K = 10 (all digits), 70/30 stratified split, pixels / 16 with
rows scaled to norm <= 1 (data_norm = 1, a public bound), delta = 1e-6, declared classes,
one-vs-rest (``multi_class="ovr"``: K releases):
sigma per release, the per-release epsilon handed to the calibration, the certificate,
the test accuracy (median, min, max over R interleaved rounds in one process, testing
seeds) and the fit time (BLAS on one thread with threadpoolctl around the timed work; the
first fit of each setting includes the cached calibration). The last round runs again
under a competing CPU-bound process started here, to show the fit time under load.
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from objpert.apps._bench.common import timed_fit
from objpert.apps._bench.threads import competing_load
from objpert.estimators import PrivateLogisticRegression

DELTA = 1e-6


def _data(k: int):
    X, y = load_digits(return_X_y=True)
    keep = y < k
    X, y = X[keep] / 16.0, y[keep]
    X = X / np.sqrt(X.shape[1])  # pixels in [0, 1]: rows of norm <= 1
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


def _fit(k, comp, epsilon, seed, data):
    Xtr, Xte, ytr, yte = data
    est = PrivateLogisticRegression(
        epsilon=epsilon, delta=DELTA, data_norm=1.0, classes=list(range(k)),
        multi_class="ovr", composition=comp, random_state=seed,
    )  # fmt: skip
    return timed_fit(est, Xtr, ytr, Xte, yte)


def run(rounds: int, epsilon: float) -> list[dict]:
    rows = []
    for k in (3, 10):
        data = _data(k)
        base = LogisticRegression(max_iter=2000).fit(data[0], data[2]).score(data[1], data[3])
        acc: dict[str, list[float]] = {"pld": [], "split": []}
        secs: dict[str, list[float]] = {"pld": [], "split": []}
        first: dict[str, float] = {}
        last: dict[str, object] = {}
        for r in range(rounds):  # interleaved: pld, split, pld, split, ...
            for comp in ("pld", "split"):
                est, a, s = _fit(k, comp, epsilon, 1000 * k + r, data)
                acc[comp].append(a)
                if r == 0:
                    first[comp] = s  # includes the calibration (cached afterwards)
                else:
                    secs[comp].append(s)
                last[comp] = est
        with competing_load(1):  # one CPU-bound process started here
            loaded = {c: _fit(k, c, epsilon, 7, data)[2] for c in ("pld", "split")}
        for comp in ("pld", "split"):
            est = last[comp]
            cert = est.certificate_
            rows.append({
                "k": k, "composition": cert.method, "epsilon": epsilon, "delta": DELTA,
                "sigma": est.plan_[0].sigma, "epsilon_i": est.plan_[0].epsilon,
                "mu": est.plan_[0].mu, "iterations": est.plan_[0].iterations,
                "certificate": [cert.epsilon, cert.delta],
                "accuracy": [statistics.median(acc[comp]), min(acc[comp]), max(acc[comp])],
                "first_fit_seconds": first[comp],
                "fit_seconds": [statistics.median(secs[comp] or [first[comp]]),
                                min(secs[comp] or [first[comp]]),
                                max(secs[comp] or [first[comp]])],
                "fit_seconds_under_load": loaded[comp], "non_private": base,
                "n_train": len(data[2]), "rounds": rounds,
            })  # fmt: skip
    return rows


def markdown(rows: list[dict]) -> str:
    out = [
        "| K | composition | sigma per release | epsilon_i | certificate (eps, delta) | "
        "test accuracy median [min, max] | non-private |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        a = r["accuracy"]
        out.append(
            f"| {r['k']} | {r['composition']} | {r['sigma']:.4g} | {r['epsilon_i']:.4g} | "
            f"({r['certificate'][0]:g}, {r['certificate'][1]:.3g}) | "
            f"{a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}] | {r['non_private']:.3f} |"
        )
    out += ["", "| K | composition | first fit (s) | fit (s) median [min, max] | under load (s) |",
            "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in rows:
        f = r["fit_seconds"]
        out.append(
            f"| {r['k']} | {r['composition']} | {r['first_fit_seconds']:.1f} | "
            f"{f[0]:.2f} [{f[1]:.2f}, {f[2]:.2f}] | {r['fit_seconds_under_load']:.2f} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows = run(args.rounds, args.epsilon)
    print(markdown(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
