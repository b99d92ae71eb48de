"""The shared-memory plan (``tilec/opt/shared_memory.py``): dead buffers'
bytes are reused, live ones never overlap, a buffer used in a loop stays
live to the loop's end, offsets are 128-byte aligned."""
from __future__ import annotations

import pytest
from opt.test_pipeline import LOOP

from tilec import ir
from tilec.ir.parser import parse_function
from tilec.backends.nvidia.pipeline import pipeline_loops
from tilec.backends.nvidia.target import nvptx_target
from tilec.opt.shared_memory import plan_shared

SHARED = "shared<8, 1, 1, [2, 1, 0]>"


def alloc(name: str, slots: int = 2, rows: int = 16, elem: str = "f16") -> str:
    """A ``local_alloc`` of ``slots x rows x 8`` (2 x 16 x 8 f16: 512 bytes)."""
    t = f"tile<{slots}x{rows}x8x{elem}, {SHARED}>"
    return f"%{name} = local_alloc {{shape = ({slots}, {rows}, 8), elem = {elem}, layout = {SHARED}}} : {t}"


def use(name: str, rows: int = 16, elem: str = "f16") -> str:
    return f"%{name}_v = local_load %{name}, %s : tile<{rows}x8x{elem}>"


def plan_of(*lines: str):
    body = "".join(f"  {line}\n" for line in "\n".join(lines).splitlines())
    fn = parse_function(f"func @k(%s: i32, %n: i32) {{\n  %z = constant {{value = 0, type = i32}} : i32\n{body}}}\n")
    plan = plan_shared(fn)
    allocs = {op.result.name: op for op in ir.walk(fn.body) if isinstance(op, ir.LocalAlloc)}
    return plan, {name: plan.offsets[op] for name, op in allocs.items()}, fn


def test_buffers_used_one_after_the_other_share_offset_zero():
    plan, offsets, _ = plan_of(alloc("a"), use("a"), alloc("b"), use("b"))
    assert offsets == {"a": 0, "b": 0}
    assert plan.size == 512


def test_buffers_live_together_do_not_overlap():
    plan, offsets, _ = plan_of(alloc("a"), alloc("b"), use("a"), use("b"))
    assert offsets == {"a": 0, "b": 512}
    assert plan.size == 1024


def test_offsets_are_aligned_to_128_bytes():
    _, offsets, _ = plan_of(alloc("a", rows=3, elem="f32"), alloc("b"), use("a", rows=3, elem="f32"), use("b"))
    assert offsets == {"a": 0, "b": 256}  # 2 x 3 x 8 x 4 = 192 bytes, rounded up


def test_first_fit_takes_the_lowest_gap():
    _, offsets, _ = plan_of(alloc("a"), alloc("b"), use("a"), alloc("c", rows=8), use("b"), use("c", rows=8))
    assert offsets == {"a": 0, "b": 512, "c": 0}  # c (256 bytes) fits where a was


LOOP_USE = """{a}
%r = for %z, %n, %s, [] {{
^(%i: i32):
  {use_a}
  {b}
  {use_b}
  yield []
}}"""


def test_a_buffer_used_in_a_loop_stays_live_to_the_loops_end():
    plan, offsets, fn = plan_of(LOOP_USE.format(a=alloc("a"), use_a=use("a"), b=alloc("b"), use_b=use("b"))
                                .replace("%r = for", "for"))
    assert offsets == {"a": 0, "b": 512}  # b is made after a's last use, but the next iteration reads a
    loop = next(op for op in fn.body.ops if isinstance(op, ir.For))
    _, _, use_b, end = loop.body.ops
    assert (plan.live_top(use_b), plan.live_top(end)) == (1024, 512)  # b is dead at the yield, a is not
    assert plan.live_top(fn.body.ops[0]) == 0  # the constant before any buffer


def test_a_buffer_made_and_used_inside_one_iteration_is_not_extended():
    text = LOOP_USE.format(a="", use_a=alloc("a") + "\n  " + use("a"), b=alloc("b"), use_b=use("b"))
    _, offsets, _ = plan_of(text.replace("%r = for", "for"))
    assert offsets == {"a": 0, "b": 0}


def test_a_use_in_a_nested_loop_extends_to_the_outermost_loop_without_the_alloc():
    text = f"""for %z, %n, %s, [] {{
^(%i: i32):
  {alloc("a")}
  for %z, %n, %s, [] {{
  ^(%j: i32):
    {use("a")}
    yield []
  }}
  {alloc("b")}
  {use("b")}
  yield []
}}"""
    _, offsets, _ = plan_of(text)
    assert offsets == {"a": 0, "b": 0}  # a lives through the inner loop only


@pytest.mark.parametrize("num_stages", (2, 3, 4))
def test_a_pipelined_loops_buffers_are_live_together_through_the_loop(num_stages):
    fn = pipeline_loops(parse_function(LOOP), num_stages, nvptx_target("sm_90"), num_warps=4)
    plan = plan_shared(fn)
    (buf,) = plan.offsets
    assert plan.offsets[buf] == 0 and plan.size == num_stages * 16 * 16 * 2
    loop = next(op for op in fn.body.ops if isinstance(op, ir.For))
    dot = next(op for op in loop.body.ops if isinstance(op, ir.Dot))
    assert plan.live_top(dot) == plan.size
    assert plan.live_top(fn.body.ops[-1]) == 0  # the barrier after the final wait
