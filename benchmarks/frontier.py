"""The privacy-utility frontier in one table per method: what each newer method gains
over the one it replaces, read from the committed results of its own benchmark.

    python benchmarks/frontier.py            # Markdown tables (docs/frontier.md)

Reads (each written by the script of the same name, its command recorded in the file):

- ``multinomial.json``: one multinomial release against one-vs-rest at the PLD
  composition (wine, diamonds, digits, leaf20: 3, 5, 10 and 20 classes);
- ``tight_composition.json``: one-vs-rest by PLD with the tight dominating pair against
  the construction on epsilon >= 0 alone: the per-class noise at a fixed ridge (digits)
  and the held-out accuracy at the default settings on the four multiclass tables;
- ``random_stopping*.json``: random-stopping selection against the split method, over a
  grid of comparator norms and two ridge grids (the last with both laws of the run count);
- ``public_prior.json``: a private fit centred at a public prior against the private fit
  alone and the prior alone.

Accuracy cells are mean +- standard error over the releases the file records.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
EPSILONS = (0.1, 0.3, 1.0, 3.0)


def _cell(mean: float | None, se: float | None) -> str:
    return "not certified" if mean is None else f"{mean:.3f} +- {se:.3f}"


def _load(name: str):
    return json.loads((HERE / f"{name}.json").read_text())


def _paired(
    rows: list[dict],
    table: str,
    size: list[str],
    methods: tuple[str, str],
    extra: Callable[[dict], list[str]] | None = None,
) -> list[str]:
    """One Markdown row per (table, epsilon): the table's ``size`` fields, then the two
    methods' accuracies (rows keyed by ``table``, ``epsilon`` and ``method``), then
    ``extra(rows by method)``'s cells."""
    out = []
    for name in dict.fromkeys(r[table] for r in rows):
        for eps in EPSILONS:
            got = {r["method"]: r for r in rows if r[table] == name and r["epsilon"] == eps}
            first = got[methods[0]]
            cells = [name, *(str(first[f]) for f in size), f"{eps:g}"]
            cells += [_cell(got[m]["accuracy_mean"], got[m]["accuracy_se"]) for m in methods]
            cells += extra(got) if extra else []
            out.append("| " + " | ".join(cells) + " |")
    return out


def multinomial() -> list[str]:
    header = [
        "| table | K | n | epsilon | multinomial | one-vs-rest (PLD) | non-private |",
        "|---|---|---|---|---|---|---|",
    ]

    def non_private(got: dict) -> list[str]:
        return [f"{got['ovr']['non_private']:.3f}"]

    methods = ("multinomial", "ovr")
    return header + _paired(_load("multinomial"), "table", ["k", "n_train"], methods, non_private)


def tight() -> list[str]:
    data = _load("tight_composition")
    out = [
        "| epsilon | per-class sigma, tight pair | epsilon >= 0 alone | ratio |",
        "|---|---|---|---|",
    ]
    for r in data["sigma"]:
        new, old = r["tight"]["boundary_sigma"], r["nonnegative"]["boundary_sigma"]
        out.append(f"| {r['epsilon']:g} | {new:.4g} | {old:.4g} | {new / old:.3f} |")
    return out


def tight_accuracy() -> list[str]:
    header = [
        "| table | K | n | epsilon | tight pair | epsilon >= 0 alone | difference (same seeds) "
        "| sigma ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def difference(got: dict) -> list[str]:
        t, o = got["tight"], got["nonnegative"]
        diff = round(t["difference_mean"], 3) + 0.0  # no "-0.000"
        return [f"{diff:+.3f} +- {t['difference_se']:.3f}", f"{t['sigma'] / o['sigma']:.3f}"]

    methods = ("tight", "nonnegative")
    rows = _load("tight_composition")["tables"]
    return header + _paired(rows, "table", ["k", "n_train"], methods, difference)


RANDOM_STOPPING_FILES = (  # one table each: the comparator grid, then ridge grids
    "random_stopping",
    "random_stopping_mu",
    "random_stopping_mu_large",
    "random_stopping_mu_large_geometric",
)


def random_stopping() -> list[str]:
    out: list[str] = []
    for name in RANDOM_STOPPING_FILES:
        data = _load(name)
        if out:
            out.append("")
        out += [
            f"Grid: {data['grid']}; max_iter {data['max_iter']}; run count law: "
            f"{data.get('law', 'geometric')}; {data['rounds']} rounds "
            f"(`{data['command']}`).",
            "",
            "| table | n | epsilon | split | random stopping |",
            "|---|---|---|---|---|",
        ]
        out += _paired(data["results"], "dataset", ["n_train"], ("split", "random_stopping"))
    return out


def public_prior() -> list[str]:
    data = _load("public_prior")
    out = [
        f"The prior: scikit-learn fitted on a public {100 * data['public_fraction']:g}% of the "
        "rows; the private fit on the rest.",
        "",
        "| table | public / private rows | epsilon | prior alone | private alone | "
        "private + prior (W = 0.1) | best W |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        methods = r["methods"]
        alone, with_prior = methods["private"], methods["private+prior W=0.1"]
        best = max(
            (k for k in methods if k.startswith("private+prior")),
            key=lambda k: methods[k]["mean"],
        )
        out.append(
            f"| {r['dataset']} | {r['n_public']} / {r['n_private']} | {r['epsilon']:g} | "
            f"{r['prior']:.3f} | "
            f"{_cell(alone['mean'], alone['se'])} | "
            f"{_cell(with_prior['mean'], with_prior['se'])} | "
            f"{best.split()[-1]}: {_cell(methods[best]['mean'], methods[best]['se'])} |"
        )
    return out


SECTIONS = {
    "One multinomial release against one-vs-rest": multinomial,
    "The tight dominating pair (per-class noise at a fixed ridge)": tight,
    "The tight dominating pair (one-vs-rest accuracy at the default settings)": tight_accuracy,
    "Random stopping against the split method": random_stopping,
    "A public prior": public_prior,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    for title, build in SECTIONS.items():
        print(f"### {title}\n")
        print("\n".join(build()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
