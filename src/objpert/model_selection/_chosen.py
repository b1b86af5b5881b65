"""What a fitted search exposes of the model it chose: scikit-learn's conventions for a
meta-estimator (as ``GridSearchCV``): the estimator type and tags of the estimator it
searches, the prediction methods that model has (and only those), its fitted attributes."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from sklearn.utils import get_tags
from sklearn.utils._available_if import available_if
from sklearn.utils.validation import check_is_fitted

__all__ = ["ChosenModel"]


def _chosen_has(attr: str) -> Callable[[Any], bool]:
    """Whether the chosen model (before fit: the estimator searched) has ``attr``."""

    def check(search: Any) -> bool:
        model = getattr(search, "best_estimator_", None)
        return hasattr(search.estimator if model is None else model, attr)

    return check


class ChosenModel:
    """Mixin of a search with ``estimator`` and, once fitted, ``best_estimator_``."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]
        searched = get_tags(self.estimator)  # type: ignore[attr-defined]
        tags.estimator_type = searched.estimator_type
        tags.classifier_tags = copy.deepcopy(searched.classifier_tags)
        tags.regressor_tags = copy.deepcopy(searched.regressor_tags)
        tags.input_tags.sparse = searched.input_tags.sparse
        return tags

    def _keep_chosen(self, chosen: Any) -> None:
        """The chosen model's fitted attributes on the search."""
        self.n_features_in_ = chosen.n_features_in_
        for name in ("classes_", "feature_names_in_"):
            if hasattr(chosen, name):
                setattr(self, name, getattr(chosen, name))

    def _best(self) -> Any:
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_  # type: ignore[attr-defined]

    def predict(self, X: Any) -> Any:
        return self._best().predict(X)

    @available_if(_chosen_has("predict_proba"))
    def predict_proba(self, X: Any) -> Any:
        return self._best().predict_proba(X)

    @available_if(_chosen_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> Any:
        return self._best().predict_log_proba(X)

    @available_if(_chosen_has("decision_function"))
    def decision_function(self, X: Any) -> Any:
        return self._best().decision_function(X)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        return self._best().score(X, y, sample_weight=sample_weight)
