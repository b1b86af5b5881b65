"""The names of the peer methods, of their noise calibrations and of their accountants:
each option names what it computes."""

from __future__ import annotations

from objpert.mechanisms._certificates.rules import choice

__all__ = [
    "ACCOUNTANTS",
    "GAUSSIAN_CALIBRATIONS",
    "LOP_ACCOUNTANTS",
    "METHODS",
    "accountant",
    "gaussian_calibration",
    "lop_accountant",
]

#: The peer mechanisms, each with one planner and one certificate.
METHODS = ("lop", "lop_clip", "amp", "output_perturbation", "noisy_gd")

#: How a published Gaussian noise is calibrated: ``analytic``, the smallest scale whose
#: certificate meets the target, found numerically (the analytic Gaussian mechanism of
#: Balle & Wang 2018, Theorem 8, applied to the certificate in use); ``classical``, the
#: closed form sigma = G sqrt(2 log(1.25/delta)) / epsilon (Dwork & Roth 2014, Theorem A.1).
GAUSSIAN_CALIBRATIONS = ("analytic", "classical")

#: Noisy GD's accountants for its T discrete Gaussian steps (T rho-zCDP): ``zcdp``,
#: delta at epsilon by Canonne, Kamath & Steinke (2020), Corollary 13; ``rdp``, epsilon at
#: delta by their Proposition 12 (the Renyi divergences of the zCDP bound). A privacy-loss
#: distribution of the discrete noise is not implemented, so no accountant is named after
#: one.
ACCOUNTANTS = ("zcdp", "rdp")

#: Accountants of the objective noise of LOP, LOP-Clip and AMP (the exact minimiser):
#: ``profile``, its privacy profile (Redberg, Koskela & Wang 2023; :mod:`.redberg`);
#: ``kifer``, the closed form of Kifer, Smith & Thakurta (2012), Theorem 2 (:mod:`.kifer`),
#: at the replace-one sensitivity 2 L1 zeta, with its ridge floor
#: mu >= 2 L2 zeta^2 / (n epsilon); ``tightest``, a planner's choice
#: of whichever of the two needs the smaller sigma (a plan records the one it used).
LOP_ACCOUNTANTS = ("profile", "kifer", "tightest")


def _checked(kind: str, value: str, names: tuple[str, ...]) -> str:
    """``value`` if it is one of ``names`` (ParameterError otherwise)."""
    return choice(names)(kind, value)


def gaussian_calibration(value: str) -> str:
    """``value`` as one of :data:`GAUSSIAN_CALIBRATIONS`."""
    return _checked("calibration", value, GAUSSIAN_CALIBRATIONS)


def accountant(value: str) -> str:
    """``value`` as one of :data:`ACCOUNTANTS`, noisy GD's."""
    return _checked("accountant", value, ACCOUNTANTS)


def lop_accountant(value: str) -> str:
    """``value`` as one of :data:`LOP_ACCOUNTANTS`."""
    return _checked("accountant", value, LOP_ACCOUNTANTS)
