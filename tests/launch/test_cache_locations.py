"""A kernel read back from the disk cache, or handed back by an autotuner's
compile worker, keeps its source locations: a runtime error on the host names
the kernel's file and line and quotes it, as on the first compile.  (The suite
runs under ``TILEC_CHECK=1``, which bypasses the cache: these tests turn it off.)"""
from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.launch import cache

from launch.test_cache import disk_cache  # noqa: F401 (a fixture)

at = importlib.import_module("tilec.launch.autotune")
REPO = Path(__file__).resolve().parents[2]


@tilec.jit
def overrun(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)  # the load is unmasked


LINE = inspect.getsourcelines(overrun.fn)[1] + 3  # the tl.load line
QUOTED = "tl.store(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)"


def run_error(kernel, n: int, **meta) -> str:
    x, out = np.ones(n, np.float32), np.zeros(n, np.float32)
    with pytest.raises(tilec.InterpreterError) as info:
        kernel[lambda m: (tilec.cdiv(n, m["BLOCK"]),)](x, out, n, **meta)
    return str(info.value)


def assert_located(message: str) -> None:
    assert message.startswith(f"{__file__}:{LINE}: load out of bounds"), message
    assert QUOTED in message and "<unknown>" not in message


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # each example clears the cache
@given(n=st.integers(1, 63))
def test_a_disk_hit_keeps_the_location_of_a_runtime_error(disk_cache, n):
    cache.clear()
    first = run_error(tilec.jit(overrun.fn), n, BLOCK=64)
    hits = cache.STATS["hit"]
    again = run_error(tilec.jit(overrun.fn), n, BLOCK=64)  # a fresh kernel: read from disk
    assert cache.STATS["hit"] == hits + 1
    assert_located(first)
    assert again == first


@pytest.mark.parametrize("disk", ["1", "0"])
def test_a_kernel_from_an_autotuner_worker_keeps_its_locations(disk_cache, monkeypatch, disk):
    monkeypatch.setenv("TILEC_CACHE", disk)
    monkeypatch.setattr(at, "available_cpus", lambda: 2)  # compile the configs in worker processes
    adopted = []
    monkeypatch.setattr(tilec.JITFunction, "adopt", record_calls(tilec.JITFunction.adopt, adopted))
    kernel = tilec.autotune(configs=[tilec.Config({"BLOCK": 64}), tilec.Config({"BLOCK": 128})], key=["n"],
                            warmup=1, rep=1)(tilec.jit(overrun.fn))
    assert_located(run_error(kernel, 50))
    assert len(adopted) == 2


def record_calls(method, calls: list):
    def recorded(self, *args):
        calls.append(args)
        return method(self, *args)

    return recorded


SCRIPT = """
import numpy as np
import tilec
import tilec.language as tl
from tilec.launch import cache

@tilec.jit
def b04(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1, mask=offs < n)

try:
    b04[(1,)](np.ones(10, np.float32), np.zeros(10, np.float32), 10, BLOCK=16)
except tilec.InterpreterError as e:
    print(e)
print("hits", cache.STATS["hit"])
"""


def test_a_new_process_reading_the_kernel_from_disk_names_the_line(tmp_path):
    script = tmp_path / "b04_oob.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "cache"), "TILEC_CHECK": "0", "TILEC_CACHE": "1",
           "PYTHONPATH": str(REPO)}
    env.pop("TILEC_DUMP", None)
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    for run, hits in zip(runs, (0, 1)):
        assert run.returncode == 0, run.stderr
        assert run.stdout.startswith(f"{script}:10: load out of bounds"), run.stdout
        assert "tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1, mask=offs < n)" in run.stdout
        assert run.stdout.endswith(f"hits {hits}\n")
