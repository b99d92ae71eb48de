"""Cold compile time: seconds from a new process to a compiled binary, for
tilec and Triton, of the vector-add, softmax and matmul tutorial kernels.

Every measurement is a new process with empty caches (``TILEC_CACHE_DIR`` and
``TRITON_CACHE_DIR`` point to a fresh temporary directory) that

1. imports torch and makes the arguments on the GPU (not counted);
2. ``import``: imports the compiler (tilec; or Triton and its driver, which a
   fresh cache makes build its C helper once) and the kernel -- reported apart;
3. ``compile``: the first call to a binary: tilec's ``kernel.compile(...,
   target=<the GPU's arch>)`` (PTX and a cubin from ptxas) and Triton's
   ``kernel.warmup(...)``, with the same arguments, constexprs and options.

The median of ``--repeats`` processes is reported.  ``--profile KERNEL``
instead compiles tilec's kernel once in this process, for ``--target``
(default sm_90; no GPU, torch or Triton needed), and prints the time of each
phase of the pipeline and cProfile's hottest functions.

    PYTHONPATH=. python benchmarks/compile_time.py [--repeats 3] [--out PATH]
    PYTHONPATH=. python benchmarks/compile_time.py --profile matmul [--top 30]

Writes ``benchmarks/results/compile_time.json`` (or ``--out``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import common  # noqa: E402  (imports neither tilec nor Triton)

COMPILERS = ("tilec", "triton")
TARGET = "sm_90"


# --- the kernels: (tutorial module, kernel, arguments, constexprs, options) -------
def kernel_cases() -> dict[str, dict[str, Any]]:
    """Each kernel's compile: its tutorial, arguments as (dtype, elements) for
    arrays or ints, constexprs and options (Triton's tutorial configurations)."""
    return {
        "vector_add": dict(tutorial="vector_add", kernel="add_kernel",
                           args=[("float32", 98432), ("float32", 98432), ("float32", 98432), 98432],
                           constexprs=dict(BLOCK_SIZE=1024), options=dict(num_warps=4)),
        "softmax": dict(tutorial="softmax", kernel="softmax_kernel",
                        args=[("float32", 1 << 20), ("float32", 1 << 20), 1024, 1024, 1000],
                        constexprs=dict(BLOCK_SIZE=1024), options=dict(num_warps=4)),
        "matmul": dict(tutorial="matmul", kernel="matmul_kernel",
                       args=[("float16", 512 * 512)] * 3 + [512, 512, 512, 512, 1, 512, 1, 512, 1],
                       constexprs=dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8,
                                       ACTIVATION=""),
                       options=dict(num_warps=4, num_stages=3)),
    }


def make_args(specs: list, array: Callable[[str, int], Any]) -> list:
    return [array(*s) if isinstance(s, tuple) else s for s in specs]


# --- one measurement, in its own process -----------------------------------------
def child(compiler: str, name: str) -> dict:
    """Steps 1-3 of the module doc; seconds of each, as a dict."""
    t0 = time.perf_counter()
    import torch

    case = kernel_cases()[name]
    args = make_args(case["args"], lambda dtype, n: torch.empty(n, dtype=getattr(torch, dtype), device="cuda"))
    torch.cuda.synchronize()
    if compiler == "triton":
        import tilec  # noqa: F401  (the tutorial's module imports it: not Triton's cost)
    t1 = time.perf_counter()
    kernel = load_kernel(compiler, case)
    t2 = time.perf_counter()
    if compiler == "tilec":
        compiled = kernel.compile(*args, target=common.device_arch(), **case["constexprs"], **case["options"])
        binary = next(b for b in ("cubin", "hsaco", "ptx", "obj") if b in compiled.asm)
    else:
        kernel.warmup(*args, grid=(1,), **case["constexprs"], **case["options"])
        binary = "cubin"
    t3 = time.perf_counter()
    return dict(setup_s=t1 - t0, import_s=t2 - t1, compile_s=t3 - t2, binary=binary)


def load_kernel(compiler: str, case: dict):
    """Import the compiler and the tutorial's kernel (Triton: and its driver)."""
    from benchmarks import kernels

    kernel = getattr(kernels.load_tutorial(case["tutorial"]), case["kernel"])
    if compiler == "tilec":
        return kernel
    import triton

    triton.runtime.driver.active.get_current_target()  # a fresh cache builds the driver's C helper here
    return kernels.for_triton(kernel)


def measure(compiler: str, name: str) -> dict:
    """One cold compile in a new process with empty caches."""
    with tempfile.TemporaryDirectory(prefix="tilec-compile-time-") as cache:
        env = dict(os.environ, TILEC_CACHE_DIR=os.path.join(cache, "tilec"),
                   TRITON_CACHE_DIR=os.path.join(cache, "triton"),
                   PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, __file__, "--child", compiler, name], env=env,
                              capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{compiler} {name}: the child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- profiling tilec's compile here -----------------------------------------------
class FakeCudaArray:
    """A CUDA array to compile for (never launched): aligned, of ``dtype``."""

    def __init__(self, dtype: str, n: int, address: int = 0x7F00_0000_0000):
        import numpy as np

        self.__cuda_array_interface__ = {"shape": (n,), "typestr": np.dtype(dtype).str, "data": (address, False),
                                         "version": 3}

    def __dlpack_device__(self):
        return (2, 0)


def phase_timers() -> tuple[dict[str, float], contextlib.ExitStack]:
    """Seconds spent in each phase of tilec's pipeline, accumulated while the
    returned stack is open (the phases' functions wrapped by timers)."""
    import tilec.ast_parse
    import tilec.codegen_llvm
    import tilec.backends.nvidia.libdevice
    import tilec.launch.compiler
    import tilec.backends.nvidia.stages
    import tilec.opt

    times: dict[str, float] = {}
    stack = contextlib.ExitStack()
    wrapped = [(tilec.ast_parse, "build_ir", "front end (build_ir)"),
               (tilec.opt, "optimize", "optimize (tile IR passes)"),
               (tilec.launch.compiler, "_metadata", "cost estimate"),
               (tilec.launch.compiler, "print_function", "printing IR (asm stages)"),
               (tilec.backends.nvidia.stages, "print_function", "printing IR (asm stages)"),
               (tilec.backends.nvidia.stages, "assign_gpu_layouts", "layouts (assign_layouts)"),
               (tilec.codegen_llvm, "lower", "codegen to LLVM IR (lower)"),
               (tilec.backends.nvidia.libdevice, "link_libdevice", "libdevice link + O3"),
               (tilec.backends.nvidia.stages, "nvptx_target", "target setup"),
               (tilec.backends.nvidia.stages, "emit_ptx", "NVPTX backend (emit_ptx)"),
               (tilec.backends.nvidia.stages, "assemble_cubin", "ptxas")]
    for module, attr, phase in wrapped:
        if hasattr(module, attr):
            stack.enter_context(_timed(module, attr, phase, times))
    stages = tilec.backends.nvidia.stages.STAGES
    original = list(stages)
    stages[:] = [dataclasses.replace(s, run=globals_lookup(tilec.backends.nvidia.stages, s.run)) for s in stages]
    stack.callback(lambda: stages.__setitem__(slice(None), original))
    return times, stack


def globals_lookup(module, fn: Callable) -> Callable:
    """``fn`` looked up in ``module`` at call time (so a timer wrapped around it there counts)."""
    return lambda *args: getattr(module, fn.__name__)(*args)


@contextlib.contextmanager
def _timed(module, attr: str, phase: str, times: dict[str, float]):
    original = getattr(module, attr)
    depth = [0]

    def timed(*args, **kwargs):
        depth[0] += 1
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:  # a phase that calls itself counts once
                times[phase] = times.get(phase, 0.0) + time.perf_counter() - t0

    setattr(module, attr, timed)
    try:
        yield
    finally:
        setattr(module, attr, original)


def profile(name: str, target: str, top: int) -> dict:
    """Compile tilec's ``name`` kernel once, cold, in this process: the phases' times and cProfile's hottest."""
    t0 = time.perf_counter()
    import tilec  # noqa: F401
    from benchmarks import kernels

    case = kernel_cases()[name]
    kernel = getattr(kernels.load_tutorial(case["tutorial"]), case["kernel"])
    import_s = time.perf_counter() - t0
    args = make_args(case["args"], lambda dtype, n: FakeCudaArray(dtype, n))
    times, stack = phase_timers()
    profiler = cProfile.Profile()
    with stack:
        t1 = time.perf_counter()
        profiler.enable()
        kernel.compile(*args, target=target, **case["constexprs"], **case["options"])
        profiler.disable()
        compile_s = time.perf_counter() - t1
    stats = pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative")
    stats.print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return dict(kernel=name, target=target, import_s=import_s, compile_s=compile_s,
                phases_s=dict(sorted(times.items(), key=lambda kv: -kv[1])))


def profile_table(result: dict) -> str:
    rows = [[phase, f"{s * 1000:.1f}", f"{100 * s / result['compile_s']:.0f}%"]
            for phase, s in result["phases_s"].items()]
    rows.append(["(whole compile)", f"{result['compile_s'] * 1000:.1f}", "100%"])
    rows.append(["(import tilec + kernel)", f"{result['import_s'] * 1000:.1f}", "-"])
    return common.format_table(["phase", "ms", "of compile"], rows)


# --- the benchmark -----------------------------------------------------------------
def options():
    parser = common.base_parser("compile_time", __doc__)
    parser.add_argument("--repeats", type=int, default=3, help="new processes per compiler and kernel")
    parser.add_argument("--kernels", nargs="*", default=list(kernel_cases()), help="which kernels")
    parser.add_argument("--child", nargs=2, metavar=("COMPILER", "KERNEL"), help=argparse_hidden())
    parser.add_argument("--profile", metavar="KERNEL", help="profile tilec's compile of KERNEL here")
    parser.add_argument("--target", default=TARGET, help="--profile's target (default sm_90)")
    parser.add_argument("--top", type=int, default=25, help="--profile: functions cProfile lists")
    return parser.parse_args()


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


def run_benchmark(opts) -> None:
    info = common.device_info()
    results: dict[str, dict[str, dict]] = {}
    failed: dict[str, str] = {}
    compilers = [c for c in COMPILERS if c in common.languages()]
    for name in opts.kernels:
        for compiler in compilers:
            runs = common.attempt(failed, f"{compiler} {name}",
                                  lambda: [measure(compiler, name) for _ in range(opts.repeats)])
            if runs:
                results.setdefault(name, {})[compiler] = dict(
                    import_s=statistics.median(r["import_s"] for r in runs),
                    compile_s=statistics.median(r["compile_s"] for r in runs), runs=runs)
    common.write_json(opts.out, {
        "benchmark": "cold compile (new process, empty caches): import, then first call to a binary", **info,
        "repeats": opts.repeats, "kernels": {n: kernel_cases()[n] for n in opts.kernels},
        "seconds": results, "failed": failed})
    print(f"cold compile on {info['gpu']}, median of {opts.repeats} new processes, seconds\n")
    print(table(results, compilers))
    print("tilec/triton: tilec's compile time over Triton's (<= 1: no slower; the target)")
    print(f"\nwrote {opts.out}")
    for what, why in failed.items():
        print(f"FAILED {what}: {why}")
    if failed:
        sys.exit(1)


def table(results: dict, compilers: list[str]) -> str:
    headers = ["kernel", *(f"{c} {what}" for c in compilers for what in ("import", "compile")), "tilec/triton"]
    rows = []
    for name, by_compiler in results.items():
        row = [name]
        for c in compilers:
            r = by_compiler.get(c)
            row += [f"{r['import_s']:.2f}", f"{r['compile_s']:.2f}"] if r else ["FAIL", "FAIL"]
        both = all(c in by_compiler for c in COMPILERS)
        row.append(common.ratio_text(by_compiler["tilec"]["compile_s"] / by_compiler["triton"]["compile_s"])
                   if both else "-")
        rows.append(row)
    return common.format_table(headers, rows)


def main() -> None:
    opts = options()
    if opts.child:
        print(json.dumps(child(*opts.child)))
    elif opts.profile:
        result = profile(opts.profile, opts.target, opts.top)
        print(f"\ntilec cold compile of {opts.profile} for {opts.target} in one process, by phase\n")
        print(profile_table(result))
    else:
        common.require_cuda()
        run_benchmark(opts)


if __name__ == "__main__":
    main()
