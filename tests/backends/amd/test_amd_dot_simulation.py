"""The AMD dot rule (``matrix.matrix_dot``) run end to end on the host, every
thread of a workgroup at once: no AMD GPU runs here, so the rule's own
codegen is driven through a stand-in for llvmlite's IRBuilder whose values
are numpy arrays over the threads (``Simt``).  Its LDS is a dict of
addresses; the MFMA/WMMA intrinsics are the instruction model of
``test_amd_matrix.py`` (from AMD's ISA documents).  What runs is the real
rule: the plan on the kernel's laid-out tile IR, the operands staged into
LDS (``_stage``: one address a lane plus constants), the fragments read back
(``_reader``), the instruction calls and the accumulator registers; the
result, read back through the accumulator's layout, must be ``A @ B`` for
every instruction family of every arch."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from llvmlite import ir as llir

from backends.amd.test_amd_matrix import operand_k, result_row
from kernels.attention import _attn_fwd
from tilec import ir
from tilec.backends.amd import matrix
from tilec.backends.amd.stages import Build, assign_gpu_layouts
from tilec.backends.amd.target import amdgpu_target
from tilec.codegen_llvm.kernel import layout_coordinates
from tilec.codegen_llvm.shared_buffers import store_shared_tile
from tilec.ir.parser import parse_function
from tilec.ir.printer import print_function
from tilec.ir.types import elem_type
from tilec.launch.compiler import KernelMetadata, Options


class V:
    """A value of every thread: ``x`` is an array over the threads (a vector: (threads, n))."""

    def __init__(self, x, type_=None):
        self.x, self.type = np.asarray(x), type_


def _x(v):
    if isinstance(v, V):
        return v.x
    if isinstance(v, llir.Constant):
        return np.asarray(v.constant)
    return np.asarray(v)


def _size(t) -> int:
    if isinstance(t, llir.IntType):
        return max(1, t.width // 8)
    return {"half": 2, "float": 4, "double": 8, "bfloat": 2}[str(t)]


class Simt:
    """The IRBuilder calls the dot rule makes, on every thread at once; LDS is ``mem``."""

    def __init__(self):
        self.mem: dict[int, float] = {}

    def _binary(op):
        return lambda self, a, b, name="": V(op(_x(a), _x(b)))

    add = _binary(np.add)
    mul = _binary(np.multiply)
    and_ = _binary(np.bitwise_and)
    or_ = _binary(np.bitwise_or)
    xor = _binary(np.bitwise_xor)
    shl = _binary(np.left_shift)
    lshr = _binary(np.right_shift)

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        assert source_etype == llir.IntType(8)
        return V(_x(ptr) + _x(indices[0]))

    def insert_element(self, vec, value, index, name=""):
        if isinstance(vec, llir.Constant):  # undef: a fresh vector
            vec = V(np.full((_threads(value), vec.type.count), np.nan), vec.type)
        x = vec.x.copy()
        x[:, int(_x(index))] = np.broadcast_to(_x(value), x.shape[:1])
        return V(x, vec.type)

    def extract_element(self, vec, index, name=""):
        return V(vec.x[:, int(_x(index))], vec.type.element)

    def bitcast(self, value, typ, name=""):
        return V(value.x, typ)  # the elements stay what they are: the model reads them one by one

    def store(self, value, ptr, align=None):
        addrs, x = _x(ptr), value.x
        elems = [x] if x.ndim == 1 else [x[:, j] for j in range(x.shape[1])]
        size = _size(value.type.element if isinstance(value.type, llir.VectorType) else value.type)
        for j, e in enumerate(elems):
            for a, v in zip(np.broadcast_to(addrs, e.shape), e):
                a = int(a) + j * size
                assert a % size == 0
                assert self.mem.get(a, v) == v, "two threads store different values to one LDS element"
                self.mem[a] = v

    def load(self, ptr, typ=None, align=None, name=""):
        size = _size(typ.element)
        assert align and all(int(a) % align == 0 for a in _x(ptr)), "a misaligned vector load"
        return V(np.array([[self.mem[int(a) + j * size] for j in range(typ.count)] for a in _x(ptr)]), typ)


def _threads(v) -> int:
    x = _x(v)
    return x.shape[0] if x.ndim else 1


class Ctx(SimpleNamespace):
    """The ``codegen_llvm.kernel.Ctx`` of one workgroup, as far as the dot rule uses it."""

    def __getitem__(self, v):
        return self.env[v]

    def bind(self, values, lists):
        for v, regs in zip(values, lists):
            self.env[v] = regs

    def smem(self, nbytes):
        return V(np.zeros(self.threads, np.int64))

    def barrier(self):
        pass

    def call(self, name, args, ret=None):
        kind, inst = next((k, i) for k in matrix.KINDS for i in k.instructions.values() if i.intrinsic == name)
        self.calls.append(name)
        if inst.signed:
            a, b, c = args[1], args[3], args[4]
        else:
            a, b, c = args[:3]
        return V(hardware(kind, inst, a.x, b.x, c.x, self.target.warp_size), ret)


def hardware(kind, inst, a, b, c, wave: int) -> np.ndarray:
    """``c + A @ B`` of each wave, lanes holding operands and results as the model says (``test_amd_matrix``)."""
    out = np.full(c.shape, np.nan)
    tile = kind.tile
    for w in range(a.shape[0] // wave):
        A, B = np.full((tile, inst.k), np.nan), np.full((inst.k, tile), np.nan)
        for lane in range(wave):
            t = w * wave + lane
            for j in range(inst.width):
                k = operand_k(kind, inst.k, lane, j)
                for m, i, jj, x in ((A, lane % tile, k, a[t, j]), (B, k, lane % tile, b[t, j])):
                    assert np.isnan(m[i, jj]) or m[i, jj] == x, "two lanes disagree on one operand element"
                    m[i, jj] = x
        assert not np.isnan(A).any() and not np.isnan(B).any(), "an operand element no lane holds"
        d = A @ B
        for lane in range(wave):
            t = w * wave + lane
            out[t] = c[t] + [d[result_row(kind, lane, e), lane % tile] for e in range(kind.results)]
    return out


DOT = """func @dot(%x: {a}, %y: {a}, %c_ptr: ptr<{acc}> {{divisibility = 16}}) {{
  %a = splat %x {{shape = ({m}, {k})}} : tile<{m}x{k}x{a}>
  %b = splat %y {{shape = ({k}, {n})}} : tile<{k}x{n}x{a}>
  %zero = constant {{value = 0, type = tile<{m}x{n}x{acc}>}} : tile<{m}x{n}x{acc}>
  %d = dot %a, %b, %zero {{input_precision = "tf32"}} : tile<{m}x{n}x{acc}>
  %r = arange {{start = 0, end = {n}}} : tile<{n}xi32>
  %cols = expand_dims %r {{axis = 0}} : tile<1x{n}xi32>
  %cb = broadcast %cols {{shape = ({m}, {n})}} : tile<{m}x{n}xi32>
  %base = splat %c_ptr {{shape = ({m}, {n})}} : tile<{m}x{n}xptr<{acc}>>
  %ptrs = addptr %base, %cb : tile<{m}x{n}xptr<{acc}>>
  store %ptrs, %d, _
}}
"""


def simulate_dot(arch: str, a: str, acc: str, m: int, n: int, k: int, num_warps: int,
                 buffered: tuple = (), nonkdim: int = 0) -> list[str]:
    """Run the dot rule for ``arch`` on a laid-out ``m x k @ k x n`` dot; returns the intrinsics it called.
    The operands in ``buffered`` (0: ``a``, 1: ``b``) come from a swizzled LDS buffer, as the stream
    pipeliner's and ``lds_operands.py``'s do: written by the ``local_store`` rule, read in place.
    ``nonkdim``: the ``matrix_instr_nonkdim`` option."""
    target = amdgpu_target(arch)
    fn = parse_function(DOT.format(a=a, acc=acc, m=m, n=n, k=k))
    options = Options(num_warps=num_warps, matrix_instr_nonkdim=nonkdim)
    laid = assign_gpu_layouts(fn, Build(target, options, KernelMetadata("dot", arch, num_warps, 1)))
    op = next(o for o in ir.walk(parse_function(print_function(laid)).body) if isinstance(o, ir.Dot))
    return run_dot_rule(arch, op, num_warps, buffered)


def run_dot_rule(arch: str, op: ir.Dot, num_warps: int, buffered: tuple = ()) -> list[str]:
    """``simulate_dot`` on ``op``, a dot of laid-out tile IR (its operands' registers made up here)."""
    target = amdgpu_target(arch)
    (m, k), n = op.a.type.shape, op.b.type.shape[1]
    assert matrix.planned(op, target, num_warps) is not None, "the dot is not on the matrix unit"
    threads = num_warps * target.warp_size
    b = Simt()
    ctx = Ctx(b=b, target=target, num_warps=num_warps, threads=threads, env={}, deferred={}, calls=[],
              lane=V(np.arange(threads) % target.warp_size), warp=V(np.arange(threads) // target.warp_size))
    rng = np.random.default_rng(m * n + k)
    A, B = rng.integers(-3, 4, (m, k)).astype(float), rng.integers(-3, 4, (k, n)).astype(float)
    for v, matrix_ in ((op.a, A), (op.b, B)):
        elem = matrix.llvm_type(elem_type(v.type))
        ctx.env[v] = [V(matrix_[_x(r), _x(c)], elem) for r, c in layout_coordinates(ctx, v.type.layout, v.type.shape)]
    plan = matrix.planned(op, target, num_warps)
    for side in buffered:
        v = (op.a, op.b)[side]
        layout = matrix.lds_layout(plan, side, v.type.shape, elem_type(v.type))
        base = V(np.full(threads, (side + 1) << 20))  # apart, and away from the dot's own scratch at 0
        vector = target.max_vector_bytes // elem_type(v.type).bytes
        store_shared_tile(ctx, ctx.env.pop(v), v.type, base, layout, (1,) + v.type.shape, vector)
        assert layout.max_phase > 1 or v.type.shape[1 - side] * elem_type(v.type).bytes <= 16, "not swizzled"
        ctx.deferred[v] = matrix.SlotOperand(base, layout, v.type.shape, ctx, None)
    ctx.env[op.acc] = [V(np.zeros(threads), matrix.llvm_type(elem_type(op.acc.type)))] * len(
        layout_coordinates(ctx, op.acc.type.layout, op.acc.type.shape))
    matrix.matrix_dot(ctx, op)
    assert not ctx.deferred, "a buffered operand the dot did not read in place"
    got = np.full((m, n), np.nan)
    for reg, (r, c) in zip(ctx[op.result], layout_coordinates(ctx, op.result.type.layout, op.result.type.shape)):
        for row, col, value in zip(*np.broadcast_arrays(_x(r), _x(c), reg.x)):
            assert np.isnan(got[row, col]) or got[row, col] == value, "two threads hold one result differently"
            got[row, col] = value
    np.testing.assert_array_equal(got, A @ B)
    return ctx.calls


@pytest.mark.parametrize("arch, a, acc, m, n, k, warps, intrinsic", [
    ("gfx90a", "f16", "f32", 64, 32, 32, 4, "mfma.f32.16x16x16f16"),
    ("gfx90a", "i8", "i32", 32, 32, 32, 2, "mfma.i32.16x16x16i8"),
    ("gfx90a", "f16", "f32", 64, 64, 32, 4, "mfma.f32.32x32x8f16"),
    ("gfx90a", "bf16", "f32", 128, 32, 16, 4, "mfma.f32.32x32x8bf16.1k"),
    ("gfx90a", "i8", "i32", 64, 128, 32, 2, "mfma.i32.32x32x8i8"),
    ("gfx942", "bf16", "f32", 32, 64, 32, 4, "mfma.f32.16x16x16bf16.1k"),
    ("gfx942", "i8", "i32", 32, 32, 64, 4, "mfma.i32.16x16x32.i8"),
    ("gfx942", "f32", "f32", 32, 32, 16, 4, "mfma.f32.16x16x8.xf32"),
    ("gfx942", "f8e4b8", "f32", 16, 32, 64, 2, "mfma.f32.16x16x32.fp8.fp8"),
    ("gfx942", "f16", "f32", 128, 64, 16, 8, "mfma.f32.32x32x8f16"),
    ("gfx942", "i8", "i32", 64, 64, 32, 4, "mfma.i32.32x32x16.i8"),
    ("gfx942", "f32", "f32", 32, 64, 8, 2, "mfma.f32.32x32x4.xf32"),
    ("gfx942", "f8e5b16", "f32", 64, 64, 32, 1, "mfma.f32.32x32x16.bf8.bf8"),
    ("gfx950", "f16", "f32", 64, 64, 32, 4, "mfma.f32.32x32x16.f16"),
    ("gfx950", "bf16", "f32", 128, 64, 32, 8, "mfma.f32.32x32x16.bf16"),
    ("gfx950", "f16", "f32", 64, 64, 8, 4, "mfma.f32.32x32x8f16"),  # k = 8: the 4-wide form
    ("gfx950", "i8", "i32", 64, 32, 64, 2, "mfma.i32.32x32x32.i8"),
    ("gfx950", "f8e4nv", "f32", 32, 64, 32, 2, "mfma.f32.32x32x16.fp8.fp8"),
    ("gfx950", "f16", "f32", 16, 64, 64, 4, "mfma.f32.16x16x32.f16"),
    ("gfx950", "i8", "i32", 32, 32, 128, 4, "mfma.i32.16x16x64.i8"),
    ("gfx950", "f8e5", "f32", 32, 32, 64, 4, "mfma.f32.16x16x32.bf8.bf8"),
    ("gfx1100", "f16", "f32", 64, 32, 32, 4, "wmma.f32.16x16x16.f16.v8f32.v16f16"),
    ("gfx1100", "i8", "i32", 32, 64, 32, 4, "wmma.i32.16x16x16.iu8.v8i32.v4i32"),
    ("gfx1201", "f16", "f32", 64, 32, 32, 4, "wmma.f32.16x16x16.f16.v8f32.v8f16"),
    ("gfx1201", "bf16", "f32", 32, 64, 64, 2, "wmma.f32.16x16x16.bf16.v8f32.v8i16"),
    ("gfx1201", "i8", "i32", 32, 32, 32, 4, "wmma.i32.16x16x16.iu8.v8i32.v2i32"),
    ("gfx1201", "f8e4nv", "f32", 16, 64, 32, 4, "wmma.f32.16x16x16.fp8.fp8.v8f32.v2i32"),
])
def test_the_dot_rule_computes_a_times_b_on_the_instruction_model(arch, a, acc, m, n, k, warps, intrinsic):
    calls = simulate_dot(arch, a, acc, m, n, k, warps)
    assert set(calls) == {f"llvm.amdgcn.{intrinsic}"}


@pytest.mark.parametrize("arch, nonkdim, a, m, n, k, warps, intrinsic", [
    ("gfx942", 16, "f16", 64, 64, 32, 4, "mfma.f32.16x16x16f16"),
    ("gfx942", 32, "bf16", 64, 64, 32, 4, "mfma.f32.32x32x8bf16.1k"),
    ("gfx950", 16, "f16", 64, 64, 32, 4, "mfma.f32.16x16x32.f16"),
    ("gfx90a", 32, "f16", 32, 64, 32, 4, "mfma.f32.16x16x16f16"),  # no 32x32 tile a wave: 16x16
    ("gfx1100", 32, "f16", 64, 64, 32, 4, "wmma.f32.16x16x16.f16.v8f32.v16f16")])  # RDNA: 16x16 only
def test_matrix_instr_nonkdim_picks_the_instruction_size(arch, nonkdim, a, m, n, k, warps, intrinsic):
    assert set(simulate_dot(arch, a, "f32", m, n, k, warps, nonkdim=nonkdim)) == {f"llvm.amdgcn.{intrinsic}"}


@pytest.mark.parametrize("arch, a, acc, m, n, k, warps", [
    ("gfx942", "f16", "f32", 64, 64, 64, 4), ("gfx942", "f8e4b8", "f32", 32, 32, 128, 4),
    ("gfx90a", "bf16", "f32", 64, 64, 32, 4), ("gfx942", "i8", "i32", 64, 128, 64, 8),
    ("gfx950", "f16", "f32", 64, 64, 64, 4), ("gfx950", "bf16", "f32", 16, 64, 64, 4),
    ("gfx1100", "f16", "f32", 32, 64, 64, 4), ("gfx1201", "f16", "f32", 64, 32, 64, 4)])
@pytest.mark.parametrize("buffered", [(0,), (1,), (0, 1)])
def test_operands_read_in_place_from_a_swizzled_buffer(arch, a, acc, m, n, k, warps, buffered):
    simulate_dot(arch, a, acc, m, n, k, warps, buffered)


@pytest.mark.parametrize("arch", ["gfx942", "gfx950", "gfx1100", "gfx1201"])
def test_the_attentions_dots_as_laid_out(arch):
    # q @ kᵀ: kᵀ loaded along k, so staged column-major a vector at a time; p @ v
    f16, f32 = np.zeros(1 << 16, np.float16), np.zeros(1 << 16, np.float32)
    strides = (4 * 64 * 64, 64 * 64, 64) * 4
    compiled = _attn_fwd.compile(f16, f16, f16, 0.125, f16, f32, 4, 64, *strides, HEAD_DIM=64, BLOCK_M=64,
                                 BLOCK_N=32, CAUSAL=False, num_warps=4, num_stages=1, target=arch)
    dots = [o for o in ir.walk(parse_function(compiled.asm["tir-gpu"]).body) if isinstance(o, ir.Dot)]
    assert len(dots) >= 2
    for op in dots:
        run_dot_rule(arch, op, 4)


def test_the_simulation_catches_a_wrong_fragment_offset(monkeypatch):
    right = matrix._reader

    def off_by_one_row(ctx, src, first, inst, elem):
        read = right(ctx, src, first, inst, elem)
        return lambda coords, delta: read(coords, (delta[0] + (delta[0] > 0), delta[1]))

    monkeypatch.setattr(matrix, "_reader", off_by_one_row)
    with pytest.raises(AssertionError):
        simulate_dot("gfx1201", "f16", "f32", 64, 32, 32, 2)


def test_the_simulation_catches_32x32_rows_taken_as_one_block(monkeypatch):
    # a 32x32 instruction's rows come in passes of 8 interleaved over the waves (``_a_row``);
    # read as 32 consecutive rows a wave (the 16x16 way), two waves' rows are mixed up
    simulate_dot("gfx942", "f16", "f32", 64, 64, 32, 4)
    monkeypatch.setattr(matrix, "_a_row", lambda ctx, plan, lane_t, w0, q: ctx.b.add(
        lane_t, ctx.b.add(ctx.b.mul(w0, 32), 32 * plan.wm * q)))
    with pytest.raises(AssertionError):
        simulate_dot("gfx942", "f16", "f32", 64, 64, 32, 4)


def test_the_simulation_catches_a_32x32_k_split_by_16_lanes(monkeypatch):
    # the 16x16 grouping (lane // 16) on a 32x32 instruction: lanes 16-31 feed k they do not hold
    right = matrix._first_k
    monkeypatch.setattr(matrix, "_first_k", lambda ctx, plan, group, k0: right(
        ctx, plan, ctx.b.and_(ctx.b.lshr(ctx.lane, 4), 1), k0))
    with pytest.raises(AssertionError):
        simulate_dot("gfx90a", "f16", "f32", 64, 64, 32, 4)


def test_the_simulation_catches_b_staged_row_major(monkeypatch):
    right = matrix._stage
    monkeypatch.setattr(matrix, "_stage", lambda ctx, tiles: right(ctx, [(r, t, False) for r, t, _ in tiles]))
    with pytest.raises(AssertionError):
        simulate_dot("gfx942", "f16", "f32", 32, 32, 32, 4)


def test_a_column_major_staging_stores_runs_along_k_as_vectors():
    from tilec.ir.layouts import Blocked

    ctx = SimpleNamespace(num_warps=4, target=amdgpu_target("gfx1100"))
    k_t = Blocked((8, 1), (8, 4), (1, 4), (0, 1))  # the attention's kᵀ, loaded along k (dim 0)
    assert {w for _, w in matrix._column_runs(k_t, (64, 32), 8, ctx)} == {8}
    along_n = Blocked((1, 8), (4, 8), (4, 1), (1, 0))  # a b loaded along n: one element at a time
    assert {w for _, w in matrix._column_runs(along_n, (64, 32), 8, ctx)} == {1}
