"""objpert: differentially private training by objective perturbation.

The certificate layer (:mod:`objpert.certify`) computes (epsilon, delta) and
calibrates noise, regularisation and iteration counts from public constants,
following Watkins & Arora (2026), "Gradient descent on perturbed objectives".
"""

from objpert.certify import Certificate, Plan, calibrate, problem
from objpert.errors import ObjpertError, ParameterError, UnreachableTargetError
from objpert.losses import get_loss

__version__ = "0.1.0"

__all__ = [
    "Certificate",
    "ObjpertError",
    "ParameterError",
    "Plan",
    "UnreachableTargetError",
    "__version__",
    "calibrate",
    "get_loss",
    "problem",
]
