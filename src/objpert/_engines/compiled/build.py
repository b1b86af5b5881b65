"""The kernel sets: the functions of :mod:`.loops` and :mod:`.exponential` compiled by
numba, or run as they are, gathered in an immutable :class:`KernelSet` built once per
process.

Each function is compiled from a copy bound to a namespace (one per source module, made
here and never changed after the build) in which the names it calls are the compiled
functions and LLVM intrinsics (:mod:`.simd`): no module state is filled in, and the plain
functions stay plain. The compile options of every function are in :data:`_PLAN`; they
fix its rounding, so they are part of the kernels' results. numba's disk cache of a
function is keyed on its own source file: after editing only a callee in another file
(:mod:`.exponential`, :mod:`.simd`), delete this package's ``__pycache__/*.nb[ic]``.

Builds and warm-ups hold :data:`LOCK`. Fork safety: before a fork, :mod:`objpert._forksafe`
calls :func:`_before_fork`, which takes :data:`LOCK` and numba's compiler lock (waiting
for a build or compile running in another thread to finish), and :func:`_after_fork`
releases them in parent and child, so a child is never left with a lock held by a thread
it does not have.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from objpert._engines.compiled import exponential, keyed, loops, shaping

__all__ = ["BACKENDS", "LOCK", "KernelSet", "kernel_set", "warm"]

#: "numba": compiled (needs numba); "python": the plain functions (debugging, tests).
BACKENDS = ("numba", "python")


class KernelSet(NamedTuple):
    """One backend's kernels, with the argument conventions of :mod:`.loops`."""

    backend: str
    #: fused_rows(X, w, y, start, stop, kind, scale, out)
    fused: Callable[..., None]
    #: batched_rows(X, W, y, start, stop, kind, scale, out, tile, chunk)
    batched: Callable[..., None]
    #: deriv_tile(M, y, s, rows, cols, kind, scale)
    derivative: Callable[..., None]
    #: exp_array(x, out)
    exp: Callable[..., None]
    #: parallel_fused(X, w, y, cuts, kind, scale, outs)
    parallel_fused: Callable[..., None]
    #: parallel_batched(X, W, y, cuts, kind, scale, outs, tile, chunk)
    parallel_batched: Callable[..., None]
    #: labelled_rows(X, W, Y, start, stop, kind, scale, out, tile, chunk)
    labelled: Callable[..., None]
    #: serial_fused(X, w, y, cuts, kind, scale, outs)
    serial_fused: Callable[..., None]
    #: serial_batched(X, W, y, cuts, kind, scale, outs, tile, chunk)
    serial_batched: Callable[..., None]
    #: serial_labelled(X, W, Y, cuts, kind, scale, outs, tile, chunk)
    serial_labelled: Callable[..., None]
    #: csr_rows(indptr, indices, data, w, y, counts, same, start, stop, kind, scale, out)
    csr: Callable[..., None]
    #: keyed_parts(D, w, cols, kptr, T, y, counts, cuts, parts, kind, scale, gDs, h)
    keyed: Callable[..., None]
    #: key_table(vptr, vcol, vval, w, T)
    key_table: Callable[..., None]
    #: key_untable(vptr, vcol, vval, h, out)
    key_untable: Callable[..., None]
    #: keyed_step(vptr, vcol, vval, D, w, cols, kptr, y, counts, cuts, kind, scale, out)
    keyed_step: Callable[..., None]
    #: row_hash(keys, salt, out)
    row_hash: Callable[..., None]
    #: rows_match(keys, first, inverse) -> bool
    rows_match: Callable[..., bool]
    #: indicator_scan(X, nnz, lo, hi)
    indicator_scan: Callable[..., None]
    #: patterns_hold(X, cols, P, key) -> bool
    patterns_hold: Callable[..., bool]


#: Held by builds and warm-ups, and across fork (reentrant).
LOCK = threading.RLock()

_BUILT: dict[str, KernelSet | None] = {}

_INLINE: dict[str, Any] = {"inline": "always"}
# numpy's error model: x / 0 gives inf or nan, without the ZeroDivisionError branch that
# would stop the vectoriser (no denominator here can be 0)
_VECTOR: dict[str, Any] = {"inline": "always", "error_model": "numpy"}
# products and sums contracted to FMAs (one rounding where there were two; nothing
# approximate)
_TILE: dict[str, Any] = {"nogil": True, "error_model": "numpy", "fastmath": {"contract"}}
_PARALLEL: dict[str, Any] = {"parallel": True, "nogil": True, "error_model": "numpy"}

#: (function, numba.njit options) of every compiled function; options not listed are
#: numba's defaults (no fast math, Python's error model)
_PLAN: tuple[tuple[Callable[..., Any], dict[str, Any]], ...] = (
    # reassociation only (no contraction, no approximations): the sum vectorises
    (loops.row_dot, {"fastmath": {"reassoc"}}),
    (loops.row_deriv, _INLINE),
    (exponential.exp_parts, _VECTOR),
    (exponential.exp, _VECTOR),
    (loops.logistic, _VECTOR),
    (loops.robust, _VECTOR),
    (loops.four_rows, _INLINE),
    (loops.deriv_tile, _TILE),
    (loops.margins, _TILE),
    (loops.accumulate, _TILE),
    (loops.simd_margins, _TILE),
    (loops.simd_accumulate, _TILE),
    (loops.simd_tile, _TILE),
    (loops.deriv_labelled, _TILE),
    (loops.labelled_rows, {"nogil": True, "error_model": "numpy"}),
    (loops.serial_fused, {"nogil": True}),
    (loops.serial_batched, {"nogil": True, "error_model": "numpy"}),
    (loops.serial_labelled, {"nogil": True, "error_model": "numpy"}),
    (loops.fused_rows, {"nogil": True}),
    (loops.csr_rows, {"nogil": True, "error_model": "numpy"}),
    (loops.batched_rows, {"nogil": True, "error_model": "numpy"}),
    (keyed.keyed_rows, _TILE),
    (keyed.keyed_parts, {"nogil": True}),
    (keyed.key_table, {"nogil": True}),
    (keyed.key_untable, {"nogil": True}),
    (keyed.keyed_step, {"nogil": True}),
    (shaping.row_hash, {"nogil": True}),
    (shaping.rows_match, {"nogil": True}),
    (shaping.indicator_scan, {"nogil": True}),
    (shaping.patterns_hold, {"nogil": True}),
    (exponential.exp_array, _TILE),
    (loops.parallel_fused, _PARALLEL),
    (loops.parallel_batched, _PARALLEL),
)


def kernel_set(backend: str = "numba") -> KernelSet | None:
    """The kernels of ``backend`` (one of :data:`BACKENDS`), built on the first call and
    the same object afterwards; ``None`` for "numba" when numba is missing or its JIT is
    disabled (``NUMBA_DISABLE_JIT``). numba compiles each kernel on its first call (or
    loads it from its disk cache); :func:`warm` does it at once."""
    try:
        return _BUILT[backend]
    except KeyError:
        pass
    if backend not in BACKENDS:
        raise ValueError(f"unknown kernel backend {backend!r}; expected one of {BACKENDS}")
    with LOCK:
        if backend not in _BUILT:
            _BUILT[backend] = _build(backend)
        return _BUILT[backend]


def warm(backend: str = "numba", *, parallel: bool = True) -> KernelSet | None:
    """:func:`kernel_set` with every kernel compiled (or loaded from numba's cache) for
    the argument types the engines pass, under :data:`LOCK`; ``parallel=False`` leaves
    the two parallel kernels to their first call."""
    with LOCK:
        kernels = kernel_set(backend)
        if kernels is not None and kernels.backend == "numba":
            for dispatcher, signature in _signatures(kernels, parallel):
                dispatcher.compile(signature)
        return kernels


def _build(backend: str) -> KernelSet | None:
    if backend == "python":
        return KernelSet(
            "python",
            loops.fused_rows,
            loops.batched_rows,
            loops.deriv_tile,
            exponential.exp_array,
            loops.parallel_fused,
            loops.parallel_batched,
            loops.labelled_rows,
            loops.serial_fused,
            loops.serial_batched,
            loops.serial_labelled,
            loops.csr_rows,
            keyed.keyed_parts,
            keyed.key_table,
            keyed.key_untable,
            keyed.keyed_step,
            shaping.row_hash,
            shaping.rows_match,
            shaping.indicator_scan,
            shaping.patterns_hold,
        )
    try:
        import numba
    except ImportError:
        return None
    if numba.config.DISABLE_JIT:
        return None
    try:
        return _compile(numba, cache=True)
    except Exception:  # pragma: no cover - e.g. no writable cache directory
        return _compile(numba, cache=False)


def _compile(numba: Any, cache: bool) -> KernelSet:
    """The numba kernel set (jitted lazily: each compiles on its first call)."""
    from objpert._engines.compiled import simd

    spaces = {
        module.__name__: dict(vars(module)) for module in (exponential, loops, keyed, shaping)
    }

    def bind(name: str, value: Any) -> None:
        for space in spaces.values():
            space[name] = value

    for name, value in (
        ("f2i", simd.f2i),
        ("i2f", simd.i2f),
        ("prange", numba.prange),
        ("margins4", simd.margins_block(4)),
        ("margins1", simd.margins_block(1)),
        ("margins4h", simd.margins_block(4, 1)),
        ("margins1h", simd.margins_block(1, 1)),
        ("accumulate4", simd.accumulate_block(4)),
        ("accumulate1", simd.accumulate_block(1)),
        ("accumulate4h", simd.accumulate_block(4, 1)),
        ("accumulate1h", simd.accumulate_block(1, 1)),
        ("logistic2", simd.logistic_block(2)),
        ("logistic4", simd.logistic_block(4)),
    ):
        bind(name, value)
    jitted: dict[str, Any] = {}
    for function, options in _PLAN:
        copy = types.FunctionType(
            function.__code__,
            spaces[function.__module__],
            function.__name__,
            function.__defaults__,
            function.__closure__,
        )
        copy.__qualname__, copy.__doc__ = function.__qualname__, function.__doc__
        jitted[function.__name__] = numba.njit(cache=cache, **dict(options))(copy)
        bind(function.__name__, jitted[function.__name__])
    return KernelSet(
        "numba",
        jitted["fused_rows"],
        jitted["batched_rows"],
        jitted["deriv_tile"],
        jitted["exp_array"],
        jitted["parallel_fused"],
        jitted["parallel_batched"],
        jitted["labelled_rows"],
        jitted["serial_fused"],
        jitted["serial_batched"],
        jitted["serial_labelled"],
        jitted["csr_rows"],
        jitted["keyed_parts"],
        jitted["key_table"],
        jitted["key_untable"],
        jitted["keyed_step"],
        jitted["row_hash"],
        jitted["rows_match"],
        jitted["indicator_scan"],
        jitted["patterns_hold"],
    )


def _signatures(kernels: KernelSet, parallel: bool) -> Iterator[tuple[Any, tuple]]:
    """(dispatcher, argument types) of each kernel as the engines call it: C-ordered
    float64 arrays, Python ints (int64) and floats."""
    from numba import types as nt

    f8, i8 = nt.float64, nt.int64
    v, m, t = nt.float64[::1], nt.float64[:, ::1], nt.float64[:, :, ::1]
    yield kernels.fused, (m, v, v, i8, i8, i8, f8, v)
    yield kernels.batched, (m, m, v, i8, i8, i8, f8, m, i8, i8)
    yield kernels.derivative, (v, v, i8, i8, i8, i8, f8)
    yield kernels.exp, (v, v)
    yield kernels.labelled, (m, m, m, i8, i8, i8, f8, m, i8, i8)
    cuts = nt.int64[::1]
    yield kernels.serial_fused, (m, v, v, cuts, i8, f8, m)
    yield kernels.serial_batched, (m, m, v, cuts, i8, f8, t, i8, i8)
    yield kernels.serial_labelled, (m, m, m, cuts, i8, f8, t, i8, i8)
    i4 = nt.int32[::1]
    yield kernels.csr, (i4, i4, v, v, v, v, nt.uint8[::1], i8, i8, i8, f8, v)
    yield kernels.keyed, (m, v, cuts, cuts, v, v, v, cuts, cuts, i8, f8, m, v)
    yield kernels.key_table, (cuts, cuts, v, v, v)
    yield kernels.key_untable, (cuts, cuts, v, v, v)
    yield kernels.keyed_step, (cuts, cuts, v, m, v, cuts, cuts, v, v, cuts, i8, f8, v)
    u8 = nt.uint64
    yield kernels.row_hash, (u8[:, ::1], u8[::1], u8[::1])
    yield kernels.rows_match, (u8[:, ::1], cuts, cuts)
    yield kernels.indicator_scan, (m, cuts, v, v)
    yield kernels.patterns_hold, (m, cuts, m, i4)
    if parallel:
        yield kernels.parallel_fused, (m, v, v, nt.int64[::1], i8, f8, m)
        yield kernels.parallel_batched, (m, m, v, nt.int64[::1], i8, f8, t, i8, i8)


_HELD: list[Any] = []


def _before_fork() -> None:
    """Before a fork (called by :mod:`objpert._forksafe`): hold the build lock and numba's
    compiler lock across it."""
    LOCK.acquire()
    held = [LOCK]
    compiler = sys.modules.get("numba.core.compiler_lock")
    if compiler is not None:
        compiler.global_compiler_lock.acquire()
        held.append(compiler.global_compiler_lock)
    _HELD[:] = held


def _after_fork() -> None:
    """After a fork, in parent and child (:mod:`objpert._forksafe`): release them."""
    held = _HELD[:]
    _HELD.clear()  # before LOCK is released: a fork from another thread refills it
    for lock in reversed(held):
        lock.release()
