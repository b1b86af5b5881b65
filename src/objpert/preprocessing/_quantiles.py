"""Private feature bounds: per-feature quantiles by the exponential mechanism.

The exponential mechanism (McSherry & Talwar 2007) over a public range [a, b] with the
quantile utility of Smith (2011): for a column x_1 <= ... <= x_n clipped to [a, b] and
x_0 = a, x_{n+1} = b, an output y in the interval I_i = (x_i, x_{i+1}) has
u(y) = -|i - q n| (i = the number of values below y). Replacing one row changes every
u(y) by at most 1 (sensitivity 1), so the density p(y) proportional to
exp(epsilon u(y) / 2) on [a, b] is epsilon-DP (McSherry & Talwar 2007, Theorem 6): the
interval I_i is chosen with probability proportional to |I_i| exp(-epsilon |i - q n| / 2)
and y is uniform in it (Smith 2011, Section 3; Gillenwater, Joseph & Kulesza 2021,
Section 3.1). The interval is drawn by the Gumbel-max trick (Gumbel 1954; the argmax of
log-weights plus Gumbel noise is distributed as the normalised weights), in log space, so
no weight underflows; the noise comes from :func:`objpert._randomness.make_rng`.

:class:`PrivateFeatureBounds` spends epsilon over 2 d such draws (a low and a high
quantile per feature), composed by :func:`objpert.accounting.compose`, and then
scales like :class:`~objpert.preprocessing.BoundedScaler` with the bounds found.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import OneToOneFeatureMixin
from sklearn.utils._param_validation import HasMethods

from objpert._data import as_feature_matrix
from objpert._randomness import make_rng
from objpert._validation import check_int, check_unit
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._composition import ComposedCertificate, basic, compose, split_budget
from objpert.exceptions import ParameterError
from objpert.preprocessing._bounded import _BoundsTransform, _check_width, check_bounds
from objpert.preprocessing._parameters import POSITIVE, RANDOM_STATE, Number

__all__ = [
    "MECHANISM",
    "PrivateFeatureBounds",
    "private_quantile",
    "quantile_certificate",
    "quantile_log_weights",
]

#: The name recorded in the certificates of the quantile releases.
MECHANISM = "exponential_quantile"


def quantile_log_weights(
    values: np.ndarray, lo: float, hi: float, q: float, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """(edges, log-weights) of the exponential mechanism for the q-quantile of ``values``
    on [lo, hi]: edges a = e_0 <= ... <= e_{n+1} = b (the sorted values clipped to the
    range) and log w_i = log|I_i| - epsilon |i - q n| / 2 (-inf for an empty interval)."""
    x = np.sort(np.clip(np.asarray(values, dtype=np.float64), lo, hi))
    edges = np.concatenate([[lo], x, [hi]])
    ranks = np.arange(len(x) + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        logw = np.log(np.diff(edges)) - 0.5 * epsilon * np.abs(ranks - q * len(x))
    return edges, logw


def private_quantile(
    values: np.ndarray, lo: float, hi: float, q: float, epsilon: float, rng: np.random.Generator
) -> float:
    """One epsilon-DP draw of the q-quantile of ``values`` in the public range [lo, hi]."""
    edges, logw = quantile_log_weights(values, lo, hi, q, epsilon)
    i = int(np.argmax(logw + rng.gumbel(size=logw.shape)))
    return float(edges[i] + rng.random() * (edges[i + 1] - edges[i]))


def quantile_certificate(
    epsilon: float, n: int, feature: int, q: float, lo: float, hi: float
) -> ReleaseCertificate:
    """The (epsilon, 0) certificate of one quantile release (sensitivity 1, Smith 2011)."""
    return ReleaseCertificate(
        form=MECHANISM,
        epsilon=float(epsilon),
        delta=0.0,
        certified=True,
        iterations=None,
        threshold_iterations=None,
        truncation_mass=0.0,
        divergence_term=0.0,
        sigma=math.nan,  # no Gaussian noise: the exponential mechanism
        truncation="none",
        constants={"n": int(n), "feature": int(feature), "quantile": float(q),
                   "range": [float(lo), float(hi)], "sensitivity": 1.0},
        details={"mechanism": MECHANISM},
    )  # fmt: skip


def _per_release(epsilon: float, delta: float, k: int) -> tuple[float, str, float]:
    """(epsilon_i, method, slack) for k pure releases meeting (epsilon, delta): basic
    composition for delta = 0, else the better of basic and advanced."""
    if delta > 0:
        split = split_budget(epsilon, delta, k)
        return split.epsilon_i, split.method, split.delta_slack
    eps_i = epsilon / k
    while basic([eps_i] * k, [0.0] * k)[0] > epsilon:  # rounding guard
        eps_i = math.nextafter(eps_i, 0.0)
    return eps_i, "basic", 0.0


class PrivateFeatureBounds(OneToOneFeatureMixin, _BoundsTransform):
    """Per-feature bounds from differentially private quantiles, then scaling onto [-1, 1].

    Parameters
    ----------
    epsilon : float > 0
        The budget of the whole fit, split evenly over the 2 d quantile releases.
    delta : float in [0, 1), default=0.0
        0: basic composition, an (epsilon, 0) certificate. Positive: the split of
        :func:`~objpert.accounting._composition.split_budget` (basic or advanced composition,
        whichever gives each release more epsilon).
    quantiles : (q_lo, q_hi), default=(0.01, 0.99)
        The quantiles released per feature (0 <= q_lo < q_hi <= 1).
    ranges : list of (lo, hi), one per feature
        Public coarse ranges the quantiles are searched in (values outside are clipped).
    random_state : None or seed, default=None
        None: cryptographic noise (:func:`objpert._randomness.make_rng`); a seed is for
        testing only (:class:`objpert.exceptions.TestingSeedWarning`).
    accountant : objpert.accounting.PrivacyAccountant or None, default=None
        A shared privacy budget: ``fit`` charges it the 2 d releases before reading the
        data, and raises :class:`objpert.BudgetExceededError` (releasing nothing) when
        they do not fit.

    Attributes
    ----------
    bounds_ : ndarray of shape (n_features, 2)
        The released bounds (the two draws sorted; equal draws widened by one ulp).
    certificate_ : ComposedCertificate
        The composition of the 2 d releases (form ``"exponential_quantile"``).
    row_norm_bound_ : float
        sqrt(n_features).
    seeded_ : bool
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X has string feature names (pandas).

    The bounds are a release: their certificate composes with the model's
    (:func:`objpert.accounting.pipeline_certificate`). n is treated as public, as in
    Watkins & Arora (2026). The mechanism draws floating-point numbers; like every
    floating-point implementation of a continuous mechanism, its privacy holds for the
    ideal real-valued draw.
    """

    _notice = False  # clipping at private quantiles is by design

    _parameter_constraints: ClassVar[dict] = {
        "epsilon": [POSITIVE],
        "delta": [Number(Real, 0, 1, closed="left")],
        "quantiles": ["array-like"],
        "ranges": ["array-like"],
        "random_state": RANDOM_STATE,
        "accountant": [None, HasMethods(["spend"])],
    }

    def __init__(
        self, *, epsilon, ranges, delta=0.0, quantiles=(0.01, 0.99), random_state=None,
        accountant=None,
    ):  # fmt: skip
        self.accountant = accountant
        self.epsilon = epsilon
        self.delta = delta
        self.quantiles = quantiles
        self.ranges = ranges
        self.random_state = random_state

    def _checked(self) -> tuple[float, float, tuple[float, float], np.ndarray]:
        """The parameters validated (``_parameter_constraints``, then what a constraint
        cannot say: finite numbers, no booleans, a pair q_lo < q_hi, ranges lo < hi)."""
        self._validate_params()
        epsilon, delta = float(self.epsilon), float(self.delta)
        qs = self.quantiles
        if len(qs) != 2:
            raise ParameterError(f"quantiles must be a pair (q_lo, q_hi); got {qs!r:.80}")
        q_lo, q_hi = (check_unit(f"quantiles[{k}]", v) for k, v in enumerate(qs))
        if not q_lo < q_hi:
            raise ParameterError(f"quantiles must have q_lo < q_hi; got ({q_lo!r}, {q_hi!r})")
        return epsilon, delta, (q_lo, q_hi), check_bounds(self.ranges, "ranges")

    def fit(self, X: Any, y: Any = None) -> PrivateFeatureBounds:
        """Release two quantiles per feature (2 d exponential-mechanism draws)."""
        epsilon, delta, qs, ranges = self._checked()
        _check_width(self, X, len(ranges), reset=True)
        if self.accountant is not None:  # charged before the data are read (n is public)
            eps_a = _per_release(epsilon, delta, 2 * len(ranges))[0]
            self.accountant.spend(
                [quantile_certificate(eps_a, np.shape(X)[0], j, q, lo, hi)
                 for j, (lo, hi) in enumerate(ranges) for q in qs],
                name=type(self).__name__,
            )  # fmt: skip
        M = as_feature_matrix(X.toarray() if hasattr(X, "toarray") else X)
        n, d = M.shape
        eps_i = _per_release(epsilon, delta, 2 * d)[0]
        rng, seeded = make_rng(self.random_state)
        bounds = np.empty((d, 2))
        for j, (lo, hi) in enumerate(ranges):
            draws = [private_quantile(M[:, j], lo, hi, q, eps_i, rng) for q in qs]
            a, b = sorted(draws)
            bounds[j] = a, (b if b > a else math.nextafter(a, math.inf))
        return self._released(bounds, n, seeded)

    def _released(self, bounds: np.ndarray, n: int, seeded: bool) -> PrivateFeatureBounds:
        """Set the fitted state of a release of ``bounds`` on n rows: the bounds, the
        certificate (recomputed from the public parameters and n), the row-norm bound."""
        epsilon, delta, qs, ranges = self._checked()
        eps_i, method, slack = _per_release(epsilon, delta, 2 * len(ranges))
        certs = [quantile_certificate(eps_i, n, j, q, lo, hi)
                 for j, (lo, hi) in enumerate(ranges) for q in qs]  # fmt: skip
        self.bounds_ = bounds
        self.certificate_: ComposedCertificate = compose(certs, method, delta_slack=slack or None)
        self.row_norm_bound_ = math.sqrt(len(ranges))
        self.seeded_ = seeded
        return self

    def restore(self, bounds: Any, n: int, seeded: bool) -> PrivateFeatureBounds:
        """This transformer as fitted when it released ``bounds`` on n rows (a model
        file's record of the release): the bounds checked against ``ranges``, the
        certificate recomputed from the public parameters, nothing read from any row."""
        self._validate_params()  # a file's parameters, checked as the constructor's
        if not isinstance(seeded, bool):
            raise ParameterError(f"seeded must be true or false; got {seeded!r}")
        if self.random_state is not None and not seeded:
            raise ParameterError(
                "random_state is a seed, but the release is recorded as not seeded"
            )
        ranges = self._checked()[3]
        released = check_bounds(bounds, "bounds")
        if (
            released.shape != ranges.shape
            or np.any(released < ranges[:, :1])
            or np.any(released > ranges[:, 1:])
        ):
            raise ParameterError(
                "the released bounds must hold one (lo, hi) pair per feature within ranges"
            )
        return self._released(released, check_int("n", n, 1), seeded)

    def _width(self) -> int:
        return len(check_bounds(self.ranges, "ranges"))
