"""GPU kernels through the disk cache's data-only entries (``pytest -m gpu``;
skipped without one): a kernel read back from disk, and one handed back by an
autotuner's compile worker, load their PTX/cubin sections and compute the right
answer."""
from __future__ import annotations

import importlib

import pytest

import tilec
from tilec.launch import cache

from launch.kernels import add_kernel, fresh
from launch.test_cache import disk_cache  # noqa: F401 (a fixture)

pytestmark = pytest.mark.gpu
at = importlib.import_module("tilec.launch.autotune")


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    torch.zeros(1, device="cuda")  # torch sets up the primary context we share
    return torch


@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_a_gpu_kernel_read_from_disk_runs(disk_cache, torch, n):
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    fresh(add_kernel)[(tilec.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    out.zero_()
    fresh(add_kernel)[(tilec.cdiv(n, 256),)](x, y, out, n, BLOCK=256)  # a fresh kernel: read from disk
    assert cache.STATS["stored"] == 1 and cache.STATS["hit"] == 1 and cache.STATS["corrupt"] == 0
    torch.testing.assert_close(out, x + y)


def test_an_autotuned_gpu_kernel_from_the_workers_runs(disk_cache, torch, monkeypatch):
    monkeypatch.setattr(at, "available_cpus", lambda: 2)  # compile the configs in worker processes
    kernel = tilec.autotune(configs=[tilec.Config({"BLOCK": 128}), tilec.Config({"BLOCK": 256}, num_warps=8)],
                            key=["n"], warmup=1, rep=1)(fresh(add_kernel))
    n = 3000
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    kernel[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    torch.testing.assert_close(out, x + y)
    assert len(kernel.configs_timings) == 2 and cache.STATS["corrupt"] == 0
