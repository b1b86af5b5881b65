"""Mechanisms: draw the noise once, run exactly what the plan says, release.

Every mechanism is one entry of the registry (:func:`names`, :func:`get`,
:func:`register`, :class:`Mechanism`); ``objpert.plan`` plans any of them from public
constants. Each has its plan type, all :class:`objpert.Plan`; the releases return a
:class:`Release`.
"""

from objpert.mechanisms import _builtin  # noqa: F401  (registers the shipped mechanisms)
from objpert.mechanisms._certificates import (
    AMPPlan,
    LOPClipPlan,
    LOPPlan,
    MultinomialPlan,
    NoisyGDPlan,
    OutputPerturbationPlan,
    PeerPlan,
)
from objpert.mechanisms._certificates.dp_newton import DPNewtonPlan
from objpert.mechanisms._certificates.dp_sgd import DPSGDPlan
from objpert.mechanisms._certificates.qop import QOPCertificate, QOPPlan
from objpert.mechanisms._peers import (
    amp_release,
    lop_clip_release,
    lop_release,
    noisy_gd_release,
    output_perturbation_release,
)
from objpert.mechanisms._perturbed_gd import Release, perturbed_gradient_descent
from objpert.mechanisms._qop import qop_release
from objpert.mechanisms._registry import Mechanism, get, names, register

__all__ = [
    "AMPPlan",
    "DPNewtonPlan",
    "DPSGDPlan",
    "LOPClipPlan",
    "LOPPlan",
    "Mechanism",
    "MultinomialPlan",
    "NoisyGDPlan",
    "OutputPerturbationPlan",
    "PeerPlan",
    "QOPCertificate",
    "QOPPlan",
    "Release",
    "amp_release",
    "get",
    "lop_clip_release",
    "lop_release",
    "names",
    "noisy_gd_release",
    "output_perturbation_release",
    "perturbed_gradient_descent",
    "qop_release",
    "register",
]
