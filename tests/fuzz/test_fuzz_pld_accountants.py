"""Fuzz: the peers' PLD accountants (dp-accounting's privacy-loss distributions): noisy
gradient descent's ``pld_epsilon`` and the ``pld`` accountant, DP-SGD's
``subsampled_gaussian_epsilon``.
Their PLD sizes follow from the arguments, so a PLD too large to build is refused
(:mod:`objpert.accounting._pld_grid`) instead of allocated."""

from __future__ import annotations

import math

import pytest
from fuzz_support import count, draw_checked, fuzz, outcome, real
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("dp_accounting")

from objpert.accounting import _gaussian_steps as gsteps
from objpert.accounting._gaussian_steps import subsampled_gaussian_epsilon

DISC = real(1e-4, 1e-2, extra=(1e-4,))


def _check_epsilon(val):
    assert val >= 0.0 and not math.isnan(val), val


@fuzz(12)
@given(data=st.data())
def test_noisy_gd_pld_accountant(data):
    kw = draw_checked(
        data, delta=real(1e-12, 0.5), iterations=count(1, 10**4), z=real(0.3, 1e3),
        discretization=DISC,
    )  # fmt: skip
    ok, val = outcome(gsteps.pld_epsilon, kw["delta"], kw["iterations"], kw["z"],
                      kw["discretization"])  # fmt: skip
    if ok:
        _check_epsilon(val)
    ok, val = outcome(gsteps.noisy_gd_epsilon, kw["delta"], kw["iterations"], kw["z"], "pld")
    if ok:
        _check_epsilon(val)


@fuzz(3)
@given(data=st.data())
def test_noisy_gd_pld_calibration(data):
    kw = draw_checked(
        data, epsilon=real(0.5, 10.0), delta=real(1e-10, 1e-3), iterations=count(1, 20)
    )
    ok, z = outcome(gsteps.calibrate_noise_multiplier, kw["epsilon"], kw["delta"],
                    kw["iterations"], "pld")  # fmt: skip
    if ok:
        assert math.isfinite(z) and z > 0.0
        assert gsteps.pld_epsilon(kw["delta"], kw["iterations"], z) <= kw["epsilon"]


@fuzz(6)
@given(data=st.data())
def test_dp_sgd_accountant(data):
    kw = draw_checked(
        data, delta=real(1e-12, 0.5), iterations=count(1, 200), sampling_rate=real(1e-3, 1.0),
        noise_multiplier=real(0.25, 50.0), discretization=real(1e-3, 1e-2, extra=(1e-3,)),
    )  # fmt: skip
    ok, val = outcome(subsampled_gaussian_epsilon, **kw)
    if ok:
        _check_epsilon(val)
