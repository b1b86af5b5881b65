"""The names of the peer methods, of their noise calibrations and of their accountants.

Each option names what it computes. Plans written before the present names carried
``"exact"`` for two different things; for one release it is still accepted as an alias
(passed to a planner or an accountant it warns, DeprecationWarning; read from a stored
plan it is replaced silently) and normalised to the name of what it computed:

* the calibration of published Gaussian noise (AMP's output noise, output
  perturbation): ``"exact"`` -> ``"analytic"``;
* noisy GD's accountant for its discrete noise: ``"exact"`` -> ``"zcdp"``;
* the accountant of continuous Gaussian noise (:mod:`.noisy_gd_accounting`):
  ``"exact"`` -> ``"gdp"``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

from objpert.exceptions import ParameterError

__all__ = [
    "ACCOUNTANTS",
    "ACCOUNTANT_ALIASES",
    "CALIBRATION_ALIASES",
    "CONTINUOUS_ACCOUNTANTS",
    "CONTINUOUS_ACCOUNTANT_ALIASES",
    "GAUSSIAN_CALIBRATIONS",
    "LOP_ACCOUNTANTS",
    "METHODS",
    "accountant",
    "continuous_accountant",
    "gaussian_calibration",
    "lop_accountant",
    "plan_calibration",
]

#: The peer mechanisms, each with one planner and one certificate.
METHODS = ("lop", "lop_clip", "amp", "output_perturbation", "noisy_gd")

#: How a published Gaussian noise is calibrated: ``analytic``, the smallest scale whose
#: certificate meets the target, found numerically (the analytic Gaussian mechanism of
#: Balle & Wang 2018, Theorem 8, applied to the certificate in use); ``classical``, the
#: closed form sigma = G sqrt(2 log(1.25/delta)) / epsilon (Dwork & Roth 2014, Theorem A.1).
GAUSSIAN_CALIBRATIONS = ("analytic", "classical")
#: Old names of the Gaussian calibrations.
CALIBRATION_ALIASES: Mapping[str, str] = {"exact": "analytic"}

#: Noisy GD's accountants for its T discrete Gaussian steps (T rho-zCDP): ``zcdp``,
#: delta at epsilon by Canonne, Kamath & Steinke (2020), Corollary 13; ``rdp`` and ``pld``,
#: epsilon at delta by their Proposition 12 (``pld`` certifies as ``rdp``: a PLD of the
#: discrete noise is not implemented).
ACCOUNTANTS = ("zcdp", "rdp", "pld")
#: Old names of noisy GD's accountants.
ACCOUNTANT_ALIASES: Mapping[str, str] = {"exact": "zcdp"}

#: Accountants of T composed continuous Gaussian mechanisms: ``gdp``, Gaussian DP
#: (Dong, Roth & Su 2022, Corollary 3.3; exact); ``rdp``, Renyi DP (Mironov 2017);
#: ``pld``, dp-accounting's privacy loss distributions.
CONTINUOUS_ACCOUNTANTS = ("gdp", "rdp", "pld")
#: Old names of the continuous accountants.
CONTINUOUS_ACCOUNTANT_ALIASES: Mapping[str, str] = {"exact": "gdp"}


#: Accountants of the objective noise of LOP, LOP-Clip and AMP (the exact minimiser):
#: ``profile``, its privacy profile (Redberg, Koskela & Wang 2023; :mod:`.redberg`);
#: ``kifer``, the closed form of Kifer, Smith & Thakurta (2012), Theorem 2 (:mod:`.kifer`),
#: at the replace-one sensitivity 2 L1 zeta, with its ridge floor
#: mu >= 2 L2 zeta^2 / (n epsilon); ``tightest``, a planner's choice
#: of whichever of the two needs the smaller sigma (a plan records the one it used).
LOP_ACCOUNTANTS = ("profile", "kifer", "tightest")


def _checked(kind: str, value: str, names: tuple[str, ...], aliases: Mapping[str, str]) -> str:
    """``value`` if it is one of ``names``; an old name in ``aliases`` is replaced, with a
    DeprecationWarning pointing at the caller of the public function."""
    if isinstance(value, str) and value in aliases:
        warnings.warn(
            f"{kind}={value!r} is deprecated; use {kind}={aliases[value]!r}",
            DeprecationWarning,
            stacklevel=4,
        )
        return aliases[value]
    if value not in names:
        raise ParameterError(f"{kind} must be one of {names}; got {value!r}")
    return value


def gaussian_calibration(value: str) -> str:
    """``value`` as one of :data:`GAUSSIAN_CALIBRATIONS` (old names accepted)."""
    return _checked("calibration", value, GAUSSIAN_CALIBRATIONS, CALIBRATION_ALIASES)


def accountant(value: str) -> str:
    """``value`` as one of :data:`ACCOUNTANTS`, noisy GD's (old names accepted)."""
    return _checked("accountant", value, ACCOUNTANTS, ACCOUNTANT_ALIASES)


def continuous_accountant(value: str) -> str:
    """``value`` as one of :data:`CONTINUOUS_ACCOUNTANTS` (old names accepted)."""
    return _checked("accountant", value, CONTINUOUS_ACCOUNTANTS, CONTINUOUS_ACCOUNTANT_ALIASES)


def lop_accountant(value: str) -> str:
    """``value`` as one of :data:`LOP_ACCOUNTANTS`."""
    return _checked("accountant", value, LOP_ACCOUNTANTS, {})


def plan_calibration(method: str, value: str) -> str:
    """A plan's ``calibration`` field with an old name replaced by the current one: the
    Gaussian calibration of ``amp`` and ``output_perturbation``, the accountant of
    ``noisy_gd``. Anything else is returned unchanged (the certificate checks it)."""
    if not isinstance(value, str):
        return value
    if method in ("amp", "output_perturbation"):
        return CALIBRATION_ALIASES.get(value, value)
    if method == "noisy_gd":
        return ACCOUNTANT_ALIASES.get(value, value)
    return value
