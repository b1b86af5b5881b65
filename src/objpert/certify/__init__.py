"""Certificates from public constants: Watkins & Arora (2026) and calibration.

Pure mathematics: no data, no randomness. See the submodules for each theorem:
:mod:`.theorem41` (Theorem 4.1), :mod:`.theorem_c13` (Theorem C.13 and its limit),
:mod:`.calibration`, :mod:`.utility`, :mod:`.peers` (the peer mechanisms) and :mod:`.qop`
(QOP's Wishart calibration). ``exact`` is the former name of :mod:`.theorem_c13`, kept as
an alias of it.
"""

from objpert.certify import gaussian, theorem41, theorem_c13, utility
from objpert.certify.calibration import Plan, calibrate, corollary_413, rederive_plan, tight
from objpert.certify.certificate import FORMS, Certificate
from objpert.certify.constants import ProblemConstants, problem
from objpert.certify.search import min_iterations

#: Former name of :mod:`objpert.certify.theorem_c13` (``import objpert.certify.exact``
#: loads a deprecated shim that warns).
exact = theorem_c13

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
    "theorem_c13",
    "tight",
    "utility",
]
