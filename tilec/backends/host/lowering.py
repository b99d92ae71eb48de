"""How codegen's rules run on the host CPU: ``HostLowering``, the backend's
``TargetLowering``.

One thread runs each program (``target.py``): its thread id is 0, a barrier
has nobody to wait for, and a warp of one lane has nobody to exchange words
with.  The program's ids and the grid's size are the kernel's last six
arguments (``grid.py``).  ``print`` is C's ``printf`` (flushed at once, so
its lines keep their order with the output around them); a failed
assertion writes ``file:line: function: message`` to standard error and
calls C's ``abort()``, as C's ``assert`` does: the process stops, as a GPU's
context does after a device assertion.  The math library is the C one
(``sinf``, ``fmod``...), resolved in this process when the code is loaded.
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.errors import TilecError
from tilec.codegen_llvm import TargetLowering
from tilec.codegen_llvm.debug import GENERIC, string_constant
from tilec.codegen_llvm.kernel import I32, I64, Ctx
from tilec.backends.host.grid import SCRATCH, grid_argument

STDERR = 2  # the file descriptor a failed assertion writes to


class HostLowering(TargetLowering):
    """The host backend's hooks (module docstring)."""

    name = "cpu"

    def thread_id(self, ctx: Ctx) -> llir.Value:
        return I32(0)

    def program_id(self, ctx: Ctx, axis: int) -> llir.Value:
        return ctx[grid_argument(ctx.fn, "program_id_" + "xyz"[axis])][0]

    def num_programs(self, ctx: Ctx, axis: int) -> llir.Value:
        return ctx[grid_argument(ctx.fn, "num_programs_" + "xyz"[axis])][0]

    def shared_memory(self, ctx: Ctx) -> llir.Value:
        """The program's scratch buffer, the kernel's last argument (``grid.py``)."""
        return ctx[grid_argument(ctx.fn, SCRATCH)][0]

    def barrier(self, ctx: Ctx) -> None:
        """Nothing: the one thread of a program is always at the barrier."""

    def shuffle_xor(self, ctx: Ctx, word: llir.Value, lane_mask: int) -> llir.Value:
        """``word`` itself: a warp of one lane has only lane mask 0."""
        if lane_mask:
            raise TilecError(f"internal compiler error: a lane exchange (mask {lane_mask}) on the cpu target, "
                             "whose warps have one lane; please report it with the kernel")
        return word

    def printf(self, ctx: Ctx, fmt: str, args: list[llir.Value]) -> None:
        printf = _declare(ctx, "printf", I32, [GENERIC], var_arg=True)
        ctx.b.call(printf, [string_constant(ctx, fmt)] + args)
        ctx.b.call(_declare(ctx, "fflush", I32, [GENERIC]), [llir.Constant(GENERIC, None)])

    def assert_fail(self, ctx: Ctx, message: str, file: str, line: int, function: str) -> None:
        """``write`` the report to standard error, then ``abort()``; the block ends there."""
        report = f"{file}:{line}: {function}: {message}\n"
        write = _declare(ctx, "write", I64, [I32, GENERIC, I64])
        ctx.b.call(write, [I32(STDERR), string_constant(ctx, report), I64(len(report.encode()))])
        ctx.b.call(_declare(ctx, "abort", llir.VoidType(), []), [])
        ctx.b.unreachable()


def _declare(ctx: Ctx, name: str, ret: llir.Type, params: list, var_arg: bool = False) -> llir.Function:
    """C function ``name`` of the kernel's module, declared on first use (variadic when ``var_arg``)."""
    fn = ctx.module.globals.get(name)
    if fn is None:
        fn = llir.Function(ctx.module, llir.FunctionType(ret, params, var_arg=var_arg), name)
    return fn
