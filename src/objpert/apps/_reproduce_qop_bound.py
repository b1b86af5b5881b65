"""Figure 1 of Cortild & Cartis (2026): QOP's expected excess-risk bound against delta.

The utility bound of QOP (docs/qop.md, "Utility bound"; the formulas in
``objpert.mechanisms._certificates.qop``), exact and inexact solve, minimised over the
split of delta (and of epsilon, inexact) and over m with scipy's Nelder-Mead from the
authors' starting points and parametrisations (companion code ``optimal_loss.py``).
:mod:`objpert.apps._reproduce_qop` writes it with Figure 2.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, softmax

from objpert._files import save_figure
from objpert.exceptions import ObjpertError, ParameterError
from objpert.mechanisms._certificates import qop

__all__ = [
    "FIGURE1",
    "FIGURE1_EPSILONS",
    "BoundRow",
    "Figure1Result",
    "figure1",
    "figure1_deltas",
    "optimal_bound",
]

#: Figure 1's public constants (authors' ``optimal_loss.py``): smoothness L, n, d, distance
#: D, Hessian rank rho, subgradient bound G of r, and the inexact accuracies tau = eta.
FIGURE1: dict[str, float] = {
    "smoothness": 1.0,
    "n": 10,
    "d": 12,
    "distance": 1.0,
    "rank": 1,
    "subgradient_bound": 1.0,
    "tau": 1e-3,
    "eta": 1e-3,
}
FIGURE1_EPSILONS: tuple[float, ...] = (1.0, 2.0, 3.0, 4.0)

_PENALTY = 1e100  # the authors' value for a point where the bound is undefined


@dataclass(frozen=True)
class BoundRow:
    """The minimised bound at one (epsilon, delta), and where Nelder-Mead found it."""

    epsilon: float
    delta: float
    exact: bool
    bound: float
    m: float
    epsilons: tuple[float, ...]
    deltas: tuple[float, ...]
    sigma2: float
    sigma_tilde: float
    evaluations: int

    def to_dict(self) -> dict:
        out = asdict(self)
        out["epsilons"] = list(self.epsilons)
        out["deltas"] = list(self.deltas)
        return out


def _safe(f: Callable[[], float]) -> float:
    try:
        value = f()
    except (ObjpertError, ValueError, OverflowError, ZeroDivisionError):
        return _PENALTY
    return value if math.isfinite(value) else _PENALTY


def optimal_bound(
    epsilon: float,
    delta: float,
    *,
    exact: bool = True,
    reading: str = "authors",
    **constants: float,
) -> BoundRow:
    """The utility bound minimised as the authors' Figure 1 does (``optimal_loss.py``).

    Exact: delta1, delta3 = delta softmax(z0, z1), m = z2^2 + d + 1, start (0, 0, 0.5),
    Nelder-Mead, at most 2000 iterations. Inexact: eps1 = eps expit(z0), eps2 = eps - eps1,
    (delta1..delta4) = delta softmax(z1..z4), m = max(z5, d), start (0, ..., 0, 0.5), at
    most 20000 iterations. Points where the bound is undefined score 1e100. ``constants``
    override :data:`FIGURE1`; ``reading`` is flag (i) of ``objpert.mechanisms._certificates.qop``.
    """
    c = {**FIGURE1, **constants}
    unknown = set(constants) - set(FIGURE1)
    if unknown:
        raise ParameterError(f"unknown constants {sorted(unknown)}; allowed: {sorted(FIGURE1)}")
    d, n = int(c["d"]), int(c["n"])
    L, D, rho, G = c["smoothness"], c["distance"], c["rank"], c["subgradient_bound"]
    tau, eta = c["tau"], c["eta"]

    if exact:

        def unpack(z):
            d1, d3 = delta * softmax(z[0:2])
            return (epsilon,), (d1, d3), z[2] ** 2 + d + 1

        def bound(z) -> float:
            _, (d1, d3), m = unpack(z)
            return qop.utility_exact(
                qop.sigma2(L, epsilon, d1, d3, d, m, rank=rho, reading=reading), m, D
            )

        x0, maxiter = np.array([0.0, 0.0, 0.5]), 2000
    else:

        def unpack(z):
            e1 = epsilon * expit(z[0])
            return (e1, epsilon - e1), tuple(delta * softmax(z[1:5])), max(z[5], d)

        def parts(z):
            (e1, e2), (d1, d2, d3, d4), m = unpack(z)
            s2 = qop.sigma2(L, e1, d1, d3, d, m, rank=rho, reading=reading)
            alpha = qop.min_eigenvalue_bound(d, m, d3)
            beta = qop.max_eigenvalue_bound(d, m, d3, d4)
            return s2, qop.output_noise(tau, eta, alpha, s2, beta, e2, d2), m

        def bound(z) -> float:
            s2, st, m = parts(z)
            return qop.utility_inexact(n, d, L, st, G, tau, s2, m, D, eta)

        x0, maxiter = np.zeros(6), 20000
        x0[5] = 0.5

    res = minimize(
        lambda z: _safe(lambda: bound(z)),
        x0=x0,
        method="Nelder-Mead",
        options={"maxiter": maxiter, "disp": False},
    )
    epsilons, deltas, m = unpack(res.x)
    if exact:
        s2, st = qop.sigma2(L, epsilon, *deltas, d, m, rank=rho, reading=reading), 0.0
    else:
        s2, st, _ = parts(res.x)
    return BoundRow(
        epsilon=epsilon,
        delta=delta,
        exact=bool(exact),
        bound=float(res.fun),
        m=float(m),
        epsilons=tuple(float(e) for e in epsilons),
        deltas=tuple(float(x) for x in deltas),
        sigma2=float(s2),
        sigma_tilde=float(st),
        evaluations=int(res.nfev),
    )


@dataclass(frozen=True)
class Figure1Result:
    rows: tuple[BoundRow, ...]
    path: str | None = None

    def table(self, exact: bool) -> dict[float, list[tuple[float, float]]]:
        """epsilon -> [(delta, bound), ...] for the exact or inexact panel."""
        out: dict[float, list[tuple[float, float]]] = {}
        for r in self.rows:
            if r.exact == exact:
                out.setdefault(r.epsilon, []).append((r.delta, r.bound))
        return out

    def to_dict(self) -> dict:
        return {"rows": [r.to_dict() for r in self.rows], "path": self.path}


def figure1_deltas(points: int = 25) -> np.ndarray:
    """Figure 1's values of delta: ``points`` log-spaced in [1e-5, 1e-2] (default 25; the
    authors use 100)."""
    return np.logspace(-5, -2, points)


def figure1(
    path: str | Path | None = None,
    *,
    deltas: Sequence[float] | None = None,
    epsilons: Sequence[float] = FIGURE1_EPSILONS,
    reading: str = "authors",
    **constants: float,
) -> Figure1Result:
    """Figure 1: the minimised utility bound against delta (default 25 log-spaced values in
    [1e-5, 1e-2]; the authors use 100) for each epsilon, exact (tau = eta = 0) and inexact
    (tau = eta = 1e-3) solve. Writes a two-panel PNG to ``path`` when given (the inexact
    panel drops bounds above 3500, as the authors' plot does)."""
    grid = figure1_deltas() if deltas is None else np.asarray(deltas, dtype=float)
    rows = [
        optimal_bound(float(eps), float(dl), exact=exact, reading=reading, **constants)
        for exact in (True, False)
        for eps in epsilons
        for dl in grid
    ]
    result = Figure1Result(tuple(rows), None if path is None else str(path))
    if path is not None:
        _plot_figure1(result, str(path))
    return result


def _plot_figure1(result: Figure1Result, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, exact, title in (
        (axes[0], True, "Exact solve (tau = eta = 0)"),
        (axes[1], False, "Inexact solve (tau = eta = 1e-3)"),
    ):
        for eps, points in result.table(exact).items():
            dl = [p[0] for p in points]
            b = [p[1] if (exact or p[1] <= 3500) else np.nan for p in points]
            ax.plot(dl, b, "-" if exact else ".-", label=f"epsilon = {eps:g}")
        ax.set_xscale("log")
        ax.set_xlabel("failure probability delta")
        ax.set_ylabel("expected loss upper bound")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
