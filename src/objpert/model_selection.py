"""Private model selection: choose hyperparameters on private data under one certificate.

:class:`PrivateGridSearch` is used like scikit-learn's ``GridSearchCV`` but its choice is
differentially private, by the parameter-tuning procedure of Chaudhuri, Monteleoni &
Sarwate (2011, Section 6): the rows are split at random (independently of their values)
into m + 1 parts of public sizes; candidate i is trained on part i by its own private
release; the last part scores every candidate, and the exponential mechanism
(McSherry & Talwar 2007) picks one.

Why the choice is covered. Replace one row. If it lies in training part j, only candidate
j's release sees a change, and the selected model is a post-processing of the m releases
and the untouched scoring part: (epsilon_j, delta_j). If it lies in the scoring part, no
release changes and the choice is the exponential mechanism's: epsilon_sel. The whole
output (the choice and the chosen model) is therefore (max(epsilon_j, epsilon_sel),
max delta_j)-DP (parallel composition).

What it costs. Each candidate sees n / (m + 1) rows instead of n, so its noise (which
scales as 1/n) grows by a factor of about m + 1 against selecting on public data. Scores
of the candidates are statistics of the private data: they are neither stored nor shown.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils.validation import check_is_fitted

from objpert.certify.certificate import budget_text
from objpert.data import is_dask
from objpert.exceptions import DataError, ParameterError, TestingSeedWarning
from objpert.mechanisms.exponential import exponential_mechanism
from objpert.randomness import make_rng
from objpert.validation import check_positive

__all__ = ["PrivateGridSearch", "SelectionCertificate", "split_sizes"]

METHOD = "parallel selection (Chaudhuri, Monteleoni & Sarwate 2011, Section 6)"


@dataclass(frozen=True)
class SelectionCertificate:
    """The guarantee of a private selection: the chosen index and the chosen model.

    ``epsilon = max(max_i epsilon_i, selection_epsilon)``, ``delta = max_i delta_i`` (see
    the module docstring); ``candidates`` holds each candidate's own certificate.
    """

    method: str
    epsilon: float
    delta: float
    selection_epsilon: float
    candidates: tuple[Any, ...]
    part_sizes: tuple[int, ...]
    not_public: tuple[str, ...] = ()

    @property
    def certified(self) -> bool:
        return all(c.certified for c in self.candidates) and self.delta < 1.0

    @property
    def covers_structure(self) -> bool:
        return not self.not_public

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "selection_epsilon": self.selection_epsilon,
            "certified": self.certified,
            "part_sizes": list(self.part_sizes),
            "candidates": [c.to_dict() for c in self.candidates],
            "not_public": list(self.not_public),
        }

    def summary(self) -> str:
        """What :func:`str` prints: the guarantee in a few lines."""
        return str(self)

    def __repr__(self) -> str:
        """One line: the selection and its totals (``to_dict`` has every candidate)."""
        return (
            f"SelectionCertificate(candidates={len(self.candidates)}, epsilon={self.epsilon!r}, "
            f"delta={self.delta!r}, certified={self.certified})"
        )

    def __str__(self) -> str:
        status = "certified" if self.certified else "NOT certified"
        lines = [
            f"{budget_text(self.epsilon, self.delta)}, {status} (private selection among "
            f"{len(self.candidates)} candidates, each on its own part of the rows)",
            f"  {self.method}; selection epsilon {self.selection_epsilon:.4g}",
        ]
        if self.not_public:
            lines.append(f"  not covered (read from the data): {', '.join(self.not_public)}")
        return "\n".join(lines)


def split_sizes(n: int, parts: int) -> tuple[int, ...]:
    """Sizes of ``parts`` near-equal parts of n rows (a function of public n only)."""
    base, extra = divmod(int(n), int(parts))
    return tuple(base + (1 if i < extra else 0) for i in range(parts))


class PrivateGridSearch(MetaEstimatorMixin, BaseEstimator):
    """Private selection among the candidates of ``param_grid`` (one certificate).

    Parameters
    ----------
    estimator : PrivateLogisticRegression or PrivateRobustRegression
        The private estimator; each candidate is a clone with one point of the grid set.
    param_grid : dict or list of dicts
        As for scikit-learn's ``ParameterGrid`` (public hyperparameters only).
    selection_epsilon : float > 0 or None, default=None
        Epsilon of the exponential mechanism that chooses; None: the largest epsilon of the
        candidates (the choice then adds nothing to the certificate's epsilon).
    score_bound : float > 0, default=1.0
        Regression only: squared errors are clipped at ``score_bound**2`` (public), the
        sensitivity of the score. Classification scores by the count of correct
        predictions (sensitivity 1).
    random_state : None or int, default=None
        The split and the exponential mechanism's draw: None draws from OS entropy; a seed
        is for tests only (warns). Each candidate's noise follows its own random_state.

    Attributes
    ----------
    best_estimator_, best_params_, best_index_ : the chosen candidate.
    certificate_ : :class:`SelectionCertificate` covering the choice and the chosen model.
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        selection_epsilon: float | None = None,
        score_bound: float = 1.0,
        random_state: Any = None,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.selection_epsilon = selection_epsilon
        self.score_bound = score_bound
        self.random_state = random_state

    def _candidates(self) -> tuple[list[dict], list[Any]]:
        if not hasattr(self.estimator, "_public_constants"):
            raise ParameterError(
                "estimator must be an objpert private estimator (PrivateLogisticRegression or "
                f"PrivateRobustRegression); got {type(self.estimator).__name__}"
            )
        try:
            grid = list(ParameterGrid(self.param_grid))
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"param_grid: {exc}") from None
        if not grid:
            raise ParameterError("param_grid has no candidates")
        models = [clone(self.estimator).set_params(**params) for params in grid]
        for model in models:
            model._public_constants()  # every candidate's public settings, before any data
        return grid, models

    def fit(self, X: Any, y: Any) -> PrivateGridSearch:
        grid, models = self._candidates()
        settings = [m._public_constants() for m in models]
        eps_sel = (
            max(s.epsilon for s in settings)
            if self.selection_epsilon is None
            else check_positive("selection_epsilon", self.selection_epsilon)
        )
        classify = models[0]._loss == "logistic"
        bound = check_positive("score_bound", self.score_bound)
        if is_dask(X) or is_dask(y):
            raise DataError("PrivateGridSearch needs in-memory data (compute the Dask input)")
        n = _rows(X)
        if y is None or _rows(y) != n:
            raise DataError("y must have one label per row of X")
        sizes = split_sizes(n, len(models) + 1)
        if min(sizes) < 2:
            raise DataError(
                f"{len(models)} candidates need at least {2 * (len(models) + 1)} rows "
                f"(2 per part); got {n}"
            )
        generator, _ = make_rng(self.random_state)
        order = generator.permutation(n)  # independent of the rows' values
        bounds = np.cumsum((0, *sizes))
        parts = [order[bounds[i] : bounds[i + 1]] for i in range(len(sizes))]
        y = np.asarray(y)
        for model, part in zip(models, parts[:-1], strict=True):
            model.fit(_take(X, part), y[part])
        val = parts[-1]
        Xv, yv = _take(X, val), y[val]
        if classify:
            utilities = [float(np.sum(m.predict(Xv) == yv)) for m in models]
            sensitivity = 1.0
        else:
            clip = bound * bound
            utilities = [
                -float(np.sum(np.minimum((np.asarray(m.predict(Xv)) - yv) ** 2, clip)))
                for m in models
            ]
            sensitivity = clip
        with warnings.catch_warnings():  # the generator is the search's own: a seed (if
            warnings.simplefilter("ignore", TestingSeedWarning)  # any) was warned of above
            index = exponential_mechanism(utilities, eps_sel, sensitivity, generator)
        del utilities  # statistics of the private rows: not kept
        certs = tuple(m.certificate_ for m in models)
        not_public = tuple(dict.fromkeys(r for c in certs for r in c.not_public))
        self.certificate_ = SelectionCertificate(
            METHOD,
            max(max(c.epsilon for c in certs), eps_sel),
            max(c.delta for c in certs),
            eps_sel,
            certs,
            sizes,
            not_public,
        )
        self.best_index_ = index
        self.best_params_ = grid[index]
        self.best_estimator_ = models[index]
        self.n_candidates_ = len(models)
        self.n_features_in_ = self.best_estimator_.n_features_in_
        if hasattr(self.best_estimator_, "classes_"):
            self.classes_ = self.best_estimator_.classes_
        return self

    def _best(self) -> Any:
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_

    def predict(self, X: Any) -> Any:
        return self._best().predict(X)

    def predict_proba(self, X: Any) -> Any:
        return self._best().predict_proba(X)

    def decision_function(self, X: Any) -> Any:
        return self._best().decision_function(X)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        return self._best().score(X, y, sample_weight=sample_weight)


def _rows(a: Any) -> int:
    shape = getattr(a, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    try:
        return len(a)
    except TypeError:
        raise DataError(f"expected an array of rows; got {type(a).__name__}") from None


def _take(X: Any, rows: np.ndarray) -> Any:
    if hasattr(X, "iloc"):
        return X.iloc[rows]
    if hasattr(X, "tocsr"):
        return X.tocsr()[rows]
    return np.asarray(X)[rows]
