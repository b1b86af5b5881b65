"""Certificates from public constants: Watkins & Arora (2026) and calibration.

Pure mathematics: no data, no randomness. See the submodules for each theorem:
:mod:`.theorem41` (Theorem 4.1), :mod:`.theorem_c13` (Theorem C.13 and its limit),
:mod:`.calibration`, :mod:`.utility`, :mod:`.peers` (the peer mechanisms) and :mod:`.qop`
(QOP's Wishart calibration).
"""

from objpert.certify import gaussian, theorem41, theorem_c13, utility
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
    "gaussian",
    "min_iterations",
    "problem",
    "rederive_plan",
    "theorem41",
    "theorem_c13",
    "tight",
    "utility",
]
