"""Deterministic optimisers used by the mechanisms.

* :mod:`objpert._solvers.splitting`: three-operator splitting (Davis & Yin 2017) for
  QOP's smooth + l1 + box problems (Cortild & Cartis 2026, arXiv:2605.05905; docs/qop.md,
  "Solver"). The module is not named after its function :func:`davis_yin`, so that
  ``objpert._solvers.davis_yin`` is always the function.
* :mod:`objpert._solvers.newton`: L-BFGS then damped Newton to a gradient-norm tolerance,
  the exact-minimiser solves of LOP, LOP-Clip, AMP and output perturbation.
"""

from objpert._solvers.newton import (
    DENSE_NEWTON_MAX_D,
    solve_batch_to_tolerance,
    solve_to_tolerance,
)
from objpert._solvers.splitting import (
    DavisYinResult,
    authors_relaxation,
    davis_yin,
    project_box,
    soft_threshold,
    stochastic_davis_yin,
)

__all__ = [
    "DENSE_NEWTON_MAX_D",
    "DavisYinResult",
    "authors_relaxation",
    "davis_yin",
    "project_box",
    "soft_threshold",
    "solve_batch_to_tolerance",
    "solve_to_tolerance",
    "stochastic_davis_yin",
]
