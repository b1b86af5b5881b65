"""The measurements recorded in docs/audit-pairwise.md (the exact pairwise audit).

Run ``python -m objpert.apps._pairwise_audit [--quick] [--out results.json]``. For small logistic
regressions it (1) checks Theorems A.12-A.13 on the certificate's ball, (2) searches the
worst neighbouring pair, (3) measures the pairwise delta(epsilon) of eq. (6) on at least
three pairs (the worst included) against the certified Theorem C.13 delta(epsilon), and
(4) runs the pairwise audit on the planted bugs. Everything is seeded.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from objpert.audit._jacobian import check_jacobian
from objpert.audit._pair_check import check_pairs
from objpert.audit._pairwise import pairwise_profile
from objpert.audit._planted import PLANTED_BUGS
from objpert.audit._worst_pair import worst_pair
from objpert.certify._calibration import calibrate
from objpert.certify._plan import WatkinsAroraPlan

__all__ = ["logistic_plan", "main", "pair_config", "planted_config", "planted_data", "shared_rows"]


def shared_rows(n_shared: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded shared rows: norms in [0.3, 1] (a fifth exactly 1), logistic labels +-1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_shared, d))
    norms = rng.uniform(0.3, 1.0, size=n_shared)
    norms[: n_shared // 5] = 1.0
    X *= (norms / np.linalg.norm(X, axis=1))[:, None]
    w = rng.normal(scale=2.0, size=d)
    y = np.where(rng.random(n_shared) < 1.0 / (1.0 + np.exp(-X @ w)), 1.0, -1.0)
    return X, y


def logistic_plan(n: int, d: int, mu: float) -> WatkinsAroraPlan:
    """The tight plan for (epsilon, delta) = (1, 1e-5), zeta = 1, at a given public mu."""
    return calibrate("logistic", n=n, d=d, zeta=1.0, epsilon=1.0, delta=1e-5, mu=mu)


def pair_config(
    n: int,
    d: int,
    mu: float,
    *,
    seed: int,
    search_epsilon: float,
    epsilons: list[float],
    search_samples: int,
    grid: int,
    starts: int,
    maxfev: int,
    samples: int,
) -> dict[str, Any]:
    """One configuration: the Jacobian check, the worst-pair search and the pairwise
    delta(epsilon) of five pairs (the worst included) against the certified one."""
    plan = logistic_plan(n, d, mu)
    Xs, ys = shared_rows(n - 1, d, seed)
    t0 = time.perf_counter()
    jac = check_jacobian(
        np.vstack([Xs, np.eye(d)[:1]]), np.append(ys, 1.0), plan, samples=512, rng=seed
    )
    wp = worst_pair(
        Xs,
        ys,
        plan,
        epsilon=search_epsilon,
        samples=search_samples,
        grid=grid,
        starts=starts,
        maxfev=maxfev,
        final_samples=samples,
        rng=seed,
    )
    rng = np.random.default_rng(seed + 1)
    e = np.eye(d)
    random_dirs = rng.normal(size=(2, d))
    random_dirs /= np.linalg.norm(random_dirs, axis=1, keepdims=True)
    pairs = {
        "antipodal e1 / -e1": (e[0], 1.0, -e[0], 1.0),
        "orthogonal e1 / e2": (e[0], 1.0, e[1], 1.0),
        "same x, flipped label": (e[0], 1.0, e[0], -1.0),
        "random": (random_dirs[0], 1.0, random_dirs[1], -1.0),
        "worst found": (np.array(wp.x), wp.label, np.array(wp.x_prime), wp.label_prime),
    }
    report = check_pairs(Xs, ys, plan, pairs, epsilons, samples=samples, rng=seed + 2)
    X, y, Xp, yp = wp.datasets(Xs, ys)
    plain = pairwise_profile(X, y, Xp, yp, plan, epsilons, samples=samples, rng=seed + 3)
    return {
        "config": {"loss": "logistic", "n": n, "d": d, "mu": mu, "seed": seed},
        "plan": {
            "sigma": plan.sigma,
            "eta": plan.eta,
            "iterations": plan.iterations,
            "radius": plan.radius,
            "radius_outer": plan.radius_outer,
            "s_n": plan.certificate.details["s_n"],
            "alpha_bar": plan.certificate.details["alpha_bar"],
        },
        "jacobian": jac.to_dict(),
        "worst_pair": {
            "x": list(wp.x),
            "x_prime": list(wp.x_prime),
            "labels": [wp.label, wp.label_prime],
            "epsilon": wp.epsilon,
            "search_delta": wp.search_delta,
            "delta": wp.delta,
            "evaluations": wp.evaluations,
            "trace": list(wp.trace),
        },
        "pairs": report.to_dict(),
        "worst_plain_mc": plain.to_dict(),
        "table": report.table(),
        "seconds": time.perf_counter() - t0,
    }


def planted_data(layout: str, n: int, seed: int) -> tuple[np.ndarray, ...]:
    """(X, y, X', y') for the planted-bug audit, differing sample x = e1 vs x' = -e1.

    * ``random``: random shared rows of norm 1/1.2, labels +-1 (logistic);
    * ``aligned``: shared rows near +-e1 of norm 1, labels +-1 (logistic): margins near 0,
      so the Hessian along e1 is near L = 1/eta, where the extra step (bug 3) removes the
      noise;
    * ``saturated``: random shared rows, real labels, differing labels 5 (pseudo-Huber):
      |l'| near L1, gradient difference near G = 2 L1 zeta / n;
    * ``stiffened``: logistic, n - 1 shared rows: half at +-q (q = (v - u)/|v - u|, margins
      0: curvature along q), half at s = -(u + v)/|u + v| labelled +1 (pushing w to where
      both differing samples u = e1, v = (cos 120, sin 120) have negative margins, |l'| near
      1); differing sample u vs v.
    """
    rng = np.random.default_rng(seed)
    if layout == "stiffened":
        u = np.array([1.0, 0.0])
        v = np.array([np.cos(2 * np.pi / 3), np.sin(2 * np.pi / 3)])
        s = -(u + v) / np.linalg.norm(u + v)
        q = (v - u) / np.linalg.norm(v - u)
        k = (n - 1) // 2 // 2 * 2
        X = np.tile(s, (n, 1))
        X[: k // 2], X[k // 2 : k] = q, -q
        y = np.ones(n)
        X[-1] = u
        Xp = X.copy()
        Xp[-1] = v
        return X, y, Xp, y.copy()
    if layout == "aligned":
        X = np.zeros((n, 2))
        X[:, 0] = 1.0
        X += 0.05 * rng.normal(size=(n, 2))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        X *= rng.choice([-1.0, 1.0], n)[:, None]
    else:
        X = rng.normal(size=(n, 2))
        X /= 1.2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.normal(size=n) if layout == "saturated" else rng.choice([-1.0, 1.0], n)
    X[-1], y[-1] = [1.0, 0.0], 5.0 if layout == "saturated" else 1.0
    Xp, yp = X.copy(), y.copy()
    Xp[-1] = [-1.0, 0.0]
    return X, y, Xp, yp


def planted_config(
    loss: str,
    layout: str,
    n: int,
    mu: float,
    *,
    samples: int,
    seed: int,
    epsilons: list[float],
    proposal: str = "gaussian",
) -> dict[str, Any]:
    """The pairwise audit of the clean release and the three map bugs on one pair."""
    params = {"scale": 1.0} if loss == "robust" else {}
    plan = calibrate(loss, n=n, d=2, zeta=1.0, epsilon=1.0, delta=1e-5, mu=mu, **params)
    X, y, Xp, yp = planted_data(layout, n, seed)
    rows = {}
    for name in ("clean", "noise_half", "extra_step", "n_doubled"):
        release = None if name == "clean" else PLANTED_BUGS[name].release_map(plan)
        prof = pairwise_profile(
            X,
            y,
            Xp,
            yp,
            plan,
            epsilons,
            samples=samples,
            rng=seed,
            release_map=release,
            proposal=proposal,
        )
        excess = max(
            max(lo, lr) - c
            for lo, lr, c in zip(prof.lower, prof.lower_reverse, prof.certified, strict=True)
        )
        rows[name] = {
            "flagged": prof.flagged,
            "max_lower_minus_certified": excess,
            "measured_over_certified": [
                m / c for m, c in zip(prof.measured, prof.certified, strict=True)
            ],
            "profile": prof.to_dict(),
        }
    return {
        "config": {"loss": loss, "layout": layout, "n": n, "d": 2, "mu": mu, "proposal": proposal},
        "plan": {"sigma": plan.sigma, "iterations": plan.iterations, "eta": plan.eta},
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sample sizes (a smoke run)")
    ap.add_argument("--out", default=None, help="write the JSON results here")
    args = ap.parse_args(argv)
    quick = args.quick
    samples = 2000 if quick else 20000
    search = (
        dict(search_samples=300, grid=6, starts=1, maxfev=10)
        if quick
        else dict(search_samples=1000, grid=12, starts=2, maxfev=30)
    )
    eps = [0.1, 0.2, 0.3, 0.5, 0.75, 1.0]
    out: dict[str, Any] = {"pairs": [], "planted": []}
    for n, d, mu, seed, e_star in ((20, 2, 0.05, 11, 0.3), (30, 3, 0.1, 12, 0.3)):
        res = pair_config(
            n, d, mu, seed=seed, search_epsilon=e_star, epsilons=eps, samples=samples, **search
        )
        out["pairs"].append(res)
        print(f"\n## logistic n={n} d={d} mu={mu} ({res['seconds']:.0f} s)")
        print(json.dumps(res["plan"]))
        print(
            "jacobian:",
            json.dumps(
                {
                    k: res["jacobian"][k]
                    for k in (
                        "min_sigma_min",
                        "max_sym_eigenvalue",
                        "alpha_bar",
                        "fd_max_error",
                        "violations",
                    )
                }
            ),
        )
        print("worst pair:", json.dumps(res["worst_pair"]))
        print(res["table"])
        print("measured below the certificate on every pair:", res["pairs"]["passed"])
        pm = res["worst_plain_mc"]
        print(
            "worst pair, plain MC (rigorous EB upper):",
            json.dumps(
                {
                    "epsilons": pm["epsilons"],
                    "measured": pm["measured"],
                    "upper": [
                        max(a, b) for a, b in zip(pm["upper"], pm["upper_reverse"], strict=True)
                    ],
                    "certified": pm["certified"],
                    "flagged": pm["flagged"],
                }
            ),
        )
    planted_samples = 4000 if quick else 20000
    for loss, layout, n, mu, proposal in (
        ("logistic", "random", 20, 0.25, "gaussian"),
        ("logistic", "aligned", 20, 0.25, "gaussian"),
        ("robust", "saturated", 20, 1.0, "gaussian"),
        ("logistic", "stiffened", 40, 0.05, "tilted"),
    ):
        res = planted_config(
            loss, layout, n, mu, samples=planted_samples, seed=5, epsilons=eps, proposal=proposal
        )
        out["planted"].append(res)
        print(f"\n## planted bugs, {loss} {layout} n={n} mu={mu} ({proposal})")
        for name, row in res["rows"].items():
            ratio = ", ".join(f"{r:.3g}" for r in row["measured_over_certified"])
            print(
                f"{name}: flagged={row['flagged']} "
                f"max(lower - certified)={row['max_lower_minus_certified']:.3g} "
                f"measured/certified=[{ratio}]"
            )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1, default=lambda v: None if v != v else v)
    return out


if __name__ == "__main__":  # pragma: no cover
    main()
