"""What the tutorial scripts share: the command line, where they run, the
checks, printing what tilec did to a kernel, and the GPU benchmark (which is
``benchmarks/``'s sweep of the same kernel, run from here).

A script imports this module from its ``main()``: the kernels above it stay
importable on their own (``tests/kernels/`` re-exports them)."""
from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

TARGET = "sm_90a"  # what the "what tilec does" sections compile for: an H100 (its arch-specific sm_90a), with or without one here


# --- the flow every script follows ----------------------------------------------------
def run(doc: str, check_on_host, check_on_gpu, what_tilec_does, benchmark) -> None:
    """Check the kernel (on a GPU, else small sizes on the host interpreter),
    show what tilec compiles for an H100, then benchmark on the GPU.  Each step
    is one of the script's functions; all but the checks take this module."""
    import sys

    opts = options(doc)
    why_host = why_not_on_gpu(opts)
    say_where(why_host)
    checks = Checks()
    heading("checks")
    (check_on_host if why_host else check_on_gpu)(checks)
    checks.summary()
    what_tilec_does(sys.modules[__name__])
    if why_host:
        hint = " (run without it on a CUDA GPU to benchmark)" if opts.small else ""
        print(f"\nbenchmark skipped: {why_host}{hint}")
    else:
        benchmark(sys.modules[__name__], opts.out)


# --- command line and device --------------------------------------------------------
def options(doc: str) -> argparse.Namespace:
    """``--small`` (the host interpreter, no benchmark: what CI runs) and ``--out``."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--small", action="store_true",
                        help="small sizes on the host interpreter and no benchmark, even on a GPU machine")
    parser.add_argument("--out", type=Path, default=Path("tutorial-results"),
                        help="folder for the benchmark's JSON and plot (default: %(default)s)")
    return parser.parse_args()


def why_not_on_gpu(opts: argparse.Namespace) -> str | None:
    """None when the script runs on a CUDA GPU, else why it runs on the host
    (the GPU is asked before torch: ``tilec.demo.why_on_host``)."""
    from tilec.demo import why_on_host

    return "--small" if opts.small else why_on_host()


def say_where(why_host: str | None) -> None:
    """The script's first line: the GPU it runs on, or why it runs on the host."""
    if why_host:
        print(f"{why_host}: small sizes on the host interpreter, no benchmark")
    else:
        import torch

        print(f"running on {torch.cuda.get_device_name()}")


def heading(text: str) -> None:
    print(f"\n== {text}")


# --- checks -------------------------------------------------------------------------
class Checks:
    """Counts the checks that passed; a failed one raises at once."""

    def __init__(self) -> None:
        self.passed = 0

    def close(self, label: str, got, want, rtol: float, atol: float) -> None:
        """``got`` (numpy or torch, any device) is within ``atol + rtol * |want|`` of ``want``."""
        import numpy as np

        got, want = as_float64(got), as_float64(want)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=label)
        error = float(np.max(np.abs(got - want))) if got.size else 0.0
        self.passed += 1
        print(f"  ok  {label}: max |error| {error:.2e} (rtol {rtol:g}, atol {atol:g})")

    def summary(self) -> None:
        print(f"all {self.passed} checks passed")


def as_float64(x):
    """A float64 numpy copy of a numpy array or a torch tensor (on any device)."""
    import numpy as np

    if hasattr(x, "detach"):
        x = x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


# --- what tilec did -----------------------------------------------------------------
def show_compiled(compiled, tir_ops: tuple[str, ...], ptx_prefixes: tuple[str, ...], most: int = 12) -> None:
    """The ``tir-gpu`` lines of ``tir_ops`` (the layouts tilec chose), how often
    each PTX instruction starting with one of ``ptx_prefixes`` occurs (the vector
    widths, the tensor-core and async-copy instructions), and the metadata."""
    print(f"tile IR with layouts (.asm['tir-gpu']), the {', '.join(tir_ops)} ops:")
    for line in ir_lines(compiled.asm["tir-gpu"], tir_ops)[:most]:
        print(f"    {line}")
    print("PTX instructions (.asm['ptx']):")
    for opcode, count in ptx_opcodes(compiled.asm["ptx"], ptx_prefixes).items():
        print(f"    {count:4d} x {opcode}")
    show_metadata(compiled.metadata)


def ir_lines(text: str, ops: tuple[str, ...], width: int = 150) -> list[str]:
    """The lines of printed tile IR whose op is one of ``ops``, cut to ``width``."""
    pattern = re.compile(r"^\s*(?:[%\w, ]+=\s*)?(" + "|".join(map(re.escape, ops)) + r")\b")
    lines = [line.strip() for line in text.splitlines() if pattern.match(line)]
    return [line if len(line) <= width else line[:width - 3] + "..." for line in lines]


def ptx_opcodes(ptx: str, prefixes: tuple[str, ...]) -> dict[str, int]:
    """How often each PTX opcode starting with one of ``prefixes`` appears, in order of appearance."""
    counts: collections.Counter = collections.Counter()
    for line in ptx.splitlines():
        match = re.match(r"\s*(?:@!?%p\d+\s+)?([a-z][\w.]*)", line)
        if match and match[1].startswith(prefixes):
            counts[match[1]] += 1
    return dict(counts)


def show_metadata(md) -> None:
    """Registers, spills, shared memory and the cost estimate of one compiled kernel."""
    registers = "unknown (no ptxas)" if md.registers is None else md.registers
    print(f"metadata (.metadata): {md.num_warps} warps, {md.num_stages} stages, {registers} registers, "
          f"spills {md.spill_stores} stores / {md.spill_loads} loads, {md.shared} B shared memory")
    intensity = "-" if md.arithmetic_intensity is None else f"{md.arithmetic_intensity:.3g}"
    print(f"    per program: bytes {md.bytes_formula}, flops {md.flops_formula}, flops/byte {intensity}")


# --- the benchmark ------------------------------------------------------------------
def run_sweep(sweep, sizes: list[int], out: Path, warmup: float = 25, rep: float = 100) -> None:
    """``benchmarks/``'s sweep over ``sizes``: each provider checked, then timed;
    the table printed, JSON and plot written under ``out``."""
    from benchmarks import common

    common.run_sweep(sweep, argparse.Namespace(sizes=sorted(sizes), warmup=warmup, rep=rep,
                                               out=out / f"{sweep.name}.json"))
