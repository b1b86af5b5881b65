"""Register-blocked products of the batched kernel, written as LLVM vector code.

numba's loop vectoriser turns the tile products of :mod:`.loops` into loops that load
and store the margins (or the gradient) for every four multiply-adds, about half the FMA
peak of a core. The product intrinsics made here keep a block of accumulators in vector
registers instead, the classic GEMM micro-kernel:

- :func:`margins_block` (R rows of X, 8 columns of W; or 4): ``2 R`` four-wide accumulators
  over the features, one W load shared by R rows; stores the R x 8 margins once;
- :func:`accumulate_block` (J features, 8 columns; or 4): ``2 J`` accumulators over the rows
  of a tile, one load of the derivatives shared by J features; adds the J x 8 block to
  the gradient once;
- :func:`logistic_block`: the logistic derivative of :func:`.loops.logistic`, 8 or 16
  values a step, with the constants of :mod:`.exponential`.

:func:`f2i` and :func:`i2f` are the bit casts float64 <-> int64 of :mod:`.exponential`, one LLVM
``bitcast`` each. The plain-Python meaning of every intrinsic is in :mod:`.loops`
(``margins4`` .. ``logistic4``) and :mod:`.exponential`.

Each is an ordinary numba intrinsic (inlined into the compiled kernel, cached with it),
built with llvmlite from ``llvm.fma.v4f64``, unaligned vector loads and stores, and a
counted loop; the summation order (over the features, over the rows) is the loop order,
so results are repeatable bit for bit. Arrays must be C-ordered float64 (the typing
refuses anything else), and the caller keeps every index in bounds: eight columns from
the given ones must exist in W, the margins and the gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from objpert._engines.compiled.exponential import CONSTANTS

__all__ = ["accumulate_block", "f2i", "i2f", "logistic_block", "margins_block"]

_D = ir.DoubleType()
_V4 = ir.VectorType(_D, 4)
_I64 = ir.IntType(64)
#: four-wide vectors per block: a block spans 2 x 4 = 8 columns
_H = 2


@intrinsic
def f2i(typingctx, x):  # pragma: no cover - compiled
    """The bits of a float64 as an int64 (compiled only)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _I64)

    return types.int64(types.float64), codegen


@intrinsic
def i2f(typingctx, x):  # pragma: no cover - compiled
    """The float64 with the bits of an int64 (compiled only)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _D)

    return types.float64(types.int64), codegen


def _i64(v: int) -> ir.Constant:
    return ir.Constant(_I64, v)


def _fma(builder: ir.IRBuilder, a: Any, b: Any, c: Any) -> Any:
    """a * b + c, one rounding, four lanes."""
    module = builder.module
    fn = module.globals.get("llvm.fma.v4f64")
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(_V4, [_V4, _V4, _V4]), "llvm.fma.v4f64")
    return builder.call(fn, [a, b, c])


def _splat(builder: ir.IRBuilder, x: Any) -> Any:
    v = builder.insert_element(ir.Constant(_V4, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), 4), [0, 0, 0, 0])
    return builder.shuffle_vector(v, ir.Constant(_V4, ir.Undefined), zeros)


def _vector_at(builder: ir.IRBuilder, ptr: Any, offset: Any) -> Any:
    """Pointer to the four doubles at ptr + offset."""
    return builder.bitcast(builder.gep(ptr, [offset]), _V4.as_pointer())


def _counted_loop(
    builder: ir.IRBuilder, count: Any, init: list[Any], body: Callable[[Any, list[Any]], list]
) -> list[Any]:
    """state = body(t, state) for t in range(count); the final state (``init`` when
    count <= 0)."""
    before = builder.block
    loop = builder.append_basic_block("block.loop")
    after = builder.append_basic_block("block.after")
    builder.cbranch(builder.icmp_signed(">", count, _i64(0)), loop, after)
    builder.position_at_end(loop)
    t = builder.phi(_I64)
    t.add_incoming(_i64(0), before)
    state = [builder.phi(v.type) for v in init]
    for phi, v in zip(state, init, strict=True):
        phi.add_incoming(v, before)
    new = body(t, state)
    t_next = builder.add(t, _i64(1))
    end = builder.block
    t.add_incoming(t_next, end)
    for phi, v in zip(state, new, strict=True):
        phi.add_incoming(v, end)
    builder.cbranch(builder.icmp_signed("<", t_next, count), loop, after)
    builder.position_at_end(after)
    final = []
    for v0, v1 in zip(init, new, strict=True):
        phi = builder.phi(v0.type)
        phi.add_incoming(v0, before)
        phi.add_incoming(v1, end)
        final.append(phi)
    return final


def _c_float64(*arrays: Any) -> bool:
    return all(
        isinstance(a, types.Array) and a.dtype == types.float64 and a.layout == "C" for a in arrays
    )


def _matrix(context: Any, builder: ir.IRBuilder, ty: Any, value: Any) -> tuple[Any, Any]:
    """(data pointer, row length) of a C-ordered 2-D array."""
    array = context.make_array(ty)(context, builder, value)
    return array.data, cgutils.unpack_tuple(builder, array.shape, 2)[1]


def _data(context: Any, builder: ir.IRBuilder, ty: Any, value: Any) -> Any:
    return context.make_array(ty)(context, builder, value).data


def margins_block(rows: int, halves: int = _H) -> Any:
    """The margins intrinsic for blocks of ``rows`` rows and 4 ``halves`` columns (8, or 4
    with ``halves=1``; see the module docstring)."""

    @intrinsic
    def margins_block(typingctx, X, W, M, row, wcol, mrow, mcol, ldm):  # pragma: no cover
        """M[(mrow + r) ldm + mcol + b] = sum_k X[row + r, k] W[k, wcol + b], r < rows,
        b < 4 halves (compiled)."""
        if not (_c_float64(X, W, M) and X.ndim == 2 and W.ndim == 2 and M.ndim == 1):
            return None
        sig = types.void(X, W, M, *([types.int64] * 5))

        def codegen(context, builder, signature, args):
            x_ty, w_ty, m_ty = signature.args[:3]
            Xv, Wv, Mv, row, wcol, mrow, mcol, ldm = args
            xp, d = _matrix(context, builder, x_ty, Xv)
            wp, ldw = _matrix(context, builder, w_ty, Wv)
            mp = _data(context, builder, m_ty, Mv)
            xrow = [builder.mul(builder.add(row, _i64(r)), d) for r in range(rows)]

            def body(k: Any, acc: list[Any]) -> list[Any]:
                at = builder.add(builder.mul(k, ldw), wcol)
                w = [
                    builder.load(_vector_at(builder, wp, builder.add(at, _i64(4 * h))), align=8)
                    for h in range(halves)
                ]
                out = []
                for r in range(rows):
                    x = _splat(builder, builder.load(builder.gep(xp, [builder.add(xrow[r], k)])))
                    out += [_fma(builder, x, w[h], acc[r * halves + h]) for h in range(halves)]
                return out

            zero = ir.Constant(_V4, [0.0] * 4)
            acc = _counted_loop(builder, d, [zero] * (rows * halves), body)
            for r in range(rows):
                at = builder.add(builder.mul(builder.add(mrow, _i64(r)), ldm), mcol)
                for h in range(halves):
                    ptr = _vector_at(builder, mp, builder.add(at, _i64(4 * h)))
                    builder.store(acc[r * halves + h], ptr, align=8)
            return context.get_dummy_value()

        return sig, codegen

    return margins_block


def accumulate_block(features: int, halves: int = _H) -> Any:
    """The accumulation intrinsic for blocks of ``features`` features and 4 ``halves``
    columns (8, or 4 with ``halves=1``)."""

    @intrinsic
    def accumulate_block(typingctx, X, M, out, row, rows, j, mcol, ocol, ldm):  # pragma: no cover
        """out[j + f, ocol + b] += sum_{r < rows} X[row + r, j + f] M[r ldm + mcol + b],
        f < features, b < 4 halves (compiled)."""
        if not (_c_float64(X, M, out) and X.ndim == 2 and M.ndim == 1 and out.ndim == 2):
            return None
        sig = types.void(X, M, out, *([types.int64] * 6))

        def codegen(context, builder, signature, args):
            x_ty, m_ty, o_ty = signature.args[:3]
            Xv, Mv, Ov, row, rows, j, mcol, ocol, ldm = args
            xp, d = _matrix(context, builder, x_ty, Xv)
            mp = _data(context, builder, m_ty, Mv)
            op, ldo = _matrix(context, builder, o_ty, Ov)

            def body(r: Any, acc: list[Any]) -> list[Any]:
                at = builder.add(builder.mul(r, ldm), mcol)
                m = [
                    builder.load(_vector_at(builder, mp, builder.add(at, _i64(4 * h))), align=8)
                    for h in range(halves)
                ]
                xat = builder.add(builder.mul(builder.add(row, r), d), j)
                out = []
                for f in range(features):
                    x = _splat(builder, builder.load(builder.gep(xp, [builder.add(xat, _i64(f))])))
                    out += [_fma(builder, x, m[h], acc[f * halves + h]) for h in range(halves)]
                return out

            zero = ir.Constant(_V4, [0.0] * 4)
            acc = _counted_loop(builder, rows, [zero] * (features * halves), body)
            for f in range(features):
                at = builder.add(builder.mul(builder.add(j, _i64(f)), ldo), ocol)
                for h in range(halves):
                    ptr = _vector_at(builder, op, builder.add(at, _i64(4 * h)))
                    total = builder.fadd(builder.load(ptr, align=8), acc[f * halves + h])
                    builder.store(total, ptr, align=8)
            return context.get_dummy_value()

        return sig, codegen

    return accumulate_block


def logistic_block(vectors: int, constants: Mapping[str, float] = CONSTANTS) -> Any:
    """The intrinsic ``f(M, start, units, y)``: M[start + i] = -y / (1 + exp(y M[start + i]))
    for i < 4 ``vectors`` ``units``, ``vectors`` independent four-wide evaluations per step
    (their dependency chains overlap). The same steps as :func:`.loops.logistic` with the
    constants of :mod:`.exponential` (the clamps, the Cody-Waite split, the Taylor coefficients
    c2..c13), so the same result to an ulp."""
    c = {key: ir.Constant(_V4, [float(v)] * 4) for key, v in constants.items()}
    one = ir.Constant(_V4, [1.0] * 4)
    i4 = ir.VectorType(_I64, 4)
    bias = ir.Constant(i4, [1023] * 4)
    shift = ir.Constant(i4, [52] * 4)
    shifter_bits = ir.Constant(i4, [int(constants["shifter_bits"])] * 4)

    def derivative(builder: ir.IRBuilder, t: Any, y: Any) -> Any:
        u = builder.fmul(y, t)
        u = builder.select(builder.fcmp_ordered("<", u, c["lo"]), c["lo"], u)
        u = builder.select(builder.fcmp_ordered(">", u, c["hi"]), c["hi"], u)
        kd = _fma(builder, u, c["log2e"], c["shifter"])
        k = builder.sub(builder.bitcast(kd, i4), shifter_bits)
        kf = builder.fsub(kd, c["shifter"])
        nkf = builder.fsub(ir.Constant(_V4, [-0.0] * 4), kf)
        r = _fma(builder, nkf, c["ln2_hi"], u)
        r = _fma(builder, nkf, c["ln2_lo"], r)
        r2 = builder.fmul(r, r)
        r4 = builder.fmul(r2, r2)

        def pair(lo: int) -> Any:  # C_lo + C_{lo+1} r + r^2 (C_{lo+2} + C_{lo+3} r)
            a = _fma(builder, c[f"c{lo + 1}"], r, c[f"c{lo}"])
            b = _fma(builder, c[f"c{lo + 3}"], r, c[f"c{lo + 2}"])
            return _fma(builder, r2, b, a)

        a, b, cc = pair(2), pair(6), pair(10)
        inner = _fma(builder, r4, _fma(builder, r4, cc, b), a)
        p = builder.fadd(one, _fma(builder, r2, inner, r))
        scale = builder.bitcast(builder.shl(builder.add(k, bias), shift), _V4)
        e = builder.fmul(p, scale)
        return builder.fdiv(builder.fsub(ir.Constant(_V4, [-0.0] * 4), y), builder.fadd(one, e))

    @intrinsic
    def logistic(typingctx, M, start, units, y):  # pragma: no cover - compiled
        if not (_c_float64(M) and M.ndim == 1 and isinstance(y, types.Float)):
            return None
        sig = types.void(M, types.int64, types.int64, types.float64)

        def codegen(context, builder, signature, args):
            Mv, start, units, yv = args
            mp = _data(context, builder, signature.args[0], Mv)
            y = _splat(builder, yv)

            def body(u: Any, state: list[Any]) -> list[Any]:
                at = builder.add(start, builder.mul(u, _i64(4 * vectors)))
                ptrs = [
                    _vector_at(builder, mp, builder.add(at, _i64(4 * v))) for v in range(vectors)
                ]
                values = [builder.load(p, align=8) for p in ptrs]
                for p, t in zip(ptrs, values, strict=True):
                    builder.store(derivative(builder, t, y), p, align=8)
                return state

            _counted_loop(builder, units, [], body)
            return context.get_dummy_value()

        return sig, codegen

    return logistic
