"""``split_offset``: an ldmatrix address is a lane's swizzled offset plus an
immediate.  Checked on this host against the codegen's own ``swizzled_offset``
(the LLVM IR it emits, compiled for x86): for any lane inside the matrix,
``offset(lane + coords) == offset(lane + small) + imm``."""
from __future__ import annotations

import ctypes
import itertools

from hypothesis import given
from hypothesis import strategies as st
from llvmlite import ir as llir

from codegen.host_jit import native_function
from helpers import PROPERTY

from tilec.backends.nvidia.mma import split_offset, swizzled_offset
from tilec.ir.layouts import Shared

I32 = llir.IntType(32)
SWIZZLES = [(8, 1, 8), (8, 2, 4), (4, 1, 8), (8, 4, 2), (4, 2, 4), (1, 1, 1)]  # (vec, per_phase, max_phase)
_OFFSETS: dict[tuple, object] = {}


def offset_function(layout: Shared, shape: tuple, elem_bytes: int):
    """``swizzled_offset`` of (row, column) for ``layout``, compiled for this host."""
    key = (layout, shape, elem_bytes)
    if key not in _OFFSETS:
        module, name = llir.Module(), f"swizzled{len(_OFFSETS)}"
        fn = llir.Function(module, llir.FunctionType(I32, [I32, I32]), name)
        ctx = type("Ctx", (), {"b": llir.IRBuilder(fn.append_basic_block())})()
        ctx.b.ret(swizzled_offset(ctx, layout, shape, tuple(fn.args), elem_bytes))
        _OFFSETS[key] = native_function(module, name, ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32))
    return _OFFSETS[key]


@st.composite
def matrices(draw):
    """A swizzled layout, a matrix shape (a slot dim in front, or none), constant
    coordinates and a lane's own that stay inside the matrix."""
    vec, per_phase, max_phase = draw(st.sampled_from(SWIZZLES))
    rank = draw(st.sampled_from([2, 3]))
    order = draw(st.sampled_from([(rank - 1, rank - 2), (rank - 2, rank - 1)])) + tuple(range(rank - 2))
    rows, cols = (draw(st.sampled_from([8, 16, 32, 64, 128])) for _ in range(2))
    shape = (3,) * (rank - 2) + (rows, cols)
    coords = (draw(st.integers(0, rows - 1)), draw(st.integers(0, cols - 1)))
    lane = (draw(st.integers(0, rows - 1 - coords[0])), draw(st.integers(0, cols - 1 - coords[1])))
    return Shared(vec, per_phase, max_phase, order), shape, coords, lane, draw(st.sampled_from([1, 2, 4]))


@PROPERTY
@given(case=matrices())
def test_constant_coordinates_split_into_small_ones_and_an_immediate(case):
    layout, shape, coords, lane, elem_bytes = case
    offset = offset_function(layout, shape, elem_bytes)
    small, imm = split_offset(layout, shape, coords, elem_bytes)
    assert all(0 <= s <= c for s, c in zip(small, coords))
    whole = offset(lane[0] + coords[0], lane[1] + coords[1])
    assert whole == offset(lane[0] + small[0], lane[1] + small[1]) + imm


def test_whole_swizzle_periods_leave_few_distinct_lane_offsets():
    """The 16 (k step, n) places of a 64x64 fp16 operand read along k need 4 lane offsets, not 16."""
    layout = Shared(8, 1, 8, (1, 0))
    smalls = {split_offset(layout, (64, 64), (16 * rep, 16 * ks), 2)[0]
              for rep, ks in itertools.product(range(4), range(4))}
    assert len(smalls) == 4
