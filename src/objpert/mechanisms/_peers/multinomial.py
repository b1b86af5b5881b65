"""The multinomial (softmax) logistic release: approximate minima perturbation of the
softmax cross-entropy (certificate: :mod:`objpert.mechanisms._certificates.multinomial`).

One release: the plan's certificate recomputed before the data are touched; the rows
checked against the plan's n, d and zeta (clipped with ``clip=True``) and the labels as
class codes in [0, K); the objective noise Z ~ N(0, sigma^2 I_{dK}) (continuous: it
enters the objective) and the output noise (exact discrete Gaussian on the plan's grid)
drawn once, after every check; F(W) + <Z, W> minimised (L-BFGS, then damped Newton) until
||grad||_F <= the plan's tolerance, checked (:func:`~.checks.solve_checked`): a solve that
misses it raises :class:`~objpert.exceptions.ToleranceError` and releases nothing; the
minimiser released on the grid plus the output noise. Gradients are the engine's
(:class:`~objpert._engines.softmax.SoftmaxObjective`).

With a public ``prior`` W_pub the ridge is centred at it, (mu/2) ||W - W_pub||^2: since
mu (W - W_pub) + Z = mu W + (Z - mu W_pub), the same solve with the noise Z - mu W_pub
(:func:`~objpert.mechanisms._perturbed_gd.centred`). Its minimiser is W_pub + V with V
the minimiser of the same objective for the softmax loss at the margins shifted by the
public offsets <x_i, W_pub>, which has the loss's constants (docs/priors.md): the
release is a public translation of the certified one, with the same plan and certificate.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from objpert._data import for_plan
from objpert._engines.blocked import single_threaded_blas
from objpert._engines.softmax import SoftmaxObjective
from objpert._randomness import make_rng
from objpert.exceptions import DataError, PrivacyError
from objpert.mechanisms._certificates import grid_noise
from objpert.mechanisms._certificates.multinomial import MultinomialPlan, check_multinomial_plan
from objpert.mechanisms._peers.checks import solve_checked
from objpert.mechanisms._peers.noise import discrete, gaussian, on_grid
from objpert.mechanisms._perturbed_gd import BatchRelease, Release, centred

__all__ = ["multinomial_release", "multinomial_release_batch"]


def _checked(plan: Any):
    try:
        return check_multinomial_plan(plan)
    except (ValueError, TypeError) as exc:
        raise PrivacyError(f"the plan cannot be certified: {exc}") from None


def _codes(y: np.ndarray, k: int) -> np.ndarray:
    codes = np.asarray(y, dtype=np.float64)
    ints = np.rint(codes)
    if not np.all(ints == codes) or (codes.size and (ints.min() < 0 or ints.max() >= k)):
        raise DataError(f"the labels of a multinomial release are class codes 0, ..., {k - 1}")
    return ints.astype(np.intp)


def _run(X, y, plan, rng, clip, draws, n_jobs, prior=None):
    cert = _checked(plan)
    M, yy, n_clipped = for_plan(X, y, n=plan.n, d=plan.d, zeta=plan.zeta, label_kind="real",
                                clip=clip)  # fmt: skip
    codes = _codes(yy, plan.n_classes)
    generator, seeded = make_rng(rng)
    objective = SoftmaxObjective(M, codes, plan.n_classes, plan.mu, n_jobs=n_jobs)
    p = plan.dimension
    gamma, scale = grid_noise(plan.output_sigma, plan.grid_bits)
    z = gaussian(generator, plan.sigma, p, draws)  # objective noise, drawn once
    b2 = discrete(generator, scale, p, draws)  # output noise on the grid, drawn once
    z = centred(prior, z, plan.mu)[1]  # the ridge centred at the public prior
    start = time.perf_counter()
    with single_threaded_blas():
        if draws is None:
            w, used = solve_checked(objective, z, plan)
        else:
            runs = [solve_checked(objective, z[:, b], plan) for b in range(draws)]
            w = np.column_stack([r[0] for r in runs])
            used = max(r[1] for r in runs)
    return on_grid(w, b2, gamma), cert, used, time.perf_counter() - start, n_clipped, seeded


def multinomial_release(
    X: Any,
    y: Any,
    plan: MultinomialPlan,
    rng: Any = None,
    *,
    clip: bool = False,
    n_jobs: int | None = None,
    prior: np.ndarray | None = None,
) -> Release:
    """One multinomial release of ``plan`` on (X, y), y the class codes 0, ..., K - 1:
    the weights (d K,), row-major W (d, K) (module docstring). Rows above zeta are refused
    (``clip=True`` scales them down). ``prior``: the public centre W_pub (d K,), row-major
    like the weights (None: 0)."""
    w, cert, used, seconds, n_clipped, seeded = _run(X, y, plan, rng, clip, None, n_jobs, prior)
    return Release(w, plan, cert, used, seconds, n_clipped, seeded, prior)


def multinomial_release_batch(
    X: Any, y: Any, plan: MultinomialPlan, draws: int, rng: Any = None, *, clip: bool = False
) -> BatchRelease:
    """``draws`` independent releases of ``plan`` on the same data (for audits), through
    the code path of :func:`multinomial_release`; ``.weights`` has shape (draws, d K)."""
    w, cert, used, seconds, n_clipped, seeded = _run(X, y, plan, rng, clip, draws, None)
    return BatchRelease(np.ascontiguousarray(w.T), plan, cert, used, seconds, n_clipped, seeded)
