"""Tutorial 02: fused softmax, one row per program."""
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


def softmax(x: np.ndarray) -> np.ndarray:
    n_rows, n_cols = x.shape
    block_size = tilec.next_power_of_2(n_cols)
    y = np.empty_like(x)
    softmax_kernel[(n_rows,)](y, x, x.strides[0] // x.itemsize, y.strides[0] // y.itemsize, n_cols,
                              BLOCK_SIZE=block_size)
    return y
