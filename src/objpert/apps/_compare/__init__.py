"""``objpert compare``: the private training methods side by side on real data.

Every registered mechanism (:mod:`objpert.mechanisms._registry`) and the baselines get the
same public train/test split, the same declared bounds and the same target
(epsilon, delta); each method's hyperparameters come from a stated public rule
(:func:`rules`), never from the test rows or the private training rows. Each cell reports
means with standard errors over ``seeds`` releases, the paired difference against the
Watkins & Arora release (QOP: against releasing its reference point theta_ref) with its
95% interval, the wall time per release and the (epsilon, delta) each release certifies.
"""

from objpert.apps._compare.harness import (
    QUICK,
    Cell,
    CompareRow,
    compare_dataset,
    default_workers,
    run,
    seed_of,
)
from objpert.apps._compare.methods import (
    BASELINES,
    BATCHED_NOTE,
    DEFAULT_METHODS,
    FITTERS,
    LOP_CLIP_SHARE,
    THETA_REF,
    Fit,
    FitFn,
    canonical_method,
    fit_loss,
    fit_seeds,
    mechanism_plan,
    reference_of,
    register,
    rules,
)
from objpert.apps._compare.render import markdown, plot, report
from objpert.apps._compare.stats import mean_se, paired_difference, time_summary

__all__ = [
    "BASELINES",
    "BATCHED_NOTE",
    "DEFAULT_METHODS",
    "FITTERS",
    "LOP_CLIP_SHARE",
    "QUICK",
    "THETA_REF",
    "Cell",
    "CompareRow",
    "Fit",
    "FitFn",
    "canonical_method",
    "compare_dataset",
    "default_workers",
    "fit_loss",
    "fit_seeds",
    "markdown",
    "mean_se",
    "mechanism_plan",
    "paired_difference",
    "plot",
    "reference_of",
    "register",
    "report",
    "rules",
    "run",
    "seed_of",
    "time_summary",
]
