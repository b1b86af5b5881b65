"""Gradient engines: the only code that touches the feature matrix.

An engine exposes ``n``, ``d``, ``matvec(W) = X @ W`` and ``rmatvec(R) = X.T @ R`` for W
of shape (d,) or (d, B); :mod:`objpert.engines.glm` builds the regularised GLM objective,
gradient and Hessian-vector product on top, so a Dask or GPU engine only has to supply
those two products.
"""

from objpert.engines.array import ArrayEngine, make_engine
from objpert.engines.glm import GLMObjective

__all__ = ["ArrayEngine", "GLMObjective", "make_engine"]
