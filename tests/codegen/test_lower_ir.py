"""The NVIDIA lowering on tile IR text with layouts: cases the language
rarely produces but the lowering must take."""
from __future__ import annotations

from tilec.codegen_llvm import lower
from tilec.ir.parser import parse_function
from tilec.backends.nvidia.target import nvptx_target

BLOCKED = "blocked<[1, 4], [8, 4], [4, 1], [1, 0]>"
OPERAND = "dot_op<0, 2, mma<[2, 1]>>"


def test_a_boolean_tile_reaches_a_dot_operand_layout_as_booleans():
    """Through shared memory booleans travel as bytes; they must come back as i1."""
    text = f"""func @k(%x: i32) {{
  %m = constant {{value = true, type = tile<32x16xi1>}} : tile<32x16xi1, {BLOCKED}>
  %d = convert_layout %m {{layout = {OPERAND}}} : tile<32x16xi1, {OPERAND}>
  %e = and %d, %d : tile<32x16xi1, {OPERAND}>
}}
"""
    kernel = lower(parse_function(text), nvptx_target("sm_90"), 4)
    assert "and i1" in kernel.llir or "and <" in kernel.llir
