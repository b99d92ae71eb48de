"""Kernels compiled for the host CPU against numpy (and torch's CPU ops where
torch is installed), side by side in one process on this machine.

Each row checks tilec's result against the peer's before timing, then times
both in turn, tilec then the peer, ``REPEATS`` times after a warm-up (each
sees the caches the other leaves: two cores shared with other work make any
other order unfair), and gives the ratio of the medians as a speed ratio
(above 1: tilec is faster), of wall time (``ratio``) and of the process's
CPU time (``cpu_ratio``: what a busy machine disturbs least, with one
thread).  Every row runs at each thread count of ``--threads`` (default 1
and all the CPUs), the same for both: ``TILEC_NUM_THREADS``,
``torch.set_num_threads`` and, where threadpoolctl is installed, numpy's
BLAS (``threadpool_limits``; without it BLAS takes every CPU at each count,
and the run's ``blas_threads_limited`` says so).  Both write into outputs
made once and reused.  The peers' worker threads go to sleep when their
call returns (``PEER_THREADS_IDLE``, unless the environment sets them;
the JSON says which): by default torch's OpenMP threads and OpenBLAS's spin
on a core for a while after each call, which in the paired timing is the
core tilec's second thread runs on (softmax 4096x4096 on two threads took
8-10 ms after torch's call, 5.8 ms with them asleep; torch's own time did
not move).
The load average before and after goes in the JSON: on a busy machine the
ratios, not the seconds, are what to read.

* vector add of 2^24 float32: ``np.add(..., out=)`` (the issue's bar: 0.9x);
* softmax and layer norm forward, 4096 rows of 1024 to 8192 float32:
  ``torch.softmax(..., out=)`` and ``torch.ops.aten.native_layer_norm.out``
  (a new output of 32 MB or more is a fresh mmap whose page faults cost
  torch more than the work: the 2x tilec "won" at 2048+ columns before),
  (bar: 1.0x), numpy's when torch is missing (said in the JSON);
* matmul, float32, 1024^3: numpy's BLAS (bar: 0.5x), at 64x64x32 blocks and
  at 128x128x64 (a CPU's block: the dot's operands stay in L2);
* vector add against the reference interpreter (``TILEC_INTERPRET``), timed
  once per size.

``python benchmarks/host_cpu.py [--quick] [--threads 1,2] [--out FILE]``
writes ``benchmarks/results/host_cpu.json`` with the CPU, the versions, the
date and the tree (keeping the ``"tutorials"`` table that
``benchmarks/host_tutorials.py`` adds: each tutorial against the
interpreter, and cold compiles for the host against the GPU's).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

#: The peers' worker threads sleep as soon as their call returns (unless the
#: caller says otherwise): see the module docstring.
PEER_THREADS_IDLE = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}
for _name, _value in PEER_THREADS_IDLE.items():
    os.environ.setdefault(_name, _value)  # read when numpy's BLAS and torch's OpenMP start

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from benchmarks import kernels  # noqa: E402
from benchmarks.common import git_commit  # noqa: E402
from tilec.backends.host.target import host_target  # noqa: E402

REPEATS = 15
RESULT = ROOT / "benchmarks" / "results" / "host_cpu.json"


@tilec.jit
def matmul_f32(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr):
    """c = a @ b for contiguous float32 matrices, one BLOCK_M x BLOCK_N tile of c a program."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")  # numpy multiplies in full float32
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def median_seconds(run, repeats: int = REPEATS) -> float:
    return paired_seconds(run, None, repeats)["ours"]


def paired_seconds(ours, peer, repeats: int = REPEATS) -> dict:
    """Medians of the wall and CPU seconds of ``ours()`` and ``peer()`` timed in
    turn (module docstring): ``ours``, ``peer``, ``ours_cpu``, ``peer_cpu``;
    peer may be None."""
    runs = [ours] if peer is None else [ours, peer]
    wall: list[list[float]] = [[] for _ in runs]
    cpu: list[list[float]] = [[] for _ in runs]
    for run in runs:
        run()
    for _ in range(repeats):
        for run, spent, used in zip(runs, wall, cpu):
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            spent.append(time.perf_counter() - start)
            used.append(time.process_time() - start_cpu)
    medians = {name: float(np.median(t)) for name, t in (("ours", wall[0]), ("peer", wall[-1]),
                                                         ("ours_cpu", cpu[0]), ("peer_cpu", cpu[-1]))}
    return medians


def ratios(t: dict) -> dict:
    """The peer's seconds over ours, of wall and of CPU time (above 1: tilec is faster)."""
    return {"ratio": t["peer"] / t["ours"], "cpu_ratio": t["peer_cpu"] / t["ours_cpu"],
            "tilec_ms": t["ours"] * 1e3, "peer_ms": t["peer"] * 1e3,
            "tilec_cpu_ms": t["ours_cpu"] * 1e3, "peer_cpu_ms": t["peer_cpu"] * 1e3}


def interpreted(fn):
    """``fn()`` with host launches sent to the reference interpreter."""
    os.environ["TILEC_INTERPRET"] = "1"
    try:
        return fn()
    finally:
        del os.environ["TILEC_INTERPRET"]


def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


def vector_add(n: int) -> dict:
    x, y = (np.random.default_rng(k).standard_normal(n, dtype=np.float32) for k in (0, 1))
    out = np.empty_like(x)
    add = kernels.tilec_kernel("vector_add")
    kernels.launch_vector_add(add, x, y, out)
    assert np.array_equal(out, x + y), "vector add differs from numpy"
    t = paired_seconds(lambda: kernels.launch_vector_add(add, x, y, out), lambda: np.add(x, y, out=out))
    slow = interpreted(lambda: median_seconds(lambda: kernels.launch_vector_add(add, x, y, out), 3))
    gb = 3 * 4 * n / 1e9
    return {"case": f"vector add {n}", "tilec_gbps": gb / t["ours"], "peer": "numpy np.add out=",
            "peer_gbps": gb / t["peer"], **ratios(t), "vs_interpreter": slow / t["ours"]}


def softmax(rows: int, cols: int, torch) -> dict:
    x = np.random.default_rng(2).standard_normal((rows, cols), dtype=np.float32)
    out = np.empty_like(x)
    kernel = kernels.tilec_kernel("softmax")
    kernels.launch_softmax(kernel, x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    launch = lambda: kernels.launch_softmax(kernel, x, out)  # noqa: E731
    if torch is not None:
        tx, o = torch.from_numpy(x), torch.empty(x.shape)
        t, name = paired_seconds(launch, lambda: torch.softmax(tx, 1, out=o)), "torch.softmax out= (CPU)"
    else:
        t, name = paired_seconds(launch, lambda: np.exp(x - x.max(axis=1, keepdims=True))), "numpy exp (no torch)"
    return {"case": f"softmax {rows}x{cols}", "tilec_gbps": 8 * x.size / t["ours"] / 1e9, "peer": name,
            "peer_gbps": 8 * x.size / t["peer"] / 1e9, **ratios(t)}


def layer_norm(rows: int, cols: int, torch) -> dict:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w, b = rng.standard_normal(cols, dtype=np.float32), rng.standard_normal(cols, dtype=np.float32)
    y, mean, rstd = np.empty_like(x), np.empty(rows, np.float32), np.empty(rows, np.float32)
    kernel = kernels.tilec_kernel("layer_norm")

    def run():
        kernels.launch_layer_norm(kernel, x, w, b, y, mean, rstd, 1e-5, 4)
    run()
    m, v = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    np.testing.assert_allclose(y, (x - m) / np.sqrt(v + 1e-5) * w + b, rtol=1e-4, atol=1e-4)
    if torch is not None:
        tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
        ty, tm, tr = torch.empty(x.shape), torch.empty(rows, 1), torch.empty(rows, 1)
        t = paired_seconds(run, lambda: torch.ops.aten.native_layer_norm.out(tx, [cols], tw, tb, 1e-5, out0=ty,
                                                                               out1=tm, out2=tr))
        name = "torch native_layer_norm.out (CPU)"
    else:
        t = paired_seconds(run, lambda: (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True))
        name = "numpy (no torch)"
    return {"case": f"layer norm {rows}x{cols}", "tilec_gbps": 8 * x.size / t["ours"] / 1e9, "peer": name,
            "peer_gbps": 8 * x.size / t["peer"] / 1e9, **ratios(t)}


def matmul(n: int, block: tuple[int, int, int]) -> dict:
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    c, c_peer = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
    bm, bn, bk = block
    grid = (tilec.cdiv(n, bm), tilec.cdiv(n, bn))

    def run():
        matmul_f32[grid](a, b, c, n, n, n, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    run()
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    t = paired_seconds(run, lambda: np.matmul(a, b, out=c_peer), 7)
    flops = 2 * n ** 3
    return {"case": f"matmul f32 {n}^3 block {bm}x{bn}x{bk}", "tilec_gflops": flops / t["ours"] / 1e9,
            "peer": "numpy BLAS", "peer_gflops": flops / t["peer"] / 1e9, **ratios(t)}


def measure(threads: int, quick: bool, torch) -> dict:
    """Every row with ``threads`` threads for tilec, torch and numpy's BLAS alike."""
    os.environ["TILEC_NUM_THREADS"] = str(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    widths = [1024] if quick else [1024, 2048, 4096, 8192]
    with blas_threads(threads) as limited:
        rows = [vector_add(1 << 24)]
        rows += [softmax(4096, n, torch) for n in widths]
        rows += [layer_norm(4096, n, torch) for n in widths]
        rows += [matmul(1024, (64, 64, 32)), matmul(1024, (128, 128, 64))]
    return {"threads": threads, "blas_threads_limited": limited, "rows": rows}


@contextlib.contextmanager
def blas_threads(threads: int):
    """numpy's BLAS limited to ``threads`` in the block (threadpoolctl's
    ``threadpool_limits``); yields whether it could be."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield False
        return
    with threadpool_limits(threads, user_api="blas"):
        yield True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one size of each")
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}", help="thread counts, comma-separated")
    parser.add_argument("--out", type=Path, default=RESULT)
    opts = parser.parse_args()
    torch = torch_or_none()
    load_before = os.getloadavg()
    counts = sorted({int(t) for t in opts.threads.split(",")})
    runs = [measure(t, opts.quick, torch) for t in counts]
    facts = host_target()
    result = {
        "benchmark": "kernels compiled for the host CPU against numpy / torch CPU",
        "cpu_level": facts.cpu, "cpu": platform.processor() or platform.machine(),
        "cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
        "numpy": np.__version__, "torch": getattr(torch, "__version__", None),
        "llvmlite": llvmlite_version(), "tree": git_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        "peer_threads": {name: os.environ.get(name) for name in PEER_THREADS_IDLE}, "runs": runs,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    if opts.out.exists():  # host_tutorials.py's table, kept
        result.update({k: v for k, v in json.loads(opts.out.read_text()).items() if k == "tutorials"})
    opts.out.write_text(json.dumps(result, indent=2) + "\n")
    for run in runs:
        for r in run["rows"]:
            print(f"{run['threads']} thr {r['case']:<36} tilec/peer wall {r['ratio']:.2f}x, cpu {r['cpu_ratio']:.2f}x "
                  f"({r['peer']})" + (f", {r['vs_interpreter']:.0f}x the interpreter" if "vs_interpreter" in r else ""))


def cpu_model() -> str:
    """The CPU's model name as Linux reports it (empty elsewhere)."""
    try:
        return next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("model name")), "")
    except OSError:
        return ""


def llvmlite_version() -> str:
    import llvmlite

    return llvmlite.__version__


if __name__ == "__main__":
    main()
