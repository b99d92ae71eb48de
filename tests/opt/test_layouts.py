"""Target lowering's layout assignment: golden texts for the decisions that
matter (coalesced vectors, slices through reduce/expand_dims, loop-carried
layouts) and a property: every random kernel keeps its results."""
from __future__ import annotations

import itertools
import math
import re

import numpy as np

import pytest
from hypothesis import given, settings
from opt.golden import apply_pass
from opt.random_kernels import kernel_cases, same_results

import tilec
import tilec.language as tl
from tilec import ir
from tilec.codegen_llvm.shuffle import _register_permutation
from tilec.ir.types import TileType, f16
from tilec.errors import CompilationError
from tilec.ir.layouts import (
    Blocked, Slice, blocked_layout, kept_dims, num_registers, register_offsets, replicating,
    root_layout, root_shape, thread_bits, vector_runs,
)
from tilec.ir.layouts_nvidia import DotOperand, Mma
from tilec.ir.printer import print_function
from tilec.ir.verify import verify_function
from tilec.backends.nvidia.layouts import assign_layouts
from tilec.backends.nvidia.target import WARP_SIZE, nvptx_target

SM_90 = nvptx_target("sm_90")


def four_warps(fn):
    return assign_layouts(fn, num_warps=4, target=SM_90)


def layouts_of(text: str) -> dict[str, str]:
    """Value name -> its type, from printed IR (``%name = ... : type``)."""
    out = {}
    for line in text.splitlines():
        if " = " in line and " : " in line and line.strip().startswith("%"):
            out[line.split(" = ")[0].strip()] = line.rsplit(" : ", 1)[1].strip().removesuffix(" {")
    return out


COPY = """\
func @copy(%src: ptr<f32> {divisibility = 16}, %dst: ptr<f32> {divisibility = 16}) {
  %i = arange {start = 0, end = 1024} : tile<1024xi32>
  %p = splat %src {shape = (1024,)} : tile<1024xptr<f32>>
  %q = addptr %p, %i : tile<1024xptr<f32>>
  %x = load %q, _, _ : tile<1024xf32>
  %r = splat %dst {shape = (1024,)} : tile<1024xptr<f32>>
  %s = addptr %r, %i : tile<1024xptr<f32>>
  store %s, %x, _
}
"""


def test_aligned_contiguous_access_gets_16_byte_vectors():
    got = layouts_of(apply_pass(four_warps, COPY))
    assert got["%x"] == "tile<1024xf32, blocked<[4], [32], [4], [0]>>"
    assert len(set(got.values()) - {"i32"}) == 3  # i32, ptr and f32 tiles, one layout


def test_unaligned_access_gets_one_element_per_thread():
    got = layouts_of(apply_pass(four_warps, COPY.replace(" {divisibility = 16}", "")))
    assert got["%x"] == "tile<1024xf32, blocked<[1], [32], [4], [0]>>"


ROWS = """\
func @rows(%src: ptr<f32> {divisibility = 16}, %out: ptr<f32> {divisibility = 16}) {
  %i = arange {start = 0, end = 16} : tile<16xi32>
  %j = arange {start = 0, end = 64} : tile<64xi32>
  %ic = expand_dims %i {axis = 1} : tile<16x1xi32>
  %c64 = constant {value = 64, type = tile<16x1xi32>} : tile<16x1xi32>
  %row = mul %ic, %c64 : tile<16x1xi32>
  %jr = expand_dims %j {axis = 0} : tile<1x64xi32>
  %rowb = broadcast %row {shape = (16, 64)} : tile<16x64xi32>
  %jb = broadcast %jr {shape = (16, 64)} : tile<16x64xi32>
  %off = add %rowb, %jb : tile<16x64xi32>
  %p = splat %src {shape = (16, 64)} : tile<16x64xptr<f32>>
  %q = addptr %p, %off : tile<16x64xptr<f32>>
  %x = load %q, _, _ : tile<16x64xf32>
  %s = reduce [%x] {axis = 1} : tile<16xf32> {
  ^(%a: f32, %b: f32):
    %c = add %a, %b : f32
    yield [%c]
  }
  %o = splat %out {shape = (16,)} : tile<16xptr<f32>>
  %oq = addptr %o, %i : tile<16xptr<f32>>
  store %oq, %s, _
}
"""


def test_reduce_gives_a_slice_and_aranges_are_made_where_expand_dims_wants_them():
    got = layouts_of(apply_pass(four_warps, ROWS))
    parent = "blocked<[1, 4], [2, 16], [4, 1], [1, 0]>"
    assert got["%x"] == f"tile<16x64xf32, {parent}>"
    assert got["%j"] == f"tile<64xi32, slice<0, {parent}>>"
    assert got["%row"] == f"tile<16x1xi32, {parent}>"
    assert got["%s"] == f"tile<16xf32, slice<1, {parent}>>"
    text = apply_pass(four_warps, ROWS)
    assert "convert_layout %s" in text  # the store wants the 1-D tile coalesced


LOOP = """\
func @loop(%n: i32, %src: ptr<f32> {divisibility = 16}) {
  %z = constant {value = 0.0, type = tile<256xf32>} : tile<256xf32>
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %i = arange {start = 0, end = 256} : tile<256xi32>
  %p = splat %src {shape = (256,)} : tile<256xptr<f32>>
  %q = addptr %p, %i : tile<256xptr<f32>>
  %acc = for %zero, %n, %one, [%z] : tile<256xf32> {
  ^(%k: i32, %a: tile<256xf32>):
    %x = load %q, _, _ : tile<256xf32>
    %b = add %a, %x : tile<256xf32>
    yield [%b]
  }
  store %q, %acc, _
}
"""


def test_loop_carried_values_keep_one_layout_without_conversions():
    text = apply_pass(four_warps, LOOP)
    got = layouts_of(text)
    want = "tile<256xf32, blocked<[2], [32], [4], [0]>>"
    assert got["%z"] == got["%acc"] == got["%b"] == want
    assert "convert_layout" not in text


@tilec.jit
def two_tiles_advanced(a_ptr, b_ptr, out_ptr, n, B: tl.constexpr):
    """``a`` read along rows, ``b`` (same tile shape) along columns, both
    through pointer tiles advanced in the loop."""
    r = tl.arange(0, B)
    pa = a_ptr + r[:, None] * B + r[None, :]
    pb = b_ptr + r[:, None] + r[None, :] * B
    acc = tl.zeros((B, B), tl.float32)
    for _ in range(n):
        acc += tl.load(pa) + tl.load(pb)
        pa += B * B
        pb += B * B
    tl.store(out_ptr + r[:, None] * B + r[None, :], acc)


def test_a_carried_pointer_tile_takes_its_accesses_layout_not_its_shapes():
    """``pb`` shares its shape with ``pa``, whose access came first: carried in
    the shape's layout it was converted (through shared memory, 8 bytes an
    element) at every iteration; it is carried in its own access's layout,
    and only the loaded values meet in one."""
    B, n = 32, 3
    a = np.arange(n * B * B, dtype=np.float32)
    b = -np.arange(n * B * B, dtype=np.float32)
    out = np.zeros((B, B), np.float32)
    fn = four_warps(two_tiles_advanced.compile(a, b, out, n, B=B, target="host").fn)
    text = print_function(fn)
    loop = text.split(" = for ", 1)[1].split("\n  }", 1)[0]
    moved = [line for line in loop.splitlines() if "convert_layout" in line]
    assert len(moved) == 1 and "xf32" in moved[0], loop  # b's values meet a's; no pointer tile moves
    got = layouts_of(text)
    pb = next(v for v in got if v.startswith("%pb") and "ptr" in got[v] and "blocked<[4, 1]" in got[v])
    assert pb  # the column-wise access's layout: a thread's vector along dim 0
    want = sum(a.reshape(n, B, B)[i] + b.reshape(n, B, B)[i].T for i in range(n))
    two_tiles_advanced[(1,)](a, b, out, n, B=B)
    np.testing.assert_array_equal(out, want)


def test_scan_holds_its_axis_in_each_thread():
    text = apply_pass(four_warps, """\
func @scan(%x: tile<8x32xi32>) {
  %s = scan [%x] {axis = 1} : tile<8x32xi32> {
  ^(%a: i32, %b: i32):
    %c = add %a, %b : i32
    yield [%c]
  }
}
""")
    layout = layouts_of(text)["%s"]
    assert layout.startswith("tile<8x32xi32, blocked<[1, 32], ")


def test_non_power_of_two_tiles_are_refused():
    fn = ir.parser.parse_function("func @k(%x: tile<6xf32>) {\n  %y = add %x, %x : tile<6xf32>\n}\n")
    with pytest.raises(CompilationError, match="power-of-two dims; `add` makes a tile<6xf32>"):
        assign_layouts(fn, 4, SM_90)


# --- the layouts themselves -------------------------------------------------------

def test_blocked_layout_registers_cover_every_element_once_per_owner():
    for shape, order, vec in [((1024,), (0,), 4), ((16, 64), (1, 0), 4), ((64, 16), (0, 1), 2), ((2, 4), (1, 0), 4)]:
        layout = blocked_layout(shape, order, vec, num_warps=4, warp_size=WARP_SIZE)
        covered = set()
        plans = layout.dim_plans(shape)
        for offs in register_offsets(layout, shape):
            for d, o in enumerate(offs):
                assert 0 <= o < shape[d]
            covered.add(offs)
        assert len(covered) == num_registers(layout, shape)
        distinct_threads = math.prod(p.lanes * p.warps for p in plans)
        assert distinct_threads * num_registers(layout, shape) == math.prod(shape)


def test_slice_registers_are_the_parents_with_the_dim_dropped():
    parent = Blocked((1, 4), (2, 16), (4, 1), (1, 0))
    assert register_offsets(Slice(parent, 1), (16,)) == [(0,), (8,)]
    assert register_offsets(Slice(parent, 0), (64,)) == [(0,), (1,), (2,), (3,)]


def test_mma_registers_are_the_instructions_fragments():
    """Accumulator c0..c3 of each 16x8 tile at rows g, g+8 and columns 2t, 2t+1;
    operand a's four words of two k elements per 16x16 tile; every element of
    a warp's tile held once by its 32 lanes."""
    mma = Mma((2, 2))
    assert register_offsets(mma, (64, 32))[:8] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 16), (0, 17), (8, 16), (8, 17)]
    a = DotOperand(0, 2, mma)
    assert register_offsets(a, (32, 16)) == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]
    b = DotOperand(1, 2, mma)
    assert register_offsets(b, (16, 16)) == [(0, 0), (1, 0), (8, 0), (9, 0)]
    # 4 warps: the accumulator holds each element once; an operand twice (the warps along the other dim)
    for layout, shape, copies in ((mma, (32, 16), 1), (a, (32, 16), 2), (b, (16, 16), 2),
                                  (DotOperand(0, 4, mma), (32, 32), 2)):
        assert num_registers(layout, shape) * 32 * 4 == math.prod(shape) * copies


def test_vector_runs_follow_consecutive_registers_and_base_alignment():
    blocked = Blocked((1, 8), (4, 8), (4, 1), (1, 0))
    assert vector_runs(blocked, (128, 64), 8, WARP_SIZE)[:2] == [(0, 8), (8, 8)]
    assert vector_runs(blocked, (128, 64), 4, WARP_SIZE)[:2] == [(0, 4), (4, 4)]       # 16 bytes of f32
    assert vector_runs(Mma((2, 2)), (64, 32), 8, WARP_SIZE)[:3] == [(0, 2), (2, 2), (4, 2)]  # column pairs 2t, 2t+1
    column = Blocked((4, 1), (8, 4), (4, 1), (0, 1))
    assert vector_runs(column, (128, 4), 8, WARP_SIZE)[:2] == [(0, 1), (1, 1)]         # consecutive along rows only


# --- property -----------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(kernel_cases())
def test_layouts_preserve_results(case):
    want = case.run(case.fn)
    try:
        lowered = assign_layouts(case.fn, num_warps=2, target=SM_90)
    except CompilationError as e:
        assert "power-of-two" in str(e)
        return
    verify_function(lowered)
    assert same_results(case.run(lowered), want)


# --- chained dots (attention) ------------------------------------------------------

@tilec.jit
def _chained(Q, K, V, O, N_CTX, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    offs_m, offs_n, offs_d = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, D)
    q = tl.load(Q + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.zeros([BM], dtype=tl.float32) - float("inf")
    acc = tl.zeros([BM, D], dtype=tl.float32)
    for start_n in range(0, N_CTX, BN):
        k = tl.load(K + (start_n + offs_n)[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        acc = acc * tl.math.exp2(m_i - m_ij)[:, None]
        v = tl.load(V + (start_n + offs_n)[:, None] * D + offs_d[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    tl.store(O + offs_m[:, None] * D + offs_d[None, :], acc.to(tl.float16))


def test_chained_dots_keep_the_softmax_in_the_accumulator_layout():
    """Warps along M for both dots; reductions, broadcasts and the carried max
    in mma / slice<mma>; inside the loop the only conversion left is p into
    the second dot's operand layout (a register renaming in the codegen)."""
    x = np.zeros(64 * 64, np.float16)
    gpu = _chained.compile(x, x, x, x, 256, D=64, BM=64, BN=32, num_warps=4, num_stages=2, target="sm_90")
    text = gpu.asm["tir-gpu"]
    assert text.count("mma<[4, 1]>") > 0 and "mma<[2, 2]>" not in text
    start = text.index(" = for ")
    loop = text[start:text.index("\n  }\n", start)]
    moved = re.findall(r"convert_layout %\w+ \{layout = (\w+).*: tile<[\dx]+(\w+),", loop)
    assert moved == [("dot_op", "f16")]   # start_n + offs_n is made again wherever it is wanted
    assert "tile<64xf32, slice<1, mma<[4, 1]>>>" in loop.splitlines()[0]   # the running max is carried there
    assert "reduce [%qk] {axis = 1} : tile<64xf32, slice<1, mma<[4, 1]>>>" in loop


def test_an_accumulator_becomes_the_next_dots_operand_by_renaming_registers():
    class Ctx:
        num_warps = 4
        target = type("T", (), {"warp_size": 32})
    acc = TileType((64, 32), f16, Mma((4, 1)))
    operand = TileType((64, 32), f16, DotOperand(0, 2, Mma((4, 1))))
    perm = _register_permutation(Ctx(), acc, operand)
    assert sorted(perm) == list(range(num_registers(acc.layout, acc.shape)))
    assert [register_offsets(acc.layout, acc.shape)[i] for i in perm] == register_offsets(operand.layout, operand.shape)
    split = TileType((64, 32), f16, DotOperand(0, 2, Mma((2, 2))))    # a warp there holds half a row: no renaming
    assert _register_permutation(Ctx(), TileType((64, 32), f16, Mma((2, 2))), split) is None


def _bases_from_bits(layout, shape, lane, warp, num_warps):
    base = [0] * len(shape)
    for b in thread_bits(layout, shape, num_warps, WARP_SIZE):
        if b.dim is not None and b.value < shape[b.dim] and ((warp if b.warp else lane) >> b.bit) & 1:
            base[b.dim] += b.value
    return base


def _bases_from_plans(layout, lane, warp, shape):
    """The blocked layout's definition (module docstring of ir/layouts.py), computed directly."""
    root = root_layout(layout)
    plans = root.dim_plans(root_shape(layout, shape))
    ids, lane_stride, warp_stride = {}, 1, 1
    for d in root.order:
        p = plans[d]
        lane_d, warp_d = (lane // lane_stride) % p.tpw, (warp // warp_stride) % p.wpc
        ids[d] = ((lane_d * p.spt + warp_d * p.spt * p.tpw) % p.size, lane_d < p.lanes and warp_d < p.warps)
        lane_stride, warp_stride = lane_stride * p.tpw, warp_stride * p.wpc
    kept = kept_dims(layout)
    return [ids[d][0] for d in kept], all(owner for _, owner in ids.values())


@pytest.mark.parametrize("shape, order, vector, num_warps", [
    ((1024,), (0,), 4, 4), ((16, 64), (1, 0), 4, 4), ((64, 16), (0, 1), 2, 8), ((2, 4), (1, 0), 4, 4),
    ((128, 64), (1, 0), 8, 8), ((4, 8, 16), (2, 1, 0), 4, 2), ((32, 1), (1, 0), 4, 4), ((1, 256), (1, 0), 8, 1)])
def test_thread_bits_give_the_blocked_layouts_bases_and_owners(shape, order, vector, num_warps):
    """Every thread's base coordinates and ownership, from the lane/warp bits,
    equal the blocked layout's definition; for its slices too."""
    parent = blocked_layout(shape, order, vector, num_warps, WARP_SIZE)
    layouts = [(parent, shape)] + [(Slice(parent, d), shape[:d] + shape[d + 1:]) for d in range(len(shape))
                                   if len(shape) > 1]
    for layout, tile in layouts:
        bits = thread_bits(layout, tile, num_warps, WARP_SIZE)
        for warp in range(num_warps):
            for lane in range(32):
                want, owner = _bases_from_plans(layout, lane, warp, tile)
                assert _bases_from_bits(layout, tile, lane, warp, num_warps) == want
                copies = any(((warp if b.warp else lane) >> b.bit) & 1 for b in bits if replicating(b, tile))
                if len(tile) == len(shape):   # a slice's owner also drops the removed dim's threads
                    assert (not copies) == owner


@pytest.mark.parametrize("layout, shape, num_warps", [
    (Mma((1, 1)), (16, 8), 1), (Mma((2, 2)), (64, 32), 4), (Mma((4, 1)), (64, 64), 4), (Mma((2, 4)), (128, 256), 8),
    (DotOperand(0, 2, Mma((2, 2))), (64, 32), 4), (DotOperand(1, 2, Mma((2, 2))), (32, 64), 4),
    (DotOperand(0, 1, Mma((2, 1))), (32, 16), 2), (DotOperand(1, 4, Mma((1, 2))), (64, 16), 2),
    (Slice(Mma((4, 1)), 1), (64,), 4), (Mma((4, 1)), (64, 1), 4)])
def test_tensor_core_threads_hold_every_element_and_owners_hold_it_once(layout, shape, num_warps):
    """Thread bases (from the bits) plus register offsets cover the tile; the
    owners (no copy-making bit set) hold each element exactly once."""
    bits = thread_bits(layout, shape, num_warps, WARP_SIZE)
    offsets = sorted(set(register_offsets(layout, shape)))
    held, owned = set(), []
    for warp in range(num_warps):
        for lane in range(32):
            base = _bases_from_bits(layout, shape, lane, warp, num_warps)
            mine = {tuple(b + o for b, o in zip(base, offs)) for offs in offsets}
            held |= mine
            if not any(((warp if b.warp else lane) >> b.bit) & 1 for b in bits if replicating(b, shape)):
                owned.extend(mine)
    everything = set(itertools.product(*(range(n) for n in shape)))
    assert held == everything
    assert sorted(owned) == sorted(everything)


def test_each_access_coalesces_along_its_own_contiguous_dim():
    """q (rows contiguous) and kᵀ (columns contiguous) share a 64x64 shape; each
    load gets 8-element vectors along its own contiguous dim."""
    x = np.zeros(64 * 64, np.float16)
    text = apply_pass(four_warps, _chained.compile(x, x, x, x, 256, D=64, BM=64, BN=64, target="sm_90").asm["tir-opt"])
    loads = re.findall(r"= load .*: tile<64x64xf16, blocked<(\[[\d, ]+\]), .*(\[[\d, ]+\])>>", text)
    assert sorted(loads) == [("[1, 8]", "[1, 0]"), ("[1, 8]", "[1, 0]"), ("[8, 1]", "[0, 1]")]  # q, v; kᵀ


def test_tiles_made_from_aranges_are_made_again_where_wanted_not_moved():
    """``cols = start + arange`` feeds a row of pointers and a column of them:
    no conversion moves it (or the mask made from it) through shared memory."""
    text = apply_pass(four_warps, """\
func @cols(%start: i32, %n: i32, %src: ptr<f32> {divisibility = 16}, %dst: ptr<f32> {divisibility = 16}) {
  %a = arange {start = 0, end = 32} : tile<32xi32>
  %s = splat %start {shape = (32,)} : tile<32xi32>
  %cols = add %s, %a : tile<32xi32>
  %ns = splat %n {shape = (32,)} : tile<32xi32>
  %ok = cmp %cols, %ns {pred = "lt"} : tile<32xi1>
  %row = expand_dims %cols {axis = 0} : tile<1x32xi32>
  %col = expand_dims %cols {axis = 1} : tile<32x1xi32>
  %rowb = broadcast %row {shape = (32, 32)} : tile<32x32xi32>
  %colb = broadcast %col {shape = (32, 32)} : tile<32x32xi32>
  %p = splat %src {shape = (32, 32)} : tile<32x32xptr<f32>>
  %pr = addptr %p, %rowb : tile<32x32xptr<f32>>
  %x = load %pr, _, _ : tile<32x32xf32>
  %q = splat %dst {shape = (32, 32)} : tile<32x32xptr<f32>>
  %qc = addptr %q, %colb : tile<32x32xptr<f32>>
  %okr = expand_dims %ok {axis = 1} : tile<32x1xi1>
  %okb = broadcast %okr {shape = (32, 32)} : tile<32x32xi1>
  store %qc, %x, %okb
}
""")
    assert "convert_layout %cols" not in text and "convert_layout %ok" not in text
    assert text.count("= arange") >= 2  # made once per layout it is wanted in


def test_a_value_two_loops_convert_the_same_way_is_converted_once():
    """The attention tutorial converts q into the first dot's operand layout once,
    for both key bands (CSE after layouts), not once per loop."""
    from kernels.attention import _attn_fwd

    x, lse = np.zeros(16, np.float16), np.zeros(16, np.float32)
    compiled = _attn_fwd.compile(x, x, x, 0.125, x, lse, 2, 256, *(2 * 256 * 64, 256 * 64, 64) * 4, HEAD_DIM=64,
                                 BLOCK_M=64, BLOCK_N=32, CAUSAL=True, num_warps=4, num_stages=2, target="sm_90")
    assert len(re.findall(r"= convert_layout %q\b", compiled.asm["tir-gpu"])) == 1


WIDER = """\
func @widen(%src: ptr<f16> {divisibility = 16}, %acc: ptr<f32> {divisibility = 16}) {
  %i = arange {start = 0, end = 4096} : tile<4096xi32>
  %p = splat %src {shape = (4096,)} : tile<4096xptr<f16>>
  %q = addptr %p, %i : tile<4096xptr<f16>>
  %h = load %q, _, _ : tile<4096xf16>
  %x = cast %h {to = f32} : tile<4096xf32>
  %y = mul %x, %x : tile<4096xf32>
  %r = splat %acc {shape = (4096,)} : tile<4096xptr<f32>>
  %s = addptr %r, %i : tile<4096xptr<f32>>
  %a = load %s, _, _ : tile<4096xf32>
  %z = add %y, %a : tile<4096xf32>
  store %s, %z, _
}
"""


def test_a_write_of_wider_elements_gets_one_vector_a_thread_and_a_read_keeps_the_rows_layout():
    """fp16 rows give the shape 8 elements a thread (16 bytes).  The f32
    store beside them takes 4 (two half-used vectors a warp instruction
    otherwise, each sector written twice) and converts its value where it
    is; the f32 load keeps the 8 (its second vector reads lines the first
    brought into L1), so the math needs no conversion before the store."""
    types = layouts_of(apply_pass(four_warps, WIDER))
    eight, four = "blocked<[8], [32], [4], [0]>", "blocked<[4], [32], [4], [0]>"
    assert all(types[v].endswith(eight + ">") for v in ("%h", "%x", "%y", "%a", "%z"))
    assert types["%s"].endswith(four + ">")
    converted = [name for name, t in types.items() if name not in ("%h", "%x", "%y", "%a", "%z") and "f32" in t
                 and "ptr" not in t]
    assert len(converted) == 1 and types[converted[0]].endswith(four + ">")  # the sum into the store
