"""``objpert demo``: private logistic regression on real data that ships offline.

For each dataset and epsilon: test accuracy over several releases (mean +- std), the
non-private logistic regression on the same public preprocessing, the majority-class
rate, and the plan (N, sigma, mu) and seconds per fit; a PNG of accuracy against epsilon.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass

import numpy as np

from objpert._files import save_figure
from objpert.apps.datasets import Dataset, load
from objpert.exceptions import IterationBudgetWarning

__all__ = [
    "DELTA",
    "EPSILONS",
    "SPLIT_SEED",
    "DemoRow",
    "markdown",
    "nonprivate_accuracy",
    "plot",
    "run",
    "run_dataset",
    "split",
]

EPSILONS = (0.1, 0.3, 1.0, 3.0)
DELTA = 1e-6
SPLIT_SEED = 0  # the train/test split is public: a fixed seed


@dataclass(frozen=True)
class DemoRow:
    dataset: str
    n_train: int
    n_test: int
    epsilon: float
    delta: float
    accuracy_mean: float
    accuracy_std: float
    nonprivate_accuracy: float
    majority_rate: float
    iterations: int
    sigma: float
    mu: float
    seconds: float
    certified_epsilon: float
    certified_delta: float

    @property
    def gap(self) -> float:
        return self.nonprivate_accuracy - self.accuracy_mean

    def to_dict(self) -> dict:
        return {**asdict(self), "gap": self.gap}


def split(ds: Dataset):
    from sklearn.model_selection import train_test_split

    return train_test_split(ds.X, ds.y, test_size=0.25, random_state=SPLIT_SEED, stratify=ds.y)


def nonprivate_accuracy(Xtr, ytr, Xte, yte) -> float:
    from sklearn.linear_model import LogisticRegression

    return float(LogisticRegression(max_iter=10_000).fit(Xtr, ytr).score(Xte, yte))


def run_dataset(
    ds: Dataset,
    epsilons=EPSILONS,
    seeds: int = 10,
    delta: float = DELTA,
    random_state: int | None = None,
    progress=None,
) -> list[DemoRow]:
    """``seeds`` releases per epsilon; with ``random_state`` they are reproducible (testing)."""
    from objpert.estimators import PrivateLogisticRegression

    Xtr, Xte, ytr, yte = split(ds)
    base = nonprivate_accuracy(Xtr, ytr, Xte, yte)
    majority = float(max(np.mean(yte), 1 - np.mean(yte)))
    rows = []
    for eps in epsilons:
        accs, secs, model = [], [], None
        for s in range(seeds):
            model = PrivateLogisticRegression(
                epsilon=eps,
                delta=delta,
                data_norm=ds.data_norm,
                classes=[0, 1],  # the public label set of the bundled datasets
                random_state=None if random_state is None else random_state + s,
            )
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                if random_state is not None:  # the caller asked for a reproducible run
                    warnings.simplefilter("ignore")
                elif s > 0:  # the same plan as the first release: its notice said it once
                    warnings.simplefilter("ignore", IterationBudgetWarning)
                model.fit(Xtr, ytr)
            secs.append(time.perf_counter() - t0)
            accs.append(model.score(Xte, yte))
            if progress is not None:
                progress()
        plan = model.plan_
        rows.append(
            DemoRow(
                ds.name,
                len(ytr),
                len(yte),
                eps,
                delta,
                float(np.mean(accs)),
                float(np.std(accs)),
                base,
                majority,
                plan.iterations,
                plan.sigma,
                plan.mu,
                float(np.mean(secs)),
                model.certificate_.epsilon,
                model.certificate_.delta,
            )
        )
    return rows


def plot(rows: list[DemoRow], path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r.dataset for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        rs = [r for r in rows if r.dataset == name]
        eps = [r.epsilon for r in rs]
        ax.errorbar(
            eps,
            [r.accuracy_mean for r in rs],
            yerr=[r.accuracy_std for r in rs],
            marker="o",
            capsize=3,
            label="objpert (Watkins & Arora release)",
        )
        ax.axhline(rs[0].nonprivate_accuracy, color="k", ls="--", label="non-private")
        ax.axhline(rs[0].majority_rate, color="grey", ls=":", label="majority class")
        ax.set_xscale("log")
        ax.set_xlabel(f"epsilon (delta = {rs[0].delta:g})")
        ax.set_ylabel("test accuracy")
        ax.set_title(f"{name}: n_train = {rs[0].n_train}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def run(
    names=("tv16", "breast_cancer"),
    epsilons=EPSILONS,
    seeds: int = 10,
    delta: float = DELTA,
    random_state: int | None = None,
    progress=None,
) -> list[DemoRow]:
    rows: list[DemoRow] = []
    for name in names:
        rows += run_dataset(load(name), epsilons, seeds, delta, random_state, progress)
    return rows


def markdown(rows: list[DemoRow]) -> str:
    head = (
        "| dataset | n_train | epsilon | test accuracy (mean +- std) | non-private | gap | "
        "majority | N | sigma | mu | s/fit |"
    )
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r.dataset} | {r.n_train} | {r.epsilon:g} | {r.accuracy_mean:.4f} +- "
            f"{r.accuracy_std:.4f} | {r.nonprivate_accuracy:.4f} | {100 * r.gap:.2f} pts | "
            f"{r.majority_rate:.4f} | {r.iterations} | {r.sigma:.3g} | {r.mu:.3g} | "
            f"{r.seconds:.2f} |"
        )
    return "\n".join(lines)
