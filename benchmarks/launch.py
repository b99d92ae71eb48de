"""Launch overhead: microseconds a launch of an empty kernel with 4 arguments
(2 tensors, 2 ints) costs tilec, Triton, and a torch op.

The same empty kernel (``benchmarks/kernels.py``) runs under both compilers,
one program of 4 warps.  torch's stand-in is the cheapest op that launches a
kernel: an in-place add of two one-element tensors (torch has no empty op
that launches anything).  After a warm-up (compilation, module load), each
provider is launched back to back ``--launches`` times, timed by the host's
wall clock, over ``--trials`` trials (the median is reported):

* ``issue``: no synchronization in the timed loop: the host's cost of a launch
  (it can only be hidden by the GPU while the queue has room);
* ``sync``: the same loop with one ``torch.cuda.synchronize()`` at the end:
  what back-to-back launches cost until the GPU has run them all.

    PYTHONPATH=. python benchmarks/launch_overhead.py [--launches 10000] [--trials 5] [--out PATH]

Writes ``benchmarks/results/launch_overhead.json`` (or ``--out``).
"""
from __future__ import annotations

import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common, kernels  # noqa: E402

WARMUP_LAUNCHES = 200
MODES = ("issue", "sync")


def options():
    parser = common.base_parser("launch_overhead", __doc__)
    parser.add_argument("--launches", type=int, default=10000, help="back-to-back launches a trial")
    parser.add_argument("--trials", type=int, default=5, help="trials a mode (the median is reported)")
    return parser.parse_args()


def launchers(x, y) -> dict:
    """Provider -> a function that launches once."""
    runs = {language: functools.partial(kernels.launch_empty, kernels.kernel_for("empty", language), x, y)
            for language in common.languages()}
    a, b = x[:1], y[:1]
    runs["torch"] = lambda: a.add_(b)
    return runs


def per_launch_us(launch, launches: int, sync_at_end: bool) -> float:
    """Wall-clock microseconds a launch over ``launches`` back-to-back launches."""
    import torch

    torch.cuda.synchronize()  # start from an empty queue
    start = time.perf_counter()
    for _ in range(launches):
        launch()
    if sync_at_end:
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / launches * 1e6


def measure(launch, launches: int, trials: int) -> dict:
    """Warm up (and surface any launch error), then the median µs of each mode."""
    import torch

    for _ in range(WARMUP_LAUNCHES):
        launch()
    torch.cuda.synchronize()
    return {mode: statistics.median(per_launch_us(launch, launches, mode == "sync") for _ in range(trials))
            for mode in MODES}


def table(results: dict, failed: dict) -> str:
    """µs per launch by mode, and tilec's time over each other provider's (< 1: tilec is cheaper)."""
    headers = ["provider", "issue us", "sync us", "tilec/this issue", "tilec/this sync"]
    rows = []
    for provider in [*results, *failed]:
        if provider in failed:
            rows.append([provider, "FAIL", "FAIL", "-", "-"])
            continue
        ratios = [common.ratio_text(results["tilec"][mode] / results[provider][mode] if "tilec" in results else None)
                  for mode in MODES]
        rows.append([provider, *(f"{results[provider][mode]:.2f}" for mode in MODES), *ratios])
    return common.format_table(headers, rows)


def main() -> None:
    opts = options()
    torch = common.require_cuda()
    info = common.device_info()
    x, y = torch.randn(1024, device=common.DEVICE), torch.randn(1024, device=common.DEVICE)
    results, failed = {}, {}
    for provider, launch in launchers(x, y).items():
        measured = common.attempt(failed, provider, lambda: measure(launch, opts.launches, opts.trials))
        if measured is not None:
            results[provider] = measured
    common.write_json(opts.out, {
        "benchmark": "launch overhead, empty kernel with 2 tensor and 2 int arguments", **info,
        "launches": opts.launches, "trials": opts.trials, "warmup_launches": WARMUP_LAUNCHES,
        "us_per_launch": results, "failed": failed})
    print(f"launch overhead on {info['gpu']}: median of {opts.trials} trials of {opts.launches} launches, us a launch\n")
    print(table(results, failed))
    print("tilec/this: tilec's time over this provider's (< 1: tilec launches faster)")
    print(f"\nwrote {opts.out}")
    for provider, why in failed.items():
        print(f"FAILED {provider}: {why}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
