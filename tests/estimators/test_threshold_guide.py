"""The guide's decision threshold (docs/guide.md, "A rare class: the decision threshold"):
chosen on held-out rows and applied by scikit-learn's FixedThresholdClassifier around the
frozen private model, it is post-processing: the model and its certificate are unchanged,
and on a 19%-positive label the threshold lifts balanced accuracy above the default's."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from sklearn.model_selection import FixedThresholdClassifier

from objpert import PrivateLogisticRegression
from objpert.exceptions import TestingSeedWarning


def test_a_threshold_chosen_on_held_out_rows_is_post_processing():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (3000, 5)) / 3
    y = (X[:, 0] + 0.2 * rng.normal(size=3000) > 0.25).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TestingSeedWarning)
        model = PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1], random_state=0
        ).fit(X[:2000], y[:2000])
    coef, cert = model.coef_.copy(), model.certificate_
    X_holdout, y_holdout = X[2000:2500], y[2000:2500]
    scores = model.decision_function(X_holdout)
    assert roc_auc_score(y_holdout, scores) > 0.7
    cuts = np.unique(scores)
    best = cuts[np.argmax([balanced_accuracy_score(y_holdout, scores >= t) for t in cuts])]
    clf = FixedThresholdClassifier(
        FrozenEstimator(model), threshold=best, response_method="decision_function"
    )
    X_new, y_new = X[2500:], y[2500:]
    clf.fit(X_holdout, y_holdout)  # frozen: fits nothing
    tuned = balanced_accuracy_score(y_new, clf.predict(X_new))
    default = balanced_accuracy_score(y_new, model.predict(X_new))
    assert tuned > default + 0.1
    np.testing.assert_array_equal(model.coef_, coef)
    assert model.certificate_ == cert
