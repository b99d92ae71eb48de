"""``device_print``, ``device_assert`` and ``debug_barrier``.

``print`` prints once per element of the program (only the thread that owns
an element prints it, replicas stay quiet), as ``pid (x, y, z) idx (i, j)
prefix: value`` (the interpreter's form, plus the index), through the
backend's ``printf``.  ``assert`` calls the backend's ``assert_fail`` (which
stops the kernel with an error the host sees) in every thread that holds a
false element.
"""
from __future__ import annotations

import hashlib

from llvmlite import ir as llir

from tilec import ir
from tilec.ir.fp8 import fp8_format
from tilec.ir.types import PointerType, TileType, elem_type
from tilec.codegen_llvm.kernel import I32, I64, Ctx, coordinates, first_thread, lowers, owner_predicate
from tilec.codegen_llvm.memory import _guarded
from tilec.codegen_llvm.scalar_fp8 import decode_fp8

GENERIC = llir.PointerType()


def string_constant(ctx: Ctx, text: str) -> llir.Value:
    """A pointer to a NUL-terminated global copy of ``text`` (one per distinct
    text).  The global is named by a digest of the bytes, the same in every
    process (Python's ``hash`` of a str is not), so a kernel's LLVM IR and
    binary do not change from run to run."""
    data = bytearray(text.encode()) + b"\0"
    name = f"tilec_str_{hashlib.sha256(data).hexdigest()[:16]}_{len(data)}"
    g = ctx.module.globals.get(name)
    if g is None:
        arr = llir.ArrayType(llir.IntType(8), len(data))
        g = llir.GlobalVariable(ctx.module, arr, name)
        g.global_constant, g.linkage, g.initializer = True, "private", llir.Constant(arr, data)
        g.type = GENERIC  # see Ctx._smem_base
    return g


def _printf_arg(ctx: Ctx, v: llir.Value, t, hex_: bool):
    """(format, value as C's printf takes it): floats as double, small ints as i32."""
    b = ctx.b
    if isinstance(t, PointerType):
        return "%p", b.ptrtoint(v, I64)
    if t.is_float:
        if t.is_fp8:  # its bits, decoded
            v = decode_fp8(ctx.scalar, v, fp8_format(t))
        return ("%a" if hex_ else "%f"), b.fpext(v, llir.DoubleType()) if t.bits < 64 else v
    if t.bits == 64:
        return ("%llx" if hex_ else "%lld" if t.kind == "int" else "%llu"), v
    wide = b.zext(v, I32) if t.kind != "int" or t.bits == 1 else b.sext(v, I32) if t.bits < 32 else v
    return ("%x" if hex_ else "%d" if t.kind == "int" else "%u"), wide


@lowers(ir.Print)
def _print(ctx: Ctx, op: ir.Print) -> None:
    pids = [ctx.lowering.program_id(ctx, axis) for axis in range(3)]
    tile = next((v for v in op.values if isinstance(v.type, TileType)), None)
    if tile is None:
        places, owner = [()], first_thread(ctx)
    else:
        places, owner = coordinates(ctx, tile), owner_predicate(ctx, tile.type.layout, tile.type.shape)
    prefix = op.prefix.replace("%", "%%")  # the user's text, not printf conversions
    for i, where in enumerate(places):
        def emit(i=i, where=where):
            values = [_printf_arg(ctx, ctx[v][i if len(ctx[v]) > 1 else 0], elem_type(v.type), op.hex)
                      for v in op.values]
            idx = f" idx ({', '.join(['%d'] * len(where))})" if where else ""
            fmt = f"pid (%d, %d, %d){idx} {prefix}: " + " ".join(f for f, _ in values) + "\n"
            ctx.lowering.printf(ctx, fmt, pids + list(where) + [x for _, x in values])
        _guarded(ctx, owner, emit, None)


@lowers(ir.Assert)
def _assert(ctx: Ctx, op: ir.Assert) -> None:
    b = ctx.b
    for cond in ctx[op.cond]:
        with b.if_then(b.not_(cond)):
            ctx.lowering.assert_fail(ctx, f"device_assert failed: {op.msg}", op.loc.file, op.loc.line, ctx.fn.name)


@lowers(ir.Barrier)
def _barrier(ctx: Ctx, op: ir.Barrier) -> None:
    ctx.barrier()
