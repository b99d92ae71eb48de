"""``python -m tilec.demo``: add two float32 vectors with a tilec kernel, check
the result against numpy and say where it ran and how long it took.

It runs on an NVIDIA GPU when cuda-python finds one and torch can use it
(the demo makes its GPU arrays with torch); otherwise on the host CPU,
compiled for it (``TILEC_INTERPRET=1``: the numpy reference interpreter),
and says why (``why_on_host``, which the tutorials share).  The exit status is 1 when a result is wrong.
"""
from __future__ import annotations

import importlib.util
import sys
import time

import numpy as np

import tilec
from tilec import environment
import tilec.language as tl
from tilec.errors import TilecError
from tilec.targets import registry

SIZES = (10_000, 2**22)
GPU_PLACE = "cuda"  # where torch's ``.cuda()`` tensors live (``launch/args.py``)


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """``out = x + y`` over ``n_elements``; each program adds one block."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x, y, out):
    """Launch ``add_kernel`` over enough blocks of 1024 to cover ``x``."""
    n = x.shape[0]
    add_kernel[lambda meta: (tilec.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=1024)


def why_on_host() -> str | None:
    """None when GPU arrays can be made with torch and run on an NVIDIA GPU,
    else why not.  The GPU is asked first, through the driver of the backend
    that runs CUDA arrays: without one, the reason is the missing GPU, whatever
    torch's state."""
    try:
        registry.backend_for_place(GPU_PLACE).driver()
    except TilecError as exc:
        return f"no usable CUDA GPU ({exc})"
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed (GPU arrays are made with it)"
    import torch

    return None if torch.cuda.is_available() else "torch cannot use the GPU (a CPU-only build of torch?)"


def inputs(n: int, where: str, rng: np.random.Generator) -> tuple:
    """``x``, ``y`` and an output array of ``n`` float32 on ``where``."""
    x, y = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
    arrays = (x, y, np.full(n, np.nan, np.float32))
    if where == GPU_PLACE:
        import torch

        arrays = tuple(torch.from_numpy(a).cuda() for a in arrays)
    return arrays


def to_numpy(a) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else a.cpu().numpy()


def run_one(n: int, where: str, rng: np.random.Generator) -> bool:
    """Add ``n`` elements on ``where``, print the check and the time; True when correct."""
    x, y, out = inputs(n, where, rng)
    compiles = not add_kernel.cache
    start = time.perf_counter()
    add(x, y, out)
    elapsed = time.perf_counter() - start
    error = float(np.max(np.abs(to_numpy(out) - (to_numpy(x) + to_numpy(y)))))
    ok = error == 0.0  # one float32 add per element: the result must be exact
    note = ", compiling included" if compiles else ""
    print(f"  n = {n:>9,}: max abs error vs numpy {error:g}  {'PASS' if ok else 'FAIL'}  "
          f"({elapsed * 1e3:.1f} ms{note})")
    return ok


def main() -> int:
    why_host = why_on_host()
    where = "host" if why_host else GPU_PLACE
    host = "the host (numpy reference interpreter)" if environment.interpret() else "the host CPU (compiled for it by LLVM)"
    running_on = f"{host}: {why_host}" if why_host else "an NVIDIA GPU"
    print(f"tilec {tilec.__version__}: vector add, float32, running on {running_on}")
    rng = np.random.default_rng(0)
    results = [run_one(n, where, rng) for n in SIZES]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
