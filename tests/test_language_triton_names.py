"""Small names of Triton 3.6's ``triton.language`` (issue 17): ``tl.bitonic_merge``
against numpy (the network on any input, a sort on a bitonic one);
``tl.target_info`` and ``tl.extra.cuda``'s ``num_warps``/``num_threads``,
which answer for the variant's target and launch.  On the host interpreter
and compiled for NVIDIA archs (ptxas included where installed)."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.errors import CompilationError
from helpers import FEW, NUMBERS, assert_close, cast, empty, require, to_host, values


def merge_network(x: np.ndarray, descending: bool) -> np.ndarray:
    """Triton's bitonic merge along the last dim: compare-and-swap at strides
    n/2 .. 1, swapping a pair (lower, upper) where lower > upper (ascending)
    or lower < upper (descending); a NaN swaps nothing."""
    x = x.copy()
    n = x.shape[-1]
    stride = n // 2
    while stride >= 1:
        for i in range(n):
            if i & stride:
                continue
            lo, hi = x[..., i].copy(), x[..., i + stride].copy()
            swap = lo < hi if descending else lo > hi
            x[..., i], x[..., i + stride] = np.where(swap, hi, lo), np.where(swap, lo, hi)
        stride //= 2
    return x


@tilec.jit
def bitonic_merge_kernel(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, DESCENDING: tl.constexpr):
    where = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    z = tl.bitonic_merge(tl.load(x_ptr + where), descending=DESCENDING)
    tl.static_assert(z.shape == (M, N))
    tl.store(z_ptr + where, z)


@pytest.mark.parametrize("dtype", NUMBERS)
@FEW
@given(data=st.data(), m=st.sampled_from([1, 2, 4]), n=st.sampled_from([1, 2, 8, 32]), descending=st.booleans())
def test_bitonic_merge_is_tritons_network(dtype, data, m, n, descending):
    require(dtype)
    x = cast(data.draw(values(dtype, (m, n), finite=True)), dtype)
    z = empty((m, n), dtype)
    bitonic_merge_kernel[(1,)](to_host(x, dtype), z, M=m, N=n, DESCENDING=descending)
    assert_close(z, merge_network(x, descending), dtype)


@pytest.mark.parametrize("descending", [False, True])
def test_bitonic_merge_sorts_a_bitonic_sequence(descending):
    rng = np.random.default_rng(7)
    rows = [np.concatenate([np.sort(rng.standard_normal(k)), -np.sort(-rng.standard_normal(32 - k))])
            for k in (0, 5, 16, 31)]
    x = np.stack(rows).astype(np.float32)
    z = np.empty_like(x)
    bitonic_merge_kernel[(1,)](x, z, M=4, N=32, DESCENDING=descending)
    want = np.sort(x, axis=-1)
    np.testing.assert_array_equal(z, want[:, ::-1] if descending else want)


@tilec.jit
def bitonic_merge_dim0_kernel(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 8))
    tl.store(x_ptr + tl.arange(0, 8), tl.reshape(tl.bitonic_merge(x[None, :], dim=0), (8,)))


def test_bitonic_merge_along_another_dim_is_refused():
    with pytest.raises(CompilationError, match="`tl.bitonic_merge` sorts along the last dim only"):
        bitonic_merge_dim0_kernel[(1,)](np.zeros(8, np.float32))


def test_bitonic_merge_compiles_for_sm_90():
    f32 = np.zeros(128, np.float32)
    assert "cubin" in bitonic_merge_kernel.compile(f32, f32, M=4, N=32, DESCENDING=True, target="sm_90").asm


# --------------------------------------------------------------------------- #
# tl.target_info and tl.extra.cuda.num_warps / num_threads: the compile target's facts
# --------------------------------------------------------------------------- #

@tilec.jit
def target_facts_kernel(out_ptr):
    tl.store(out_ptr, tl.extra.cuda.num_warps())
    tl.store(out_ptr + 1, tl.extra.cuda.num_threads())
    tl.store(out_ptr + 2, tl.target_info.is_cuda())
    tl.store(out_ptr + 3, tl.target_info.cuda_capability_geq(9))
    tl.store(out_ptr + 4, tl.target_info.cuda_capability_geq(8, 6))
    tl.store(out_ptr + 5, tl.target_info.is_hip() or tl.target_info.is_hip_cdna3() or tl.target_info.is_hip_cdna4())
    tl.store(out_ptr + 6, tl.target_info.current_target().warp_size)
    if tl.target_info.current_target().backend == "cuda":  # folded: one branch is compiled
        tl.store(out_ptr + 7, tl.target_info.current_target().arch)
    else:
        tl.store(out_ptr + 7, -1)


@pytest.mark.host_only  # the interpreter's answers, not a GPU's
@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_the_host_interpreter_is_no_gpu_and_counts_the_launchs_warps(num_warps):
    out = np.zeros(8, np.int32)
    target_facts_kernel[(1,)](out, num_warps=num_warps)
    np.testing.assert_array_equal(out, [num_warps, 32 * num_warps, 0, 0, 0, 0, 32, -1])


def constants(compiled) -> list[int]:
    """The values the optimized IR stores, in order (every store here stores a constant)."""
    text = compiled.asm["tir-opt"]
    return [int(v) for v in re.findall(r"constant \{value = (-?\d+)", text)]


@pytest.mark.parametrize("arch,facts", [
    ("sm_80", {"cuda": 1, "geq_9_0": 0, "geq_8_6": 0, "arch": 80}),
    ("sm_86", {"cuda": 1, "geq_9_0": 0, "geq_8_6": 1, "arch": 86}),
    ("sm_90", {"cuda": 1, "geq_9_0": 1, "geq_8_6": 1, "arch": 90}),
    ("sm_90a", {"cuda": 1, "geq_9_0": 1, "geq_8_6": 1, "arch": 90}),
])
def test_an_nvidia_compile_answers_for_its_arch(arch, facts):
    """The variant's target, not the machine's: compiled for sm_80 on any host, it answers for sm_80."""
    out = np.zeros(8, np.int32)
    compiled = target_facts_kernel.compile(out, target=arch, num_warps=2)
    assert "cubin" in compiled.asm or "ptx" in compiled.asm
    stored = [2, 64, facts["cuda"], facts["geq_9_0"], facts["geq_8_6"], 0, 32, facts["arch"]]
    assert all(v in constants(compiled) for v in stored), (stored, constants(compiled))
    assert -1 not in constants(compiled)


@tilec.jit
def hip_facts_kernel(out_ptr):
    # one decimal digit a fact, so each store is one constant of its own
    tl.store(out_ptr, 1000 * tl.target_info.is_hip() + 100 * tl.target_info.is_hip_cdna3()
             + 10 * tl.target_info.is_hip_cdna4() + tl.target_info.is_cuda())
    if tl.target_info.current_target().backend == "hip":  # folded: one branch is compiled
        tl.store(out_ptr + 1, 1000 * tl.extra.cuda.num_threads() + tl.target_info.current_target().warp_size)
    else:
        tl.store(out_ptr + 1, -1)


@pytest.mark.parametrize("arch, facts, wave", [("gfx90a", 1000, 64), ("gfx942", 1100, 64), ("gfx950", 1010, 64),
                                               ("gfx1100", 1000, 32), ("gfx1201", 1000, 32)])
def test_an_amd_compile_answers_for_its_arch(arch, facts, wave):
    out = np.zeros(2, np.int32)
    compiled = hip_facts_kernel.compile(out, target=arch, num_warps=2)
    assert "obj" in compiled.asm
    assert {facts, 1000 * 2 * wave + wave} <= set(constants(compiled)) and -1 not in constants(compiled)


def test_target_info_outside_a_kernel_says_it_is_a_kernel_builtin():
    with pytest.raises(RuntimeError, match="inside a @tilec.jit kernel"):
        tl.target_info.is_cuda()


# --------------------------------------------------------------------------- #
# tl.extra.cuda.smid and globaltimer: read when the kernel runs
# --------------------------------------------------------------------------- #

@tilec.jit
def clock_kernel(sm_ptr, t_ptr, N: tl.constexpr):
    start = tl.extra.cuda.globaltimer()
    acc = 0.0
    for i in range(N):
        acc += i * 0.5
    end = tl.extra.cuda.globaltimer()  # a second read: never merged with the first
    pid = tl.program_id(0)
    tl.store(sm_ptr + pid, tl.extra.cuda.smid())
    tl.store(t_ptr + 2 * pid, start)
    tl.store(t_ptr + 2 * pid + 1, end + (acc > 1e30).to(tl.int64))


@pytest.mark.host_only  # the interpreter's answers, not a GPU's
def test_smid_is_0_and_globaltimer_counts_nanoseconds_on_the_host():
    import time

    sm, t = np.full(4, 7, np.int32), np.zeros(8, np.int64)
    before = time.time_ns()
    clock_kernel[(4,)](sm, t, N=64)
    after = time.time_ns()
    assert sm.tolist() == [0, 0, 0, 0] and sm.dtype == np.int32
    starts, ends = t[0::2], t[1::2]
    assert (before <= starts).all() and (starts <= ends).all() and (ends <= after).all()


def test_smid_and_globaltimer_read_the_special_registers_on_nvidia():
    sm, t = np.zeros(4, np.int32), np.zeros(8, np.int64)
    compiled = clock_kernel.compile(sm, t, N=64, target="sm_90")
    assert compiled.asm["tir-opt"].count("global_timer") == 2 and "processor_id" in compiled.asm["tir-opt"]
    ptx = compiled.asm["ptx"]
    assert ptx.count("%globaltimer;") == 2 and "%smid;" in ptx


@pytest.mark.host_only  # this machine's clock and CPUs: a mirrored launch would read a GPU's
def test_the_cpu_target_reads_the_clock_and_the_cpu_it_runs_on(monkeypatch):
    import os
    import time

    monkeypatch.delenv("TILEC_INTERPRET")  # compiled for this CPU, not the suite's interpreter
    sm, t = np.full(4, -1, np.int32), np.zeros(8, np.int64)
    before = time.time_ns()
    assert clock_kernel[(4,)](sm, t, N=64).target == "cpu"
    after = time.time_ns()
    assert ((0 <= sm) & (sm < os.cpu_count())).all()
    starts, ends = t[0::2], t[1::2]
    assert (before <= starts).all() and (starts <= ends).all() and (ends <= after).all()


def test_the_drop_in_alias_maps_target_info_and_extra_cuda():
    import importlib

    import tilec.triton_compat as compat

    compat.install()
    try:
        target = importlib.import_module("triton.language.target_info")
        utils = importlib.import_module("triton.language.extra.cuda.utils")
        cuda = importlib.import_module("triton.language.extra.cuda")
        assert target is tl.target_info and utils is tl.extra.cuda.utils
        assert (cuda.num_warps, cuda.num_threads, cuda.smid, cuda.globaltimer) == (
            utils.num_warps, utils.num_threads, utils.smid, utils.globaltimer)
    finally:
        compat.uninstall()
    out = np.zeros(8, np.int32)
    target_facts_kernel[(1,)](out, num_warps=2)  # tl.extra is tilec's again
    assert out[:2].tolist() == [2, 64]
