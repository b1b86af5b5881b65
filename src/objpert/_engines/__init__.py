"""Gradient engines: the only code that touches the feature matrix.

An engine exposes ``n``, ``d``, ``matvec(W) = X @ W`` and ``rmatvec(R) = X.T @ R`` for W
of shape (d,) or (d, B), and optionally a fused ``glm_gradient(W, y, loss) =
X.T @ loss.d1(X @ W, y)`` computed in one sweep over X; :mod:`objpert._engines.glm` builds
the regularised GLM objective, gradient and Hessian-vector product on top, so a Dask or
GPU engine only has to supply those products. :func:`build_engine`
(:mod:`.factory`) builds the engine of every kind; its default kind, :func:`make_engine`,
is the in-memory engine: :class:`DenseEngine` and :class:`SparseEngine` (fused,
row-blocked, threaded), :class:`ArrayEngine` (two plain passes, for small dense data).
:class:`FeatureSpan` is the data-span reduction of Lemma B.6.
"""

from objpert._engines.array import ArrayEngine, Engine, make_engine
from objpert._engines.dense import DenseEngine
from objpert._engines.factory import build_engine
from objpert._engines.glm import GLMObjective
from objpert._engines.span import FeatureSpan
from objpert._engines.sparse import SparseEngine

__all__ = [
    "ArrayEngine",
    "DenseEngine",
    "Engine",
    "FeatureSpan",
    "GLMObjective",
    "SparseEngine",
    "build_engine",
    "make_engine",
]
