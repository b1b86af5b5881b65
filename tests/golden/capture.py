"""Capture the plans, certificates and releases of fixed seeds, to check that a reshaping of
the code changes no number (``python tests/golden/capture.py > tests/golden/releases.json``).

Every float is written as ``float.hex`` (bit-exact). The file was written by the code
before the one-shape redesign of plans and certificates; ``tests/test_golden.py`` recomputes
every entry with the current code and compares bits.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import numpy as np


def _hex(value: Any) -> Any:
    arr = np.asarray(value, dtype=float).ravel()
    return [float(v).hex() for v in arr]


def _data(n: int, d: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    w = rng.normal(size=(d, k))
    y = np.argmax(X @ w + 0.5 * rng.normal(size=(n, k)), axis=1) if k > 1 else X @ w[:, 0]
    return X, y


#: Planner options the stored plans were captured with, where the registry's defaults are
#: others now (Watkins & Arora: the tight calibration's own defaults, W = 1, at most 100,000
#: steps, the population bound; ``objpert.plan`` now defaults to the estimators' settings).
PINNED: dict[str, dict[str, Any]] = {
    "watkins_arora": {"comparator_norm": 1.0, "max_iter": 100_000, "objective": "population"},
}


def registry_cases() -> dict[str, Any]:
    """One plan of every registered mechanism from public constants, and one release of it."""
    from objpert.mechanisms import _registry as registry

    out: dict[str, Any] = {}
    for name in (*registry.names(), *registry.names(multiclass=True)):
        mech = registry.get(name)
        loss = mech.audit_loss
        kw: dict[str, Any] = {"n_classes": 3} if mech.multiclass else {}
        kw.update(PINNED.get(name, {}))
        p = registry.plan(name, loss=loss, n=400, d=4, zeta=1.0, epsilon=1.0, delta=1e-6, **kw)
        cert = mech.certificate(p)
        X, y = _data(400, 4, 3 if mech.multiclass else 2, 0)
        X = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
        if loss == "logistic":
            y = np.where(y == 1, 1.0, -1.0)
        elif loss == "squared":
            y = np.clip(X @ np.ones(4) / 4, -1, 1)
        release = mech.release(X, y, p, rng=np.random.default_rng(7))
        weights = getattr(release, "weights", release)
        out[name] = {
            "epsilon": _hex(cert.epsilon),
            "delta": _hex(cert.delta),
            "weights": _hex(weights),
        }
    return out


def estimator_cases() -> dict[str, Any]:
    """The estimators' releases, plans and certificates for fixed seeds."""
    from objpert import PrivateLogisticRegression, PrivateRobustRegression

    cases = {
        "binary": (PrivateLogisticRegression, {"classes": [0, 1], "data_norm": 1.0}, 2),
        "binary_eps3": (
            PrivateLogisticRegression,
            {"classes": [0, 1], "data_norm": 1.0, "epsilon": 3.0},
            2,
        ),
        "binary_bounds": (
            PrivateLogisticRegression,
            {"classes": [0, 1], "feature_bounds": [(-1, 1)] * 5, "epsilon": 0.3},
            2,
        ),
        "ovr3": (
            PrivateLogisticRegression,
            {"classes": [0, 1, 2], "data_norm": 1.0, "multi_class": "ovr"},
            3,
        ),
        "ovr3_split": (
            PrivateLogisticRegression,
            {"classes": [0, 1, 2], "data_norm": 1.0, "composition": "split"},
            3,
        ),
        "multinomial4": (
            PrivateLogisticRegression,
            {"classes": [0, 1, 2, 3], "data_norm": 1.0},
            4,
        ),
        "corollary413": (
            PrivateLogisticRegression,
            {"classes": [0, 1], "data_norm": 1.0, "calibration": "corollary413", "epsilon": 0.5},
            2,
        ),
        "robust": (PrivateRobustRegression, {"data_norm": 1.0}, 1),
    }
    out: dict[str, Any] = {}
    for name, (cls, params, k) in cases.items():
        X, y = _data(600, 5, k, 1)
        X = X / np.sqrt(5)
        if k == 1:
            y = np.clip(y / 3, -1, 1)
        model = cls(random_state=3, **params).fit(X, y)
        cert = model.certificate_
        out[name] = {
            "coef": _hex(model.coef_),
            "intercept": _hex(model.intercept_),
            "epsilon": _hex(cert.epsilon),
            "delta": _hex(cert.delta),
        }
    return out


def main() -> None:
    warnings.simplefilter("ignore")
    json.dump(
        {"registry": registry_cases(), "estimators": estimator_cases()},
        sys.stdout,
        indent=1,
        sort_keys=True,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
