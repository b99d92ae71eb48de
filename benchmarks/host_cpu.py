"""Kernels compiled for the host CPU against numpy (and torch's CPU ops where
torch is installed), side by side in one process on this machine.

Each row checks tilec's result against the peer's before timing, then times
both in turn, tilec then the peer, ``REPEATS`` times after a warm-up (each
sees the caches the other leaves: two cores shared with other work make any
other order unfair), and prints the ratio of the medians as a speed ratio
(above 1: tilec is faster).  The load average before and after goes in the
JSON: on a busy machine the ratios, not the seconds, are what to read.

* vector add of 2^24 float32: ``np.add`` (the issue's bar: 0.9x);
* softmax and layer norm forward, 4096 rows of 1024 to 8192 float32:
  ``torch.softmax(..., out=)`` into a preallocated output as tilec's (a new
  output of 32 MB or more is a fresh mmap whose page faults cost torch more
  than the softmax: the 2x tilec "won" at 2048+ columns before) and
  ``torch.nn.functional.layer_norm`` (which has no ``out=``) on the CPU
  (bar: 1.0x), numpy's when torch is missing (said in the JSON);
* matmul, float32, 1024^3: numpy's BLAS (bar: 0.5x), at 64x64x32 blocks and
  at 128x128x64 (a CPU's block: the dot's operands stay in L2);
* every kernel against the reference interpreter (``@jit(interpret=True)``
  semantics via ``TILEC_INTERPRET``): the interpreter is timed once per size.

``python benchmarks/host_cpu.py [--quick] [--out FILE]`` writes
``benchmarks/results/host_cpu.json`` with the CPU, the thread count, the
versions, the date and the tree (keeping the ``"tutorials"`` table that
``benchmarks/host_tutorials.py`` adds: each tutorial against the
interpreter, and cold compiles for the host against sm_90).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from benchmarks import kernels  # noqa: E402
from tilec.backends.host.target import host_target  # noqa: E402
from tilec.backends.host.threads import thread_count  # noqa: E402

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
    return paired_seconds(run, None, repeats)[0]


def paired_seconds(ours, peer, repeats: int = REPEATS) -> tuple[float, float]:
    """Medians of ``ours()`` and ``peer()`` timed in turn (module docstring); peer may be None."""
    runs = [ours] if peer is None else [ours, peer]
    times: list[list[float]] = [[] for _ in runs]
    for run in runs:
        run()
    for _ in range(repeats):
        for run, spent in zip(runs, times):
            start = time.perf_counter()
            run()
            spent.append(time.perf_counter() - start)
    medians = [float(np.median(t)) for t in times]
    return medians[0], medians[-1]


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
    ours, peer = paired_seconds(lambda: kernels.launch_vector_add(add, x, y, out), lambda: np.add(x, y, out=out))
    slow = interpreted(lambda: median_seconds(lambda: kernels.launch_vector_add(add, x, y, out), 3))
    gb = 3 * 4 * n / 1e9
    return {"case": f"vector add {n}", "tilec_gbps": gb / ours, "peer": "numpy np.add", "peer_gbps": gb / peer,
            "ratio": peer / ours, "vs_interpreter": slow / ours}


def softmax(rows: int, cols: int, torch) -> dict:
    x = np.random.default_rng(2).standard_normal((rows, cols), dtype=np.float32)
    out = np.empty_like(x)
    kernel = kernels.tilec_kernel("softmax")
    kernels.launch_softmax(kernel, x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    launch = lambda: kernels.launch_softmax(kernel, x, out)  # noqa: E731
    if torch is not None:
        t, o = torch.from_numpy(x), torch.empty(x.shape)
        (ours, peer), name = paired_seconds(launch, lambda: torch.softmax(t, 1, out=o)), "torch.softmax out= (CPU)"
    else:
        (ours, peer), name = paired_seconds(launch, lambda: np.exp(x - x.max(axis=1, keepdims=True))), \
            "numpy exp (no torch)"
    return {"case": f"softmax {rows}x{cols}", "tilec_gbps": 8 * x.size / ours / 1e9, "peer": name,
            "peer_gbps": 8 * x.size / peer / 1e9, "ratio": peer / ours}


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
        t, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
        ours, peer = paired_seconds(run, lambda: torch.nn.functional.layer_norm(t, (cols,), tw, tb, 1e-5))
        name = "torch layer_norm (CPU, a new output each call)"
    else:
        ours, peer = paired_seconds(run, lambda: (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True))
        name = "numpy (no torch)"
    return {"case": f"layer norm {rows}x{cols}", "tilec_gbps": 8 * x.size / ours / 1e9, "peer": name,
            "peer_gbps": 8 * x.size / peer / 1e9, "ratio": peer / ours}


def matmul(n: int, block: tuple[int, int, int]) -> dict:
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), np.float32)
    bm, bn, bk = block
    grid = (tilec.cdiv(n, bm), tilec.cdiv(n, bn))

    def run():
        matmul_f32[grid](a, b, c, n, n, n, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    run()
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3 * np.sqrt(n))
    ours, peer = paired_seconds(run, lambda: a @ b, 7)
    flops = 2 * n ** 3
    return {"case": f"matmul f32 {n}^3 block {bm}x{bn}x{bk}", "tilec_gflops": flops / ours / 1e9,
            "peer": "numpy BLAS", "peer_gflops": flops / peer / 1e9, "ratio": peer / ours}


def tree() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one size of each")
    parser.add_argument("--out", type=Path, default=RESULT)
    opts = parser.parse_args()
    torch = torch_or_none()
    load_before = os.getloadavg()
    widths = [1024] if opts.quick else [1024, 2048, 4096, 8192]
    rows = [vector_add(1 << 24)]
    rows += [softmax(4096, n, torch) for n in widths]
    rows += [layer_norm(4096, n, torch) for n in widths]
    rows += [matmul(1024, (64, 64, 32)), matmul(1024, (128, 128, 64))]
    facts = host_target()
    result = {
        "benchmark": "kernels compiled for the host CPU against numpy / torch CPU",
        "cpu_level": facts.cpu, "threads": thread_count(), "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
        "torch": getattr(torch, "__version__", None), "tree": tree(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "load_average_before_after": [load_before[0], os.getloadavg()[0]], "rows": rows,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    if opts.out.exists():  # host_tutorials.py's table, kept
        result.update({k: v for k, v in json.loads(opts.out.read_text()).items() if k == "tutorials"})
    opts.out.write_text(json.dumps(result, indent=2) + "\n")
    for r in rows:
        speed = {k: v for k, v in r.items() if k.endswith(("gbps", "gflops"))}
        print(f"{r['case']:<36} " + "  ".join(f"{k} {v:8.1f}" for k, v in speed.items())
              + f"  tilec/peer speed {r['ratio']:.2f}x ({r['peer']})"
              + (f", {r['vs_interpreter']:.0f}x the interpreter" if "vs_interpreter" in r else ""))


if __name__ == "__main__":
    main()
