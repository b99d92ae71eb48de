"""``tl.dot_scaled``: the matrix product of microscaled operands, built from
existing tile ops, so every target runs it with no op of its own.

This is the emulation Triton uses on GPUs without microscaled matrix
instructions (its ``DecomposeScaledBlocked`` rewrite):

1. each operand is decoded to the *compute type*, ``fp16`` when either
   format is ``"fp16"``, else ``bf16``.  ``"e2m1"`` comes two codes to a
   byte, the first element in the low nibble, packed along K (or, with
   ``k_pack=False``, along M for ``lhs`` and N for ``rhs``); ``"e4m3"`` and
   ``"e5m2"`` come as bytes; ``"bf16"``/``"fp16"`` as themselves or their 16
   bits.  The minifloats are decoded with integer operations, exactly
   (every value of theirs is a compute-type value): ``e5m2`` keeps IEEE's
   infinities and NaNs, ``e4m3`` (the ``fn`` variant) has NaN at ``S.1111.111``
   and no infinity, ``e2m1`` has neither;
2. a scale (``uint8`` e8m0, one per group of 32 K-elements, or 16: the group
   is the scale's K extent over the operand's) is the float with those
   exponent bits, ``2**(s - 127)`` for ``s`` in 1..254, ``0`` for ``s = 0`` and
   NaN for ``0xFF`` (infinity with ``fast_math``, as Triton skips its NaN
   mask there), rounded to the compute type; it is repeated over its group
   and multiplies the operand in the compute type.  ``rhs_scale`` is given
   as ``[N, K // group]``, like ``lhs_scale``'s ``[M, K // group]``;
3. the scaled operands meet in ``tl.dot`` (``ieee``), accumulating in
   ``float32`` on ``acc``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.semantic import Tensor, TypingError, bitcast_to, broadcast_to, cast_to, describe, dtype_name, emit, to_tensor
from tilec.frontend.tl_ops import dtype_arg, implements

FNAME = "`tl.dot_scaled`"
SCALE_GROUPS = (32, 16)  # K elements per scale Triton accepts
NAN_SCALE = 0xFF
MIN_DOT = 16  # as tl.dot: M, N and K >= 16


@dataclass(frozen=True)
class Minifloat:
    """A sub-16-bit float format: ``exponent`` and ``mantissa`` bit counts, the
    exponent ``bias``, and its special values: ``"ieee"`` (the all-ones exponent
    is infinity or NaN), ``"fn"`` (only all-ones exponent and mantissa is NaN)
    or ``"none"``."""
    exponent: int
    mantissa: int
    bias: int
    specials: str


MINIFLOATS = {
    "e2m1": Minifloat(2, 1, 1, "none"),
    "e4m3": Minifloat(4, 3, 7, "fn"),
    "e5m2": Minifloat(5, 2, 15, "ieee"),
}
HALVES = {"bf16": ir.bf16, "fp16": ir.f16}
FORMATS = (*MINIFLOATS, *HALVES)
F32_EXPONENT_BIAS, F32_MANTISSA = 127, 23
F32_INFINITY, F32_QUIET_NAN = 0x7F800000, 0x7FC00000


# --------------------------------------------------------------------------- #
# Arguments
# --------------------------------------------------------------------------- #

def _unwrapped(value):
    return value.value if isinstance(value, tl.constexpr) else value


def _format_arg(value, side: str) -> str:
    fmt = _unwrapped(value)
    if fmt not in FORMATS:
        raise TypingError(f"{FNAME}: {side}_format must be one of {', '.join(map(repr, FORMATS))} "
                          f"(a constexpr str), got {fmt!r}")
    return fmt


def _bool_arg(value, what: str) -> bool:
    flag = _unwrapped(value)
    if not isinstance(flag, (bool, int)):
        raise TypingError(f"{FNAME}: {what} must be a constexpr bool, got {describe(flag)}")
    return bool(flag)


def _is_int_of(t: ir.ElemType, bits: int) -> bool:
    return isinstance(t, ir.ScalarType) and t.is_int and not t.is_bool and t.bits == bits


def _operand_bits(ctx, value, fmt: str, side: str) -> Tensor:
    """The operand as ``uint8`` codes (minifloats: any 8-bit element type is
    read as its bytes) or as its 16-bit float type (given as such or as 16-bit
    integer bits, as Triton bitcasts a ``uint16`` operand)."""
    x = to_tensor(ctx, value)
    if len(x.shape) not in (2, 3):
        raise TypingError(f"{FNAME}: {side} must be a 2-D (or batched 3-D) tile, got {describe(x)}")
    if fmt in HALVES:
        if x.elem != HALVES[fmt] and not _is_int_of(x.elem, 16):
            raise TypingError(f"{FNAME}: {side} in format {fmt!r} must be a {dtype_name(HALVES[fmt])} tile "
                              f"or its bits as uint16, got {describe(x)}")
        return bitcast_to(ctx, x, HALVES[fmt])
    if not (isinstance(x.elem, ir.ScalarType) and not x.elem.is_bool and x.elem.bits == 8):
        packing = ", two codes a byte, the first in the low nibble" if fmt == "e2m1" else ""
        raise TypingError(f"{FNAME}: {side} in format {fmt!r} must hold its codes as a uint8 tile{packing}; "
                          f"got {describe(x)}")
    return bitcast_to(ctx, x, ir.u8)


def _scale_arg(ctx, value, side: str) -> Optional[Tensor]:
    value = _unwrapped(value)
    if value is None:
        return None
    s = to_tensor(ctx, value)
    if not _is_int_of(s.elem, 8):
        raise TypingError(f"{FNAME}: {side}_scale must be a uint8 tile of e8m0 exponents (or None), "
                          f"got {describe(s)}")
    return bitcast_to(ctx, s, ir.u8)


@dataclass(frozen=True)
class Operand:
    """One side of the product as given: its codes or halves, format, scale,
    whether e2m1 codes are packed along K, and which axis is K."""
    bits: Tensor
    fmt: str
    scale: Optional[Tensor]
    k_pack: bool
    k_axis: int
    side: str

    @property
    def packed_axis(self) -> Optional[int]:
        """The axis holding two e2m1 codes a byte (None for other formats)."""
        if self.fmt != "e2m1":
            return None
        rank = len(self.bits.shape)
        other = rank - 2 if self.side == "lhs" else rank - 1
        return self.k_axis if self.k_pack else other

    @property
    def shape(self) -> tuple:
        """The decoded operand's shape: the packed axis counts both codes."""
        dims = list(self.bits.shape)
        if self.packed_axis is not None:
            dims[self.packed_axis] *= 2
        return tuple(dims)

    @property
    def k(self) -> int:
        return self.shape[self.k_axis]

    @property
    def rows(self) -> int:
        """M for ``lhs``, N for ``rhs``: the scale's row count."""
        return self.shape[-2] if self.side == "lhs" else self.shape[-1]


def _operand(ctx, value, scale, fmt, k_pack, side: str) -> Operand:
    fmt = _format_arg(fmt, side)
    k_pack = _bool_arg(k_pack, f"{side}_k_pack")
    if not k_pack and fmt != "e2m1":
        raise TypingError(f"{FNAME}: {side}_k_pack=False packs e2m1 codes along "
                          f"{'M' if side == 'lhs' else 'N'}; it needs {side}_format 'e2m1', got {fmt!r}")
    bits = _operand_bits(ctx, value, fmt, side)
    rank = len(bits.shape)
    return Operand(bits, fmt, _scale_arg(ctx, scale, side), k_pack, rank - 1 if side == "lhs" else rank - 2, side)


def _check_shapes(lhs: Operand, rhs: Operand) -> None:
    if len(lhs.shape) != len(rhs.shape) or lhs.shape[:-2] != rhs.shape[:-2]:
        raise TypingError(f"{FNAME}: lhs {describe(lhs.bits)} and rhs {describe(rhs.bits)} must both be 2-D, "
                          "or 3-D with one batch size")
    if lhs.k != rhs.k:
        raise TypingError(f"{FNAME}: K differs after unpacking: lhs {describe(lhs.bits)} in {lhs.fmt!r} holds "
                          f"K = {lhs.k}, rhs {describe(rhs.bits)} in {rhs.fmt!r} holds K = {rhs.k} "
                          "(e2m1 packs two values a byte along K unless its k_pack is False)")
    m, n, k = lhs.rows, rhs.rows, lhs.k
    if min(m, n, k) < MIN_DOT:
        raise TypingError(f"{FNAME} needs M, N and K >= {MIN_DOT} (as tl.dot), got M={m}, N={n}, K={k}")


def _scale_group(op: Operand) -> Optional[int]:
    """The K elements each of ``op``'s scales covers (None without a scale):
    its shape must be ``[..., rows, K // group]``, ``group`` 32 or 16."""
    if op.scale is None:
        return None
    shape = op.scale.shape
    groups = shape[-1] if shape else 0
    group = op.k // groups if groups and op.k % groups == 0 else None
    if shape != op.shape[:-2] + (op.rows, groups) or group not in SCALE_GROUPS:
        rows = "M" if op.side == "lhs" else "N (not transposed)"
        want = op.shape[:-2] + (op.rows, op.k // SCALE_GROUPS[0])
        raise TypingError(f"{FNAME}: {op.side}_scale {describe(op.scale)} does not fit {op.side} "
                          f"{describe(op.bits)} in {op.fmt!r} (K = {op.k}): it needs one e8m0 exponent per "
                          f"{SCALE_GROUPS[0]} (or {SCALE_GROUPS[1]}) K-elements of each of the {rows} rows, "
                          f"shape {want}")
    return group


def _accumulator(ctx, acc, out_dtype, shape: tuple) -> Tensor:
    out = dtype_arg(out_dtype, f"the out_dtype of {FNAME}")
    if out != ir.f32:
        raise TypingError(f"{FNAME} accumulates in float32 only (as Triton), got out_dtype {dtype_name(out)}; "
                          "cast the result with .to()")
    acc = _unwrapped(acc)
    if acc is None:
        return semantic.constant(ctx, 0, ir.f32, shape)
    c = to_tensor(ctx, acc)
    if c.shape != shape or c.elem != ir.f32:
        raise TypingError(f"{FNAME}: acc must be a float32 tile of the product's shape {shape}, got {describe(c)}")
    return c


# --------------------------------------------------------------------------- #
# Decoding
# --------------------------------------------------------------------------- #

def _op(ctx, name: str, a, b) -> Tensor:
    return semantic.binary(ctx, name, a, b)


def decode_minifloat(ctx, codes: Tensor, fmt: Minifloat) -> Tensor:
    """``float32`` values of the integer ``codes`` (sign, exponent, mantissa
    in the low bits), exactly: normal codes rebias their exponent into
    float32's fields; subnormal ones (exponent 0) are ``mantissa * 2**(1 -
    bias - mantissa bits)``, a product of exact float32 values; then the
    format's infinities and NaNs; then the sign."""
    e_bits, m_bits = fmt.exponent, fmt.mantissa
    x = cast_to(ctx, codes, ir.u32)
    exponent = _op(ctx, "and", _op(ctx, "rshift", x, m_bits), (1 << e_bits) - 1)
    mantissa = _op(ctx, "and", x, (1 << m_bits) - 1)
    fraction = _op(ctx, "lshift", mantissa, F32_MANTISSA - m_bits)
    rebiased = _op(ctx, "add", exponent, F32_EXPONENT_BIAS - fmt.bias)
    normal = _op(ctx, "or", _op(ctx, "lshift", rebiased, F32_MANTISSA), fraction)
    subnormal_value = _op(ctx, "mul", cast_to(ctx, mantissa, ir.f32), 2.0 ** (1 - fmt.bias - m_bits))
    subnormal = bitcast_to(ctx, subnormal_value, ir.u32)
    magnitude = semantic.where(ctx, semantic.compare(ctx, "eq", exponent, 0), subnormal, normal)
    top_exponent = semantic.compare(ctx, "eq", exponent, (1 << e_bits) - 1)
    if fmt.specials == "ieee":
        magnitude = semantic.where(ctx, top_exponent, _op(ctx, "or", fraction, F32_INFINITY), magnitude)
    elif fmt.specials == "fn":
        is_nan = semantic.logical(ctx, "and", top_exponent,
                                  semantic.compare(ctx, "eq", mantissa, (1 << m_bits) - 1))
        magnitude = semantic.where(ctx, is_nan, F32_QUIET_NAN, magnitude)
    sign = _op(ctx, "lshift", _op(ctx, "rshift", x, e_bits + m_bits), 31)
    return bitcast_to(ctx, _op(ctx, "or", magnitude, sign), ir.f32)


def unpack_nibbles(ctx, packed: Tensor, axis: int) -> Tensor:
    """The 4-bit codes of ``packed`` bytes, twice as many along ``axis``: each
    byte's low nibble first, then its high nibble."""
    low, high = _op(ctx, "and", packed, 0xF), _op(ctx, "rshift", packed, 4)
    pairs = emit(ctx, ir.Join, lhs=low.handle, rhs=high.handle)  # [..., 2]
    rank = len(packed.shape)
    if axis != rank - 1:
        order = tuple(range(axis + 1)) + (rank,) + tuple(range(axis + 1, rank))
        pairs = emit(ctx, ir.Permute, src=pairs.handle, order=order)
    shape = tuple(n * 2 if d == axis else n for d, n in enumerate(packed.shape))
    return emit(ctx, ir.Reshape, src=pairs.handle, shape=shape)


def decode_operand(ctx, op: Operand, compute: ir.ScalarType) -> Tensor:
    """``op``'s values in the compute type."""
    if op.fmt in HALVES:
        return cast_to(ctx, op.bits, compute)
    codes = op.bits if op.packed_axis is None else unpack_nibbles(ctx, op.bits, op.packed_axis)
    return cast_to(ctx, decode_minifloat(ctx, codes, MINIFLOATS[op.fmt]), compute)


def decode_scale(ctx, scale: Tensor, compute: ir.ScalarType, fast_math: bool) -> Tensor:
    """e8m0 exponents as compute-type factors: the float32 with exponent bits
    ``s`` (``2**(s - 127)``, 0 for 0, infinity for 0xFF) rounded to the compute
    type, and NaN for 0xFF unless ``fast_math`` (NaN times anything is the NaN
    Triton's mask writes after the product)."""
    bits = _op(ctx, "lshift", cast_to(ctx, scale, ir.u32), F32_MANTISSA)
    factor = cast_to(ctx, bitcast_to(ctx, bits, ir.f32), compute)
    if fast_math:
        return factor
    return semantic.where(ctx, semantic.compare(ctx, "eq", scale, NAN_SCALE), float("nan"), factor)


def _spread_scale(ctx, factor: Tensor, group: int, op: Operand) -> Tensor:
    """Scale factors ``[..., rows, K // group]`` repeated over their groups
    and laid out as ``op`` (``[..., M, K]`` or ``[..., K, N]``)."""
    rows_k = factor.shape[:-1] + (op.k,)
    grouped = emit(ctx, ir.ExpandDims, src=factor.handle, axis=len(factor.shape))
    spread = broadcast_to(ctx, grouped, grouped.shape[:-1] + (group,))
    spread = emit(ctx, ir.Reshape, src=spread.handle, shape=rows_k)
    if op.side == "lhs":
        return spread
    rank = len(rows_k)
    return emit(ctx, ir.Permute, src=spread.handle, order=tuple(range(rank - 2)) + (rank - 1, rank - 2))


def scaled_operand(ctx, op: Operand, group: Optional[int], compute: ir.ScalarType, fast_math: bool) -> Tensor:
    """``op`` decoded and multiplied by its scales, in the compute type."""
    values = decode_operand(ctx, op, compute)
    if op.scale is None:
        return values
    factor = _spread_scale(ctx, decode_scale(ctx, op.scale, compute, fast_math), group, op)
    return _op(ctx, "mul", values, factor)


@implements(tl.dot_scaled)
def _dot_scaled(ctx, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc, fast_math, lhs_k_pack,
                rhs_k_pack, out_dtype):
    a = _operand(ctx, lhs, lhs_scale, lhs_format, lhs_k_pack, "lhs")
    b = _operand(ctx, rhs, rhs_scale, rhs_format, rhs_k_pack, "rhs")
    _check_shapes(a, b)
    group_a, group_b = _scale_group(a), _scale_group(b)
    if None not in (group_a, group_b) and group_a != group_b:
        raise TypingError(f"{FNAME}: lhs_scale and rhs_scale must cover groups of one size, got one exponent "
                          f"per {group_a} and per {group_b} K-elements")
    c = _accumulator(ctx, acc, out_dtype, a.shape[:-1] + (b.rows,))
    compute = ir.f16 if "fp16" in (a.fmt, b.fmt) else ir.bf16
    fast = _bool_arg(fast_math, "fast_math")
    x = scaled_operand(ctx, a, group_a, compute, fast)
    y = scaled_operand(ctx, b, group_b, compute, fast)
    return emit(ctx, ir.Dot, a=x.handle, b=y.handle, acc=c.handle, input_precision="ieee")
