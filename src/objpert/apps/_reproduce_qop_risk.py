"""Figure 2 of Cortild & Cartis (2026): empirical risk against the box radius kappa.

LOP, LOP-Clip and QOP on an interpolating linear regression (docs/qop.md, "The authors'
comparison"), every method solved with K steps of stochastic Davis-Yin
(``objpert._solvers``), beside the trivial baseline of releasing the public reference point
theta_ref (epsilon 0), with QOP's gain over it and a plain statement where QOP's noise
swamps the data (:func:`objpert.mechanisms._certificates.qop.compare_to_reference`).
:mod:`objpert.apps._reproduce_qop` writes it with Figure 1.

A reproduction: its randomness comes from explicitly seeded Generators, and the
``TestingSeedWarning`` that seeding a release raises is silenced here on purpose.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from objpert._files import save_figure
from objpert._solvers import stochastic_davis_yin
from objpert.exceptions import ParameterError, TestingSeedWarning
from objpert.mechanisms._certificates import lop_noise, lop_regulariser, qop
from objpert.mechanisms._qop import qop_release

__all__ = [
    "FIGURE2",
    "METHODS",
    "Figure2Result",
    "Figure2Row",
    "figure2",
    "lop_gradient_bound",
]

#: Figure 2's setting (authors' ``F2_Comparison.ipynb``).
FIGURE2: dict[str, float] = {
    "n": 300,
    "d": 100,
    "xi": 5.0,
    "iterations": 1000,
    "l1": 1.0,
    "epsilon": 0.5,
    "delta": 0.01,
    "ref_noise": 0.1,
    "clip_level": 1e4,
}
#: The methods of Figure 2, and the trivial baseline: releasing the public reference point
#: theta_ref itself ((0, 0)-DP; objpert.mechanisms._certificates.qop.baseline).
METHODS: tuple[str, ...] = ("LOP", "LOP-Clip", "QOP", "theta_ref")


def lop_gradient_bound(kappa: float, xi: float, d: int, ref_norm: float, distance: float) -> float:
    """A public bound zeta on the per-sample gradients of the squared loss over the box.

    With ||x_i|| <= xi, the interpolation y_i = <x_i, theta*> and a public reference with
    ||theta* - theta_ref|| <= D: for ||theta||_inf <= kappa,

        ||grad l_i(theta)|| = |<x_i, theta - theta*>| ||x_i||
                            <= xi^2 ||theta - theta*|| <= xi^2 (sqrt(d) kappa + ||theta_ref|| + D),

    since ||theta|| <= sqrt(d) kappa and ||theta*|| <= ||theta_ref|| + D. It grows linearly in
    kappa, as LOP's noise with it. (The authors' code uses (kappa d xi + max_i y_i) xi sqrt(d):
    looser by about a factor d, and max_i y_i is read off the data.)
    """
    return xi**2 * (math.sqrt(d) * kappa + ref_norm + distance)


def _clipped(g: np.ndarray, zeta: float) -> np.ndarray:
    norm = float(np.linalg.norm(g))
    return g if norm <= zeta else g * (zeta / norm)


def _lop_solve(
    X: np.ndarray,
    y: np.ndarray,
    kappa: float,
    l1: float,
    smoothness: float,
    zeta: float,
    epsilon: float,
    delta: float,
    iterations: int,
    clip: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """LOP (Gaussian; objpert.mechanisms._certificates.kifer) solved as the authors do:
    stochastic Davis-Yin on sum_i l_i + l1 ||.||_1 + (Delta/2) ||.||^2 + <b, .> over the
    box, omega = 1/(nL + Delta).

    ``clip``: LOP-Clip (Redberg et al. 2023), every per-sample gradient clipped to norm zeta
    (for a GLM this is the Huber loss of threshold zeta / ||x_i||: convex, L-smooth, with
    gradients bounded by zeta, so LOP's guarantee applies with grad_bound = zeta). The noise
    scale is Kifer et al.'s at the replace-one sensitivity 2 zeta (:func:`lop_noise`): twice
    the authors' s = zeta sqrt(8 log(2/delta) + 4 epsilon) / epsilon."""
    n, d = X.shape
    Delta = lop_regulariser(smoothness, epsilon)
    b = rng.normal(0.0, lop_noise(zeta, epsilon, delta), size=d)
    step = 1.0 / (n * smoothness + Delta)

    def g(theta: np.ndarray, i: int) -> np.ndarray:
        row = X[i]
        grad = (float(row @ theta) - y[i]) * row
        if clip:
            grad = _clipped(grad, zeta)
        return n * grad + Delta * theta + b

    return stochastic_davis_yin(
        g, n, np.zeros(d), step, iterations, l1=l1, box=kappa, rng=rng
    ).theta


@dataclass(frozen=True)
class Figure2Row:
    kappa: float
    method: str
    mean_risk: float
    std_risk: float
    seconds: float
    runs: int


@dataclass(frozen=True)
class Figure2Result:
    """Rows per (kappa, method); ``spread``: the authors' "Avg Std" (mean over kappa of the
    standard deviation of the risk over runs); ``max_std``; ``risk_range``: (min, max) of
    the mean risk across kappa."""

    rows: tuple[Figure2Row, ...]
    spread: dict
    max_std: dict
    risk_range: dict
    config: dict = field(default_factory=dict)
    path: str | None = None
    reference: dict = field(default_factory=dict)

    def series(self, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = [r for r in self.rows if r.method == method]
        return (
            np.array([r.kappa for r in rows]),
            np.array([r.mean_risk for r in rows]),
            np.array([r.std_risk for r in rows]),
        )

    def to_dict(self) -> dict:
        return {
            "rows": [asdict(r) for r in self.rows],
            "spread": dict(self.spread),
            "max_std": dict(self.max_std),
            "risk_range": {k: list(v) for k, v in self.risk_range.items()},
            "config": dict(self.config),
            "path": self.path,
            "reference": dict(self.reference),
        }


def _risk(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    r = X @ theta - y
    return 0.5 * float(np.mean(r * r))


def figure2(
    path: str | Path | None = None,
    runs: int = 10,
    kappas: Sequence[float] | None = None,
    *,
    seed: int = 42,
    reading: str = "authors",
    smoothness: float | None = None,
    lop_bound: str = "public",
    ref_confidence: float = 1e-6,
    **setting: float,
) -> Figure2Result:
    """Figure 2: empirical risk 0.5 mean residual^2 against kappa for LOP, LOP-Clip, QOP.

    Setting (:data:`FIGURE2`, overridable by keyword): rows of norm xi, theta_true ~ N(0, I),
    y = X theta_true exactly, theta_ref = theta_true + ref_noise N(0, I), all drawn once;
    l1 weight, (epsilon, delta), K iterations of stochastic Davis-Yin. kappa: default 25
    log-spaced values in [1e-2, 1e3] (the authors use 100). ``runs`` releases per method
    and kappa. Method ``theta_ref`` releases the public reference point itself; the
    result's ``reference`` is :func:`objpert.mechanisms._certificates.qop.compare_to_reference`
    of QOP's mean risk at each kappa against it (its ``statement`` says where QOP's noise
    swamps the data).

    Constants: smoothness L = d xi^2 as the authors (the squared loss on rows of norm xi
    is xi^2-smooth; the larger value is conservative). QOP: ``qop_plan`` with m = 2d and
    delta1 = delta3 = delta/2, released by ``qop_release``. LOP: Delta = 2L/eps and noise
    scale from ``objpert.mechanisms._certificates.kifer`` (at the replace-one sensitivity
    2 zeta) with zeta = :func:`lop_gradient_bound`, the public
    distance D = ref_noise (sqrt(d) + sqrt(2 log(1/ref_confidence))), which bounds
    ||theta_true - theta_ref|| with probability >= 1 - ref_confidence (Gaussian norm
    concentration); ``lop_bound="authors"`` uses the authors' (kappa d xi + max y) xi sqrt(d)
    instead. LOP-Clip: per-sample gradients clipped to norm ``clip_level`` (authors: 1e4; their
    code rescales a clipped gradient to norm 1, not to the clip level).
    """
    cfg = {**FIGURE2, **setting}
    unknown = set(setting) - set(FIGURE2)
    if unknown:
        raise ParameterError(f"unknown settings {sorted(unknown)}; allowed: {sorted(FIGURE2)}")
    n, d, xi, K = int(cfg["n"]), int(cfg["d"]), float(cfg["xi"]), int(cfg["iterations"])
    eps, dl, l1 = cfg["epsilon"], cfg["delta"], cfg["l1"]
    if lop_bound not in ("public", "authors"):
        raise ParameterError(f"lop_bound must be 'public' or 'authors'; got {lop_bound!r}")
    grid = np.logspace(-2, 3, 25) if kappas is None else np.asarray(kappas, dtype=float)
    L = d * xi**2 if smoothness is None else float(smoothness)

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X = xi * X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-8)
    theta_true = rng.standard_normal(d)
    y = X @ theta_true
    theta_ref = theta_true + cfg["ref_noise"] * rng.standard_normal(d)
    distance = cfg["ref_noise"] * (math.sqrt(d) + math.sqrt(2.0 * math.log(1.0 / ref_confidence)))
    ref_norm = float(np.linalg.norm(theta_ref))
    plan = qop.qop_plan(d, eps, dl, smoothness=L, rank=1, m=2 * d, reading=reading)

    def zeta(kappa: float) -> float:
        if lop_bound == "authors":
            return (kappa * d * xi + float(np.max(y))) * xi * math.sqrt(d)
        return lop_gradient_bound(kappa, xi, d, ref_norm, distance)

    solvers: dict[str, Callable[[float], np.ndarray]] = {
        "LOP": lambda k: _lop_solve(X, y, k, l1, L, zeta(k), eps, dl, K, False, rng),
        "LOP-Clip": lambda k: _lop_solve(X, y, k, l1, L, cfg["clip_level"], eps, dl, K, True, rng),
        "QOP": lambda k: (
            qop_release(
                X, y, plan, theta_ref, l1=l1, box=k, solver="stochastic", iterations=K, rng=rng
            ).weights
        ),
        "theta_ref": lambda k: theta_ref.copy(),
    }
    rows: list[Figure2Row] = []
    with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
        # a reproduction: the seeded generator is the point, not a publication
        warnings.simplefilter("ignore", TestingSeedWarning)
        for kappa in grid:
            risks: dict[str, list[float]] = {mth: [] for mth in METHODS}
            seconds = dict.fromkeys(METHODS, 0.0)
            for _ in range(runs):
                for method in METHODS:
                    start = time.perf_counter()
                    theta = solvers[method](float(kappa))
                    seconds[method] += time.perf_counter() - start
                    risks[method].append(_risk(theta, X, y))
            for method in METHODS:
                r = np.asarray(risks[method])
                rows.append(
                    Figure2Row(
                        float(kappa),
                        method,
                        float(r.mean()),
                        float(r.std(ddof=1)),
                        seconds[method] / runs,
                        runs,
                    )
                )
    spread, max_std, risk_range = {}, {}, {}
    for method in METHODS:
        sel = [r for r in rows if r.method == method]
        stds = np.array([r.std_risk for r in sel])
        means = np.array([r.mean_risk for r in sel])
        spread[method] = float(stds.mean())
        max_std[method] = float(stds.max())
        risk_range[method] = (float(means.min()), float(means.max()))
    config = {
        **cfg,
        "runs": runs,
        "kappas": [float(k) for k in grid],
        "seed": seed,
        "smoothness": L,
        "reading": reading,
        "lop_bound": lop_bound,
        "distance": distance,
        "qop_sigma2": plan.sigma2,
        "qop_sigma2_branch": plan.sigma2_branch,
    }
    qop_rows = [r for r in rows if r.method == "QOP"]
    reference = qop.compare_to_reference(
        [r.mean_risk for r in qop_rows],
        _risk(theta_ref, X, y),
        [f"kappa={r.kappa:g}" for r in qop_rows],
    )
    result = Figure2Result(
        tuple(rows), spread, max_std, risk_range, config, None if path is None else str(path),
        reference.to_dict(),
    )  # fmt: skip
    if path is not None:
        _plot_figure2(result, str(path))
    return result


def _plot_figure2(result: Figure2Result, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for method in METHODS:
        k, mean, _ = result.series(method)
        ax.plot(k, mean, label=f"{method} (avg std {result.spread[method]:.3g})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("radius of the domain kappa")
    ax.set_ylabel("empirical risk")
    ax.set_title("LOP, LOP-Clip and QOP against kappa")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
