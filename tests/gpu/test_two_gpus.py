"""Kernels on the second GPU of a host and in every rank of a two-rank NCCL
job (issue 21).  Skipped without two GPUs.

* tensors on ``cuda:1`` while ``cuda:0`` is current run on ``cuda:1`` (its
  primary context), on its current stream or the one given, and leave the
  current device alone;
* a tilec launch captured in a CUDA graph on ``cuda:1``'s side stream replays
  with new inputs;
* two ranks (one process a GPU, NCCL) compile and launch tilec kernels with
  one shared disk cache, check them against torch, and all-reduce a result.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
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


RANKS = textwrap.dedent("""
    import os, sys
    import torch, torch.distributed as dist
    sys.path.insert(0, {tests!r})
    from kernels.softmax import softmax_kernel

    rank = int(os.environ["RANK"])
    dist.init_process_group("nccl", rank=rank, world_size=2)
    torch.cuda.set_device(rank)
    x = torch.randn(512, 1000, device="cuda") * (rank + 1)
    out = torch.empty_like(x)
    softmax_kernel[(512,)](out, x, 1000, 1000, 1000, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, torch.softmax(x, -1))
    dist.all_reduce(out)
    torch.testing.assert_close(out.sum(-1), torch.full((512,), 2.0, device="cuda"))
    print("rank", rank, "ok", flush=True)
    dist.destroy_process_group()
""")


def test_two_nccl_ranks_share_one_disk_cache(two, tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS.format(tests=str(ROOT / "tests")))
    cache = tmp_path / "cache"
    cache.mkdir()
    # the suite's TILEC_CHECK=1 bypasses the disk cache (launch/cache.py): not in the ranks
    env = {**{k: v for k, v in os.environ.items() if k != "TILEC_CHECK"}, **NO_MULTICAST, "TILEC_CACHE": "1",
           "TILEC_CACHE_DIR": str(cache), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29531", "WORLD_SIZE": "2",
           "PYTHONPATH": str(ROOT)}
    ranks = [subprocess.Popen([sys.executable, str(script)], env={**env, "RANK": str(r)}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outputs = [p.communicate(timeout=300)[0] for p in ranks]
    for r, (p, text) in enumerate(zip(ranks, outputs)):
        assert p.returncode == 0 and f"rank {r} ok" in text, text[-2000:]
    assert any(path.is_file() for path in cache.rglob("*")), "no disk cache entry was written"
