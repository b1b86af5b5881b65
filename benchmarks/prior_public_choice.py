"""Choosing between a public prior and the private fit on the prior's own public rows,
at no privacy cost: can the public rows keep the fit at least as accurate as both?

Usage: python benchmarks/prior_public_choice.py [--releases R] [--tables NAME ...]
       [--epsilons E ...] [--json benchmarks/prior_public_choice.json]
       python benchmarks/prior_public_choice.py --table benchmarks/prior_public_choice.json

The binary tables, split, public 5% and prior of benchmarks/prior_suite.py. At each
epsilon (delta = 1e-6, declared classes, the table's public data_norm), R releases (seeds
0..R-1, paired by seed) of ``private``, the default fit without a prior (prior_suite's
``private``), and three ways to combine each release w with the prior w_pub, chosen on
the public rows alone:

- ``public mix, accuracy``: the mix lambda w + (1 - lambda) w_pub, lambda in
  {0, 1/4, 1/2, 3/4, 1}, with the highest 5-fold cross-validated accuracy on the public
  rows (stratified, fixed seed; the smaller lambda on ties). In each fold the prior is
  refitted as the suite's prior (scikit-learn's LogisticRegression, C = 1) on the other
  folds, so that neither part of a mix is scored on rows it was fitted on: the release
  never saw the public rows. The model kept is the chosen mix with the prior fitted on
  all the public rows;
- ``public mix, log loss``: the same, scored by the cross-validated logistic loss;
- ``public pick``: the same as ``public mix, accuracy`` over lambda in {0, 1} only: the
  prior alone or the private fit alone.

Each cell also keeps what the public rows say of the prior (lambda 0) and of the release
(lambda 1), as means over the releases (``public_rows``: cross-validated accuracy and
mean logistic loss, and the coefficient norms).

Each is post-processing of the private release with public data only (the public rows and
a prior fitted on them), so it keeps the private fit's certificate and spends no budget.
Each cell reports the prior alone's accuracy, each method's mean and, for the three
choices, their paired difference from ``private`` and their difference from the prior
alone, each +- its standard error; a cell misses when either is below minus its standard
error (the test of benchmarks/prior_suite.py).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from accuracy_suite import SPLIT_SEED
from prior_choice import binary_benchmark, closed
from prior_suite import _accuracy, _public_prior, public_parts
from public_prior import _releases, _summary
from sklearn.model_selection import StratifiedKFold

FOLDS = 5
MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)
CHOICES = (("public mix, accuracy", MIXES, "accuracy"),
           ("public mix, log loss", MIXES, "log loss"),
           ("public pick", (0.0, 1.0), "accuracy"))  # fmt: skip
METHODS = tuple(label for label, _, _ in CHOICES)


def _fold_priors(X_pub, y_pub, classes):
    """(coef, intercept, validation rows) of the prior refitted without each fold."""
    folds = min(FOLDS, int(np.min(np.unique(y_pub, return_counts=True)[1])))
    split = StratifiedKFold(folds, shuffle=True, random_state=SPLIT_SEED).split(X_pub, y_pub)
    out = []
    for fit, held in split:
        model = _public_prior(X_pub[fit], y_pub[fit], classes)
        out.append((model.coef_.ravel(), float(model.intercept_[0]), held))
    return out


def _score(t, y, metric):
    """The rows' number classified correctly, or minus their summed logistic loss, at
    margins t (labels 0/1)."""
    if metric == "accuracy":
        return float(np.sum((t > 0).astype(int) == y))
    return -float(np.sum(np.logaddexp(0.0, -(2 * y - 1) * t)))


def _cross_validated(coef, intercept, X_pub, y_pub, folds, mixes, metric):
    """Each mix's score summed over the folds: the mix of the release (coef, intercept)
    with the fold's prior, scored on the fold's held-out public rows."""
    scores = np.zeros(len(mixes))
    for prior_coef, prior_intercept, held in folds:
        X, y = X_pub[held], y_pub[held]
        release, prior = X @ coef + intercept, X @ prior_coef + prior_intercept
        scores += [_score(lam * release + (1 - lam) * prior, y, metric) for lam in mixes]
    return scores


def _chosen(coef, intercept, X_pub, y_pub, folds, mixes, metric):
    """The lambda of ``mixes`` with the best cross-validated score (the smallest on ties)."""
    scores = _cross_validated(coef, intercept, X_pub, y_pub, folds, mixes, metric)
    return mixes[int(np.flatnonzero(scores >= scores.max() - 1e-9)[0])]


def _public_view(coef, intercept, X_pub, y_pub, folds, prior_coef):
    """What the public rows say of the prior (lambda 0) and the release (lambda 1), means
    over the releases: cross-validated accuracy and mean logistic loss, and the norms of
    the release's and the prior's coefficients (what the choices see)."""
    n, view = len(y_pub), {}
    for metric, sign in (("accuracy", 1.0), ("log loss", -1.0)):
        both = np.mean([_cross_validated(c, b, X_pub, y_pub, folds, (0.0, 1.0), metric)
                        for c, b in zip(coef, intercept, strict=True)], axis=0)  # fmt: skip
        view[metric] = {"prior": sign * both[0] / n, "release": sign * both[1] / n}
    view["coef_norm"] = {"prior": float(np.linalg.norm(prior_coef)),
                         "release": float(np.mean(np.linalg.norm(coef, axis=1)))}  # fmt: skip
    return view


def run_table(name, epsilons, releases):
    X_priv, y_priv, X_pub, y_pub, Xte, yte, classes, norm, prior, prior_acc, info = public_parts(
        name
    )
    if len(classes) != 2:
        raise SystemExit(f"{name} has {len(classes)} classes; this suite is binary")
    folds = _fold_priors(X_pub, y_pub, classes)
    prior_coef, prior_intercept = np.ravel(prior[0]), float(np.ravel(prior[1])[0])
    rows = []
    for eps in epsilons:
        start = time.perf_counter()
        row = {**info, "epsilon": eps, "prior_alone": prior_acc, "methods": {}}
        m = row["methods"]
        coef, intercept, _ = _releases(X_priv, y_priv, norm, eps, None, "auto", releases)
        m["private"] = _summary(
            [_accuracy(coef[r], intercept[r], Xte, yte) for r in range(releases)]
        )
        row["public_rows"] = _public_view(coef, intercept, X_pub, y_pub, folds, prior_coef)
        for label, mixes, metric in CHOICES:
            lams = [_chosen(coef[r], intercept[r], X_pub, y_pub, folds, mixes, metric)
                    for r in range(releases)]  # fmt: skip
            accs = [_accuracy(lam * coef[r] + (1 - lam) * prior_coef,
                              lam * intercept[r] + (1 - lam) * prior_intercept, Xte, yte)
                    for r, lam in enumerate(lams)]  # fmt: skip
            m[label] = {**_summary(accs), "lambdas": lams}
        rows.append(closed(row, METHODS, start))
    return rows


def main(argv=None):
    meta = {"folds": FOLDS, "mixes": list(MIXES)}
    run = lambda name, a: run_table(name, a.epsilons, a.releases)  # noqa: E731
    return binary_benchmark(
        argv, __doc__, "prior_public_choice.py", METHODS, run, meta=lambda a: meta
    )


if __name__ == "__main__":
    sys.exit(main())
