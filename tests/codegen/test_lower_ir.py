"""The lowering on tile IR text with layouts: cases the language rarely
produces but the lowering must take, and errors raised inside a rule."""
from __future__ import annotations

import pytest

from tilec import ir
from tilec.codegen_llvm import Analyses, lower
from tilec.errors import CompilationError, TilecError
from tilec.ir.parser import parse_function
from tilec.opt.axis_info import analyze_axes
from tilec.opt.shared_memory import plan_shared
from tilec.backends.nvidia.lowering import NvidiaLowering
from tilec.backends.nvidia.target import nvptx_target

BLOCKED = "blocked<[1, 4], [8, 4], [4, 1], [1, 0]>"
OPERAND = "dot_op<0, 2, mma<[2, 1]>>"


def lower_text(text: str, lowering=NvidiaLowering()):
    """The LLVM module of the kernel in ``text``, for sm_90 with 4 warps."""
    fn = parse_function(text)
    return lower(fn, nvptx_target("sm_90"), lowering, Analyses(analyze_axes(fn), plan_shared(fn)), 4)


def test_a_boolean_tile_reaches_a_dot_operand_layout_as_booleans():
    """Through shared memory booleans travel as bytes; they must come back as i1."""
    text = f"""func @k(%x: i32) {{
  %m = constant {{value = true, type = tile<32x16xi1>}} : tile<32x16xi1, {BLOCKED}>
  %d = convert_layout %m {{layout = {OPERAND}}} : tile<32x16xi1, {OPERAND}>
  %e = and %d, %d : tile<32x16xi1, {OPERAND}>
}}
"""
    kernel = lower_text(text)
    assert "and i1" in kernel.llir or "and <" in kernel.llir


ADD_AT_LINE_7 = """func @k(%x: i32) {
  %y = add %x, %x : i32 loc("kernels/mine.py":7:4)
}
"""


def _lowering_whose_add_raises(error: Exception) -> NvidiaLowering:
    def fail(ctx, op):
        raise error

    class Failing(NvidiaLowering):
        rules = {**NvidiaLowering.rules, ir.Add: fail}
    return Failing()


def test_a_bug_in_a_rule_is_reported_at_the_kernel_line():
    """Any exception a rule raises becomes a CompilationError naming the op's
    file and line, chained to the original."""
    with pytest.raises(CompilationError, match=r"kernels/mine\.py:7: internal compiler error while lowering "
                                               r"`add`: KeyError: 'lost'") as info:
        lower_text(ADD_AT_LINE_7, _lowering_whose_add_raises(KeyError("lost")))
    assert isinstance(info.value.__cause__, KeyError)
    assert (info.value.file, info.value.line, info.value.kernel) == ("kernels/mine.py", 7, "k")


def test_a_tilec_error_without_a_place_gets_the_op_line():
    with pytest.raises(CompilationError, match=r"^kernels/mine\.py:7: no such thing \(in kernel `k`\)$"):
        lower_text(ADD_AT_LINE_7, _lowering_whose_add_raises(TilecError("no such thing")))


def test_a_gather_whose_index_and_result_layouts_differ_is_reported_at_its_line():
    """The layout pass gives a gather's index tile and result one layout; IR
    that breaks this is reported at the op's line, saying so."""
    other = "blocked<[4, 1], [4, 8], [1, 4], [0, 1]>"
    text = f"""func @k(%x: i32) {{
  %r = constant {{value = 1, type = tile<32x16xi8>}} : tile<32x16xi8, {BLOCKED}>
  %ix = constant {{value = 0, type = tile<32x16xi32>}} : tile<32x16xi32, {BLOCKED}>
  %g = gather %r, %ix {{axis = 1}} : tile<32x16xi8, {other}> loc("kernels/mine.py":9:4)
}}
"""
    with pytest.raises(CompilationError, match=r"kernels/mine\.py:9: gather: the index tile .* must share a layout"):
        lower_text(text)
