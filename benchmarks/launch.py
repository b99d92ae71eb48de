"""Launch cost: microseconds a launch of an empty kernel with 6 arguments (4
tensors, 2 ints) costs tilec, Triton, and a torch op, in one process.

The same empty kernel runs under both compilers, one program of 4 warps; the
ints are neither 1 nor multiples of 16, so neither compiler specializes them
away.  torch's stand-in is the cheapest op that launches a kernel: an in-place
add of two one-element tensors.  After a warm-up (compilation, module load),
each provider is timed three ways, each the median of ``--trials`` trials:

* ``call``: the median host wall clock of single launches (``perf_counter_ns``
  around each of ``--launches``, synchronizing every ``BURST`` so the GPU's
  queue never fills), what one launch costs the caller;
* ``issue``: ``--launches`` back-to-back launches without synchronizing, per
  launch (the GPU's queue may fill and make the host wait on it);
* ``sync``: the same loop with one ``torch.cuda.synchronize()`` at the end:
  what back-to-back launches cost until the GPU has run them all.

tilec's launch is also taken apart (``tilec_parts``): the generated
specializer alone, the loaded kernel's generated launcher alone (values
already picked), a bare ``cuLaunchKernelEx`` through ctypes and a bare
``cuLaunchKernel`` through cuda-python.

    PYTHONPATH=. python benchmarks/launch.py [--launches 2000] [--trials 15] [--out PATH]

Writes ``benchmarks/results/launch.json`` (or ``--out``).
"""
from __future__ import annotations

import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402,F401 (the kernel names `tl`, as kernels.for_triton requires)
from benchmarks import common, kernels  # noqa: E402

WARMUP_LAUNCHES = 500
BURST = 100  # launches between synchronizations in ``call`` mode
MODES = ("call", "issue", "sync")
TARGET_US = 4.0  # issue 7's bound on tilec's launch


@tilec.jit
def empty_kernel_6(a_ptr, b_ptr, c_ptr, d_ptr, n, m):
    """Does nothing with four tensors and two ints: its launch is all there is to time."""
    pass


def options():
    parser = common.base_parser("launch", __doc__)
    parser.add_argument("--launches", type=int, default=2000, help="launches a trial")
    parser.add_argument("--trials", type=int, default=15, help="trials a mode (the median is reported)")
    return parser.parse_args()


def launch_empty(kernel, tensors) -> None:
    kernel[(1,)](*tensors, 1003, 7)


def launchers(tensors) -> dict:
    """Provider -> a function that launches once."""
    runs = {"tilec": functools.partial(launch_empty, empty_kernel_6, tensors)}
    if "triton" in common.languages():
        runs["triton"] = functools.partial(launch_empty, kernels.for_triton(empty_kernel_6), tensors)
    a, b = tensors[0][:1], tensors[1][:1]
    runs["torch"] = lambda: a.add_(b)
    return runs


def per_call_us(launch, launches: int) -> float:
    """The median host wall clock of single calls, in µs, in bursts of
    ``BURST`` launches after a synchronize: the GPU's queue never fills, so
    the host's cost is timed, not how fast the GPU runs empty kernels."""
    import torch

    samples = []
    for _ in range(max(launches // BURST, 1)):
        torch.cuda.synchronize()
        for _ in range(BURST):
            t0 = time.perf_counter_ns()
            launch()
            samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000


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


def measure(launch, launches: int, trials: int, modes=MODES) -> dict:
    """Warm up (and surface any launch error), then the median µs of each mode."""
    import torch

    for _ in range(WARMUP_LAUNCHES):
        launch()
    torch.cuda.synchronize()
    timings = {}
    for mode in modes:
        runs = []
        for _ in range(trials):
            torch.cuda.synchronize()
            runs.append(per_call_us(launch, launches) if mode == "call" else
                        per_launch_us(launch, launches, mode == "sync"))
        timings[mode] = statistics.median(runs)
    torch.cuda.synchronize()
    return timings


def count_general_launches() -> list:
    """A list that grows by one for every tilec launch that takes the general path."""
    from tilec.launch.jit import JITFunction

    counted, general = [], JITFunction._run_general
    JITFunction._run_general = lambda self, *args: counted.append(1) or general(self, *args)
    return counted


def tilec_parts(tensors, launches: int, trials: int) -> dict:
    """µs (``call`` mode) of the pieces of tilec's launch: the specializer, the
    generated launcher, and the bare driver call two ways."""
    from tilec.backends.nvidia import cuda_driver as cd, libcuda

    kernel = empty_kernel_6
    args = (*tensors, 1003, 7)
    keys, values, _ = kernel._specialize(*args)
    (compiled,) = [c for c in kernel.cache.values() if c.runtime]
    loaded = compiled.runtime[0]
    frame, lib, drv = loaded.frame, libcuda.functions(), cd.driver()
    stream = cd.driver().CUstream(0)
    parts = {
        "whole launch": lambda: kernel[(1,)](*args),
        "specialize": lambda: kernel._specialize(*args),
        "specialize + lookup": lambda: kernel._launches.get((kernel._specialize(*args)[0], 4, 3)),
        "generated launcher": lambda: loaded.launch((1, 1, 1), values, None),
        "bare cuLaunchKernelEx (ctypes)": lambda: lib.launch_kernel_ex(
            frame.config_address, loaded.kernel.address, frame.params_address, None),
        "bare cuLaunchKernel (cuda-python)": lambda: drv.cuLaunchKernel(
            loaded.kernel.handle, 1, 1, 1, loaded.block[0], 1, 1, 0, stream, frame.params_address, 0),
    }
    return {name: measure(part, launches, trials, ("call",))["call"] for name, part in parts.items()}


def table(results: dict, failed: dict) -> str:
    """µs per launch by mode, and tilec's time over each other provider's (< 1: tilec is cheaper)."""
    headers = ["provider", *(f"{mode} us" for mode in MODES), *(f"tilec/this {mode}" for mode in MODES)]
    rows = []
    for provider in [*results, *failed]:
        if provider in failed:
            rows.append([provider, *["FAIL"] * len(MODES), *["-"] * len(MODES)])
            continue
        ratios = [common.ratio_text(results["tilec"][mode] / results[provider][mode] if "tilec" in results else None)
                  for mode in MODES]
        rows.append([provider, *(f"{results[provider][mode]:.2f}" for mode in MODES), *ratios])
    return common.format_table(headers, rows)


def main() -> None:
    opts = options()
    torch = common.require_cuda()
    info = common.device_info()
    tensors = [torch.randn(1024, device=common.DEVICE) for _ in range(4)]
    results, failed = {}, {}
    general = count_general_launches()
    for provider, launch in launchers(tensors).items():
        measured = common.attempt(failed, provider, lambda: measure(launch, opts.launches, opts.trials))
        if measured is not None:
            results[provider] = measured
    parts = common.attempt(failed, "tilec parts", lambda: tilec_parts(tensors, opts.launches, opts.trials)) \
        if "tilec" in results else None
    common.write_json(opts.out, {
        "benchmark": "launch cost, empty kernel with 4 tensor and 2 int arguments", **info,
        "launches": opts.launches, "trials": opts.trials, "warmup_launches": WARMUP_LAUNCHES,
        "target_us": TARGET_US, "us_per_launch": results, "tilec_parts_us": parts,
        "tilec_general_path_launches": len(general), "failed": failed})
    print(f"launch cost on {info['gpu']}: median of {opts.trials} trials of {opts.launches} launches, us a launch\n")
    print(table(results, failed))
    print("tilec/this: tilec's time over this provider's (< 1: tilec launches faster)")
    if parts:
        print("\ntilec's launch taken apart (call mode, us): "
              + ", ".join(f"{name} {us:.2f}" for name, us in parts.items()))
    print(f"tilec launches that took the general path: {len(general)} (the first only, when the fast path works)")
    print(f"\nwrote {opts.out}")
    for provider, why in failed.items():
        print(f"FAILED {provider}: {why}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
