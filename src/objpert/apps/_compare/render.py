"""The comparison as Markdown (one table per dataset, the rules and the command) and as a
plot of test accuracy against epsilon."""

from __future__ import annotations

import math
from collections.abc import Sequence

from objpert._files import save_figure
from objpert.apps._compare.harness import CompareRow
from objpert.apps._compare.methods import BATCHED_NOTE

__all__ = ["markdown", "plot", "report"]

_HEAD = (
    "| method | epsilon | releases | test accuracy | vs | accuracy difference [95% CI] | "
    "train objective | objective difference [95% CI] | s/release median [min, max] | "
    "CPU s/release | certified (epsilon, delta) | note |"
)


def _pm(mean: float, se: float) -> str:
    return f"{mean:.4f}" if math.isnan(se) else f"{mean:.4f} +- {se:.4f}"


def _diff(d: Sequence[float]) -> str:
    mean, lo, hi = d
    if math.isnan(mean):
        return ""
    return f"{mean:+.4f}" if math.isnan(lo) else f"{mean:+.4f} [{lo:+.4f}, {hi:+.4f}]"


def _cpu(seconds: float) -> str:
    return "" if math.isnan(seconds) else f"{seconds:.3f}"


def _certificate(r: CompareRow) -> str:
    if not math.isfinite(r.certified_epsilon):
        return "non-private"
    if r.certified_delta >= 1.0:
        return "not certified"
    return f"({r.certified_epsilon:.3g}, {r.certified_delta:.2g})"


def _workers(meta: dict) -> str:
    workers = meta.get("workers", 1)
    return f"the cells on {workers} worker processes, " if workers > 1 else ""


def markdown(rows: list[CompareRow], command: str | None = None) -> str:
    """One table per dataset (under it the ``command`` that produced it, if given): means
    +- standard errors, paired differences against the row's ``vs`` method with 95%
    intervals, wall and CPU time per release, certificate."""
    out: list[str] = []
    for name in dict.fromkeys(r.dataset for r in rows):
        out += [f"### {name}", ""]
        if command:
            out += [f"`{command}`", ""]
        out += [_HEAD, "|" + "---|" * 12]
        for r in (r for r in rows if r.dataset == name):
            out.append(
                f"| {r.method} | {r.epsilon:g} | {r.runs} | "
                f"{_pm(r.accuracy_mean, r.accuracy_se)} | {r.versus} | "
                f"{_diff(r.accuracy_diff)} | {_pm(r.objective_mean, r.objective_se)} | "
                f"{_diff(r.objective_diff)} | {r.seconds_median:.3f} "
                f"[{r.seconds_min:.3f}, {r.seconds_max:.3f}] | {_cpu(r.cpu_seconds_median)} | "
                f"{_certificate(r)} | {r.note} |"
            )
        out.append("")
    return "\n".join(out).rstrip("\n")


def report(rows: list[CompareRow], meta: dict, command: str) -> str:
    """The whole comparison as Markdown: the command, the setting, the rules, the tables."""
    lines = [
        f"Produced by `{command}`.",
        "",
        f"Datasets {', '.join(meta['datasets'])}; target epsilons "
        f"{', '.join(f'{e:g}' for e in meta['epsilons'])}; delta {meta['delta']:g}; "
        f"{meta['seeds']} releases per cell ({meta['seed_rule']}); the same public "
        "train/test split (75/25, stratified, seed 0), the same declared bounds (the "
        "dataset's public data_norm, labels {-1, +1}) for every method. Test accuracy of "
        "sign(<x, w>); train objective: mean logistic loss on the training rows, "
        "unregularised. Means +- standard errors; differences paired by seed against the "
        "`vs` method, Student-t 95% intervals. One BLAS thread inside every fit.",
        "",
        f"Wall time of the whole run: {meta['wall_seconds']:.0f} s ("
        f"{meta['cpu_seconds']:.0f} s of CPU in all its processes) on {meta['cpus']} CPUs, "
        f"{_workers(meta)}load average {meta['load_average'][0]:.1f} at the start and "
        f"{meta['load_average'][1]:.1f} at the end. Wall times per release are measured on "
        "that machine; the CPU time per release is less sensitive to its load. A row noted "
        f"'{BATCHED_NOTE}' ran its releases as one batched descent (each release the one "
        "its seed gives alone, to rounding).",
        "",
        "Hyperparameters, chosen by public rules (no test rows, no private training rows):",
        "",
        *[f"- `{k}`: {v}" for k, v in meta["rules"].items()],
        "",
        markdown(rows, command),
    ]
    if meta.get("diffprivlib"):
        lines += ["", f"diffprivlib: {meta['diffprivlib']['versions']}"]
    return "\n".join(lines) + "\n"


def plot(rows: list[CompareRow], path: str) -> str:
    """Test accuracy (mean +- standard error) against epsilon, one panel per dataset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r.dataset for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for method in dict.fromkeys(r.method for r in rows if r.dataset == name):
            rs = [r for r in rows if r.dataset == name and r.method == method]
            if method in ("nonprivate", "theta_ref"):
                ax.axhline(rs[0].accuracy_mean, ls="--", color="k" if method == "nonprivate"
                           else "grey", label=method)  # fmt: skip
                continue
            ax.errorbar(
                [r.epsilon for r in rs],
                [r.accuracy_mean for r in rs],
                yerr=[0.0 if math.isnan(r.accuracy_se) else r.accuracy_se for r in rs],
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
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
