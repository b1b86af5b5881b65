"""Public priors for the private estimators: the public model a ridge is centred at.

A user holding a public linear model (last year's data, a public survey) passes it as
``prior=``; the release then minimises F(w) = (1/n) sum l(<x_i, w>, y_i) + (mu/2)
||w - w_pub||^2 + <z, w> by gradient descent from w_0 = w_pub. In v = w - w_pub this is
the Watkins & Arora (2026) release, eqs. (1) and (4), for the GLM with the public margin
offsets <x_i, w_pub>; the constants of Theorem 4.1 and Theorem C.13 (L1, L2, L3, zeta, G,
Delta_H, R_bar, the radii) hold for every margin, so the plan and the certificate are
those without a prior (docs/priors.md). The prior is a public input: validated here,
recorded on the model (``prior_coef_``, ``prior_intercept_``) and in each release, and
saved in the model file; never a statistic of the private rows.

The prior is given in the user's original feature units; :func:`prior_weights` maps it
into the coordinates of the mechanism exactly as :func:`.bounds.finish_fit` maps the
released weights back (feature_bounds: w_u = coef h, b_u = intercept + coef . m), with
the intercept column of value c carrying b_u / c.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert.estimators._bounds import unit_map
from objpert.exceptions import ParameterError

__all__ = ["PublicPrior", "check_public_prior", "match_prior", "prior_weights"]


@dataclass(frozen=True)
class PublicPrior:
    """A validated public prior in the user's original feature units.

    ``coef`` (K, n_features) and ``intercept`` (K,), one row per release (K = 1 for a
    binary or regression model); ``feature_names`` and ``classes`` those of a fitted model
    given as the prior (None for arrays), checked against the fit's."""

    coef: np.ndarray
    intercept: np.ndarray
    feature_names: np.ndarray | None = None
    classes: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"coef": [[...]], "intercept": [...]}``: the form a model file keeps (and that
        ``prior=`` accepts back)."""
        return {"coef": self.coef.tolist(), "intercept": self.intercept.tolist()}


def _numbers(name: str, value: Any) -> np.ndarray:
    """``value`` as a finite float64 array; ParameterError naming ``name`` otherwise."""
    try:
        raw = np.asarray(value)
        arr = np.array(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(f"prior {name} must be an array of numbers") from None
    if raw.dtype.kind not in "iuf" and not (
        raw.dtype.kind == "O" and all(_is_number(v) for v in raw.ravel())
    ):
        raise ParameterError(f"prior {name} must be numbers; got dtype {raw.dtype}")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"prior {name} must be finite; got {arr.tolist()!r:.80}")
    return arr


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


def _parts(prior: Any) -> tuple[Any, Any, Any, Any]:
    """(coef, intercept, feature names, classes) of the accepted forms of ``prior``."""
    if hasattr(prior, "coef_"):  # a fitted linear model (scikit-learn's, objpert's, frozen)
        intercept = getattr(prior, "intercept_", None)
        if intercept is None:
            raise ParameterError(
                f"prior {type(prior).__name__} has coef_ but no intercept_: pass "
                "(coef, intercept) instead"
            )
        return prior.coef_, intercept, getattr(prior, "feature_names_in_", None), getattr(
            prior, "classes_", None
        )  # fmt: skip
    if hasattr(prior, "fit"):
        raise ParameterError(
            f"prior {type(prior).__name__} is not fitted (it has no coef_). Note that "
            "scikit-learn's clone (used by GridSearchCV and cross_val_score) unfits an "
            "estimator given as a parameter: wrap it in sklearn.frozen.FrozenEstimator, or "
            "pass prior=(model.coef_, model.intercept_)"
        )
    if isinstance(prior, Mapping):
        unknown = set(prior) - {"coef", "intercept"}
        if "coef" not in prior or unknown:
            raise ParameterError(
                "a prior given as a mapping has the keys 'coef' and (optionally) "
                f"'intercept'; got {sorted(map(str, prior))!r}"
            )
        return prior["coef"], prior.get("intercept", 0.0), None, None
    if isinstance(prior, tuple):
        if len(prior) != 2:
            raise ParameterError(
                f"a prior given as a tuple is (coef, intercept); got {len(prior)} items"
            )
        return prior[0], prior[1], None, None
    if isinstance(prior, np.ndarray):
        return prior, 0.0, None, None
    raise ParameterError(
        "prior must be None, a fitted linear model (with coef_ and intercept_), a tuple "
        "(coef, intercept), a mapping {'coef': ..., 'intercept': ...} or a numpy array of "
        f"coefficients; got {type(prior).__name__}"
    )


def check_public_prior(prior: Any) -> PublicPrior | None:
    """The form of ``prior`` checked before the data are read: finite numbers, coef of
    shape (n_features,) or (K, n_features), intercept a number or of shape (K,)
    (broadcast); ParameterError otherwise. Shapes against the data: :func:`match_prior`."""
    if prior is None:
        return None
    coef, intercept, names, classes = _parts(prior)
    coef = _numbers("coef", coef)
    if coef.ndim not in (1, 2) or coef.size == 0:
        raise ParameterError(
            f"prior coef must have shape (n_features,) or (K, n_features); got {coef.shape}"
        )
    coef = np.atleast_2d(coef)
    intercept = _numbers("intercept", intercept)
    if intercept.ndim > 1 or (intercept.ndim == 1 and intercept.size not in (1, len(coef))):
        raise ParameterError(
            f"prior intercept must be a number or of shape ({len(coef)},); got {intercept.shape}"
        )
    intercept = np.broadcast_to(intercept.reshape(-1), (len(coef),)).copy()
    if names is not None:
        names = np.asarray(names, dtype=object)
    if classes is not None:
        classes = np.asarray(classes)
    return PublicPrior(coef, intercept, names, classes)


def match_prior(
    prior: PublicPrior,
    *,
    n_features: int,
    releases: int,
    feature_names: Any = None,
    classes: Any = None,
) -> PublicPrior:
    """``prior`` checked against the fit (ParameterError otherwise): n_features columns,
    one row per release (one row for a single release), the same feature names when both
    the prior and the training data have them, and for a classifier given as the prior its
    classes equal to the fit's (the order fixes which row is which release)."""
    k, width = prior.coef.shape
    if width != n_features:
        raise ParameterError(
            f"prior has {width} coefficients per row but X has {n_features} features"
        )
    if k != releases:
        raise ParameterError(
            f"prior has {k} rows of coefficients but this fit makes {releases} release(s) "
            f"(one row each)"
        )
    if prior.feature_names is not None and feature_names is not None:
        ours = [str(s) for s in feature_names]
        theirs = [str(s) for s in prior.feature_names]
        if ours != theirs:
            raise ParameterError(
                f"the prior was fitted on the features {theirs[:10]!r} but X has "
                f"{ours[:10]!r}: the same features in the same order are needed"
            )
    if prior.classes is not None:
        if classes is None:
            raise ParameterError(
                "the prior is a classifier (it has classes_); this is a regression"
            )
        if np.asarray(classes).tolist() != prior.classes.tolist():
            raise ParameterError(
                f"the prior's classes {prior.classes.tolist()[:10]!r} differ from the fit's "
                f"{np.asarray(classes).tolist()[:10]!r}: each row of the prior must belong to "
                "the same class as the release it centres"
            )
    return prior


def prior_weights(
    prior: PublicPrior,
    *,
    feature_bounds: np.ndarray | None,
    fit_intercept: bool,
    intercept_scaling: float,
) -> np.ndarray:
    """The prior in the mechanism's coordinates, (K, d): the reverse of
    :func:`.bounds.finish_fit`. With ``feature_bounds`` (rows mapped by (x - m)/h) the
    margin coef . x + b is w_u . (x - m)/h + b_u with w_u = coef h and b_u = b + coef . m;
    the intercept column of value c carries b_u / c. Without an intercept column b_u must
    be 0 (to rounding), else ParameterError: the model could not represent the prior."""
    coef, intercept = prior.coef, prior.intercept
    if feature_bounds is not None:
        mid, half = unit_map(feature_bounds)
        scale = np.abs(intercept) + np.abs(coef) @ np.abs(mid) + 1.0  # rounding of b_u
        coef, intercept = coef * half, intercept + coef @ mid
    else:
        scale = np.abs(intercept) + 1.0
    if fit_intercept:
        return np.column_stack([coef, intercept / intercept_scaling])
    if np.any(np.abs(intercept) > 1e-12 * scale):
        raise ParameterError(
            f"fit_intercept=False but the prior's intercept (in the model's coordinates) "
            f"is {intercept.tolist()[:5]!r}, not 0: fit with an intercept or give a prior "
            "without one"
        )
    return np.ascontiguousarray(coef)
