"""Constructions with a public prior that spend no privacy budget, against the prior alone
and the private fit alone: can any keep the fit at least as accurate as both?

Usage: python benchmarks/prior_constructions.py [--releases R] [--tables NAME ...]
       [--epsilons E ...] [--json benchmarks/prior_constructions.json]
       python benchmarks/prior_constructions.py --table benchmarks/prior_constructions.json

The binary tables, split, public 5% and prior of benchmarks/prior_suite.py. At each
epsilon (delta = 1e-6, declared classes, the table's public data_norm), R releases (seeds
0..R-1, paired by seed) of:

- ``private`` and ``prior``: prior_suite's (the default fit without and with the prior);
- ``shrink``: ``prior``'s release w moved towards the prior w_pub (both in the
  mechanism's coordinates) by positive-part James-Stein shrinkage (James & Stein 1961):
  w_pub + max(0, 1 - v / ||w - w_pub||^2) (w - w_pub). v is the least mean squared noise
  the release can carry: linearised at the ridge's minimiser, the noise is
  -(H + mu I)^{-1} z with z ~ N(0, sigma^2 I_d), of mean squared norm
  sigma^2 sum_i (lambda_i + mu)^{-2} >= sigma^2 d / (mu + tr H / d)^2 (Jensen), and
  tr H <= L2 zeta^2 (each row's Hessian l'' x x^T has trace at most L2 zeta^2; L2 = 1/4
  for the logistic loss). Post-processing of the release and public quantities: the
  certificate is ``prior``'s;
- ``centre s``: the fit at the private fit's comparator norm (W = 3, so its plan, ridge
  and certificate are ``private``'s) with its ridge centred at the prior rescaled to norm
  s in the mechanism's coordinates (s = 1.5 and 3). A positive multiple of the prior
  classifies as the prior does; its norm sets how hard the ridge pulls towards it;
- ``centre s, default W``: the same centre at the default comparator norm of a fit with
  a prior, W = min(3, epsilon) (so its plan and certificate are ``prior``'s);
- ``shrink private``: ``private``'s release moved towards the prior by the same shrinkage,
  at ``private``'s own plan. Post-processing of ``private``: its certificate;
- ``Fisher``: the precision-weighted mean of the prior and ``private``'s release, each
  weighted by the inverse of a covariance estimated from public quantities alone. H is
  the Hessian of the mean logistic loss at the prior over the public rows (in the
  mechanism's coordinates, plus 1e-3 tr H / d I). The prior's covariance is
  (n_pub H)^{-1} (a maximum-likelihood fit on n_pub rows); the release's is
  A (H / n + sigma^2 I) A with A = (H + mu I)^{-1} (the sampling error and the noise of
  the ridge's minimiser, linearised at it). Post-processing of ``private`` with public
  data (the public rows and the prior): its certificate;
- ``Fisher, debiased``: the same after undoing the ridge's pull towards 0, linearised:
  the release mapped by (H + mu I) H^{-1}, with covariance H^{-1} / n + sigma^2 H^{-2}.

Each cell reports the prior alone's accuracy, each method's mean and, for the
constructions, their paired difference from ``private`` and their difference from the
prior alone, each +- its standard error; a cell misses when either is below minus its
standard error (the test of benchmarks/prior_suite.py; ``prior``'s misses are that
benchmark's).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from prior_choice import binary_benchmark, closed
from prior_suite import _accuracy, public_parts
from public_prior import _releases, _summary, prepared_with_prior

from objpert._data import prepare

CENTRE_NORMS = (1.5, 3.0)
CENTRE_WS = (("", 3.0), (", default W", "auto"))  # (label, comparator norm)
CENTRES = tuple((f"centre {s:g}{label}", s, w) for label, w in CENTRE_WS for s in CENTRE_NORMS)
FISHERS = (("Fisher", False), ("Fisher, debiased", True))
METHODS = ("prior", "shrink", *(label for label, _, _ in CENTRES), "shrink private",
           *(label for label, _ in FISHERS))  # fmt: skip
JITTER = 1e-3  # the public Hessian's ridge, a share of its mean eigenvalue


def _shrunk(coef, intercept, c, w_pub, plan):
    """``shrink``: each release (rows of coef, intercept) moved towards w_pub by
    positive-part James-Stein shrinkage at the noise's least mean squared norm; test-ready
    (coef, intercept) and each release's factor."""
    k = plan.constants
    W = np.column_stack([coef, intercept / c])
    D = W - w_pub
    d = W.shape[1]
    least = plan.sigma**2 * d / (k.mu + k.L2 * k.zeta**2 / d) ** 2
    factor = np.maximum(0.0, 1.0 - least / np.maximum(np.sum(D * D, axis=1), 1e-300))
    S = w_pub + factor[:, None] * D
    return S[:, :-1], S[:, -1] * c, factor


def _public_hessian(X_pub, y_pub, norm, w_pub, c):
    """The Hessian of the mean logistic loss at w_pub over the public rows, in the
    mechanism's coordinates, plus JITTER tr H / d I."""
    public = prepare(X_pub, np.where(y_pub == 1, 1.0, -1.0), labels="real", data_norm=norm)
    if public.intercept_scaling != c:
        raise AssertionError("the public rows' intercept column differs from the private")
    X = public.X
    p = 1.0 / (1.0 + np.exp(-(X @ w_pub)))
    H = (X * (p * (1.0 - p))[:, None]).T @ X / len(y_pub)
    return H + JITTER * np.trace(H) / len(w_pub) * np.eye(len(w_pub))


def _fisher(W, w_pub, H, n_pub, n, plan, debiased):
    """``Fisher`` (or ``Fisher, debiased``): each release (row of W, the mechanism's
    coordinates) and the prior, weighted by their public inverse covariances."""
    eye = np.eye(len(w_pub))
    mu, sigma = plan.constants.mu, plan.sigma
    if debiased:
        inverse = np.linalg.inv(H)
        W = W @ ((H + mu * eye) @ inverse).T
        covariance = inverse / n + sigma**2 * inverse @ inverse
    else:
        A = np.linalg.inv(H + mu * eye)
        covariance = A @ (H / n) @ A + sigma**2 * A @ A
    P_release, P_prior = np.linalg.inv(covariance), n_pub * H
    return np.linalg.solve(P_prior + P_release, (P_prior @ w_pub)[:, None] + P_release @ W.T).T


def run_table(name, epsilons, releases):
    X_priv, y_priv, X_pub, y_pub, Xte, yte, classes, norm, prior, prior_acc, info = public_parts(
        name
    )
    if len(classes) != 2:
        raise SystemExit(f"{name} has {len(classes)} classes; this suite is binary")
    prepared, w_pub = prepared_with_prior(X_priv, y_priv, norm, prior)
    c = prepared.intercept_scaling
    H = _public_hessian(X_pub, y_pub, norm, w_pub, c)
    size = float(np.linalg.norm(w_pub))
    rows = []
    for eps in epsilons:
        start = time.perf_counter()
        row = {**info, "epsilon": eps, "prior_alone": prior_acc, "methods": {},
               "prior_norm_internal": size}  # fmt: skip
        m = row["methods"]

        def accuracies(coef, intercept):
            return [_accuracy(coef[r], intercept[r], Xte, yte) for r in range(releases)]

        coef, intercept, plan = _releases(X_priv, y_priv, norm, eps, None, "auto", releases)
        m["private"] = _summary(accuracies(coef, intercept))
        shrunk_coef, shrunk_intercept, factor = _shrunk(coef, intercept, c, w_pub, plan)
        m["shrink private"] = {**_summary(accuracies(shrunk_coef, shrunk_intercept)),
                               "factors": factor.tolist()}  # fmt: skip
        W = np.column_stack([coef, intercept / c])
        for label, debiased in FISHERS:
            S = _fisher(W, w_pub, H, len(y_pub), len(y_priv), plan, debiased)
            m[label] = _summary(accuracies(S[:, :-1], S[:, -1] * c))
        coef, intercept, plan = _releases(X_priv, y_priv, norm, eps, prior, "auto", releases)
        m["prior"] = _summary(accuracies(coef, intercept))
        coef, intercept, factor = _shrunk(coef, intercept, c, w_pub, plan)
        m["shrink"] = {**_summary(accuracies(coef, intercept)), "factors": factor.tolist()}
        for label, s, w in CENTRES:
            scaled = (prior[0] * (s / size), prior[1] * (s / size))
            coef, intercept, _ = _releases(X_priv, y_priv, norm, eps, scaled, w, releases)
            m[label] = _summary(accuracies(coef, intercept))
        rows.append(closed(row, METHODS, start))
    return rows


def main(argv=None):
    return binary_benchmark(
        argv, __doc__, "prior_constructions.py", METHODS,
        lambda name, a: run_table(name, a.epsilons, a.releases),
        meta=lambda a: {"centre_norms": list(CENTRE_NORMS)},
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
