"""Compiled (numba) kernels of the fused dense GLM gradient, and their plain-Python twin.

For the shipped losses, :func:`fused_kernel` (one point w) and :func:`batched_kernel`
(B points, W of shape (d, B)) return functions adding sum_{s <= i < e} x_i l'(x_i^T W,
y_i)^T to ``out`` in one sweep over the rows, releasing the GIL; :func:`parallel_kernel`
runs either over several row ranges at once on numba's thread pool (whose threads spin
between launches; the engines do not use it: they share fixed row parts out among their
own sleeping threads, :mod:`objpert._engines.blocked`, since spinning threads competed
with other processes on a busy machine); the partial sums are added in range order,
so the result does not depend on the threads' timing. :func:`derivative_kernel` is the
batched kernel's vectorised loss derivative alone (used by the numpy sweep in place of
``loss.d1_into``) and :func:`exp` its branch-free exp. The loops are in :mod:`.loops`,
the exp and its constants in :mod:`.exponential`, the LLVM micro-kernels in :mod:`.simd`,
the compile options and the immutable kernel sets in :mod:`.build`.

Backends: "numba" (the default) or "python", the same loops run as plain Python/numpy
(equal to the compiled kernels to rounding; for debugging and tests on a few rows): set
``OBJPERT_KERNELS=python``, or :data:`BACKEND`, or pass ``backend=`` to a factory. With
``NUMBA_DISABLE_JIT=1`` the default is "python". :func:`warm` compiles (or loads from
numba's disk cache) every kernel at once.

numba is optional: it is imported on first use, and when it is missing (or the kernels
are disabled with ``OBJPERT_NUMBA=0``, or :data:`ENABLED`) the factories return ``None``
and the engines use the numpy sweep (with ``loss.d1_into``). Losses other than the
shipped :class:`~objpert._losses.LogisticLoss`, :class:`~objpert._losses.PseudoHuberLoss`
and :class:`~objpert._losses.SquaredLoss` (exact types, so subclasses keep their own
``d1``) also get ``None``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from objpert._engines.compiled import build
from objpert._engines.compiled.build import BACKENDS, KernelSet, kernel_set
from objpert._engines.compiled.loops import LOGISTIC, ROBUST, SQUARED
from objpert._losses import LogisticLoss, Loss, PseudoHuberLoss, SquaredLoss

__all__ = [
    "BACKEND",
    "BACKENDS",
    "ENABLED",
    "TILE_DOUBLES",
    "Kernel",
    "KernelSet",
    "available",
    "batched_kernel",
    "csr_rows_kernel",
    "derivative_kernel",
    "exp",
    "fused_kernel",
    "kernel_set",
    "keyed_kernels",
    "numba_kernels",
    "parallel_kernel",
    "parts_kernel",
    "warm",
]

#: Set to False (or the environment variable ``OBJPERT_NUMBA=0``) to use the numpy sweep.
ENABLED = os.environ.get("OBJPERT_NUMBA", "1").strip().lower() not in ("0", "false", "no")


def _default_backend() -> str:
    name = os.environ.get("OBJPERT_KERNELS", "").strip().lower()
    if name:
        if name not in BACKENDS:
            raise ValueError(f"OBJPERT_KERNELS={name!r}; expected one of {BACKENDS}")
        return name
    jit_off = os.environ.get("NUMBA_DISABLE_JIT", "0").strip() not in ("", "0")
    return "python" if jit_off else "numba"


#: The backend of the factories when they get none: ``OBJPERT_KERNELS`` ("numba" or
#: "python"); unset, "python" under ``NUMBA_DISABLE_JIT=1``, else "numba".
BACKEND = _default_backend()

#: Signature (X, w, y, start, stop, out) -> None of the functions the factories return.
Kernel = Callable[[np.ndarray, np.ndarray, np.ndarray, int, int, np.ndarray], None]

#: Rows and columns of one tile of the batched kernel: margins (tile x chunk) in L1 and
#: W's and out's chunk (2 x d x chunk) within 64 KiB.
TILE_DOUBLES = 2048


def available(backend: str | None = None) -> bool:
    """Whether the kernels can be used (``ENABLED``, and numba importable for "numba")."""
    return ENABLED and kernel_set(BACKEND if backend is None else backend) is not None


def numba_kernels() -> KernelSet | None:
    """The compiled kernel set when numba's kernels are in use (:func:`available` with the
    "numba" :data:`BACKEND`), else None (callers then use numpy)."""
    return kernel_set("numba") if BACKEND == "numba" and available("numba") else None


def warm(backend: str | None = None, *, parallel: bool = True) -> KernelSet | None:
    """Compile (or load from numba's disk cache) every kernel now, once per process, under
    a process-wide lock, so that no gradient pays the compile; the kernel set, or ``None``
    where :func:`available` is false. ``parallel=False`` leaves the parallel kernels to
    their first use (compiling them starts numba's thread pool, after which a forked child
    sweeps on the engine's own threads)."""
    if not ENABLED:
        return None
    kernels = build.warm(BACKEND if backend is None else backend, parallel=parallel)
    if parallel and kernels is not None and kernels.backend == "numba":
        global _POOL_STARTED_IN
        _POOL_STARTED_IN = os.getpid()
    return kernels


def _loss_code(loss: Loss) -> tuple[int, float] | None:
    kind = type(loss)
    if kind is LogisticLoss:
        return LOGISTIC, 1.0
    if kind is PseudoHuberLoss:
        return ROBUST, float(loss.scale)
    if kind is SquaredLoss:
        return SQUARED, 1.0
    return None


def _resolve(loss: Loss, backend: str | None) -> tuple[KernelSet, int, float] | None:
    """(kernel set, loss code, loss scale) for a shipped loss; ``None`` when the kernels
    are disabled or missing, or ``loss`` is not a shipped loss."""
    if not ENABLED:
        return None
    code = _loss_code(loss)
    if code is None:
        return None
    kernels = kernel_set(BACKEND if backend is None else backend)
    if kernels is None:
        return None
    return kernels, *code


def _quiet(function: Callable[..., Any]) -> Callable[..., Any]:
    """A plain-Python kernel with numpy's floating-point warnings off (overflow to inf is
    part of the kernels' arithmetic)."""

    def quiet(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            return function(*args)

    return quiet


def fused_kernel(loss: Loss, backend: str | None = None) -> Kernel | None:
    """``f(X, w, y, start, stop, out)``: out += sum over rows start..stop-1 of
    l'(<x_i, w>, y_i) x_i for a C-ordered float64 X, float64 w (d,), y (n,) and out (d,);
    ``None`` when numba is missing or disabled, or ``loss`` is not a shipped loss."""
    resolved = _resolve(loss, backend)
    if resolved is None:
        return None
    kernels, kind, scale = resolved
    kernel = kernels.fused if kernels.backend == "numba" else _quiet(kernels.fused)

    def run(X: np.ndarray, w: np.ndarray, y: np.ndarray, start: int, stop: int, out) -> None:
        kernel(X, w, np.ascontiguousarray(y, dtype=np.float64), start, stop, kind, scale, out)

    return run


def batched_kernel(loss: Loss, backend: str | None = None) -> Kernel | None:
    """``f(X, W, y, start, stop, out)``: out += sum over rows start..stop-1 of
    x_i l'(x_i^T W, y_i)^T for a C-ordered float64 X, C-ordered float64 W (d, B) or (d,),
    y (n,) and out shaped like W; y of shape (n, B), B > 1, gives column b its own labels
    y[:, b] (:func:`~.loops.labelled_rows`). ``None`` when numba is missing or disabled,
    or ``loss`` is not a shipped loss."""
    resolved = _resolve(loss, backend)
    if resolved is None:
        return None
    kernels, kind, scale = resolved
    jitted = kernels.backend == "numba"
    kernel = kernels.batched if jitted else _quiet(kernels.batched)
    labelled = kernels.labelled if jitted else _quiet(kernels.labelled)

    def run(X: np.ndarray, W: np.ndarray, y: np.ndarray, start: int, stop: int, out) -> None:
        tile, chunk = _tiles(X.shape[1], W.shape[1] if W.ndim == 2 else 1)
        if np.ndim(y) == 2 and y.shape[1] > 1:
            if y.shape[1] != W.shape[1]:
                raise ValueError(f"labels of shape {y.shape} for {W.shape[1]} columns")
            Y = np.ascontiguousarray(y, dtype=np.float64)
            labelled(X, W, Y, start, stop, kind, scale, out, tile, chunk)
            return
        yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
        W2, out2 = (W, out) if W.ndim == 2 else (W.reshape(-1, 1), out.reshape(-1, 1))
        kernel(X, W2, yv, start, stop, kind, scale, out2, tile, chunk)

    return run


def csr_rows_kernel(loss: Loss, backend: str | None = None) -> Callable[..., None] | None:
    """``f(indptr, indices, data, w, y, counts, same, start, stop, out)``: out += sum over
    rows start..stop-1 of c_i l'(<a_i, w>, y_i) a_i for a CSR matrix's arrays (float64
    data), w, y, counts and out float64; ``same`` (uint8): row i repeats the features of
    row i - 1 (:func:`~.loops.csr_rows`: each run of rows' stored entries read once for
    both products, in row order). ``None`` as for :func:`fused_kernel`."""
    resolved = _resolve(loss, backend)
    if resolved is None:
        return None
    kernels, kind, scale = resolved
    kernel = kernels.csr if kernels.backend == "numba" else _quiet(kernels.csr)

    def run(indptr, indices, data, w, y, counts, same, start: int, stop: int, out) -> None:
        kernel(indptr, indices, data, w, y, counts, same, start, stop, kind, scale, out)

    return run


def keyed_kernels(
    loss: Loss, backend: str | None = None
) -> (
    tuple[Callable[..., None], Callable[..., None], Callable[..., None], Callable[..., None]] | None
):
    """(step, sweep, table, untable) of the keyed layout (:mod:`.keyed`) for ``loss``:
    ``step(vptr, vcol, vval, D, w, cols, kptr, y, counts, cuts, out)`` is one whole gradient
    (:func:`~.keyed.keyed_step`) in the caller's thread; for threads, ``sweep(D, w, cols,
    kptr, T, y, counts, cuts, parts, gDs, h)`` runs :func:`~.keyed.keyed_rows` over each
    part of ``parts`` (int64), and ``table(vptr, vcol, vval, w, T)`` and ``untable(vptr,
    vcol, vval, h, out)`` are :func:`~.keyed.key_table` and :func:`~.keyed.key_untable`.
    ``None`` as for :func:`fused_kernel`."""
    resolved = _resolve(loss, backend)
    if resolved is None:
        return None
    kernels, kind, scale = resolved
    step, sweep = kernels.keyed_step, kernels.keyed
    table, untable = kernels.key_table, kernels.key_untable
    if kernels.backend != "numba":
        step, sweep, table, untable = _quiet(step), _quiet(sweep), _quiet(table), _quiet(untable)

    def run_step(vptr, vcol, vval, D, w, cols, kptr, y, counts, cuts, out) -> None:
        step(vptr, vcol, vval, D, w, cols, kptr, y, counts, cuts, kind, scale, out)

    def run(D, w, cols, kptr, T, y, counts, cuts, parts, gDs, h) -> None:
        sweep(D, w, cols, kptr, T, y, counts, cuts, parts, kind, scale, gDs, h)

    return run_step, run, table, untable


def parts_kernel(
    loss: Loss, backend: str | None = None
) -> Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], None] | None:
    """``f(X, W, y, cuts, outs)``: outs[t] += the kernel of :func:`fused_kernel` (W of
    shape (d,)) or :func:`batched_kernel` (W of shape (d, B); y of shape (n, B): a label
    per column) over rows cuts[t]..cuts[t+1]-1, the ranges one after the other in one
    call that releases the GIL (a thread's share of a sweep's parts); ``outs`` is C-ordered
    of shape (len(cuts) - 1, *W.shape). ``None`` as for :func:`fused_kernel`."""
    resolved = _resolve(loss, backend)
    if resolved is None:
        return None
    kernels, kind, scale = resolved
    jitted = kernels.backend == "numba"
    fused, batched, labelled = kernels.serial_fused, kernels.serial_batched, kernels.serial_labelled
    if not jitted:
        fused, batched, labelled = _quiet(fused), _quiet(batched), _quiet(labelled)

    def run(X: np.ndarray, W: np.ndarray, y: np.ndarray, cuts: np.ndarray, outs) -> None:
        if W.ndim == 1:
            fused(X, W, y, cuts, kind, scale, outs)
            return
        tile, chunk = _tiles(X.shape[1], W.shape[1])
        if y.ndim == 2 and y.shape[1] > 1:
            labelled(X, W, y, cuts, kind, scale, outs, tile, chunk)
        else:
            batched(X, W, np.reshape(y, -1), cuts, kind, scale, outs, tile, chunk)

    return run


def _tiles(d: int, B: int) -> tuple[int, int]:
    """(tile rows, column chunk) of the batched kernel for W of shape (d, B)."""
    chunk = min(B, max(8, (4096 // max(d, 1)) // 8 * 8))
    tile = max(4, min(TILE_DOUBLES // chunk, 32768 // max(d, 1)) // 4 * 4)
    return tile, chunk


#: numba's parallel launches: the workqueue threading layer (numba's fallback when neither
#: OpenMP nor TBB loads) aborts the process on concurrent launches, so they are serialised.
_PARALLEL_LOCK = threading.Lock()

#: The process that started numba's thread pool (by a launch, or by compiling the parallel
#: kernels in :func:`warm`): a child forked from it must not launch (GNU OpenMP does not
#: survive fork; numba terminates such a child), so it gets ``None``.
_POOL_STARTED_IN: int | None = None


def _after_fork_in_child() -> None:
    """In a forked child (called by :mod:`objpert._forksafe`): a fresh launch lock."""
    global _PARALLEL_LOCK
    _PARALLEL_LOCK = threading.Lock()


def parallel_kernel(
    loss: Loss, backend: str | None = None
) -> Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None:
    """``f(X, W, y, cuts)``: sum over t of the fused kernel (W of shape (d,)) or the batched
    kernel (W of shape (d, B)) over rows cuts[t]..cuts[t+1]-1, the ranges run in parallel
    by numba's thread pool (one thread a range; the partial sums added in range order, so
    the result does not depend on thread timing). Its threads spin briefly between
    launches, so a launch costs microseconds where waking a sleeping pool thread costs up
    to a millisecond on a virtual machine. ``None`` as for :func:`fused_kernel`, and in a
    process forked after the pool started (the caller then uses its own threads). The
    "python" backend runs the ranges one after the other."""
    resolved = _resolve(loss, backend)
    if resolved is None:
        return None
    kernels, kind, scale = resolved
    jitted = kernels.backend == "numba"
    if jitted and _POOL_STARTED_IN not in (None, os.getpid()):
        return None
    fused, batched = kernels.parallel_fused, kernels.parallel_batched
    if not jitted:
        fused, batched = _quiet(fused), _quiet(batched)

    def launch(X: np.ndarray, W: np.ndarray, yv: np.ndarray, cuts: np.ndarray, outs) -> None:
        if W.ndim == 1:
            fused(X, W, yv, cuts, kind, scale, outs)
        else:
            tile, chunk = _tiles(X.shape[1], W.shape[1])
            batched(X, W, yv, cuts, kind, scale, outs, tile, chunk)

    def run(X: np.ndarray, W: np.ndarray, y: np.ndarray, cuts: np.ndarray) -> np.ndarray:
        yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
        cuts = np.ascontiguousarray(cuts, dtype=np.int64)
        ranges = len(cuts) - 1
        outs = np.zeros((ranges, *W.shape))
        if jitted:
            import numba

            global _POOL_STARTED_IN
            with _PARALLEL_LOCK:
                _POOL_STARTED_IN = os.getpid()
                before = numba.get_num_threads()
                numba.set_num_threads(min(ranges, numba.config.NUMBA_NUM_THREADS))
                try:
                    launch(X, W, yv, cuts, outs)
                finally:
                    numba.set_num_threads(before)
        else:
            launch(X, W, yv, cuts, outs)
        out = outs[0]
        for part in outs[1:]:
            out += part
        return out

    return run


def derivative_kernel(
    loss: Loss, backend: str | None = None
) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """``f(m, y)``: m = l'(m, y) in place (and returned) for C-ordered float64 margins m of
    shape (rows,) or (rows, B) and labels y (rows,) or (rows, 1), with the vectorised loss
    derivative of the batched kernel (equal to ``loss.d1`` within a few ulp); ``None``
    when numba is missing or disabled, or ``loss`` is not a shipped loss."""
    resolved = _resolve(loss, backend)
    if resolved is None:
        return None
    kernels, kind, scale = resolved
    tile = kernels.derivative if kernels.backend == "numba" else _quiet(kernels.derivative)

    def run(m: np.ndarray, y: np.ndarray) -> np.ndarray:
        if not (m.flags.c_contiguous and m.dtype == np.float64):
            raise ValueError("m must be a C-ordered float64 array")
        rows = m.shape[0]
        cols = m.shape[1] if m.ndim == 2 else 1
        yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
        tile(m.reshape(-1), yv, 0, rows, cols, kind, scale)
        return m

    return run


def exp(x: np.ndarray, backend: str | None = None) -> np.ndarray:
    """The kernels' vectorisable exp on a float64 array (for tests); needs numba for the
    "numba" backend."""
    kernels = kernel_set(BACKEND if backend is None else backend)
    if kernels is None:
        raise RuntimeError("numba is not installed")
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    out = np.empty_like(x)
    function = kernels.exp if kernels.backend == "numba" else _quiet(kernels.exp)
    function(x, out)
    return out
