"""The audit at the unit level: releases on a pair of datasets that differ in one person's
k rows, against the certificate for one person of k rows (and, to show the attack has
power there, against the one-row certificate it exceeds), for every registered mechanism;
the worst-pair search of Watkins & Arora's release at k rows."""

from __future__ import annotations

import numpy as np
import pytest

import objpert
from objpert.accounting._gaussian_mechanism import gaussian_profile
from objpert.audit import worst_pair
from objpert.audit._attacks import (
    AUDIT_D,
    AUDIT_N,
    AUDIT_ZETA,
    MECHANISMS,
    PLAN_OPTIONS,
    attack,
    audit_mechanism,
    audit_plan,
    audit_sampler,
    canonical_pair,
    certified_budget,
    release_outputs,
    unit_pair,
)
from objpert.audit._maps import linear_plan
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


UNIT_DRAWS = 1000
CERTIFIED = [m for m in MECHANISMS if m != "qop"]


@pytest.mark.parametrize("mechanism", CERTIFIED)
def test_every_mechanism_audited_on_a_unit_stays_below_its_person_level_certificate(mechanism):
    """``audit_mechanism(rows=k)``: one person's k rows replaced, the plan for one person of
    up to k rows, the attack's lower bound against the person-level certificate."""
    result = audit_mechanism(
        mechanism, "canonical", rows=K, epsilon=2.0, delta=1e-2, draws=UNIT_DRAWS, rng=11
    )
    assert result.pair == f"canonical x {K} rows"
    assert result.epsilon_certified == pytest.approx(2.0, rel=1e-6)
    assert result.delta <= 1e-2 and not result.flagged


def _sample(mechanism):
    def sample(X, y, p, draws, rng):
        return release_outputs(mechanism, X, y, p, draws, rng)

    return sample


def test_a_one_row_release_on_a_person_exceeds_its_row_certificate_not_its_person_one():
    """Output perturbation certified for one row at epsilon 2, attacked on a person of 4
    rows: the attack's lower bound exceeds the row-level epsilon (the row-level
    certificate says nothing of the person) and stays below the person-level certificate
    of the same release (group privacy of its zCDP event: 16 rho)."""
    rows, sample = 4, _sample("output_perturbation")
    plan = audit_plan("output_perturbation", epsilon=2.0, delta=1e-2)
    pair = unit_pair(canonical_pair(), rows)
    as_row = audit_sampler(sample, pair, plan, draws=6000, rng=2)
    as_person = audit_sampler(sample, pair, plan, draws=6000, rng=2, rows=rows)
    assert as_row.flagged and as_row.epsilon_lower > 2.0
    assert as_person.epsilon_certified == pytest.approx(rows * 2.0)
    assert not as_person.flagged
    assert certified_budget(plan, rows) == (as_person.epsilon_certified, as_person.delta)


def test_a_person_of_many_rows_breaks_a_row_certificate_that_groups_to_nothing():
    """LOP at epsilon 2 per row on a person of 12 rows: flagged against the row-level
    certificate, and group privacy certifies nothing for 12 rows (refused, not audited)."""
    plan = audit_plan("lop", epsilon=2.0, delta=1e-2)
    pair = unit_pair(canonical_pair(), 12)
    assert audit_sampler(_sample("lop"), pair, plan, draws=3000, rng=2).flagged
    with pytest.raises(ParameterError, match="no person-level certificate"):
        certified_budget(plan, 12)


def test_qop_has_no_person_level_audit():
    with pytest.raises(ParameterError, match="QOP"):
        audit_plan("qop", epsilon=2.0, delta=1e-2, rows=K)
    with pytest.raises(ParameterError):
        certified_budget(plan(K), 2)  # a k-row plan is not audited at another k


def test_worst_pair_at_k_rows_for_the_linear_loss_is_antipodal():
    """The worst-pair search for a plan of k rows per person: the person's k rows are k
    copies of x against k of x'. For the linear loss delta_pair is the Gaussian profile
    at k ||x - x'|| / n, largest at x' = -x; the search finds it and its measured profile
    brackets the exact one, below the k-row certificate."""
    n, k = 12, 3
    p = linear_plan(
        n=n, d=2, zeta=1.0, mu=0.5, eta=1.0, sigma=2.0, iterations=10, epsilon=1.0, u=3.0,
        rows=k,
    )  # fmt: skip
    rng = np.random.default_rng(5)
    G = rng.normal(size=(n - k, 2))
    Xs, ys = G / (1.3 * np.linalg.norm(G, axis=1, keepdims=True)), rng.choice([-1.0, 1.0], n - k)
    wp = worst_pair(
        Xs, ys, p, epsilon=0.3, samples=400, grid=8, starts=1, maxfev=15,
        final_samples=3000, rng=1, epsilons=[0.1, 1.0],
    )  # fmt: skip
    assert wp.rows == k and np.linalg.norm(np.subtract(wp.x, wp.x_prime)) > 2.0 * (1 - 1e-3)
    exact = gaussian_profile(np.asarray(wp.profile.epsilons), 2.0 * k / n, p.sigma)
    assert np.all(np.asarray(wp.profile.lower) <= exact)
    assert np.all(exact <= np.asarray(wp.profile.upper))
    assert not wp.profile.flagged
    X, _, Xp, _ = wp.datasets(Xs, ys)
    assert X.shape == (n, 2) and np.count_nonzero(np.any(Xp != X, axis=1)) == k
    with pytest.raises(ParameterError, match="shared rows"):
        worst_pair(Xs[1:], ys[1:], p, epsilon=0.3, samples=50, grid=2, starts=0)
