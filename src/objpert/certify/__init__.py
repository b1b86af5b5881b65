"""Certificates from public constants: Watkins & Arora (2026) and calibration.

Pure mathematics: no data, no randomness. See the submodules for each theorem:
:mod:`.theorem41` (Theorem 4.1), :mod:`.theorem_c13` (Theorem C.13 and its limit),
:mod:`.calibration`, :mod:`.utility`, :mod:`.peers` (the peer mechanisms) and :mod:`.qop`
(QOP's Wishart calibration). :mod:`.neighbours` declares the neighbouring relation every
certificate is about (replace-one, n public) and the sensitivity it gives a per-row bound.
"""

from objpert.certify import neighbours, profile, theorem41, theorem_c13, utility
from objpert.certify.calibration import WatkinsAroraPlan, corollary_413, rederive_plan, tight
from objpert.certify.constants import ProblemConstants, problem
from objpert.certify.neighbours import REPLACE_ONE, replace_one_sensitivity
from objpert.certify.search import min_iterations

__all__ = [
    "REPLACE_ONE",
    "ProblemConstants",
    "WatkinsAroraPlan",
    "corollary_413",
    "min_iterations",
    "neighbours",
    "problem",
    "profile",
    "rederive_plan",
    "replace_one_sensitivity",
    "theorem41",
    "theorem_c13",
    "tight",
    "utility",
]
