"""Golden facts about the PTX of the tutorial kernels: contiguous, 16-byte
aligned accesses become one 128-bit access per thread (issue: vector add,
softmax, layer norm), reductions shuffle, and every kernel assembles for
sm_80 and sm_90.  Compiled ahead of time: no GPU needed."""
from __future__ import annotations

import re

import numpy as np
import tilec
import tilec.language as tl
import pytest

from helpers import empty, require
from kernels import layer_norm
from kernels.softmax import softmax_kernel
from kernels.vector_add import add_kernel

ARCHS = ("sm_80", "sm_90")


def count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


@pytest.mark.parametrize("arch", ARCHS)
def test_vector_add_moves_16_bytes_per_access(arch):
    x = np.zeros(1 << 14, np.float32)
    k = add_kernel.compile(x, x, x, x.size, BLOCK_SIZE=1024, num_warps=4, target=arch)
    ptx = k.asm["ptx"]
    # 1024 elements over 128 threads: 8 per thread, two 16-byte vectors per operand.
    assert count(ptx, r"ld\.global(\.\w+)*\.v4\.b32") == 4
    assert count(ptx, r"st\.global(\.\w+)*\.v4\.b32") == 2
    assert count(ptx, r"ld\.global(\.[a-z]{2})*\.b32\s") == 0
    assert "blocked<[4], [32], [4], [0]>" in k.asm["tir-gpu"]


def test_vector_add_with_an_unaligned_length_falls_back_to_single_elements():
    """A mask that is not constant over 4 elements cannot guard a vector (as Triton)."""
    x = np.zeros(1 << 14, np.float32)
    k = add_kernel.compile(x, x, x, x.size - 3, BLOCK_SIZE=1024, num_warps=4, target="sm_90")
    assert count(k.asm["ptx"], r"\.v4\.") == 0
    assert count(k.asm["ptx"], r"ld\.global(\.[a-z]{2})*\.b32\s") == 16


@pytest.mark.parametrize("arch", ARCHS)
def test_softmax_rows_load_in_vectors_and_reduce_with_shuffles(arch):
    x = np.zeros((8, 4096), np.float32)
    k = softmax_kernel.compile(x, x, 4096, 4096, 4096, BLOCK_SIZE=4096, num_warps=16, target=arch)
    ptx = k.asm["ptx"]
    assert count(ptx, r"ld\.global(\.\w+)*\.v4\.b32") == 2  # 4096 over 512 threads: 8 each
    assert count(ptx, r"st\.global(\.\w+)*\.v4\.b32") == 2
    assert count(ptx, r"shfl\.sync\.bfly") == 10  # max and sum, 5 butterfly steps each
    assert count(ptx, r"ex2\.approx") == 8


@pytest.mark.parametrize("arch", ARCHS)
def test_layer_norm_loads_eight_halves_at_a_time(arch):
    x = np.zeros((4, 8192), np.float16)
    w = np.zeros(8192, np.float16)
    stats = np.zeros(4, np.float32)
    k = layer_norm._layer_norm_fwd_fused.compile(x, x, w, w, stats, stats, 8192, 8192, 1e-5,
                                                 BLOCK_SIZE=8192, num_warps=8, target=arch)
    ptx = k.asm["ptx"]
    # 8192 halves over 256 threads: 32 each, four 16-byte vectors per load of a block.
    assert count(ptx, r"ld\.global(\.\w+)*\.v4\.b32") == 4 * 5  # x three times, w, b
    assert count(ptx, r"st\.global(\.\w+)*\.v4\.b32") == 4
    assert count(ptx, r"ld\.global(\.[a-z]{2})*\.b16") == 0
    assert k.metadata.spill_stores in (0, None)


@tilec.jit
def _exp_both(x_ptr, y_ptr, z_ptr):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, tl.exp(x))
    tl.store(z_ptr + offs, tl.exp2(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_exp2_is_tritons_flushing_ex2_and_double_the_library(dtype):
    """f32 (and f16, through f32) ``exp2`` is one ``ex2.approx.ftz``, ``exp``
    one ``ex2.approx`` after a multiply by log2(e) (subnormal results kept),
    as Triton's; f64 is computed in full (no ``ex2``)."""
    x = np.zeros(128, dtype)
    ptx = _exp_both.compile(x, x, x, target="sm_90").asm["ptx"]
    single = 0 if dtype == np.float64 else 1  # one element a thread
    assert (count(ptx, r"ex2\.approx\.ftz\.f32"), count(ptx, r"ex2\.approx\.f32")) == (single, single), ptx


@tilec.jit
def _divisions(x_ptr, y_ptr, out_ptr, IEEE: tl.constexpr):
    offs = tl.arange(0, 128)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x / y)
    tl.store(out_ptr + 128 + offs, tl.fdiv(x, y, ieee_rounding=IEEE))
    tl.store(out_ptr + 256 + offs, tl.div_rn(x, y))


@pytest.mark.parametrize("ieee", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_division_is_tritons_div_full_and_div_rn_is_correctly_rounded(dtype, ieee):
    """``/`` and ``tl.fdiv`` on f32 (and f16, divided in f32) are Triton's
    ``div.full.f32``; ``tl.div_rn`` and ``tl.fdiv(ieee_rounding=True)`` are
    ``div.rn``; f64 is always ``div.rn.f64`` (one element a thread each)."""
    x = np.zeros(384, dtype)
    ptx = _divisions.compile(x, x, x, IEEE=ieee, target="sm_90").asm["ptx"]
    if dtype == np.float64:  # all three the same quotient: one instruction
        assert (count(ptx, r"div\.full"), count(ptx, r"div\.rn\.f64")) == (0, 1), ptx
    else:  # equal quotients are computed once: x / y is tl.fdiv's, or tl.div_rn's when IEEE
        assert (count(ptx, r"div\.full\.f32"), count(ptx, r"div\.rn\.f32")) == (1, 1), ptx


@tilec.jit
def _softmax_and_reciprocal(x_ptr, out_ptr, IEEE: tl.constexpr):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.softmax(x, ieee_rounding=IEEE))
    tl.store(out_ptr + 128 + offs, tl.math.rcp_rn(x))


@pytest.mark.parametrize("ieee", [False, True])
def test_softmax_divides_as_asked_and_rcp_rn_is_correctly_rounded(ieee):
    x = np.zeros(256, np.float32)
    ptx = _softmax_and_reciprocal.compile(x, x, IEEE=ieee, target="sm_90").asm["ptx"]
    assert (count(ptx, r"div\.full\.f32"), count(ptx, r"div\.rn\.f32"), count(ptx, r"rcp\.rn\.f32")) == \
        (int(not ieee), int(ieee), 1), ptx


@tilec.jit
def _locked_increment(lock, x):
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    tl.store(x, tl.load(x) + 1)
    tl.atomic_xchg(lock, 0)


def test_a_lock_is_taken_and_released_by_ordered_atomics():
    """The lock's CAS and the ``atomic_xchg`` (acq_rel) that releases it are
    each one ``atom`` carrying its ordering and scope: no fences around them
    (a spinning lock would pay two a try), and the release orders the store
    before it.  The default scope is the GPU, never ``.sys``."""
    one = np.zeros(1, np.int32)
    ptx = _locked_increment.compile(one, one, target="sm_90").asm["ptx"]
    assert re.findall(r"atom\.[\w.]+", ptx) == ["atom.global.acq_rel.gpu.cas.b32", "atom.global.gpu.acq_rel.exch.b32"]
    assert "fence" not in ptx and ".sys" not in ptx


@tilec.jit
def _cas(x, y, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.store(y, tl.atomic_cas(x, 0, 1, sem=SEM, scope=SCOPE))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
@pytest.mark.parametrize("sem", ["relaxed", "acquire", "release", "acq_rel"])
@pytest.mark.parametrize("scope", ["gpu", "cta", "sys"])
def test_a_cas_is_one_instruction_of_its_ordering_and_scope(dtype, sem, scope):
    x = np.zeros(1, dtype)
    ptx = _cas.compile(x, x, SEM=sem, SCOPE=scope, target="sm_90").asm["ptx"]
    bits = 8 * x.itemsize
    assert re.findall(r"atom\.[\w.]+", ptx) == [f"atom.global.{sem}.{scope}.cas.b{bits}"]
    assert "fence" not in ptx


@tilec.jit
def _rmw(x, y, v, OP: tl.constexpr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    tl.store(y, OP(x, tl.load(v), sem=SEM, scope=SCOPE))


_RMW_INSTRUCTIONS = [  # (op, dtype, PTX op and type)
    ("add", "int32", "add.u32"), ("add", "uint64", "add.u64"), ("add", "float32", "add.f32"),
    ("add", "float64", "add.f64"), ("add", "float16", "add.noftz.f16"), ("add", "bfloat16", "add.noftz.bf16"),
    ("max", "int32", "max.s32"), ("max", "int64", "max.s64"), ("max", "uint32", "max.u32"),
    ("min", "uint64", "min.u64"), ("min", "int32", "min.s32"),
    ("and", "int32", "and.b32"), ("or", "uint64", "or.b64"), ("xor", "int64", "xor.b64"),
    ("xchg", "int32", "exch.b32"), ("xchg", "float64", "exch.b64"),
    ("max", "float32", "cas.b32"), ("min", "float64", "cas.b64"),  # a compare-and-swap loop
]


@pytest.mark.parametrize("op,dtype,instruction", _RMW_INSTRUCTIONS)
@pytest.mark.parametrize("sem,scope", [("acq_rel", "gpu"), ("relaxed", "cta"), ("acquire", "sys"),
                                       ("release", "gpu")])
def test_a_read_modify_write_is_one_atom_of_its_ordering_and_scope(op, dtype, instruction, sem, scope):
    """Spelled as Triton spells it (scope, then ordering), so tools that read
    the PTX for ``atom.global.gpu.acq_rel`` find it; no fences."""
    require(dtype)
    x = empty(1, dtype)
    ptx = _rmw.compile(x, x, x, OP=getattr(tl, f"atomic_{op}"), SEM=sem, SCOPE=scope, target="sm_90").asm["ptx"]
    assert re.findall(r"atom\.[\w.]+", ptx) == [f"atom.global.{scope}.{sem}.{instruction}"]
    assert "fence" not in ptx


def test_a_bf16_add_before_sm_90_is_fenced_llvm_atomics():
    """PTX has no bf16 ``atom.add`` before sm_90: LLVM's expansion (a CAS
    loop) between the fences that give it its ordering."""
    require("bfloat16")
    x = empty(1, "bfloat16")
    ptx = _rmw.compile(x, x, x, OP=tl.atomic_add, SEM="acq_rel", SCOPE="gpu", target="sm_80").asm["ptx"]
    assert "atom.global.gpu.acq_rel" not in ptx
    assert re.findall(r"fence\.acq_rel\.(\w+);", ptx) == ["gpu", "gpu"]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [1, 2, 100])
def test_the_layer_norm_lock_loop_is_entered_at_its_header(arch, n):
    """A replicated row (N = 1: 32 threads, one owner) makes the owner's dx
    store and the lock's CAS branch on the same condition; LLVM's late
    SimplifyCFG threaded the first branch into the lock loop's barrier, a
    second entry that hung the H100.  The pipeline refuses such PTX
    (``check_reducible``), so compiling is the test; the loop's CAS and
    barrier are checked to be there."""
    x, w = np.zeros((4, n), np.float16), np.zeros(n, np.float16)
    stats, partial, locks = np.zeros(4, np.float32), np.zeros((256, n), np.float32), np.zeros(512, np.int32)
    k = layer_norm._layer_norm_bwd_dx_fused.compile(x, x, partial, partial, x, w, stats, stats, locks, n, n,
                                                    GROUP_SIZE_M=256, BLOCK_SIZE_N=tilec.next_power_of_2(n),
                                                    num_warps=1, target=arch)
    loop = first_loop(k.asm["ptx"])
    assert "atom.global.acq_rel.gpu.cas.b32" in loop and "bar.sync" in loop

def attention_ptx(block_m: int = 64, head_dim: int = 64) -> str:
    """The attention tutorial's PTX for sm_90 (fp16, not causal, 4 warps, 2 stages)."""
    from kernels.attention import _attn_fwd

    x, lse = np.zeros(16, np.float16), np.zeros(16, np.float32)
    n = 1024
    strides = (2 * n * head_dim, n * head_dim, head_dim) * 4
    return _attn_fwd.compile(x, x, x, 0.125, x, lse, 2, n, *strides, HEAD_DIM=head_dim, BLOCK_M=block_m,
                             BLOCK_N=64, CAUSAL=False, num_warps=4, num_stages=2, target="sm_90").asm["ptx"]


def first_loop(ptx: str) -> str:
    """The PTX from the first backward branch's target label to that branch."""
    for branch in re.finditer(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ptx):
        label = ptx.find(f"{branch[1]}:")
        if 0 <= label < branch.start():
            return ptx[label:branch.start()]
    raise AssertionError("no loop in the PTX")


def test_attention_reads_v_after_the_softmax_and_k_v_by_cp_async():
    """In the key loop: kᵀ and v arrive by 16-byte cp.async (kᵀ is contiguous
    along the head dim, not along the tile's rows); v's operand is read by
    ldmatrix.trans only after the softmax's shuffles (a reduction between a
    dot and its operand's deferred read does not force the read early), at
    addresses that are a few registers plus immediates."""
    loop = first_loop(attention_ptx())
    assert count(loop, r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16") == 8  # 2 x 64x64 halves / 128 threads
    assert count(loop, r"ld\.global") == 0
    assert loop.rfind("shfl.sync") < loop.find("ldmatrix.sync.aligned.m8n8.x4.trans")
    addresses = set(re.findall(r"ldmatrix[^\[]+\[(%rd\d+)(?:\+\d+)?\]", loop))
    assert 0 < len(addresses) <= 8 < count(loop, r"ldmatrix")


@tilec.jit
def _shifts(x, y, z):
    a, b = tl.load(x), tl.load(y)
    tl.store(z, a << b)
    tl.store(z + 1, a >> b)


@pytest.mark.parametrize("dtype", [np.uint64, np.int64, np.uint32])
def test_a_wide_shift_count_is_capped_before_the_ptx_shift(dtype):
    """PTX shifts read a 32-bit count; NVPTX folds the count check into the shift,
    so a 64-bit count of 2**32 + 63 must be capped at 64 first or it shifts by 63."""
    x = np.zeros(2, dtype)
    ptx = _shifts.compile(x, x, x, target="sm_90").asm["ptx"]
    bits = 8 * x.itemsize
    counts = re.findall(rf"sh[lr]\.[bsu]{bits}\s+%\w+, %\w+, (%\w+);", ptx)
    assert len(counts) == 2
    if bits == 64:  # each count went through a min (64 for <<, >> unsigned; 63 for >> signed)
        for reg in counts:
            source = re.search(rf"cvt\.u32\.u64\s+{reg}, (%\w+);", ptx).group(1)
            assert re.search(rf"min\.u64\s+{source}, %\w+, 6[34];", ptx), ptx


@tilec.jit
def _hinted_copy(dst, src, LOAD_CACHE: tl.constexpr, STORE_CACHE: tl.constexpr, EVICTION: tl.constexpr,
                 VOLATILE: tl.constexpr):
    offs = tl.arange(0, 512)
    x = tl.load(src + offs, cache_modifier=LOAD_CACHE, eviction_policy=EVICTION, volatile=VOLATILE)
    tl.store(dst + offs, x, cache_modifier=STORE_CACHE, eviction_policy=EVICTION)


@pytest.mark.parametrize("load_cache", ["", ".ca", ".cg", ".cv"])
@pytest.mark.parametrize("store_cache", ["", ".wb", ".cg", ".cs", ".wt"])
@pytest.mark.parametrize("eviction", ["", "evict_first", "evict_last", "evict_normal"])
def test_cache_hints_are_the_accesses_own_qualifiers(load_cache, store_cache, eviction):
    """``ld.global.cg``, ``st.global.cs``...: the cache operator is the
    instruction's; an eviction policy is an L2 ``createpolicy`` passed with
    ``.L2::cache_hint`` (evict_normal, the default, needs none); the 16-byte
    vectors stay."""
    x = np.zeros(512, np.float32)
    ptx = _hinted_copy.compile(x, x, LOAD_CACHE=load_cache, STORE_CACHE=store_cache, EVICTION=eviction,
                               VOLATILE=False, target="sm_90").asm["ptx"]
    hint = ".L2::cache_hint" if eviction in ("evict_first", "evict_last") else ""
    assert re.findall(r"\bld\.global[\w.:]*", ptx) == [f"ld.global{load_cache}{hint}.v4.b32"]
    assert re.findall(r"\bst\.global[\w.:]*", ptx) == [f"st.global{store_cache}{hint}.v4.b32"]
    policies = re.findall(r"createpolicy\.fractional\.L2::(\w+)\.b64", ptx)
    assert policies == ([eviction] if hint else [])


def test_a_volatile_load_is_ld_volatile():
    x = np.zeros(512, np.float32)
    ptx = _hinted_copy.compile(x, x, LOAD_CACHE=".cg", STORE_CACHE="", EVICTION="", VOLATILE=True,
                               target="sm_90").asm["ptx"]
    assert re.findall(r"\bld\.[\w.:]*global[\w.:]*", ptx) == ["ld.volatile.global.v4.b32"]


@tilec.jit
def _dropped_hint(dst, src, off, N, HINT: tl.constexpr, IN_BRANCH: tl.constexpr):
    offsets = tl.arange(0, 1024) + tl.load(off)
    if HINT:
        tl.max_contiguous(tl.multiple_of(offsets, 1024), 1024)
    if IN_BRANCH:
        if tl.load(off) == 0:
            tl.max_contiguous(tl.multiple_of(offsets, 1024), 1024)
    tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < N), mask=offsets < N)


@pytest.mark.parametrize("hint, in_branch, vectors", [(False, False, 0), (True, False, 4), (False, True, 0)])
def test_a_hint_whose_result_is_dropped_marks_the_value(hint, in_branch, vectors):
    """As in Triton, ``tl.multiple_of(x, ...)`` promises something of ``x``
    itself: the accesses through ``x`` after it are vectors.  A hint inside a
    branch holds on that path only and marks nothing after it."""
    x, off = np.zeros(1024, np.float32), np.zeros(1, np.int32)
    ptx = _dropped_hint.compile(x, x, off, 1024, HINT=hint, IN_BRANCH=in_branch, target="sm_90").asm["ptx"]
    assert len(re.findall(r"\b(?:ld|st)\.global\.v4\.b32", ptx)) == vectors


def test_layer_norm_partial_rows_are_stored_one_vector_a_thread_and_read_in_the_rows_layout():
    """The dx kernel's f32 partial rows beside its fp16 rows (8 halves a
    thread): the stores take 4 f32 a thread, contiguous across the warp, so
    their values convert there (two conversions, after the lock's ``if``);
    the loads keep the rows' 8 (two adjacent 16-byte vectors a thread) and
    add into the math without a conversion."""
    n = 8192
    x, w = np.zeros((4, n), np.float16), np.zeros(n, np.float16)
    stats, partial, locks = np.zeros(4, np.float32), np.zeros((64, n), np.float32), np.zeros(128, np.int32)
    k = layer_norm._layer_norm_bwd_dx_fused.compile(x, x, partial, partial, x, w, stats, stats, locks, n, n,
                                                    GROUP_SIZE_M=64, BLOCK_SIZE_N=n, num_warps=8, target="sm_90")
    tir = k.asm["tir-gpu"]
    eight, four = "blocked<[8], [32], [8], [0]>", "blocked<[4], [32], [8], [0]>"
    assert count(tir, r"= load %\w+, %\w+, _ : tile<8192xf32, " + re.escape(eight)) == 2
    assert count(tir, r"convert_layout %\w+ \{layout = " + re.escape(four)) == 2
    assert count(tir, r"convert_layout") == 2
    ptx = k.asm["ptx"]
    assert count(ptx, r"st\.global(\.\w+)*\.v4\.b32") == 4 + 2 * 8  # dx's halves, then dw's and db's f32
    assert count(ptx, r"ld\.global(\.\w+)*\.v4\.b32") == 3 * 4 + 2 * 8  # x, dy, w; the partial rows
    assert k.metadata.spill_stores in (0, None)
