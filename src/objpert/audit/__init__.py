"""Numerical audits of the privacy claims: exact pairwise privacy profiles by change of
variables (eq. 6), worst-case pair search, attack-based lower bounds with Clopper-Pearson
intervals, Jacobian/invertibility checks and planted bugs.

The command is ``objpert audit`` (:mod:`objpert.cli.audit`); the measurements recorded in
docs/audit-pairwise.md are :mod:`objpert.apps.pairwise_audit`.
"""

__all__: list[str] = []
