"""The exponential mechanism over a finite set of candidates (McSherry & Talwar 2007).

Candidate i is chosen with probability proportional to exp(epsilon u_i / (2 Delta)), where
u_i is its utility and Delta the sensitivity of every utility under the replacement of one
row: epsilon-DP (McSherry & Talwar 2007, Theorem 6). Sampling is by the Gumbel-max trick
(argmax of u_i epsilon / (2 Delta) + G_i with G_i standard Gumbel), exact in distribution,
with the library's cryptographic generator (:func:`objpert._randomness.make_rng`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objpert._randomness import make_rng
from objpert._validation import check_computed
from objpert.exceptions import ParameterError

__all__ = ["exponential_mechanism", "selection_probabilities"]


def _log_weights(utilities: Any, epsilon: float, sensitivity: float) -> np.ndarray:
    # epsilon is the caller's checked share; the sensitivity is computed from public
    # bounds (k clip for a regression: clip = bound^2 may underflow)
    sensitivity = check_computed("the utilities' sensitivity", sensitivity, "a bound too small")
    u = np.asarray(utilities, dtype=np.float64)
    if u.ndim != 1 or u.size == 0:
        raise ParameterError(f"utilities must be a non-empty 1-d array; got shape {u.shape}")
    if not np.all(np.isfinite(u)):
        raise ParameterError("utilities must be finite")
    return (u - u.max()) * (epsilon / (2.0 * sensitivity))


def selection_probabilities(utilities: Any, epsilon: float, sensitivity: float) -> np.ndarray:
    """The exponential mechanism's distribution over the candidates (softmax of
    epsilon u / (2 Delta)), computed in log space."""
    logw = _log_weights(utilities, epsilon, sensitivity)
    w = np.exp(logw)
    return w / w.sum()


def exponential_mechanism(
    utilities: Any, epsilon: float, sensitivity: float, rng: Any = None
) -> int:
    """The index chosen by the exponential mechanism (epsilon-DP for utilities of
    sensitivity ``sensitivity``). ``rng``: None (OS entropy) or a seed for tests (warns)."""
    logw = _log_weights(utilities, epsilon, sensitivity)
    generator, _ = make_rng(rng)
    return int(np.argmax(logw + generator.gumbel(size=logw.size)))
