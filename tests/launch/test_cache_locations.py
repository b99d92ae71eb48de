"""A kernel read back from the disk cache, or handed back by an autotuner's
compile worker, keeps its source locations: a runtime error on the host names
the kernel's file and line and quotes it, as on the first compile.  (The suite
runs under ``TILEC_CHECK=1``, which bypasses the cache: these tests turn it off.)"""
from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.launch import cache

from launch.test_cache import disk_cache  # noqa: F401 (a fixture)

at = importlib.import_module("tilec.autotune")


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
