"""Numerical audits of the privacy claims (issue 5): exact pairwise privacy profiles by
change of variables (eq. 6), worst-case pair search, attack-based lower bounds with
Clopper-Pearson intervals, Jacobian/invertibility checks and planted bugs."""
