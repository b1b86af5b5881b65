"""Figures of the certificates (matplotlib, written to PNG files)."""

from __future__ import annotations

import numpy as np

from objpert._files import save_figure
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._constants import ProblemConstants

__all__ = ["plot_privacy_profiles"]


def plot_privacy_profiles(
    pc: ProblemConstants,
    sigma: float,
    u: float,
    iterations: int,
    path: str,
    *,
    epsilon: float = 1.0,
    truncation: str = "paper",
) -> str:
    """Left: delta(epsilon) of Theorem 4.1, Theorem C.13 and the N -> infinity limit (log scale).
    Right: delta against N at ``epsilon`` for Theorems 4.1 and C.13."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r, r_outer = theorem_c13.paper_radii(pc, sigma, u)
    s_inf = theorem_c13.limit_s(pc, sigma)
    eps = np.linspace(0.0, max(2.0 * epsilon, 4.0 * s_inf), 400)[1:]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    curves = {
        f"Theorem 4.1, N = {iterations}": theorem41.delta(
            pc, sigma, u, iterations, eps, truncation
        ),
        f"Theorem C.13, N = {iterations}": theorem_c13.delta_n(
            pc, sigma, r, r_outer, iterations, eps, truncation
        ),
        "limit N -> inf (Remark C.16)": theorem_c13.limit_delta(pc, sigma, eps),
    }
    for label, values in curves.items():
        ax1.semilogy(eps, np.clip(values, 1e-300, 1.0), label=label)
    ax1.set_ylim(1e-14, 2.0)
    ax1.axvline(epsilon, ls=":", c="grey")
    ax1.set_xlabel("epsilon")
    ax1.set_ylabel("delta(epsilon)")
    ax1.set_title(f"Privacy profiles (sigma = {sigma:.3g}, u = {u:g})")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend()
    n_max = max(2 * iterations, 2 * theorem41.threshold_iterations(pc, sigma, u))
    Ns = np.unique(np.geomspace(1, n_max, 400).astype(int))
    ax2.semilogy(Ns, theorem41.delta(pc, sigma, u, Ns, epsilon, truncation), label="Theorem 4.1")
    ax2.semilogy(
        Ns,
        theorem_c13.delta_n(pc, sigma, r, r_outer, Ns, epsilon, truncation),
        label="Theorem C.13",
    )
    ax2.axhline(float(theorem_c13.limit_delta(pc, sigma, epsilon)), ls="--", c="k", label="limit")
    ax2.axvline(iterations, ls=":", c="grey")
    ax2.set_xscale("log")
    ax2.set_xlabel("iterations N")
    ax2.set_ylabel(f"delta at epsilon = {epsilon:g}")
    ax2.set_title("delta against N")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend()
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
