"""The audit entry points refuse options that would make a check meaningless (a NaN
tolerance passes every comparison) or crash deep inside (a batch of zero rows, no
epsilons): ParameterError naming the option, before any release is drawn."""

from __future__ import annotations

import math

import pytest

from objpert.audit import (
    audit_mechanism,
    audit_plan,
    audit_sampler,
    canonical_pair,
    check_jacobian,
    pairwise_profile,
    worst_pair,
)
from objpert.exceptions import ParameterError

NAN = math.nan


@pytest.fixture(scope="module")
def setting():
    plan = audit_plan("watkins_arora", epsilon=1.0, delta=1e-3)
    return plan, canonical_pair(plan.n, plan.d, plan.zeta)


def _no_sampler(*args):
    raise AssertionError("nothing is drawn before the options are checked")


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda p, s: audit_mechanism("watkins_arora", draws=200, confidence=-0.5), "confidence"),
        (lambda p, s: audit_mechanism("watkins_arora", draws=200, confidence=0), "confidence"),
        (lambda p, s: audit_sampler(_no_sampler, s, p, draws=10, confidence=1.5), "confidence"),
        (lambda p, s: audit_plan("watkins_arora", epsilon=1, delta=1e-3, zeta=0), "zeta"),
        (lambda p, s: audit_plan("watkins_arora", epsilon=1, delta=1e-3, zeta=-1), "zeta"),
        (lambda p, s: check_jacobian(s.X, s.y, p, fd_tolerance=NAN), "fd_tolerance"),
        (lambda p, s: check_jacobian(s.X, s.y, p, fd_tolerance=-1), "fd_tolerance"),
        (lambda p, s: check_jacobian(s.X, s.y, p, fd_step=0), "fd_step"),
        (lambda p, s: check_jacobian(s.X, s.y, p, fd_points=-1), "fd_points"),
        (lambda p, s: check_jacobian(s.X, s.y, p, fd_points=True), "fd_points"),
        (lambda p, s: pairwise_profile(s.X, s.y, s.X_prime, s.y_prime, p, [1.0], tol=NAN), "tol"),
        (lambda p, s: pairwise_profile(s.X, s.y, s.X_prime, s.y_prime, p, [1.0], batch=0),
         "batch"),
        (lambda p, s: pairwise_profile(s.X, s.y, s.X_prime, s.y_prime, p, []), "epsilons"),
        (lambda p, s: worst_pair(s.X[1:], s.y[1:], p, epsilon=0.3, tol=-1), "tol"),
        (lambda p, s: worst_pair(s.X[1:], s.y[1:], p, epsilon=0.3, maxfev=0), "maxfev"),
    ],
)  # fmt: skip
def test_meaningless_audit_options_are_refused(setting, call, name):
    plan, pair = setting
    with pytest.raises(ParameterError, match=name):
        call(plan, pair)
