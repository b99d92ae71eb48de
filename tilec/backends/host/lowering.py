"""What only the host knows, as the host codegen asks it: printing, failed
assertions and the math library (``HostLowering``).

``print`` is C's ``printf`` (flushed at once, so its lines keep their order
with the output around them); a failed assertion writes ``file:line:
function: message`` to standard error and calls C's ``abort()``, as C's
``assert`` does: the process stops, as a GPU's context does after a device
assertion.  The math library is tilec's own (``codegen_llvm.portable_math``:
LLVM IR inlined into the loops, which LLVM then vectorizes, within 2 ulp of
the exact result for every argument, sin, cos and tan of huge ones
included; at x86-64-v4 scaling by a power of two is AVX-512's
``vscalefps``, the same bits as the portable way in an eighth of the
instructions); only the functions it lacks call the C library, resolved in
this process when the code is loaded (a loop calling one is not
vectorized).
"""
from __future__ import annotations

from llvmlite import ir as llir

from tilec.codegen_llvm.debug import GENERIC, string_constant
from tilec.codegen_llvm.kernel import I32, I64
from tilec.codegen_llvm.portable_math import PORTABLE_MATH, PortableMath
from tilec.codegen_llvm.scalar_base import MathLibrary
from tilec.targets.base import Target
from tilec.backends.host.target import NATIVE_SCALE_LEVELS

STDERR = 2  # the file descriptor a failed assertion writes to


#: The portable library that scales by ``llvm.ldexp`` (``PortableMath.native_scale``).
SCALING_MATH = PortableMath(native_scale=True)


class HostLowering:
    """The host's hooks (module docstring) for ``target``; ``ctx`` is the host
    codegen's ``HostCtx``.  Its math library scales by ``llvm.ldexp`` at the
    levels with an instruction for it (``target.NATIVE_SCALE_LEVELS``)."""

    name = "cpu"

    def __init__(self, target: Target):
        self.math: MathLibrary = SCALING_MATH if target.cpu in NATIVE_SCALE_LEVELS else PORTABLE_MATH

    def printf(self, ctx, fmt: str, args: list[llir.Value]) -> None:
        printf = _declare(ctx, "printf", I32, [GENERIC], var_arg=True)
        ctx.b.call(printf, [string_constant(ctx, fmt)] + args)
        ctx.b.call(_declare(ctx, "fflush", I32, [GENERIC]), [llir.Constant(GENERIC, None)])

    def assert_fail(self, ctx, message: str, file: str, line: int, function: str) -> None:
        """``write`` the report to standard error, then ``abort()``; the block ends there."""
        report = f"{file}:{line}: {function}: {message}\n"
        write = _declare(ctx, "write", I64, [I32, GENERIC, I64])
        ctx.b.call(write, [I32(STDERR), string_constant(ctx, report), I64(len(report.encode()))])
        ctx.b.call(_declare(ctx, "abort", llir.VoidType(), []), [])
        ctx.b.unreachable()


def _declare(ctx, name: str, ret: llir.Type, params: list, var_arg: bool = False) -> llir.Function:
    """C function ``name`` of the kernel's module, declared on first use (variadic when ``var_arg``)."""
    fn = ctx.module.globals.get(name)
    if fn is None:
        fn = llir.Function(ctx.module, llir.FunctionType(ret, params, var_arg=var_arg), name)
    return fn
