"""The host backend (``tilec/backends/host``, target ``cpu``): elementwise
kernels compiled for the baseline x86-64 CPU and run by MCJIT give numpy's
answer bit for bit; its stages show in ``.asm``, ``TILEC_DUMP``, the disk
cache and the command line; anything else is a clear error at the kernel's
line.  Host arrays run on it by default (``TILEC_INTERPRET=1`` sends them to
the interpreter); most tests here call its launcher directly."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from kernels.vector_add import add_kernel
from launch.kernels import fresh
from launch.test_cache import disk_cache  # noqa: F401 (a fixture)
from tilec import cli
from tilec.errors import CompilationError, OutOfResources
from tilec.launch import cache
from tilec.targets import registry

ROOT = Path(__file__).resolve().parents[2]
HOST = registry.backend("host")
STAGES = ["tir", "tir-opt", "llir", "asm", "obj"]


def run_on_cpu(kernel, grid, *args, **constexprs):
    """Compile ``kernel`` for ``cpu`` and launch it over ``grid`` (three ints) on ``args``."""
    compiled = kernel.compile(*args, target="cpu", **constexprs)
    HOST.launcher().launch(compiled, grid, kernel.plan(args, constexprs).args, None)
    return compiled


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal bit for bit (signed zeros, subnormals); a NaN only has to be a NaN
    (numpy leaves its payload to the hardware)."""
    nan = np.isnan(want) if want.dtype.kind == "f" else np.zeros(want.shape, bool)
    np.testing.assert_array_equal(np.isnan(got) if got.dtype.kind == "f" else nan, nan)
    unsigned = f"u{want.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(unsigned)[~nan], want.view(unsigned)[~nan])


def f16_routines_missing() -> bool:
    """Whether this process lacks the f16 conversions LLVM calls on the baseline CPU (libgcc's)."""
    x = np.zeros(1, np.float16)
    compiled = add_kernel.compile(x, x, x, 3, BLOCK_SIZE=1, target="cpu")
    return bool(HOST.launcher().missing_symbols(compiled.asm["obj"]))


DTYPES = [np.float32, np.float64, np.int32, np.int8, np.uint16, np.int64]
DTYPES += [] if f16_routines_missing() else [np.float16]


def values(dtype, n: int):
    """Arrays of ``n`` values of ``dtype``: floats of every kind (negative,
    zero of both signs, subnormal, inf, NaN), ints over their whole range."""
    if np.dtype(dtype).kind == "f":
        width = 8 * np.dtype(dtype).itemsize
        elements = st.one_of(st.floats(width=width, allow_nan=False), st.just(float("nan")))
        return hnp.arrays(dtype, n, elements=elements)
    return hnp.arrays(dtype, n)


@st.composite
def vector_add_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    n = draw(st.one_of(st.sampled_from([0, 1, 2, 15, 16, 17]), st.integers(0, 300)))
    return dtype, draw(st.sampled_from([1, 4, 32])), draw(values(dtype, n)), draw(values(dtype, n))


# --- the vector-add kernel -----------------------------------------------------------
@given(vector_add_cases())
def test_vector_add_gives_numpys_answer_bit_for_bit(case):
    dtype, block, x, y = case
    n = len(x)
    out = np.full(n + 8, 7, dtype)  # the elements past n are a guard: masked-off stores leave them
    run_on_cpu(add_kernel, (tilec.cdiv(n, block), 1, 1), x, y, out[:n], n, BLOCK_SIZE=block)
    with np.errstate(all="ignore"):
        assert_same_bits(out[:n], x + y)
    assert (out[n:] == 7).all()


@tilec.jit
def where_am_i(out_ptr):
    """Each program writes its ids and the grid's size where only it writes."""
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny = tl.num_programs(0), tl.num_programs(1)
    at = (z * ny + y) * nx + x
    tl.store(out_ptr + at, x + 10 * y + 100 * z + 1000 * nx + 10000 * ny + 100000 * tl.num_programs(2))


@pytest.mark.parametrize("grid", [(1, 1, 1), (5, 1, 1), (3, 2, 4), (1, 7, 1)])
def test_every_program_of_the_grid_runs_once_and_knows_where_it_is(grid):
    nx, ny, nz = grid
    out = np.zeros(nx * ny * nz, np.int32)
    run_on_cpu(where_am_i, grid, out)
    z, y, x = np.meshgrid(range(nz), range(ny), range(nx), indexing="ij")
    np.testing.assert_array_equal(out, (x + 10 * y + 100 * z + 1000 * nx + 10000 * ny + 100000 * nz).ravel())


@tilec.jit
def scale(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    tl.store(out_ptr + offs, tl.where(x > 0, x * alpha, x - alpha), mask=mask)


@pytest.mark.parametrize("alpha", [np.float32(-2.5), np.float64(1e-310), np.int32(-3), np.uint8(200),
                                   np.int64(-2**40), np.uint64(2**64 - 5), True]
                         + [np.float16(-0.1)] * (np.float16 in DTYPES))
def test_scalars_of_every_width_arrive_as_the_interpreter_sees_them(alpha):
    """Each kind the launcher packs its own way: floats by struct, integers by
    their two's complement."""
    dtype = np.asarray(alpha).dtype if not isinstance(alpha, bool) else np.int32
    x = (np.arange(21) - 10).astype(dtype)
    out, want = np.zeros_like(x), np.zeros_like(x)
    run_on_cpu(scale, (3, 1, 1), x, out, alpha, 21, BLOCK=8)
    scale[(3,)](x, want, alpha, 21, BLOCK=8)  # numpy arrays: the interpreter
    assert_same_bits(out, want)


# --- the stages --------------------------------------------------------------------------
def vectors(n=40, dtype=np.float32):
    x = np.arange(n, dtype=dtype)
    return x, x.copy(), np.zeros_like(x), n


def test_the_stages_are_in_asm_in_order():
    k = fresh(add_kernel).compile(*vectors(), BLOCK_SIZE=1024, target="cpu")
    assert list(k.asm) == STAGES and k.target == "cpu"
    assert 'define void @add_kernel_grid(' in k.asm["llir"] and "@add_kernel(" not in k.asm["llir"]  # inlined
    assert "add_kernel_grid:" in k.asm["asm"] and k.asm["obj"].startswith(b"\x7fELF")
    if HOST.target("cpu").cpu != "x86-64":  # AVX2 and up: the tile's loop is vectorized, masks and all
        assert "masked.load.v8f32" in k.asm["llir"] or "masked.load.v16f32" in k.asm["llir"]



def _sections(obj: bytes) -> dict:
    """An object's sections by name, code and data as bytes, relocations by
    count, no symbol table (the assembled object has one more symbol, its
    ``.file``, which shifts the symbols' numbers in the relocations)."""
    import llvmlite.binding as llvm

    return {s.name(): s.data() if not s.name().startswith(b".rela") else s.size() // 24
            for s in llvm.ObjectFileRef.from_data(obj).sections() if s.name() not in (None, b".strtab", b".symtab")}


@pytest.mark.parametrize("kernel, args, constexprs", [
    (add_kernel, vectors(1000), dict(BLOCK_SIZE=1024)),
    (add_kernel, vectors(100, np.float16), dict(BLOCK_SIZE=64)),  # f16 conversions: calls and constants
])
def test_the_object_is_the_assembly_assembled(kernel, args, constexprs):
    """The code generator runs once: ``obj`` is ``asm`` assembled, and holds the
    same code and data as LLVM's own object of the optimized module."""
    from tilec.backends.host import stages
    from tilec.backends.host.target import host_target

    k = fresh(kernel).compile(*args, target="cpu", **constexprs)
    build = stages.Build(host_target(), k.options, k.metadata, k.asm["llir"])
    direct = _sections(stages.module_object(k.asm["asm"], build))
    made = _sections(k.asm["obj"])
    assert made == direct and len(made[b".text"]) > 100  # the small code model's text (the large one's: .ltext)
    assert {n for n in made if n.startswith(b".rela")} and all(made[n] > 0 for n in made if n.startswith(b".rela"))

@tilec.jit
def trig_kernel(x_ptr, s_ptr, c_ptr, t_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(s_ptr + offs, tl.sin(x), mask=mask)
    tl.store(c_ptr + offs, tl.cos(x), mask=mask)
    tl.store(t_ptr + offs, tl.extra.libdevice.tan(x), mask=mask)


@settings(max_examples=20, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]), data=st.data())
def test_sin_cos_tan_of_any_argument_are_within_two_ulps_and_call_no_library(dtype, data):
    """Huge (Payne and Hanek's reduction), tiny, negative, infinite and NaN
    arguments alike, against numpy in float64 (long double for f64), in a
    vectorized loop that calls no C library."""
    width = 32 if dtype is np.float32 else 64
    x = data.draw(hnp.arrays(dtype, st.integers(1, 300), elements=st.floats(width=width)))
    outs = [np.empty_like(x) for _ in range(3)]
    k = run_on_cpu(trig_kernel, (tilec.cdiv(x.size, 128), 1, 1), x, *outs, x.size, BLOCK=128)
    wide = x.astype(np.longdouble if width == 64 else np.float64)
    for got, f in zip(outs, (np.sin, np.cos, np.tan)):
        with np.errstate(all="ignore"):
            want = f(wide)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        ulp = np.spacing(np.abs(want[~nan]).astype(dtype)).astype(wide.dtype)
        assert np.all(np.abs(got[~nan] - want[~nan]) <= 2 * ulp), f.__name__
    assert not re.findall(r"call[^\n]*@(sin|cos|tan)f?\b", k.asm["llir"])
    assert "two_over_pi" in k.asm["llir"]


@tilec.jit
def exps(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.exp(x), mask=mask)
    tl.store(out_ptr + n + offs, tl.exp2(x), mask=mask)
    tl.store(out_ptr + 2 * n + offs, tl.extra.libdevice.sinh(x), mask=mask)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scaling_by_the_cpus_instruction_gives_the_portable_bits(dtype, monkeypatch, tmp_path):
    """At x86-64-v4 the portable library scales by ``vscalefps`` (``llvm.ldexp``):
    the bits of the two exact halves it uses elsewhere, subnormal results,
    overflow, infinities and NaN included."""
    from tilec.backends.host import lowering
    from tilec.backends.host.target import NATIVE_SCALE_LEVELS, host_target

    if host_target().cpu not in NATIVE_SCALE_LEVELS:
        pytest.skip(f"{host_target().cpu} has no scaling instruction")
    rng = np.random.default_rng(5)
    top = 1100.0 if dtype is np.float64 else 160.0
    x = np.concatenate([rng.uniform(-top, top, 3000), [np.inf, -np.inf, np.nan, 0.0, -0.0]]).astype(dtype)
    results = []
    for levels in (NATIVE_SCALE_LEVELS, frozenset()):
        monkeypatch.setattr(lowering, "NATIVE_SCALE_LEVELS", levels)
        monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / str(len(levels))))  # a compile of its own
        out = np.empty(3 * x.size, dtype)
        k = run_on_cpu(fresh(exps), (tilec.cdiv(x.size, 256), 1, 1), x, out, x.size, BLOCK=256)
        results.append((out, k.asm["asm"]))
    (native, native_asm), (halves, halves_asm) = results
    assert "vscalef" in native_asm and "vscalef" not in halves_asm
    assert_same_bits(native, halves)


@pytest.mark.parametrize("features, level", [
    ({}, "x86-64"),
    (dict.fromkeys(["avx2", "fma", "bmi", "bmi2", "f16c", "lzcnt", "movbe"], True), "x86-64-v3"),
    (dict.fromkeys(["avx2", "fma", "bmi", "bmi2", "f16c", "lzcnt", "movbe", "avx512f", "avx512bw", "avx512cd",
                    "avx512dq", "avx512vl", "avx512bf16"], True), "x86-64-v4"),
    (dict.fromkeys(["avx2", "fma", "bmi"], True), "x86-64"),  # part of a level is the level below
])
def test_the_cpu_level_is_named_from_the_features_never_the_model(features, level):
    from tilec.backends.host.target import cpu_level

    assert cpu_level("x86_64", features) == level
    assert cpu_level("aarch64", features) == "generic"


def test_the_target_is_this_process_at_a_named_level():
    import llvmlite.binding as llvm
    from tilec.backends.host.target import LEVEL_FEATURES, MAX_PROGRAM_BYTES, X86_LEVELS

    facts = HOST.target("cpu")
    assert facts.triple == llvm.get_process_triple() and facts.features == LEVEL_FEATURES.get(facts.cpu, "")
    assert (facts.warp_size, facts.max_threads_per_block, facts.max_shared_bytes) == (1, 1, MAX_PROGRAM_BYTES)
    if facts.triple.startswith("x86_64"):
        assert facts.cpu in [name for name, _ in X86_LEVELS] + ["x86-64"]
        assert facts.cpu != llvm.get_host_cpu_name()
    assert HOST.toolchain("cpu")[1:] == (facts.triple, facts.cpu)


def test_host_arrays_run_compiled_unless_the_interpreter_is_asked_for(monkeypatch):
    monkeypatch.delenv("TILEC_INTERPRET")  # the suite runs the interpreter (conftest.py)
    assert registry.backend_for_place("host") is HOST
    assert registry.backend_for_place("host", reference=True) is registry.backend("interpreter")
    assert fresh(add_kernel).compile(*vectors(), BLOCK_SIZE=16).target == "cpu"
    monkeypatch.setenv("TILEC_INTERPRET", "1")
    assert fresh(add_kernel).compile(*vectors(), BLOCK_SIZE=16).target == "host"
    monkeypatch.setenv("TILEC_INTERPRET", "0")
    assert tilec.jit(interpret=True)(add_kernel.fn).compile(*vectors(), BLOCK_SIZE=16).target == "host"


def test_a_launch_on_host_arrays_runs_compiled_code(monkeypatch):
    monkeypatch.delenv("TILEC_INTERPRET")
    x, y, out, n = vectors()
    grid = (tilec.cdiv(n, 16),)
    compiled = fresh(add_kernel)[grid](x, y, out, n, BLOCK_SIZE=16)
    assert compiled.target == "cpu" and "obj" in compiled.asm
    np.testing.assert_array_equal(out, x + y)


def test_tilec_dump_writes_each_cpu_stage(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_DUMP", "llir,asm,obj")
    monkeypatch.setenv("TILEC_DUMP_DIR", str(tmp_path))
    k = fresh(add_kernel).compile(*vectors(), BLOCK_SIZE=16, target="cpu")
    files = {p.name.split(".", 1)[1]: p for p in tmp_path.iterdir()}
    assert sorted(files) == ["ll", "o", "s"]
    assert files["s"].read_text() == k.asm["asm"] and files["o"].read_bytes() == k.asm["obj"]


def test_a_cached_variant_keeps_its_object_code_and_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILEC_CACHE", "1")
    monkeypatch.setenv("TILEC_CHECK", "0")  # it bypasses the cache
    monkeypatch.setattr(cache, "STATS", dict.fromkeys(cache.STATS, 0))
    x, y, out, n = vectors()
    first = fresh(add_kernel).compile(x, y, out, n, BLOCK_SIZE=16, target="cpu")
    kernel = fresh(add_kernel)
    again = run_on_cpu(kernel, (3, 1, 1), x, y, out, n, BLOCK_SIZE=16)
    assert (cache.STATS["stored"], cache.STATS["hit"]) == (1, 1)
    assert again is not first and again.asm == first.asm
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("other_level", ["x86-64", "x86-64-v3"])
def test_the_cache_keeps_object_code_as_raw_bytes_under_the_cpu_level(disk_cache, monkeypatch, other_level):
    """The entry is a JSON header and raw sections (no pickle): the object's
    bytes as they are; a process at another CPU level misses it and stores its
    own (64 elements a program: vector code, of the level's width)."""
    import dataclasses
    import json

    from tilec.backends.host import target as host_target_module
    from tilec.launch.cache_entry import kernel_sections, unpack_entry

    x, y, out, n = vectors()
    mine = fresh(add_kernel).compile(x, y, out, n, BLOCK_SIZE=64, target="cpu")
    (entry,) = (disk_cache / "kernel").iterdir()
    payload = cache.read_entry("kernel", entry.stem)
    header = json.loads(payload.partition(b"\n")[0])  # one line of JSON, then the raw sections
    assert {"name": "obj", "kind": "bytes", "size": len(mine.asm["obj"])} in header["sections"]
    assert unpack_entry(payload, "kernel", kernel_sections("cpu"))[1]["obj"] == mine.asm["obj"]
    facts = host_target_module.host_target()
    if facts.cpu == other_level or not facts.triple.startswith("x86_64"):
        pytest.skip(f"this process is at {facts.cpu} already")
    monkeypatch.setattr(host_target_module, "host_target", lambda: dataclasses.replace(facts, cpu=other_level))
    theirs = run_on_cpu(fresh(add_kernel), (3, 1, 1), x, y, out, n, BLOCK_SIZE=64)
    assert (cache.STATS["stored"], cache.STATS["hit"]) == (2, 0) and len(list((disk_cache / "kernel").iterdir())) == 2
    assert theirs.asm["obj"] != mine.asm["obj"]
    np.testing.assert_array_equal(out, x + y)


def test_python_m_tilec_compiles_for_cpu(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    source = Path(add_kernel.fn.__code__.co_filename)
    status = cli.main(["compile", f"{source}:add_kernel", "--signature", "*fp32:16,*fp32:16,*fp32:16,i32",
                       "--constexpr", "BLOCK_SIZE=8", "--target", "cpu"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "add_kernel_grid:" in out  # the assembly, the cpu target's default stage


# --- reductions, scans, broadcasts, loops, branches, atomics -----------------------------
@tilec.jit
def row_stats(x_ptr, out_ptr, counter_ptr, n, M: tl.constexpr, BLOCK: tl.constexpr):
    """Per program: an M-row block's row sums over a ragged loop, row maxima,
    running sums, an outer product of the column minima, a while loop and
    atomics (a lock taken with a CAS, a counter whose old value is used)."""
    pid = tl.program_id(0)
    rows = pid * M + tl.arange(0, M)
    acc = tl.zeros((M, BLOCK), tl.float32)
    for k in range(0, n, BLOCK):
        cols = k + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + rows[:, None] * n + cols[None, :], mask=cols[None, :] < n, other=0.0)
    first = tl.load(x_ptr + rows[:, None] * n + tl.arange(0, BLOCK)[None, :], mask=tl.arange(0, BLOCK)[None, :] < n,
                    other=-1e30)
    out = out_ptr + pid * (3 * M + M * BLOCK)
    tl.store(out + tl.arange(0, M), tl.sum(acc, axis=1))
    tl.store(out + M + tl.arange(0, M), tl.max(first, axis=1))
    running = tl.cumsum(acc, axis=1)
    tl.store(out + 2 * M + tl.arange(0, M)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :], running)
    spread = tl.broadcast_to(tl.min(first, axis=1)[:, None], (M, BLOCK))
    tries = 0
    while tries < 3:
        tries += 1
    biggest = tl.max(tl.max(spread, axis=1), axis=0)
    if biggest > 0:
        signed = biggest
    else:
        signed = -biggest
    tl.store(out + 2 * M + M * BLOCK + tl.arange(0, M), tl.sum(spread, axis=1) + signed * tries)
    while tl.atomic_cas(counter_ptr + 1, 0, 1) == 1:
        pass
    ticket = tl.atomic_add(counter_ptr, 1)
    tl.atomic_xchg(counter_ptr + 1, 0)
    tl.atomic_add(counter_ptr + 2 + ticket, 1)


@given(data=st.data(), programs=st.integers(1, 4), n=st.integers(1, 40))
def test_reductions_scans_loops_branches_and_atomics_give_numpys_answer(data, programs, n):
    M, BLOCK = 4, 8
    x = data.draw(hnp.arrays(np.float32, (programs * M, n), elements=st.floats(-100, 100, width=32)))
    out = np.zeros(programs * (3 * M + M * BLOCK), np.float32)
    counter = np.zeros(2 + programs, np.int32)
    run_on_cpu(row_stats, (programs, 1, 1), x, out, counter, n, M=M, BLOCK=BLOCK)
    per = out.reshape(programs, -1)
    blocks = x.reshape(programs, M, n).astype(np.float64)
    first = np.full((programs, M, BLOCK), -1e30)
    first[:, :, :min(n, BLOCK)] = blocks[:, :, :BLOCK]
    np.testing.assert_allclose(per[:, :M], blocks.sum(2), rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(per[:, M:2 * M], first.max(2).astype(np.float32))
    folded = np.zeros((programs, M, BLOCK))
    for k in range(0, n, BLOCK):
        chunk = blocks[:, :, k:k + BLOCK]
        folded[:, :, :chunk.shape[2]] += chunk
    np.testing.assert_allclose(per[:, 2 * M:2 * M + M * BLOCK].reshape(programs, M, BLOCK), folded.cumsum(2),
                               rtol=1e-5, atol=1e-3)
    low = first.min(2).astype(np.float32).astype(np.float64)
    signed = np.abs(low.max(1))[:, None].astype(np.float32)
    # float32 sums of terms up to |low| * BLOCK that may cancel: a few of their ulps
    terms = np.maximum(np.abs(low) * BLOCK, np.abs(signed) * 3).astype(np.float32)
    np.testing.assert_array_less(np.abs(per[:, 2 * M + M * BLOCK:] - (low * BLOCK + signed * 3)),
                                 4 * np.spacing(terms) + 1e-30)
    assert counter[0] == programs and counter[1] == 0
    np.testing.assert_array_equal(counter[2:], np.ones(programs))  # every ticket drawn once


# --- dots, shape ops and gathers, through the program's scratch memory ------------------
@tilec.jit
def dot_and_shapes(a_ptr, b_ptr, idx_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    c = tl.dot(a, b, input_precision="ieee")
    tl.store(out_ptr + m[:, None] * N + n[None, :], c)
    flat = tl.reshape(tl.trans(a), (M * K,))
    tl.store(out_ptr + M * N + tl.arange(0, M * K), flat)
    lo, hi = tl.split(tl.join(a, a * 2))
    tl.store(out_ptr + M * N + M * K + m[:, None] * K + k[None, :], hi - lo)
    row = tl.reshape(a, (M * K,))
    i = tl.load(idx_ptr + tl.arange(0, M * K))
    tl.store(out_ptr + M * N + 2 * M * K + tl.arange(0, M * K), tl.gather(row, i, 0))
    tl.store(out_ptr + M * N + 3 * M * K + tl.arange(0, M * K), tl.histogram(i, M * K).to(tl.float32))


@given(data=st.data())
def test_dots_shape_ops_and_gathers_give_numpys_answer(data):
    M, N, K = 16, 16, 16
    floats = st.floats(-4, 4, width=32)
    a = data.draw(hnp.arrays(np.float32, (M, K), elements=floats))
    b = data.draw(hnp.arrays(np.float32, (K, N), elements=floats))
    idx = data.draw(hnp.arrays(np.int32, M * K, elements=st.integers(0, M * K - 1)))
    out = np.full(M * N + 4 * M * K, np.nan, np.float32)
    run_on_cpu(dot_and_shapes, (1, 1, 1), a, b, idx, out, M=M, N=N, K=K)
    got = np.split(out, [M * N, M * N + M * K, M * N + 2 * M * K, M * N + 3 * M * K])
    np.testing.assert_allclose(got[0].reshape(M, N), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(got[1], a.T.ravel())
    np.testing.assert_array_equal(got[2].reshape(M, K), a * 2 - a)
    np.testing.assert_array_equal(got[3], a.ravel()[idx])
    np.testing.assert_array_equal(got[4], np.bincount(idx, minlength=M * K))


def test_a_program_needing_more_stack_memory_than_the_limit_is_refused():
    """Its tiles' buffers live on its thread's stack."""
    from tilec.backends.host.stages import check_stack
    from tilec.backends.host.target import MAX_PROGRAM_BYTES

    check_stack("k", MAX_PROGRAM_BYTES, HOST.target("cpu"))
    with pytest.raises(OutOfResources, match=rf"`k` needs {MAX_PROGRAM_BYTES + 1} bytes of stack memory"):
        check_stack("k", MAX_PROGRAM_BYTES + 1, HOST.target("cpu"))


# --- what it does not compile yet, and the debugging ops -------------------------------
@tilec.jit
def doubled(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tl.store(out_ptr + r, tl.map_elementwise(_twice_or_less, tl.load(x_ptr + r)))


@tilec.jit
def _twice_or_less(x):
    if x > 0:
        return x * 2
    return x - 1


def test_map_elementwise_runs_its_body_per_element_branches_and_all():
    x = np.array([3, -2, 0, 7, -9, 1, 5, -4], np.float32)
    out = np.zeros_like(x)
    run_on_cpu(doubled, (1, 1, 1), x, out, BLOCK=8)
    np.testing.assert_array_equal(out, np.where(x > 0, x * 2, x - 1))


@tilec.jit
def asm_kernel(x_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [tl.load(x_ptr + r)], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(x_ptr + r, y)


def test_gpu_assembly_is_an_error_at_its_line():
    x = np.ones(16, np.int32)
    with pytest.raises(CompilationError, match=r"the cpu target cannot compile `inline_asm`: its assembly is "
                                               "written for a GPU") as e:
        asm_kernel.compile(x, BLOCK=16, target="cpu")
    source = Path(__file__).read_text().splitlines()
    assert (e.value.file, e.value.kernel) == (__file__, "asm_kernel")
    assert "tl.inline_asm_elementwise(" in source[e.value.line - 1]


@tilec.jit
def show(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.device_print("x", x)
    tl.device_assert(x < 100, "x is too big")


def test_print_writes_each_element_through_printf(capfd):
    run_on_cpu(show, (2, 1, 1), np.arange(2, dtype=np.int32), BLOCK=2)
    lines = capfd.readouterr().out.splitlines()  # programs run on several threads: in any order
    assert sorted(lines) == [f"pid ({p}, 0, 0) idx ({i}) x: {i}" for p in (0, 1) for i in (0, 1)]


def test_a_failed_assertion_reports_the_line_and_stops_the_process(tmp_path):
    script = tmp_path / "failing.py"
    script.write_text(f"import sys; sys.path[:0] = {[str(ROOT), str(ROOT / 'tests')]!r}\n"
                      "import numpy as np\n"
                      "from backends.test_host_backend import run_on_cpu, show\n"
                      "run_on_cpu(show, (1, 1, 1), np.array([1, 200], np.int32), BLOCK=2)\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TILEC_CHECK": "0"})
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "x is too big" in text)
    assert proc.returncode != 0
    assert f"{__file__}:{line}: show: device_assert failed: x is too big" in proc.stderr


def test_a_read_only_array_it_may_write_is_refused_before_anything_runs():
    x, y, out, n = vectors()
    out.setflags(write=False)
    with pytest.raises(ValueError, match=r"stores through `output_ptr` \(store at .*01_vector_add.py:\d+\).*read-only"):
        run_on_cpu(add_kernel, (3, 1, 1), x, y, out, n, BLOCK_SIZE=16)
