"""The one engine factory: :func:`build_engine` builds the gradient engine of every kind
(:data:`ENGINES`) for a feature matrix, after :func:`check_engine` has checked the kind
and precision before any data are read.

``"default"``: :func:`~objpert._engines.array.make_engine` (the fused dense or sparse
sweep, or two plain passes for small dense X); ``"shaped"``:
:func:`~objpert._engines.shaped.shape_engine` (duplicate rows merged, indicator columns as
CSR or keys); ``"auto"``: shaped when its cost model says it pays; ``"xp"``/``"gpu"``: the
array-API engine (:class:`~objpert._engines.xp.XPEngine`) on the CPU or a CUDA GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from objpert._engines import shaped
from objpert._engines.array import Engine, make_engine
from objpert._validation import check_choice
from objpert.exceptions import ParameterError

__all__ = ["AUTO_MIN_STEPS", "ENGINES", "build_engine", "check_engine"]

#: The engines :func:`build_engine` builds: make_engine's (``"default"``), shaped by the
#: data (``"shaped"``), the shaped engine only when it pays and the default otherwise
#: (``"auto"``), the array-API engine on the CPU (``"xp"``) or on a CUDA GPU (``"gpu"``).
ENGINES: tuple[str, ...] = ("default", "auto", "shaped", "xp", "gpu")
#: ``engine="auto"`` shapes a descent of at least this many steps only: shaping costs
#: about as much as 100-300 dense steps (hashing and sorting the rows).
AUTO_MIN_STEPS = 500


def _shaping_may_pay(X: Any, dtype: str) -> bool:
    """Whether ``engine="auto"`` asks :func:`shape_engine`: dense float64 X in memory with
    an indicator column that is at least half zeros (one pass over X; a constant column,
    an intercept, does not count; merging rows alone, without such a column, needs fewer
    than half the rows unique to pay, and is not tried)."""
    if dtype != "float64" or not isinstance(X, np.ndarray) or X.ndim != 2 or not X.size:
        return False
    mask, nnz = shaped.indicator_columns(X)
    return bool(np.any(mask & (2 * nnz <= X.shape[0])))


def check_engine(engine: str, dtype: str, device: bool = True, X: Any = None) -> tuple[str, str]:
    """(engine, dtype) checked before any data is read or noise drawn: a kind of
    :data:`ENGINES`, a dtype of :data:`~objpert._engines.xp.DTYPES`, float64 for the shaped
    engines, (when ``device``) a CUDA GPU present for ``"gpu"``, and dense ``X`` (when
    given) for the array-API engine (``"xp"``, ``"gpu"``, or any in float32)."""
    from objpert._engines.xp import DTYPES, gpu_namespace

    engine = check_choice("engine", engine, ENGINES)
    dtype = check_choice("dtype", dtype, DTYPES)
    if engine == "shaped" and dtype != "float64":  # "auto" in float32: the default engine
        raise ParameterError("the shaped engines compute in float64 only")
    if sparse.issparse(X) and (engine in ("xp", "gpu") or dtype != "float64"):
        raise ParameterError(
            f"engine={engine!r} with dtype={dtype!r} runs the array-API engine, which takes "
            "dense X; got a sparse matrix: pass X.toarray(), or engine='default' with "
            "dtype='float64' for sparse X"
        )
    if device and engine == "gpu" and gpu_namespace() is None:
        raise ParameterError("engine='gpu' needs a CUDA GPU with CuPy or PyTorch; none found")
    return engine, dtype


def build_engine(
    X: Any,
    y: Any,
    *,
    engine: str = "default",
    dtype: str = "float64",
    n_jobs: int | None = None,
) -> tuple[Engine, np.ndarray | None]:
    """(engine, labels for :class:`~objpert._engines.glm.GLMObjective`) of the kind
    ``engine`` (one of :data:`ENGINES`; ``"auto"``: :func:`~.shaped.shape_engine` for dense float64
    X with an indicator column, the default engine otherwise) computing in ``dtype``.
    ``dtype="float32"`` runs
    the array-API engine (``"default"`` and ``"xp"``: numpy's float32 kernels on the CPU;
    ``"gpu"``: on the GPU); the shaped engines compute in float64 only. Labels None: the
    engine holds them."""
    from objpert._engines.xp import XPEngine

    engine, dtype = check_engine(engine, dtype, X=X)
    if engine == "auto":
        engine = "shaped" if _shaping_may_pay(X, dtype) else "default"
    if engine == "shaped":
        built, labels, _ = shaped.shape_engine(X, y, n_jobs=n_jobs)
        return built, labels
    if engine == "default" and dtype == "float64":
        return make_engine(X, n_jobs=n_jobs), y
    return XPEngine(X, y, xp="gpu" if engine == "gpu" else None, dtype=dtype), None
