"""objpert: differentially private training by objective perturbation.

The certificate layer (:mod:`objpert.certify`) computes (epsilon, delta) and
calibrates noise, regularisation and iteration counts from public constants,
following Watkins & Arora (2026), "Gradient descent on perturbed objectives".
:func:`plan` plans a release of any registered mechanism; every error and warning class
(:mod:`objpert.exceptions`) is exported here.
"""

from objpert import _forksafe  # noqa: F401 (installs the fork handlers)
from objpert import exceptions as _exceptions
from objpert._losses import get_loss, register_loss
from objpert.accounting._certificate import Certificate
from objpert.accounting._plan import Plan, PublicConstants, Target
from objpert.certify import problem
from objpert.exceptions import *  # noqa: F403 (every error and warning class)

__version__ = "0.1.0"

_LAZY = {
    "PrivateLogisticRegression": "objpert.estimators",
    "PrivateRobustRegression": "objpert.estimators",
    "save": "objpert.persistence",
    "load": "objpert.persistence",
    "perturbed_gradient_descent": "objpert.mechanisms",
    "Release": "objpert.mechanisms",
    "PrivacyAccountant": "objpert.accounting",
    "plan": "objpert.mechanisms._registry",
}


def __getattr__(name: str):
    """Estimators and persistence load scikit-learn: import them on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'objpert' has no attribute {name!r}")


__all__ = [
    *_exceptions.__all__,
    *_LAZY,
    "Certificate",
    "Plan",
    "PublicConstants",
    "Target",
    "__version__",
    "get_loss",
    "problem",
    "register_loss",
]
