"""Numerical audits of the privacy claims: exact pairwise privacy profiles by change of
variables (eq. 6), worst-case pair search, attack-based lower bounds with Clopper-Pearson
intervals, Jacobian/invertibility checks and planted bugs.

The command is ``objpert audit`` (:mod:`objpert.cli._audit`); the measurements recorded in
docs/audit-pairwise.md are :mod:`objpert.apps._pairwise_audit`.
"""

from objpert.audit._attacks import (
    AttackResult,
    NeighbouringPair,
    audit_mechanism,
    audit_plan,
    audit_sampler,
    canonical_pair,
    clopper_pearson,
    epsilon_lower_bound,
)
from objpert.audit._jacobian import JacobianReport, check_jacobian
from objpert.audit._pairwise import PairwiseProfile, pairwise_profile
from objpert.audit._planted import PLANTED_BUGS, PlantedBug
from objpert.audit._worst_pair import WorstPair, worst_pair

__all__ = [
    "PLANTED_BUGS",
    "AttackResult",
    "JacobianReport",
    "NeighbouringPair",
    "PairwiseProfile",
    "PlantedBug",
    "WorstPair",
    "audit_mechanism",
    "audit_plan",
    "audit_sampler",
    "canonical_pair",
    "check_jacobian",
    "clopper_pearson",
    "epsilon_lower_bound",
    "pairwise_profile",
    "worst_pair",
]
