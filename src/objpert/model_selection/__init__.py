"""Private model selection: choose hyperparameters on private data under one certificate.

:class:`PrivateGridSearch` chooses among a grid of candidates by random stopping on all the
rows (``method="random_stopping"``, :mod:`.random_stopping`) or by parallel selection on
disjoint parts of the rows (``method="split"``, :mod:`.search`).
"""

from __future__ import annotations

from objpert.model_selection._random_stopping import (
    RandomStoppingCertificate,
    draw_runs,
    random_stopping_budget,
    random_stopping_certificate,
)
from objpert.model_selection._search import METHODS, PrivateGridSearch
from objpert.model_selection._split_selection import SelectionCertificate, split_sizes

__all__ = [
    "METHODS",
    "PrivateGridSearch",
    "RandomStoppingCertificate",
    "SelectionCertificate",
    "draw_runs",
    "random_stopping_budget",
    "random_stopping_certificate",
    "split_sizes",
]
