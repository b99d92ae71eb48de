"""Kernels on the second GPU of a host and in every rank of a two-rank NCCL
job (issue 21).  Skipped without two GPUs.

* tensors on ``cuda:1`` while ``cuda:0`` is current run on ``cuda:1`` (its
  primary context), on its current stream or the one given, and leave the
  current device alone;
* a tilec launch captured in a CUDA graph on ``cuda:1``'s side stream replays
  with new inputs;
* two ranks (one process a GPU, NCCL) compile and launch tilec kernels with
  one shared disk cache, check them against torch, all-reduce a gradient
  and step with it (``benchmarks/distributed.py``).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.softmax import softmax_kernel

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
# NVLink multicast stays off in every process of a multi-GPU run.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


@pytest.fixture
def two(torch):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    return torch


def softmax_rows(torch, x):
    out = torch.full_like(x, float("nan"))
    n = x.shape[1]
    softmax_kernel[(x.shape[0],)](out, x, x.stride(0), out.stride(0), n, BLOCK_SIZE=1 << (n - 1).bit_length())
    return out


def test_the_second_gpu_runs_its_tensors_on_a_side_stream(two):
    torch = two
    x = torch.randn(300, 1000, device="cuda:1")
    stream = torch.cuda.Stream(device="cuda:1")
    with torch.cuda.stream(stream):
        out = softmax_rows(torch, x)
    stream.synchronize()
    torch.testing.assert_close(out, torch.softmax(x, -1))
    assert torch.cuda.current_device() == 0


def test_a_launch_captured_in_a_graph_on_the_second_gpu_replays(two):
    torch = two
    x = torch.randn(64, 1000, device="cuda:1")
    softmax_rows(torch, x)  # compiled and loaded before the capture
    torch.cuda.synchronize(1)
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream(device="cuda:1")
    with torch.cuda.device(1), torch.cuda.graph(graph, stream=stream):
        out = softmax_rows(torch, x)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize(1)
    torch.testing.assert_close(out, torch.softmax(x, -1))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_nccl_ranks_share_one_disk_cache(two, tmp_path):
    """benchmarks/distributed.py on small inputs: softmax, matmul, layer norm
    forward and backward checked against torch in each rank, the weight
    gradient all-reduced and stepped by tilec kernels, one disk cache both
    ranks compile into at once, no corrupt entry."""
    out = tmp_path / "distributed.json"
    # the suite's TILEC_CHECK=1 bypasses the disk cache (launch/cache.py): not in the ranks
    env = {**{k: v for k, v in os.environ.items() if k != "TILEC_CHECK"}, **NO_MULTICAST, "TILEC_CACHE": "1",
           "PYTHONPATH": str(ROOT)}
    job = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "distributed.py"), "--size", "512",
                          "--port", str(free_port()), "--out", str(out)],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    assert job.returncode == 0, job.stdout[-3000:]
    result = json.loads(out.read_text())
    assert [r["rank"] for r in result["ranks"]] == [0, 1]
    assert all(r["cache corrupt"] == 0 and r["after the step error"] <= 1e-2 for r in result["ranks"])
    assert result["cache_files"] > 0, "no disk cache entry was written"
