"""Watkins & Arora (2026): the single-release theorems and their calibration.

Pure mathematics of public constants: no data, no randomness. Theorem 4.1
(:mod:`objpert.certify.theorem41`), Theorem C.13 and its limit
(:mod:`objpert.certify.theorem_c13`), the utility bounds (:mod:`objpert.certify.utility`),
the whole privacy profile (:func:`watkins_arora_profile`), the calibrations
(:func:`tight`, :func:`corollary_413`) and the re-derivation of a plan
(:func:`rederive_plan`). The neighbouring relation is replace-one with n public
(:data:`REPLACE_ONE`); every sensitivity is derived from it (:func:`replace_one_sensitivity`).
"""

from objpert.certify import _profile  # noqa: F401 (registers the profile with accounting)
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _utility as utility
from objpert.certify._calibration import calibrate, corollary_413, rederive_plan, tight
from objpert.certify._constants import ProblemConstants, problem
from objpert.certify._knee import Knee, knee
from objpert.certify._neighbours import REPLACE_ONE, replace_one_sensitivity
from objpert.certify._plan import CALIBRATIONS, WatkinsAroraPlan
from objpert.certify._profile import limit_profile, watkins_arora_profile
from objpert.certify._search import min_iterations

__all__ = [
    "CALIBRATIONS",
    "REPLACE_ONE",
    "Knee",
    "ProblemConstants",
    "WatkinsAroraPlan",
    "calibrate",
    "corollary_413",
    "knee",
    "limit_profile",
    "min_iterations",
    "problem",
    "rederive_plan",
    "replace_one_sensitivity",
    "theorem41",
    "theorem_c13",
    "tight",
    "utility",
    "watkins_arora_profile",
]
