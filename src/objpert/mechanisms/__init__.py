"""Mechanisms: draw the noise once, run the solver exactly as the plan says, release."""

from objpert.mechanisms import builtin  # noqa: F401  (registers the shipped mechanisms)
from objpert.mechanisms.peers import (
    amp_release,
    lop_clip_release,
    lop_release,
    noisy_gd_release,
    output_perturbation_release,
)
from objpert.mechanisms.perturbed_gd import Release, perturbed_gradient_descent
from objpert.mechanisms.qop import qop_release

__all__ = [
    "Release",
    "amp_release",
    "lop_clip_release",
    "lop_release",
    "noisy_gd_release",
    "output_perturbation_release",
    "perturbed_gradient_descent",
    "qop_release",
]
