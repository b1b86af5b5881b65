"""The hypothesis-testing bound implied by a privacy profile (f-DP from (epsilon, delta)).

A privacy profile is the curve epsilon -> delta(epsilon) of (epsilon, delta) guarantees
that a release meets for every epsilon at once (for a Watkins & Arora plan:
:func:`objpert.certify.watkins_arora_profile`). Read as a trade-off function
(Dong, Roth & Su 2022, Section 2.3): a release that is (epsilon, delta)-DP makes every
test of "this person's row was in the data" with false-positive rate alpha miss with
probability at least f_{epsilon,delta}(alpha) = max(0, 1 - delta - e^epsilon alpha,
e^-epsilon (1 - delta - alpha)) (Kairouz, Oh & Viswanath 2015, Theorem 2.1). A release
meeting a whole profile is f-DP with f = sup_epsilon f_{epsilon,delta(epsilon)} (Dong,
Roth & Su 2022, Proposition 2.12): its true-positive rate at false-positive rate alpha is
at most 1 - f(alpha).

Any finite set of points of a profile is a set of valid guarantees, so the supremum over a
grid is a valid (slightly weaker) trade-off bound: never an over-claim. Pure functions of
public numbers: no data, no randomness.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from objpert.exceptions import ParameterError

__all__ = [
    "FALSE_POSITIVE_RATES",
    "epsilon_grid",
    "max_true_positive_rate",
    "point_tradeoff",
    "tradeoff",
]

#: The false-positive rates at which reports state the attacker's bound.
FALSE_POSITIVE_RATES: tuple[float, ...] = (0.001, 0.01, 0.1)


def _alpha(alpha: ArrayLike) -> np.ndarray:
    return np.asarray(alpha, dtype=np.float64)


def point_tradeoff(alpha: ArrayLike, epsilon: float, delta: float) -> np.ndarray:
    """f_{epsilon,delta}(alpha) = max(0, 1 - delta - e^epsilon alpha, e^-epsilon (1 - delta -
    alpha)): the least type II error at type I error alpha under (epsilon, delta)-DP (Dong,
    Roth & Su 2022, Section 2.3; Kairouz, Oh & Viswanath 2015, Theorem 2.1)."""
    return tradeoff(alpha, [epsilon], [delta])


def _points(epsilons: ArrayLike, deltas: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    eps = np.asarray(epsilons, dtype=np.float64).ravel()
    dels = np.asarray(deltas, dtype=np.float64).ravel()
    if eps.shape != dels.shape:
        raise ParameterError(
            f"epsilons and deltas must have the same length; got {eps.size} and {dels.size}"
        )
    if not eps.size:
        raise ParameterError("a privacy profile needs at least one (epsilon, delta) point")
    keep = np.isfinite(eps)  # (inf, delta) says nothing about tests
    if not keep.any():
        return np.zeros(1), np.ones(1)  # the trivial guarantee: f = 0
    return eps[keep], dels[keep]


def tradeoff(alpha: ArrayLike, epsilons: ArrayLike, deltas: ArrayLike) -> np.ndarray:
    """f(alpha) = sup_i f_{epsilon_i,delta_i}(alpha) over the points of a profile (Dong, Roth
    & Su 2022, Proposition 2.12): a lower bound on the type II error of every test at type
    I error alpha, for a release that is (epsilon_i, delta_i)-DP for every i. In [0, 1]."""
    a = _alpha(alpha)
    eps, dels = _points(epsilons, deltas)
    shape = a.shape
    a = a.reshape(-1, 1)
    keep = 1.0 - dels  # (points,)
    with np.errstate(over="ignore", invalid="ignore"):
        grow = np.exp(eps)  # e^epsilon may overflow to inf: then 1 - delta - inf * alpha
        first = keep - np.where(a > 0.0, grow * a, 0.0)
    second = np.exp(-eps) * (keep - a)
    best = np.maximum(np.maximum(first, second), 0.0).max(axis=1)
    return np.clip(best, 0.0, 1.0).reshape(shape)


def max_true_positive_rate(alpha: ArrayLike, epsilons: ArrayLike, deltas: ArrayLike) -> np.ndarray:
    """1 - f(alpha) (:func:`tradeoff`): the highest true-positive rate that any membership
    test reaches at false-positive rate alpha against a release meeting the profile."""
    return 1.0 - tradeoff(alpha, epsilons, deltas)


def epsilon_grid(epsilon: float, points: int = 401) -> np.ndarray:
    """The epsilons at which reports evaluate a profile: 0 to max(10, 4 epsilon), evenly
    spaced, with ``epsilon`` itself among them."""
    eps = epsilon
    points = int(points)
    top = 4.0 * eps if 4.0 * eps < math.inf else eps
    return np.unique(np.append(np.linspace(0.0, max(10.0, top), points), eps))
