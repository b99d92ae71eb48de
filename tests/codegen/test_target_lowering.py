"""Codegen's generic rules with a backend that is not NVIDIA: every
target-specific piece comes from the ``TargetLowering`` hooks (here, calls
to ``test.*`` functions that leave a trace), so the module names no vendor
and is well-formed LLVM."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
from llvmlite import ir as llir

from tilec.codegen_llvm import Analyses, TargetLowering, lower
from tilec.codegen_llvm.debug import string_constant
from tilec.codegen_llvm.kernel import I32
from tilec.ir.parser import parse_function
from tilec.opt.axis_info import analyze_axes
from tilec.opt.shared_memory import plan_shared
from tilec.targets.base import Target

LAYOUT = "blocked<[2], [32], [4], [0]>"
TILE = f"tile<256xf32, {LAYOUT}>"
# Ids, a masked load, an assert, a reduction across lanes and warps,
# a print, an atomic, the math library and a store.
KERNEL = f"""func @k(%x: ptr<f32> {{divisibility = 16}}, %out: ptr<f32> {{divisibility = 16}}, %n: i32) {{
  %pid = program_id {{axis = 0}} : i32
  %0 = constant {{value = 256, type = i32}} : i32
  %1 = mul %pid, %0 : i32
  %2 = arange {{start = 0, end = 256}} : tile<256xi32, {LAYOUT}>
  %3 = splat %1 {{shape = (256,)}} : tile<256xi32, {LAYOUT}>
  %offs = add %3, %2 : tile<256xi32, {LAYOUT}>
  %4 = splat %x {{shape = (256,)}} : tile<256xptr<f32>, {LAYOUT}>
  %5 = addptr %4, %offs : tile<256xptr<f32>, {LAYOUT}>
  %6 = splat %n {{shape = (256,)}} : tile<256xi32, {LAYOUT}>
  %7 = cmp %offs, %6 {{pred = "lt"}} : tile<256xi1, {LAYOUT}>
  %8 = constant {{value = 0.0, type = tile<256xf32>}} : {TILE}
  %v = load %5, %7, %8 : {TILE}
  %9 = cmp %v, %v {{pred = "eq"}} : tile<256xi1, {LAYOUT}>
  assert %9 {{msg = "nan"}}
  %s = reduce [%v] {{axis = 0}} : f32 {{
  ^(%10: f32, %11: f32):
    %12 = add %10, %11 : f32
    yield [%12]
  }}
  print [%s] {{prefix = "s"}}
  %13 = atomic_rmw %out, %s, _ {{kind = "add"}} : f32
  %14 = sin %v : {TILE}
  %15 = num_programs {{axis = 0}} : i32
  %16 = cast %15 {{to = f32}} : f32
  %17 = splat %16 {{shape = (256,)}} : {TILE}
  %18 = add %14, %17 : {TILE}
  %19 = splat %out {{shape = (256,)}} : tile<256xptr<f32>, {LAYOUT}>
  %20 = addptr %19, %offs : tile<256xptr<f32>, {LAYOUT}>
  store %20, %18, %7
}}
"""

HOST = Target(name="test-host", triple="x86_64-unknown-linux-gnu", data_layout="", cpu="generic", features="",
              warp_size=32, default_shared_bytes=48 * 1024, max_shared_bytes=48 * 1024)


class Traced(TargetLowering):
    """Each hook calls a ``test.*`` function of its own name."""

    name = "traced"

    def thread_id(self, ctx):
        return ctx.call("test.thread_id", [], I32)

    def program_id(self, ctx, axis):
        return ctx.call(f"test.program_id.{axis}", [], I32)

    def num_programs(self, ctx, axis):
        return ctx.call(f"test.num_programs.{axis}", [], I32)

    def barrier(self, ctx):
        ctx.call("test.barrier", [], llir.VoidType())

    def shuffle_xor(self, ctx, word, lane_mask):
        return ctx.call("test.shuffle_xor", [word, I32(lane_mask)], I32)

    def syncscope(self, scope):
        return f"test-{scope}"

    def printf(self, ctx, fmt, args):
        ctx.call("test.printf", [string_constant(ctx, fmt), *args], llir.VoidType())

    def assert_fail(self, ctx, message, file, line, function):
        ctx.call("test.assert_fail", [string_constant(ctx, message), I32(line)], llir.VoidType())

    def kernel_attributes(self, num_warps):
        return {"test-threads": str(32 * num_warps)}


def test_every_target_detail_comes_from_the_hooks():
    fn = parse_function(KERNEL)
    kernel = lower(fn, HOST, Traced(), Analyses(analyze_axes(fn), plan_shared(fn)), 4)
    llvm.parse_assembly(kernel.llir).verify()
    for hook in ("thread_id", "program_id.0", "num_programs.0", "barrier", "shuffle_xor", "printf", "assert_fail"):
        assert f'@"test.{hook}"' in kernel.llir, hook
    assert 'syncscope("test-gpu")' in kernel.llir
    assert '"test-threads"="128"' in kernel.llir
    assert '@"sinf"' in kernel.llir  # the C math library
    assert not re.search(r"(?i)nvvm|ptx|__nv_", kernel.llir)
    assert kernel.shared_bytes > 0 and "addrspace(3)" not in kernel.llir  # the default shared space: 0
