"""The on-disk compile cache (tilec/launch/cache.py): keys, hits across
processes, atomic and checked entries, and what bypasses it."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.launch import cache
from tilec.launch.compiler import Options
from tilec.backends.nvidia import ptxas

from launch.kernels import add_kernel, fresh

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def disk_cache(monkeypatch, tmp_path):
    """The cache on, in a fresh directory, outside the modes that bypass it; fresh counters."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_CACHE", "1")
    monkeypatch.setenv("TILEC_CHECK", "0")
    monkeypatch.delenv("TILEC_DUMP", raising=False)
    monkeypatch.setattr(cache, "STATS", dict.fromkeys(cache.STATS, 0))
    return tmp_path / "cache"


def vectors(n: int):
    rng = np.random.default_rng(n)
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)


def kernel_files(root: Path) -> list[Path]:
    return sorted((root / "kernel").glob("*"))


def load_module(path: Path, source: str, name: str):
    """``source`` written to ``path`` and imported as a new module named ``name``."""
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect.getsource finds the file through the module
    spec.loader.exec_module(module)
    return module


def add_key(kernel, n: int = 64, num_warps: int = 4, target: str = "host", **constexprs) -> str:
    x, y, out = vectors(n)
    plan = kernel.plan((x, y, out, n), {**constexprs, "num_warps": num_warps})
    return cache.kernel_key(kernel.fn, plan.args, plan.options, target)


def test_a_jit_function_passed_as_a_constexpr_is_stored(disk_cache):
    """Its key holds the JITFunction class, which is no kernel to fingerprint."""
    @tilec.jit
    def twice(x):
        return x * 2

    @tilec.jit
    def apply(out, f: tl.constexpr):
        tl.store(out, f(3))

    out = np.zeros(1, np.int32)
    apply[(1,)](out, twice)
    assert out[0] == 6 and cache.STATS["stored"] == 1


# --- where, and whether ----------------------------------------------------------
def test_a_tuple_kernel_is_stored_and_loaded(disk_cache):
    """A tuple argument's leaves are the IR's arguments, by name: the stored IR reads back as the variant's."""
    @tilec.jit
    def pair_kernel(out, t):
        tl.store(out, tl.load(t[0]) + t[1][0])

    x, out = np.full(1, 2, np.float32), np.zeros(1, np.float32)
    for _ in range(2):
        tilec.jit(pair_kernel.fn)[(1,)](out, (x, (3,)))
        assert out[0] == 5
    assert (cache.STATS["stored"], cache.STATS["hit"]) == (1, 1)


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "a" / "b"))
    assert cache.cache_dir() == tmp_path / "a" / "b" and not cache.cache_dir().exists()  # looking creates nothing
    monkeypatch.delenv("TILEC_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "tilec"


def test_source_hash_is_computed_once_and_covers_the_package():
    assert cache.tilec_source_hash() == cache.tilec_source_hash()
    assert len(cache.tilec_source_hash()) == 64 and cache.tilec_source_hash.cache_info().currsize == 1


@pytest.mark.parametrize("env, reason", [({"TILEC_CACHE": "0"}, "TILEC_CACHE=0"),
                                         ({"TILEC_CHECK": "1"}, "TILEC_CHECK is set"),
                                         ({"TILEC_DUMP": "ptx"}, "TILEC_DUMP is set")])
def test_off_and_bypassing_modes_neither_read_nor_write(disk_cache, monkeypatch, env, reason):
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert cache.bypassed() == reason
    x, y, out = vectors(64)
    fresh(add_kernel).compile(x, y, out, 64)
    assert kernel_files(disk_cache) == [] and cache.STATS["miss"] == cache.STATS["hit"] == 0


# --- hits ----------------------------------------------------------------------------
def test_a_hit_is_the_same_kernel_and_runs(disk_cache):
    x, y, out = vectors(100)
    first = fresh(add_kernel).compile(x, y, out, 100)
    assert cache.STATS == {**cache.STATS, "miss": 1, "stored": 1, "hit": 0} and len(kernel_files(disk_cache)) == 1
    kernel = fresh(add_kernel)
    kernel[(1,)](x, y, out, 100, BLOCK=128)
    kernel[(1,)](x, y, out, 100)  # BLOCK=1024, the stored variant
    assert cache.STATS["hit"] == 1
    hit = next(c for c in kernel.cache.values() if c.specs == first.specs)
    assert hit.asm == first.asm and hit.metadata == first.metadata and hit.fn.arg_names == first.fn.arg_names
    np.testing.assert_array_equal(out, x + y)


def test_a_gpu_hit_keeps_every_stage_and_the_metadata(disk_cache):
    x, y, out = vectors(64)
    first = fresh(add_kernel).compile(x, y, out, 64, target="sm_80")
    hit = fresh(add_kernel).compile(x, y, out, 64, target="sm_80")
    assert cache.STATS["hit"] == 1
    assert set(hit.asm) == set(first.asm) >= {"tir", "tir-opt", "tir-gpu", "llir", "ptx"}
    assert hit.asm == first.asm and hit.metadata == first.metadata and hit.target == "sm_80"
    if ptxas.find_ptxas() is not None:
        assert isinstance(hit.asm["cubin"], bytes) and hit.asm["cubin"] == first.asm["cubin"]


SCRIPT = """
import json, sys
import numpy as np
import tilec
from tilec.launch import cache
from launch.kernels import add_kernel
x = np.arange(256, dtype=np.float32); out = np.zeros(256, np.float32)
add_kernel[(1,)](x, x, out, 256, BLOCK=256)
assert (out == 2 * x).all()
compiled = next(iter(add_kernel.cache.values()))
print(json.dumps({"stats": cache.STATS, "ptx": compiled.asm.get("ptx"), "tir": compiled.asm["tir-opt"]}))
"""


def run_script(script: str, cache_root: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "TILEC_CACHE_DIR": str(cache_root), "TILEC_CACHE": "1", "TILEC_CHECK": "0",
           "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    env.pop("TILEC_DUMP", None)
    return subprocess.Popen([sys.executable, "-c", script, *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def results(processes: list[subprocess.Popen]) -> list[dict]:
    import json

    out = []
    for p in processes:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def test_a_second_process_hits_and_does_not_compile(tmp_path):
    first, = results([run_script(SCRIPT, tmp_path)])
    second, = results([run_script(SCRIPT, tmp_path)])
    assert first["stats"]["miss"] == 1 and first["stats"]["hit"] == 0
    assert second["stats"]["hit"] == 1 and second["stats"]["miss"] == 0 and second["tir"] == first["tir"]


@pytest.mark.slow
def test_processes_compiling_one_kernel_at_once_all_succeed_and_agree(tmp_path):
    script = SCRIPT.replace("add_kernel[(1,)](x, x, out, 256, BLOCK=256)",
                            "add_kernel[(1,)](x, x, out, 256, BLOCK=256)\n"
                            "add_kernel.cache.clear()\n"
                            "add_kernel.compile(x, x, out, 256, BLOCK=256, target='sm_90')")
    outputs = results([run_script(script, tmp_path) for _ in range(4)])
    assert len({o["ptx"] for o in outputs}) == 1 and outputs[0]["ptx"].startswith("//")
    names = sorted(p.name for p in (tmp_path / "kernel").iterdir())
    assert len(names) == 2 and not any(n.endswith(cache.TEMP_SUFFIX) for n in names)  # host + sm_90, no leftovers
    again, = results([run_script(script, tmp_path)])
    assert again["stats"]["miss"] == 0 and again["stats"]["hit"] == 2 and again["ptx"] == outputs[0]["ptx"]


# --- corrupt entries are recompiled ---------------------------------------------------------
@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "old format"])
def test_a_damaged_entry_is_recompiled_and_overwritten(disk_cache, damage):
    x, y, out = vectors(64)
    first = fresh(add_kernel).compile(x, y, out, 64)
    entry, = kernel_files(disk_cache)
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[:len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:-10] + bytes([data[-10] ^ 1]) + data[-9:])
    elif damage == "empty":
        entry.write_bytes(b"")
    else:  # a checked entry of an older format (test_cache_entries.py plants hostile ones)
        entry.unlink()
        cache.write_entry("kernel", entry.stem, b'{"format": 1}\n')
    again = fresh(add_kernel).compile(x, y, out, 64)
    assert cache.STATS["corrupt"] == 1 and cache.STATS["miss"] == 2 and cache.STATS["hit"] == 0
    assert again.asm == first.asm and entry.read_bytes() == data  # rewritten whole
    fresh(add_kernel).compile(x, y, out, 64)
    assert cache.STATS["hit"] == 1


def test_a_huge_planted_entry_is_refused_by_its_size_without_reading_it(disk_cache):
    """A (sparse) file larger than any entry is corrupt before a byte of it is read:
    a planted huge file costs neither memory nor time."""
    x, y, out = vectors(64)
    fresh(add_kernel).compile(x, y, out, 64)
    entry, = kernel_files(disk_cache)
    os.truncate(entry, cache.MAX_ENTRY_BYTES + 1)
    tracemalloc.start()
    try:
        fresh(add_kernel).compile(x, y, out, 64)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cache.STATS["corrupt"] == 1 and peak < cache.MAX_ENTRY_BYTES // 8
    assert entry.stat().st_size < 1 << 20  # rewritten


def test_a_failed_write_leaves_no_entry_and_no_temp_file(disk_cache, monkeypatch):
    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cache.os, "replace", crash)
    x, y, out = vectors(64)
    fresh(add_kernel).compile(x, y, out, 64)  # compiles and runs on; the store only logs
    assert kernel_files(disk_cache) == [] and cache.STATS["stored"] == 0


# --- keys ---------------------------------------------------------------------------------
def test_key_depends_on_options_constexprs_specialization_and_target():
    keys = {add_key(add_kernel), add_key(add_kernel, num_warps=8), add_key(add_kernel, BLOCK=512),
            add_key(add_kernel, n=65), add_key(add_kernel, target="sm_90"), add_key(add_kernel, target="sm_80")}
    assert len(keys) == 6
    assert add_key(add_kernel) == add_key(fresh(add_kernel))  # the object does not matter, its source does


def test_key_depends_on_the_toolchain_of_a_gpu_target(monkeypatch):
    before = add_key(add_kernel, target="sm_90"), add_key(add_kernel)
    monkeypatch.setattr(ptxas, "find_ptxas", lambda: Path("/nonexistent/ptxas"))
    assert add_key(add_kernel, target="sm_90") != before[0] and add_key(add_kernel) == before[1]


MODULE = """
import tilec
import tilec.language as tl
SCALE = {scale}

@tilec.jit
def helper(x):
    return x * {factor}

def unused():
    return 1

@tilec.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, helper(tl.load(x_ptr + offs, mask=offs < n)) * SCALE, mask=offs < n)
"""


def module_key(tmp_path: Path, name: str, **params) -> str:
    source = MODULE.format(**{"scale": 2, "factor": 3, **params})
    if params.get("unused"):
        source = source.replace("return 1", "return 2")
    module = load_module(tmp_path / "kernels.py", source, name)  # one file: its name is part of the key
    x = np.zeros(8, np.float32)
    plan = module.kernel.plan((x, x, 8), {"BLOCK": 8})
    return cache.kernel_key(module.kernel.fn, plan.args, plan.options, "host")


def test_key_follows_callees_and_globals_but_not_unrelated_functions(tmp_path):
    base = module_key(tmp_path, "m_base")
    assert module_key(tmp_path, "m_base") == base  # the same file read again
    assert module_key(tmp_path, "m_callee", factor=4) != base  # only the @jit helper changed
    assert module_key(tmp_path, "m_global", scale=5) != base  # only a global the kernel reads changed
    assert module_key(tmp_path, "m_unused", unused=True) == base  # a function it never calls changed


def test_a_changed_callee_is_recompiled_not_reused(disk_cache, tmp_path):
    def run(name: str, factor: int) -> np.ndarray:
        module = load_module(tmp_path / "kernels.py", MODULE.format(scale=2, factor=factor), name)
        x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
        module.kernel[(1,)](x, out, 8, BLOCK=8)
        return out

    np.testing.assert_array_equal(run("k_first", 3), np.arange(8) * 6)
    np.testing.assert_array_equal(run("k_second", 4), np.arange(8) * 8)  # same file, same kernel text
    assert cache.STATS["hit"] == 0 and cache.STATS["miss"] == 2


def test_a_value_without_stable_text_is_compiled_but_not_stored(disk_cache):
    class Opaque:
        pass

    with pytest.raises(cache.Uncacheable):
        cache.stable_token(Opaque())
    assert cache.stable_token((1, "a", tilec.language.float16)) == cache.stable_token((1, "a", tilec.language.float16))
    assert cache.stable_token(add_kernel) == ("jit", cache.source_fingerprint(add_kernel.fn))


# --- entries, clear -------------------------------------------------------------------------
def test_entries_and_clear_cover_kernels_tunings_and_leftovers_only(disk_cache):
    x, y, out = vectors(64)
    fresh(add_kernel).compile(x, y, out, 64)
    cache.write_entry("tuning", "k" * 64, b"{}")
    (disk_cache / "kernel" / ".abc-1.tmp").write_bytes(b"half")
    (disk_cache / "notes.txt").write_text("not ours")
    found = cache.entries()
    assert sorted(e.kind for e in found) == ["kernel", "temp", "tuning"]
    assert all(e.size == e.path.stat().st_size and e.mtime > 0 for e in found)
    assert cache.clear() == 3 and cache.entries() == [] and (disk_cache / "notes.txt").exists()


def test_entry_kinds_are_checked():
    with pytest.raises(ValueError, match="kinds: kernel, tuning"):
        cache.entry_path("kernels", "x")


def test_options_in_the_key_are_the_numbers(disk_cache):
    x, y, out = vectors(64)
    plan = add_kernel.plan((x, y, out, 64), {})
    assert cache.kernel_key(add_kernel.fn, plan.args, Options(4, 3), "host") != \
        cache.kernel_key(add_kernel.fn, plan.args, Options(4, 2), "host")
