"""Tutorial 01: vector addition, ``out = x + y``, one block of elements a program.

Run ``python docs/tutorials/01_vector_add.py`` (``--small``: the host interpreter only, as CI);
the prose is 01_vector_add.md beside it.
"""
import sys
from pathlib import Path

if __name__ == "__main__":  # run from a checkout: use its tilec and benchmarks/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    # Guard the last, partial block.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


def add(x, y, block_size: int = 1024, num_warps: int = 4):
    """``x + y`` for numpy arrays (on the host) or CUDA tensors (on their GPU)."""
    output = np.empty_like(x) if isinstance(x, np.ndarray) else x.new_empty(x.shape)
    n_elements = output.size if isinstance(output, np.ndarray) else output.numel()
    grid = lambda meta: (tilec.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=block_size, num_warps=num_warps)
    return output


def check_on_host(checks) -> None:
    rng = np.random.default_rng(0)
    for n in (1, 1000, 98_432 // 8):  # one element, one partial block, 13 blocks
        x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        checks.close(f"add, n={n}, against numpy", add(x, y), x + y, rtol=0, atol=0)


def check_on_gpu(checks) -> None:
    import torch

    torch.manual_seed(0)
    for n in (1, 98_432, 1 << 24):
        x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        checks.close(f"add, n={n}, against torch", add(x, y), x + y, rtol=0, atol=0)


def what_tilec_does(tut) -> None:
    """Compile the GPU configuration (1024 elements, 4 warps) for an H100, here."""
    tut.heading(f"what tilec does: add_kernel, BLOCK_SIZE=1024, 4 warps, target {tut.TARGET}")
    x = np.empty(1 << 24, np.float32)
    compiled = add_kernel.compile(x, x, x, x.size, BLOCK_SIZE=1024, num_warps=4, target=tut.TARGET)
    tut.show_compiled(compiled, ("arange", "load", "store"), ("ld.global", "st.global"))


def benchmark(tut, out: Path) -> None:
    from benchmarks import vector_add

    tut.heading("benchmark: tilec vs Triton vs torch (benchmarks/vector_add.py)")
    tut.run_sweep(vector_add.SWEEP, [1 << k for k in range(12, 29, 2)], out)


def main() -> None:
    import tutorial_support

    tutorial_support.run(__doc__, check_on_host, check_on_gpu, what_tilec_does, benchmark)


if __name__ == "__main__":
    main()
