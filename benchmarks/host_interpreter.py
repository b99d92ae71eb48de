"""Vector add of 2**24 float32 through the host interpreter, in GB/s.

Bandwidth counts what the kernel must move: 3 arrays x 4 bytes x n, over the
best of three launches (the first launch, which compiles, is not timed).
Where ``triton`` is importable, the same kernel runs under Triton's own
interpreter (``TRITON_INTERPRET=1``, set in a fresh subprocess before triton
is imported) and the ratio tilec / Triton is reported.

    python3 benchmarks/host_interpreter.py [--n 16777216] [--block 1024]

Writes ``benchmarks/results/host_interpreter.json`` (or ``--out PATH``).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402

RESULT = ROOT / "benchmarks" / "results" / "host_interpreter.json"
REPEATS = 3


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def best_seconds(launch, repeats: int = REPEATS) -> float:
    """The fastest of ``repeats`` timed calls of ``launch()``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        launch()
        times.append(time.perf_counter() - start)
    return min(times)


def gbps(n: int, seconds: float) -> float:
    return 3 * 4 * n / seconds / 1e9


def run_tilec(n: int, block: int) -> dict:
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros_like(x)
    grid = ((n + block - 1) // block,)

    def launch():
        add_kernel[grid](x, y, out, n, BLOCK=block)

    launch()  # compile and fault the pages in
    if not np.array_equal(out, x + y):
        raise SystemExit("tilec interpreter gave a wrong vector add")
    seconds = best_seconds(launch)
    return {"seconds": seconds, "gbps": gbps(n, seconds)}


# Runs in a subprocess so that TRITON_INTERPRET is set before triton is imported.
TRITON_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    n, block, repeats = (int(a) for a in sys.argv[1:4])
    x, y = torch.rand(n), torch.rand(n)
    out = torch.zeros(n)
    grid = ((n + block - 1) // block,)
    add_kernel[grid](x, y, out, n, BLOCK=block)
    assert torch.equal(out, x + y)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        add_kernel[grid](x, y, out, n, BLOCK=block)
        times.append(time.perf_counter() - t)
    print(json.dumps({"seconds": min(times)}))
""")


def run_triton_interpreter(n: int, block: int) -> dict:
    """Triton's interpreter on the same kernel, or why it could not run."""
    missing = [m for m in ("triton", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"{' and '.join(missing)} not installed"}
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, "-c", TRITON_SCRIPT, str(n), str(block), str(REPEATS)],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"skipped": f"triton interpreter failed: {proc.stderr.strip().splitlines()[-1:]}"}
    seconds = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
    return {"seconds": seconds, "gbps": gbps(n, seconds)}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--block", type=int, default=1024)
    parser.add_argument("--out", type=Path, default=RESULT, help="where to write the JSON result")
    opts = parser.parse_args()
    ours = run_tilec(opts.n, opts.block)
    triton = run_triton_interpreter(opts.n, opts.block)
    result = {
        "benchmark": "vector add, float32, host interpreter",
        "n": opts.n, "block": opts.block, "repeats": REPEATS,
        "tilec": ours, "triton_interpret": triton,
        "ratio_tilec_over_triton": ours["gbps"] / triton["gbps"] if "gbps" in triton else None,
        "cpu": cpu_name(), "cpu_count": os.cpu_count(),
        "python": platform.python_version(), "numpy": np.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"tilec interpreter: {ours['gbps']:.2f} GB/s ({ours['seconds'] * 1e3:.1f} ms for n={opts.n})")
    if "gbps" in triton:
        print(f"triton interpreter: {triton['gbps']:.3f} GB/s; tilec / triton = {result['ratio_tilec_over_triton']:.1f}x")
    else:
        print(f"triton interpreter: skipped ({triton['skipped']})")


if __name__ == "__main__":
    main()
