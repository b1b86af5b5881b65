"""Certificates from public constants: Watkins & Arora (2026) and calibration.

Pure mathematics: no data, no randomness. See the submodules for each theorem.
"""

from objpert.certify import exact, gaussian, theorem41, utility
from objpert.certify.calibration import Plan, calibrate, corollary_413, rederive_plan, tight
from objpert.certify.certificate import FORMS, Certificate
from objpert.certify.constants import ProblemConstants, problem
from objpert.certify.search import min_iterations

__all__ = [
    "FORMS",
    "Certificate",
    "Plan",
    "ProblemConstants",
    "calibrate",
    "corollary_413",
    "exact",
    "gaussian",
    "min_iterations",
    "problem",
    "rederive_plan",
    "theorem41",
    "tight",
    "utility",
]
