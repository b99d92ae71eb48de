"""Tutorial 02: fused softmax, one row a program, the whole row in registers.

Run ``python docs/tutorials/02_fused_softmax.py`` (``--small``: the host interpreter only, as CI);
the prose is 02_fused_softmax.md beside it.
"""
import sys
from pathlib import Path

if __name__ == "__main__":  # run from a checkout: use its tilec and benchmarks/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import tilec
import tilec.language as tl


@tilec.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    row_start_ptr = input_ptr + row_idx * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    input_ptrs = row_start_ptr + col_offsets
    # The block is the next power of two above n_cols: pad with -inf, which exp sends to 0.
    mask = col_offsets < n_cols
    row = tl.load(input_ptrs, mask=mask, other=-float("inf"))
    row_minus_max = row - tl.max(row, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    softmax_output = numerator / denominator
    output_row_start_ptr = output_ptr + row_idx * output_row_stride
    tl.store(output_row_start_ptr + col_offsets, softmax_output, mask=mask)


def row_stride(x) -> int:
    """The distance between rows in elements, of a numpy array or a torch tensor."""
    return x.strides[0] // x.itemsize if isinstance(x, np.ndarray) else x.stride(0)


def softmax(x):
    """Row-wise softmax of a 2-D numpy array (on the host) or CUDA tensor (on its GPU)."""
    n_rows, n_cols = x.shape
    block_size = tilec.next_power_of_2(n_cols)
    # More warps for longer rows, so that a thread holds at most 32 values of a 16384 row.
    num_warps = 16 if block_size >= 4096 else 8 if block_size >= 2048 else 4
    y = np.empty_like(x) if isinstance(x, np.ndarray) else x.new_empty(x.shape)
    softmax_kernel[(n_rows,)](y, x, row_stride(x), row_stride(y), n_cols, BLOCK_SIZE=block_size,
                              num_warps=num_warps)
    return y


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def check_on_host(checks) -> None:
    rng = np.random.default_rng(0)
    for rows, cols in ((1, 1), (7, 100), (16, 781)):  # ragged rows: the -inf padding at work
        x = rng.standard_normal((rows, cols), dtype=np.float32) * 5
        checks.close(f"softmax {rows}x{cols} against numpy", softmax(x), numpy_softmax(x), rtol=1e-5, atol=1e-7)


def check_on_gpu(checks) -> None:
    import torch

    torch.manual_seed(0)
    for rows, cols in ((1823, 781), (4096, 1024), (4096, 10000)):
        x = torch.randn(rows, cols, device="cuda")
        checks.close(f"softmax {rows}x{cols} against torch", softmax(x), torch.softmax(x, dim=1),
                     rtol=1e-5, atol=1e-7)


def what_tilec_does(tut) -> None:
    """Compile the configuration a 4096 x 1024 input runs (BLOCK_SIZE 1024, 4 warps) for an H100, here."""
    tut.heading(f"what tilec does: softmax_kernel, BLOCK_SIZE=1024, 4 warps, target {tut.TARGET}")
    x = np.empty((4096, 1024), np.float32)
    compiled = softmax_kernel.compile(x, x, 1024, 1024, 1024, BLOCK_SIZE=1024, num_warps=4, target=tut.TARGET)
    tut.show_compiled(compiled, ("load", "reduce", "exp", "store"),
                      ("ld.global", "st.global", "shfl", "ld.shared", "st.shared", "bar.sync", "ex2", "div"))


def benchmark(tut, out: Path) -> None:
    from benchmarks import softmax as softmax_benchmark

    tut.heading("benchmark: tilec vs Triton vs torch, M = 4096 rows (benchmarks/softmax.py)")
    tut.run_sweep(softmax_benchmark.SWEEP, softmax_benchmark.SIZES, out)


def main() -> None:
    import tutorial_support

    tutorial_support.run(__doc__, check_on_host, check_on_gpu, what_tilec_does, benchmark)


if __name__ == "__main__":
    main()
