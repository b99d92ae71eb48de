"""tilec kernels in every rank of a torch.distributed (NCCL) job: two ranks,
one GPU each, one shared disk cache.

Each rank compiles (or loads from the shared cache) and launches the tutorial
kernels -- softmax, matmul (fp16), layer-norm forward and backward --
checks each against torch on its own inputs, times it (median of
``tilec.testing.do_bench``), then all-reduces the layer-norm weight gradient
its tilec backward made, checks the sum against the ranks' torch gradients
all-reduced the same way, and takes a step between tilec kernels: the
weight updated by tilec's vector add, then tilec's layer-norm forward with
it.  A check that fails ends the job with an error.  Rank 0 prints a table a
rank a row and writes ``benchmarks/results/distributed.json`` (or ``--out``);
the disk cache the ranks share must have no corrupt entry.

    PYTHONPATH=. python benchmarks/distributed.py [--ranks 2] [--size 4096] [--out PATH]

NVLink multicast stays off in every process (``NCCL_NVLS_ENABLE=0``,
``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``, ``NVSHMEM_DISABLE_NVLS=1``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
LR = 0.01  # the step the weight takes against its all-reduced gradient


def checked(name: str, got, want, tol: float) -> float:
    """The worst error of ``got`` against ``want`` relative to ``want``'s largest magnitude; raises past ``tol``."""
    error = ((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-30)).item()
    if not error <= tol:
        raise AssertionError(f"{name}: relative error {error:.3g} over {tol}")
    return error


def rank_main(rank: int, world: int, size: int, cache: str, port: int, queue) -> None:
    """One rank: every kernel checked and timed on ``size`` x ``size`` inputs; its row goes to ``queue``."""
    M = N = K = size  # the matmul's shape; softmax and layer norm run M x N
    os.environ.update(NO_MULTICAST, TILEC_CACHE_DIR=cache, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    import torch
    import torch.distributed as dist

    from benchmarks import kernels
    from tilec.launch import cache as disk_cache
    from tilec.testing import do_bench

    dist.init_process_group("nccl", rank=rank, world_size=world)
    torch.cuda.set_device(rank)
    torch.manual_seed(rank)
    row = {"rank": rank, "device": torch.cuda.get_device_name(rank)}
    x = torch.randn(M, N, device="cuda")
    out = torch.empty_like(x)
    softmax = kernels.kernel_for("softmax", "tilec")
    kernels.launch_softmax(softmax, x, out)
    row["softmax error"] = checked("softmax", out, torch.softmax(x, -1), 1e-5)
    row["softmax us"] = 1e3 * do_bench(lambda: kernels.launch_softmax(softmax, x, out))

    mm = kernels.load_tutorial("matmul")
    a, b = (torch.randn(*shape, device="cuda", dtype=torch.float16) for shape in ((M, K), (K, N)))
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    config = dict(block_m=256, block_n=128, block_k=64, group_size_m=8, num_warps=8, num_stages=3)
    matmul = kernels.kernel_for("matmul", "tilec")
    mm.launch_matmul(matmul, a, b, c, "", **config)
    row["matmul error"] = checked("matmul", c, a.float() @ b.float(), 2e-3)
    row["matmul TFLOP/s"] = 2 * M * N * K / do_bench(lambda: mm.launch_matmul(matmul, a, b, c, "", **config)) / 1e9

    ln = kernels.load_tutorial("layer_norm")
    xh = torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    bias = torch.randn(N, device="cuda", dtype=torch.float16)
    dy = 0.1 * torch.randn_like(xh)
    y, mean, rstd = ln.layer_norm_forward(xh, w, bias, 1e-5)
    row["layer norm forward error"] = checked(
        "layer norm forward", y, torch.nn.functional.layer_norm(xh.float(), (N,), w.float(), bias.float(), 1e-5), 1e-2)
    row["layer norm forward us"] = 1e3 * do_bench(lambda: ln.layer_norm_forward(xh, w, bias, 1e-5))
    dx, dw, db = ln.layer_norm_backward(dy, xh, w, mean, rstd)
    want = ln.torch_layer_norm_grads(dy, xh, w, bias, 1e-5)
    row["layer norm backward error"] = max(checked(f"layer norm {k}", got, want[k], 2e-2)
                                           for k, got in (("dx", dx), ("dw", dw), ("db", db)))
    row["layer norm backward us"] = 1e3 * do_bench(lambda: ln.layer_norm_backward(dy, xh, w, mean, rstd))

    # the gradient all-reduce between tilec kernels: dw summed over the ranks, a step, a forward with it
    dw_sum, want_sum = dw.float(), want["dw"].float()
    dist.all_reduce(dw_sum)
    dist.all_reduce(want_sum)
    row["all-reduced dw error"] = checked("all-reduced dw", dw_sum, want_sum, 2e-2)
    stepped = torch.empty_like(dw_sum)
    kernels.launch_vector_add(kernels.kernel_for("vector_add", "tilec"), w.float(), -LR * dw_sum, stepped)
    y2, _, _ = ln.layer_norm_forward(xh, stepped.half(), bias, 1e-5)
    w2 = (w.float() - LR * want_sum).half()
    row["after the step error"] = checked(
        "layer norm forward after the step", y2,
        torch.nn.functional.layer_norm(xh.float(), (N,), w2.float(), bias.float(), 1e-5), 1e-2)
    row["cache corrupt"] = disk_cache.STATS["corrupt"]
    if row["cache corrupt"]:
        raise AssertionError(f"rank {rank}: {row['cache corrupt']} corrupt disk cache entries")
    torch.cuda.synchronize()
    queue.put(row)
    dist.destroy_process_group()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--port", type=int, default=29541)
    parser.add_argument("--size", type=int, default=4096, help="M = N = K of every kernel (default 4096)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "distributed.json")
    opts = parser.parse_args(argv)
    os.environ.update(NO_MULTICAST)
    import torch
    import torch.multiprocessing as mp

    from benchmarks import common

    if torch.cuda.device_count() < opts.ranks:
        sys.exit(f"needs {opts.ranks} GPUs, found {torch.cuda.device_count()}")
    cache = tempfile.mkdtemp(prefix="tilec-distributed-cache-")
    queue = mp.get_context("spawn").SimpleQueue()
    mp.spawn(rank_main, args=(opts.ranks, opts.size, cache, opts.port, queue), nprocs=opts.ranks)
    rows = sorted((queue.get() for _ in range(opts.ranks)), key=lambda r: r["rank"])
    entries = sum(len(files) for _, _, files in os.walk(cache))
    headers = list(rows[0])
    print(common.format_table(headers, [[f"{r[h]:.3g}" if isinstance(r[h], float) else r[h] for h in headers]
                                        for r in rows]))
    print(f"shared disk cache: {entries} files")
    result = {"benchmark": "distributed", "ranks": rows, "cache_files": entries, **common.device_info(),
              "tilec_commit": common.git_commit()}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {opts.out}")


if __name__ == "__main__":
    main()
