"""The statistics of the attacks: Clopper & Pearson (1934) bounds, the epsilon lower bound
of Jagielski et al. (2020) at a given delta, the test statistics and their thresholds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from objpert._validation import check_open_unit, count, validated
from objpert.exceptions import ParameterError

__all__ = ["bound", "clopper_pearson", "epsilon_lower_bound", "fit_statistic", "threshold"]


# ---------------------------------------------------------------- Clopper-Pearson


@validated(n=count(1), level=check_open_unit)
def clopper_pearson(
    k: Any, n: int, level: float, what: str = "counts"
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper & Pearson (1934) bounds for k successes in n trials: (lower,
    upper) with P(p >= lower) >= level and P(p <= upper) >= level, exact for the binomial.
    lower = Beta^{-1}(1 - level; k, n - k + 1) (0 at k = 0), upper = Beta^{-1}(level;
    k + 1, n - k) (1 at k = n). ``what``: the counts' name in the error."""
    k = np.asarray(k, dtype=float)
    if not np.all((k >= 0) & (k <= n)):  # NaN fails both
        raise ParameterError(f"{what} must lie in [0, {n}]")
    lower = np.where(k > 0, special.betaincinv(np.maximum(k, 1), n - k + 1, 1.0 - level), 0.0)
    upper = np.where(k < n, special.betaincinv(k + 1, np.maximum(n - k, 1), level), 1.0)
    return lower, upper


def bound(fp: Any, fn: Any, negatives: int, positives: int, delta: float, confidence: float):
    level = 1.0 - 0.5 * (1.0 - confidence)  # Bonferroni over FPR and FNR
    fpr_hi = clopper_pearson(fp, negatives, level, "false_positives (of the negatives)")[1]
    fnr_hi = clopper_pearson(fn, positives, level, "false_negatives (of the positives)")[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fnr_hi, 0.0) / fpr_hi)
        b = np.log(np.maximum(1.0 - delta - fpr_hi, 0.0) / fnr_hi)
    return np.maximum(np.maximum(a, b), 0.0), fpr_hi, fnr_hi


@validated(
    false_positives=count(0), negatives=count(1), false_negatives=count(0), positives=count(1),
    delta=check_open_unit, confidence=check_open_unit,
)  # fmt: skip
def epsilon_lower_bound(
    false_positives: int,
    negatives: int,
    false_negatives: int,
    positives: int,
    delta: float,
    confidence: float = 0.95,
) -> float:
    """max(log((1 - delta - FNR_hi)/FPR_hi), log((1 - delta - FPR_hi)/FNR_hi), 0) with
    Clopper-Pearson upper bounds at level 1 - (1 - confidence)/2 each (Jagielski et al.
    2020): a lower bound on epsilon at ``delta`` with probability >= ``confidence`` for a
    test fixed before the counts were drawn."""
    eps, _, _ = bound(false_positives, false_negatives, negatives, positives, delta, confidence)
    return float(eps)


# ---------------------------------------------------------------- statistics


def fit_statistic(
    statistic: str, pos: np.ndarray, neg: np.ndarray
) -> Callable[[np.ndarray], np.ndarray]:
    """A score (large: S) fitted on the calibration outputs of S (``pos``) and S' (``neg``).

    Covariances get a ridge of 1e-9 times the pooled mean variance (1 if that is 0), so a
    side whose outputs are (nearly) constant still gives a finite score."""
    m1, m0 = pos.mean(axis=0), neg.mean(axis=0)
    d = pos.shape[1]
    c1, c0 = (np.atleast_2d(np.cov(a, rowvar=False)) for a in (pos, neg))
    scale = float(np.trace(c1 + c0)) / (2 * d)
    ridge = (1e-9 * scale if scale > 0 else 1.0) * np.eye(d)
    c1, c0 = c1 + ridge, c0 + ridge
    if statistic == "linear":  # Fisher's discriminant with the pooled covariance
        v = np.linalg.solve(0.5 * (c1 + c0), m1 - m0)
        return lambda w: w @ v
    # the Gaussian log-likelihood ratio, one covariance per side
    parts = []
    for m, c in ((m1, c1), (m0, c0)):
        L = np.linalg.cholesky(c)
        parts.append((m, L, np.sum(np.log(np.diag(L)))))

    def score(w: np.ndarray) -> np.ndarray:
        out = []
        for m, L, logdet in parts:
            r = np.linalg.solve(L, (w - m).T)
            out.append(-0.5 * np.sum(r * r, axis=0) - logdet)
        return np.nan_to_num(out[0] - out[1], nan=0.0, posinf=1e300, neginf=-1e300)

    return score


def threshold(
    s_pos: np.ndarray, s_neg: np.ndarray, delta: float, confidence: float
) -> tuple[float, float]:
    """A threshold t ("S" iff score > t) from the calibration scores, and the bound its
    calibration counts give: (t, bound).

    t maximises the bound at smoothed counts: each side's count beyond t is the larger of
    the empirical count and the count a normal fit to that side's scores predicts. Raw
    empirical counts alone overfit the sparse tails of the calibration half (a threshold
    where few false positives happened to fall), which the held-out half then does not
    confirm; the normal fit smooths the tails, the empirical count keeps heavy tails in
    view. Any rule is valid: only the held-out counts enter the reported bound."""
    s_pos, s_neg = np.sort(s_pos), np.sort(s_neg)
    lo = min(s_pos[0], s_neg[0])
    hi = max(s_pos[-1], s_neg[-1])
    span = hi - lo if hi > lo else 1.0
    t = np.linspace(lo - span, hi + span, 4001)
    fp = s_neg.size - np.searchsorted(s_neg, t, side="right")
    fn = np.searchsorted(s_pos, t, side="right")
    with np.errstate(divide="ignore", invalid="ignore"):
        z_neg = (t - s_neg.mean()) / s_neg.std(ddof=1)
        z_pos = (t - s_pos.mean()) / s_pos.std(ddof=1)
    fp_fit = np.maximum(fp, s_neg.size * np.nan_to_num(special.ndtr(-z_neg), nan=0.0))
    fn_fit = np.maximum(fn, s_pos.size * np.nan_to_num(special.ndtr(z_pos), nan=0.0))
    smoothed, _, _ = bound(fp_fit, fn_fit, s_neg.size, s_pos.size, delta, confidence)
    k = int(np.argmax(smoothed))
    eps, _, _ = bound(fp[k], fn[k], s_neg.size, s_pos.size, delta, confidence)
    return float(t[k]), float(eps)
