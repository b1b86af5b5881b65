"""Mechanisms: draw the noise once, run the solver exactly as the plan says, release."""

from objpert.mechanisms.perturbed_gd import PrivacyError, Release, perturbed_gradient_descent

__all__ = ["PrivacyError", "Release", "perturbed_gradient_descent"]
