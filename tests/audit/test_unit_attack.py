"""The audit's attack at the unit level: releases on a pair of datasets that differ in one
person's k rows, against the certificate for one person of k rows (and, to show the attack
has power there, against the one-row certificate it exceeds)."""

from __future__ import annotations

import numpy as np
import pytest

import objpert
from objpert.audit._attacks import (
    AUDIT_D,
    AUDIT_N,
    AUDIT_ZETA,
    PLAN_OPTIONS,
    attack,
    canonical_pair,
    release_outputs,
    unit_pair,
)
from objpert.exceptions import ParameterError

K, DRAWS = 4, 3000


def plan(rows: int):
    return objpert.plan(
        "watkins_arora", loss="logistic", n=AUDIT_N, d=AUDIT_D, zeta=AUDIT_ZETA,
        epsilon=1.0, delta=1e-5, rows_per_unit=rows, **PLAN_OPTIONS["watkins_arora"],
    )  # fmt: skip


def test_unit_pair_differs_in_k_rows():
    pair = unit_pair(canonical_pair(), K)
    differ = np.any(pair.X_prime != pair.X, axis=1) | (pair.y != pair.y_prime)
    assert np.count_nonzero(differ) == K and differ[-K:].all()
    with pytest.raises(ParameterError):
        unit_pair(canonical_pair(), AUDIT_N)


def _attack(p, pair, rng):
    P = release_outputs("watkins_arora", pair.X, pair.y, p, DRAWS, rng)
    Q = release_outputs("watkins_arora", pair.X_prime, pair.y_prime, p, DRAWS, rng)
    return attack(P, Q, epsilon_certified=p.certificate.epsilon, delta=p.certificate.delta)


def test_attack_on_a_unit_stays_below_the_unit_certificate():
    rng = np.random.default_rng(7)
    assert not _attack(plan(K), unit_pair(canonical_pair(), K), rng).flagged
    # the attack has power: a one-row release on a person of 12 rows exceeds its certificate
    assert _attack(plan(1), unit_pair(canonical_pair(), 12), rng).flagged
