"""Selection, min/max, ``dot``, reductions, scans and small compound helpers."""
from __future__ import annotations

from tilec.language.core import PropagateNan, builtin, float32


@builtin
def where(condition, x, y):
    """``x`` where ``condition`` is true, else ``y``, elementwise.

    ``condition`` is converted to ``int1``; ``x`` and ``y`` are promoted to a
    common type (Python numbers are weakly typed) and all three broadcast.
    """


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE):
    """Elementwise max; with ``PropagateNan.NONE`` a NaN loses to the other operand."""


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE):
    """Elementwise min; NaN rule as ``maximum``."""


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE):
    """``minimum(maximum(x, min), max)`` for floating-point ``x``."""


@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=float32):
    """The matrix product of 2-D tiles ``[M, K] @ [K, N]`` (or batched 3-D), plus ``acc``.

    M, N and K must be at least 16 (as Triton).  ``input`` and ``other``
    share one dtype: ``int8`` accumulates in ``int32``, ``float64`` in
    ``float64``, other floats in ``out_dtype`` (``float32`` default or
    ``float16``).  With ``acc`` the result has ``acc``'s type.
    ``input_precision`` for ``float32`` inputs: "tf32" (default, as
    Triton), "tf32x3" or "ieee"; ``allow_tf32=False`` means "ieee".
    Two fp8 tiles may differ in format; on GPUs with fp8 matrix
    instructions their products may accumulate in a 22-bit float unless
    ``max_num_imprecise_acc`` (at least K) asks for the product to be
    added to ``acc`` in full precision.
    """


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=float32):
    """The matrix product ``lhs @ rhs + acc`` of microscaled tiles, as Triton's
    (emulated as Triton does where no matrix instruction takes them).

    Formats (``lhs_format``/``rhs_format``, constexpr str): ``"e2m1"`` (fp4, two
    codes a ``uint8``, the first in the low nibble, packed along K, or along M
    for ``lhs``/N for ``rhs`` with ``k_pack=False``), ``"e4m3"``/``"e5m2"``
    (fp8 codes as ``uint8``), ``"bf16"``/``"fp16"``.  ``lhs`` is ``[M, K]`` and
    ``rhs`` ``[K, N]`` once unpacked (or batched 3-D).  A scale is ``None`` or
    a ``uint8`` tile of e8m0 exponents, one per 32 K-elements, ``[M, K // 32]``
    for ``lhs`` and ``[N, K // 32]`` (not transposed) for ``rhs``: each
    element is multiplied by ``2**(s - 127)`` (0 for ``s = 0``; NaN for
    ``0xFF``, infinity with ``fast_math``).  Operands are decoded exactly to
    ``fp16`` if either format is ``"fp16"``, else ``bf16``, scaled in that
    type, and multiplied as ``tl.dot`` does, accumulating in ``out_dtype``
    (``float32`` only, as Triton) on ``acc``.
    """


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce ``input`` (a tensor or tuple of tensors) along ``axis`` with ``combine_fn``.

    ``combine_fn`` is a ``@jit`` function of two groups of scalars returning one
    group (``(a0, a1, b0, b1) -> (c0, c1)`` for a pair of tensors); it must be
    associative.  ``axis=None`` reduces all dims.
    """


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive prefix scan of ``input`` (tensor or tuple) along ``axis`` with ``combine_fn``."""


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    """Sum along ``axis`` (None: all).  Without ``dtype``, ints and bools narrower than 32 bits
    are summed as ``int32`` (``uint32`` if unsigned) and ``float16``/``bfloat16`` as ``float32``."""


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Maximum along ``axis``.  Types narrower than 32 bits are widened (``float32``/``int32``).
    ``return_indices=True`` also returns the index (ties: smallest index)."""


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Minimum along ``axis``; as ``max``."""


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    """The ``int32`` index of the maximum along ``axis`` (ties: the smallest index)."""


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    """The ``int32`` index of the minimum along ``axis`` (ties: the smallest index)."""


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    """Bitwise xor of the (integer) elements along ``axis``."""


@builtin
def reduce_or(input, axis, keep_dims=False):
    """Bitwise or of the (integer) elements along ``axis`` (None: all)."""


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive prefix sum along ``axis`` (widening as ``sum``)."""


@builtin
def cumprod(input, axis=0, reverse=False, dtype=None):
    """Inclusive prefix product along ``axis`` (widening as ``sum``)."""


@builtin
def sigmoid(x):
    """``1 / (1 + exp(-x))`` elementwise (float32/float64)."""


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    """``exp(x - max) / sum(exp(x - max))`` along ``dim`` (default 0)."""


@builtin
def cdiv(x, div):
    """``(x + div - 1) // div``: ceiling division (folded at compile time for constexprs)."""


@builtin
def next_power_of_2(n):
    """The smallest power of two >= the constexpr int ``n``."""
