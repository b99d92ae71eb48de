"""The typing rules of the kernel language, and the IR they build for operators.

The visitor (``tilec/ast_parse.py``) calls ``binary``, ``compare``, ``unary``,
``logical``, ``truth``, ``subscript``, ``attribute`` and ``to_tensor``;
the ``tl_*`` modules use the helpers (``operands``, ``broadcast_to``,
``cast_to``, ``constant``...).  Every function takes the visitor ``ctx``
first (``ctx.builder``, ``ctx.error``).

Rules follow Triton:

* Python numbers are *weak*: when a tensor's kind (bool < int < float) is
  at least the number's, the tensor's type wins (``x_i8 + 1`` is ``int8``,
  ``x_f16 * 2.0`` is ``float16``); an int number must then fit the type.
  Otherwise the number is typed as a literal (int -> int32, uint32, int64 or
  uint64, the first that fits; float -> float32, bool -> int1) and the usual
  rules apply (``computation_type``).
* ``/`` on ints gives float32; ``//`` and ``%`` on ints are C's truncating
  division and remainder; ``//`` on floats is an error (as Triton); ``%`` on
  floats is ``fmod``.  ``/``, ``//``, ``%`` compute float16/bfloat16 in
  float32, and refuse to mix signed and unsigned ints.
* Shapes broadcast as numpy's: missing leading dims are added, size-1 dims
  repeat; a scalar is splat.
* ``ptr + int`` and ``ptr - int`` move a pointer by elements.

A user mistake raises ``TypingError`` anywhere below; the public entry points
turn it into ``ctx.error`` (a ``CompilationError`` at the user's line).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Optional

from tilec import ir
from tilec import language as tl
from tilec.ir.fp8 import fp8_format


class TypingError(Exception):
    """A user's typing mistake; reported through ``ctx.error`` by the entry points."""


def reports_errors(fn):
    """Turn a ``TypingError`` raised inside ``fn(ctx, ...)`` into ``ctx.error``."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        try:
            return fn(ctx, *args, **kwargs)
        except TypingError as e:
            ctx.error(str(e))
    return wrapper


# --------------------------------------------------------------------------- #
# dtypes <-> IR types, and the front-end tensor
# --------------------------------------------------------------------------- #

_TL_TO_IR = {
    "int1": ir.i1, "int8": ir.i8, "int16": ir.i16, "int32": ir.i32, "int64": ir.i64,
    "uint8": ir.u8, "uint16": ir.u16, "uint32": ir.u32, "uint64": ir.u64,
    "fp16": ir.f16, "bf16": ir.bf16, "fp32": ir.f32, "fp64": ir.f64,
    "fp8e4nv": ir.f8e4nv, "fp8e5": ir.f8e5, "fp8e4b15": ir.f8e4b15, "fp8e4b8": ir.f8e4b8, "fp8e5b16": ir.f8e5b16,
}
_IR_TO_TL = {t: tl.dtype(name) for name, t in _TL_TO_IR.items()}


def to_ir_type(d: tl.dtype) -> ir.ElemType:
    """``tl.float32`` -> ``ir.f32``; ``tl.pointer_type(tl.float16)`` -> ``ir.PointerType(ir.f16)``."""
    if isinstance(d, tl.pointer_type):
        return ir.PointerType(to_ir_type(d.element_ty), d.address_space, d.const)
    if not isinstance(d, tl.dtype):
        raise TypingError(f"expected a dtype such as tl.float32, got {d!r}")
    return _TL_TO_IR[d.name]


def to_tl_dtype(t: ir.ElemType) -> tl.dtype:
    """The inverse of ``to_ir_type``."""
    if isinstance(t, ir.PointerType):
        return tl.pointer_type(to_tl_dtype(t.elem), t.space, t.const)
    return _IR_TO_TL[t]


def dtype_name(t: ir.ElemType) -> str:
    """How messages name an element type: Triton's short names ("int32", "fp16", "pointer<fp32>")."""
    return to_tl_dtype(t).name


class Tensor(tl.tensor):
    """A value during the walk: wraps the ``ir.Value`` ``handle``."""

    def __init__(self, handle: ir.Value):
        self.handle = handle

    @property
    def type(self) -> ir.Type:
        return self.handle.type

    @property
    def shape(self) -> tuple:
        return ir.shape_of(self.handle.type)

    @property
    def elem(self) -> ir.ElemType:
        return ir.elem_type(self.handle.type)

    @property
    def dtype(self) -> tl.dtype:
        return to_tl_dtype(self.elem)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def __repr__(self) -> str:
        return f"Tensor({self.handle.type})"


MAX_TILE_NUMEL = tl.TRITON_MAX_TENSOR_NUMEL  # 2**20, as in Triton


def emit(ctx, cls: type, **fields) -> Tensor:
    """Append a one-result op built from ``fields`` and wrap its result.

    Every tile the front end makes passes here (arange, full, reshape,
    broadcast, dot...), so this is where the size limit is kept: past it
    the back end's straight-line code grows without bound (a 2**24 tile ran
    for minutes and gigabytes), and Triton refuses such tiles too."""
    if issubclass(cls, _ELEMENTWISE_MATH) and any(is_fp8_value(v) for v in fields.values()):
        return _fp8_math(ctx, cls, fields)
    result = Tensor(ctx.builder.value(cls, **fields))
    if result.numel > MAX_TILE_NUMEL:
        raise TypingError(f"a tile of shape {result.shape} has {result.numel} elements, more than the limit of "
                          f"{MAX_TILE_NUMEL} (2**20, as in Triton); split the work into smaller blocks, in a loop "
                          "or over more programs")
    return result


_ELEMENTWISE_MATH = (ir.UnaryOp, ir.BinaryOp, ir.Fma)


def is_fp8_value(v) -> bool:
    """Whether ``v`` is an IR value of an fp8 element type."""
    return isinstance(v, ir.Value) and isinstance(ir.elem_type(v.type), ir.ScalarType) and ir.elem_type(v.type).is_fp8


def _fp8_math(ctx, cls: type, fields: dict) -> Tensor:
    """An elementwise op on fp8 operands, which the IR computes only in
    wider floats: ``abs`` clears the sign bit (``_fp8_abs``); every other op
    computes in float32 and a float result is rounded back once (to nearest
    even) to the operands' fp8 type, which Triton's typing gives it."""
    fp8 = next(ir.elem_type(v.type) for v in fields.values() if is_fp8_value(v))
    if cls is ir.Abs:
        return _fp8_abs(ctx, Tensor(fields["src"]))
    wide = {name: cast_to(ctx, Tensor(v), ir.f32).handle if is_fp8_value(v) else v for name, v in fields.items()}
    result = emit(ctx, cls, **wide)
    return cast_to(ctx, result, fp8) if result.elem == ir.f32 else result


def _fp8_abs(ctx, x: Tensor) -> Tensor:
    """``|x|`` of an fp8 tile: its sign bit cleared (Triton's); the one NaN of
    a format without negative zero (``0x80``) stays NaN."""
    bits = bitcast_to(ctx, x, ir.u8)
    cleared = emit(ctx, ir.And, lhs=bits.handle, rhs=constant(ctx, 0x7F, ir.u8, x.shape).handle)
    if fp8_format(x.elem).family == "fnuz":
        nan = emit(ctx, ir.Compare, lhs=bits.handle, rhs=constant(ctx, 0x80, ir.u8, x.shape).handle, pred="eq")
        cleared = emit(ctx, ir.Select, cond=nan.handle, a=bits.handle, b=cleared.handle)
    return bitcast_to(ctx, cleared, x.elem)


def describe(x: Any) -> str:
    """A value's type as messages name it ("int32", "tile<4x8xfp32>", "a Python str")."""
    if isinstance(x, Tensor):
        name = dtype_name(x.elem)
        return f"tile<{'x'.join(map(str, x.shape))}x{name}>" if x.shape else name
    return f"a Python {type(x).__name__}"


# --------------------------------------------------------------------------- #
# Literals and constants
# --------------------------------------------------------------------------- #

def is_number(x: Any) -> bool:
    """A Python bool, int or float: a *weakly typed* operand."""
    return isinstance(x, (bool, int, float))


def literal_type(value) -> ir.ScalarType:
    """The type Triton gives a Python number used as a tensor."""
    if isinstance(value, bool):
        return ir.i1
    if isinstance(value, int):
        for t in (ir.i32, ir.u32, ir.i64, ir.u64):
            lo, hi = int_range(t)
            if lo <= value <= hi:
                return t
        raise TypingError(f"integer {value} does not fit in 64 bits")
    mag = abs(value)
    fits_f32 = mag == 0.0 or mag == float("inf") or value != value or 2.0 ** -126 <= mag <= 3.4028234663852886e38
    return ir.f32 if fits_f32 else ir.f64


def int_range(t: ir.ScalarType) -> tuple[int, int]:
    """The smallest and largest value of an integer type (``i1``: 0 and 1)."""
    if t.is_bool:
        return 0, 1
    if t.is_signed:
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def constant_value(value, t: ir.ScalarType):
    """``value`` as a ``Constant`` of type ``t`` holds it: ints wrap to ``t``'s range."""
    if t.is_float:
        return float(value)
    if t.is_bool:
        return bool(value)
    lo, _ = int_range(t)
    wrapped = int(value) % (1 << t.bits)
    return wrapped - (1 << t.bits) if t.is_signed and wrapped >= -lo else wrapped


def constant(ctx, value, t: ir.ScalarType, shape: tuple = ()) -> Tensor:
    """A constant of element type ``t``, splat over ``shape``."""
    return emit(ctx, ir.Constant, value=constant_value(value, t), type=ir.with_shape(t, shape))


@reports_errors
def to_tensor(ctx, value, dtype=None) -> Tensor:
    """``value`` as a tensor: tensors pass through; numbers become constants
    (of ``dtype``, a ``tl.dtype`` or IR type, else their literal type)."""
    if isinstance(value, tl.constexpr):
        value = value.value
    if isinstance(value, Tensor):
        return value
    if not is_number(value):
        raise TypingError(f"expected a tensor or a number, got {describe(value)}")
    if dtype is None:
        return constant(ctx, value, literal_type(value))
    return constant(ctx, value, dtype if isinstance(dtype, ir.ScalarType) else to_ir_type(dtype))


# --------------------------------------------------------------------------- #
# Type promotion
# --------------------------------------------------------------------------- #

def kind_rank(t: ir.ScalarType) -> int:
    """Triton's dtype kinds in order: bool 0, int (signed or not) 1, float 2."""
    return {"bool": 0, "int": 1, "uint": 1, "float": 2}[t.kind]


def integer_promote(a: ir.ScalarType, b: ir.ScalarType) -> ir.ScalarType:
    """C's usual arithmetic conversions for two integer types (``i1`` counts as signed)."""
    a_signed, b_signed = a.kind != "uint", b.kind != "uint"
    if a_signed == b_signed:
        return a if a.bits > b.bits else b
    unsigned, signed = (a, b) if not a_signed else (b, a)
    return unsigned if unsigned.bits >= signed.bits else signed


def computation_type(a: ir.ScalarType, b: ir.ScalarType, a_weak: bool = False, b_weak: bool = False,
                     div_or_mod: bool = False) -> ir.ScalarType:
    """The type both operands of an arithmetic op are converted to (Triton's rules).

    ``a_weak``/``b_weak``: that operand is a Python number.  ``div_or_mod``:
    the op is ``/``, ``//`` or ``%``, which compute 16-bit floats in float32.
    """
    if a_weak != b_weak:
        number, tensor = (a, b) if a_weak else (b, a)
        if kind_rank(number) <= kind_rank(tensor):
            return ir.f32 if div_or_mod and tensor in (ir.f16, ir.bf16) else tensor
    if ir.f64 in (a, b):
        return ir.f64
    if ir.f32 in (a, b):
        return ir.f32
    if ir.f16 in (a, b):
        return ir.f32 if div_or_mod else ir.f16
    if a == b == ir.bf16:
        return ir.f32 if div_or_mod else ir.bf16
    if ir.bf16 in (a, b):
        return ir.f32
    if a.is_fp8 and b.is_fp8:
        return a if a == b else ir.f16
    if a.is_fp8 or b.is_fp8:
        raise TypingError(f"cannot combine {dtype_name(a)} with {dtype_name(b)} (as Triton): cast the "
                          "integer to a float type, or the fp8 value with .to(tl.float32)")
    if div_or_mod and (a.kind == "uint") != (b.kind == "uint"):
        raise TypingError(f"Cannot use /, // or % with {dtype_name(a)} and {dtype_name(b)} because they have "
                          "different signedness; cast one of them (x.to(tl.int32) or x.to(tl.uint32))")
    return integer_promote(a, b)


def _elem_of(x) -> ir.ElemType:
    if is_number(x):
        return literal_type(x)
    if not isinstance(x, Tensor):
        raise TypingError(f"expected a tensor or a number, got {describe(x)}")
    return x.elem


def _check_pointer_operands(a: ir.ElemType, b: ir.ElemType, allow_ptr: bool, what: str) -> None:
    """Triton's ``check_ptr_type_impl``: where a pointer may meet what."""
    if not isinstance(a, ir.PointerType):
        return
    if not allow_ptr:
        raise TypingError(f"`{what}` is not defined on pointers ({dtype_name(a)})")
    if isinstance(b, ir.PointerType) and a != b:
        raise TypingError(f"`{what}` of different pointer types {dtype_name(a)} and {dtype_name(b)}")
    if isinstance(b, ir.ScalarType) and b.is_float:
        raise TypingError(f"`{what}` of a pointer and a float ({dtype_name(b)}); pointer offsets are integers")


def _weak_operand(ctx, value, t: ir.ScalarType, shape: tuple) -> Tensor:
    """A Python number as a ``t`` constant of ``shape``, refusing values ``t`` cannot hold."""
    if t.is_int and not isinstance(value, float):
        lo, hi = int_range(t)
        if value < 0 and t.kind == "uint":
            raise TypingError(f"cannot combine the negative number {value} with an unsigned {dtype_name(t)} "
                              f"tensor; cast one of them explicitly")
        if not lo <= value <= hi:
            raise TypingError(f"the number {value} is out of range for {dtype_name(t)}; "
                              f"cast the tensor to a wider type first (x.to(tl.int64))")
    return constant(ctx, value, t, shape)


def operands(ctx, lhs, rhs, what: str, div_or_mod: bool = False, allow_lhs_ptr: bool = False,
             allow_rhs_ptr: bool = False) -> tuple[Tensor, Tensor]:
    """Convert two operands to their computation type and a common shape."""
    a, b = _elem_of(lhs), _elem_of(rhs)
    _check_pointer_operands(a, b, allow_lhs_ptr, what)
    _check_pointer_operands(b, a, allow_rhs_ptr, what)
    if isinstance(a, ir.PointerType) or isinstance(b, ir.PointerType):
        return broadcast_pair(ctx, to_tensor(ctx, lhs), to_tensor(ctx, rhs))
    t = computation_type(a, b, is_number(lhs), is_number(rhs), div_or_mod)
    # A number becomes a constant already of the other operand's shape: no splat needed.
    lhs_t = _weak_operand(ctx, lhs, t, _shape(rhs)) if is_number(lhs) else cast_to(ctx, lhs, t)
    rhs_t = _weak_operand(ctx, rhs, t, _shape(lhs)) if is_number(rhs) else cast_to(ctx, rhs, t)
    return broadcast_pair(ctx, lhs_t, rhs_t)


def _shape(x) -> tuple:
    return x.shape if isinstance(x, Tensor) else ()


# --------------------------------------------------------------------------- #
# Broadcasting
# --------------------------------------------------------------------------- #

def broadcast_shapes(a: tuple, b: tuple) -> tuple:
    """numpy's rule: align trailing dims; each pair must be equal or contain a 1."""
    rank = max(len(a), len(b))
    pa, pb = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and 1 not in (x, y):
            raise TypingError(f"shapes {tuple(a)} and {tuple(b)} cannot be broadcast together "
                              f"(dimension {i}: {x} vs {y})")
        out.append(max(x, y))
    return tuple(out)


def broadcast_to(ctx, x: Tensor, shape: tuple) -> Tensor:
    """``x`` splat or broadcast to ``shape``."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if not x.shape:
        return emit(ctx, ir.Splat, src=x.handle, shape=shape)
    if len(x.shape) > len(shape) or broadcast_shapes(x.shape, shape) != shape:
        raise TypingError(f"cannot broadcast shape {x.shape} to {shape}")
    if len(x.shape) < len(shape):
        x = emit(ctx, ir.Reshape, src=x.handle, shape=(1,) * (len(shape) - len(x.shape)) + x.shape)
    return x if x.shape == shape else emit(ctx, ir.Broadcast, src=x.handle, shape=shape)


def broadcast_pair(ctx, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    shape = broadcast_shapes(a.shape, b.shape)
    return broadcast_to(ctx, a, shape), broadcast_to(ctx, b, shape)


def broadcast_all(ctx, *xs: Tensor) -> list[Tensor]:
    shape: tuple = ()
    for x in xs:
        shape = broadcast_shapes(shape, x.shape)
    return [broadcast_to(ctx, x, shape) for x in xs]


# --------------------------------------------------------------------------- #
# Casts
# --------------------------------------------------------------------------- #

def nonzero(ctx, x: Tensor) -> Tensor:
    """``x != 0`` as ``i1`` (pointers compare their address)."""
    if isinstance(x.elem, ir.PointerType):
        x = cast_to(ctx, x, ir.i64)
    zero = constant(ctx, 0, x.elem, x.shape)
    return emit(ctx, ir.Compare, lhs=x.handle, rhs=zero.handle, pred="ne")


def cast_to(ctx, x, to: ir.ElemType, rounding: Optional[str] = None) -> Tensor:
    """Triton's ``cast``: numbers convert, ``-> int1`` is ``!= 0``, pointers <-> int64."""
    x = to_tensor(ctx, x)
    src = x.elem
    if rounding is not None and not (_is_float(src) and _is_float(to) and to.bits < src.bits):
        raise TypingError(f"fp_downcast_rounding applies only to float narrowing, not {dtype_name(src)} -> "
                          f"{dtype_name(to)}")
    if rounding not in (None, "rtne", "rtz"):
        raise TypingError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
    if src == to:
        return x
    if to == ir.i1:
        return nonzero(ctx, x)
    _check_pointer_cast(src, to)
    _check_fp8_cast(src, to)
    return emit(ctx, ir.Cast, src=x.handle, to=to, rounding=rounding or "rtne")


def _is_float(t: ir.ElemType) -> bool:
    return isinstance(t, ir.ScalarType) and t.is_float


def is_float_tensor(x: Tensor) -> bool:
    return _is_float(x.elem)


def _check_fp8_cast(src: ir.ElemType, to: ir.ElemType) -> None:
    """fp8 values convert to and from floats only (Triton's rule; a bitcast reads their bits)."""
    ends = [t for t in (src, to) if isinstance(t, ir.ScalarType)]
    if any(t.is_fp8 for t in ends) and not (len(ends) == 2 and all(t.is_float for t in ends)):
        raise TypingError(f"cannot cast {dtype_name(src)} to {dtype_name(to)}: fp8 types convert only to and "
                          "from float types (go through tl.float32), or reinterpret their bits with "
                          ".to(tl.uint8, bitcast=True)")


def _check_pointer_cast(src: ir.ElemType, to: ir.ElemType) -> None:
    """Pointers convert to pointers, to 64-bit ints, and from any int (Triton's rule)."""
    if not isinstance(src, ir.PointerType) and not isinstance(to, ir.PointerType):
        return
    other = to if isinstance(src, ir.PointerType) else src
    if isinstance(other, ir.PointerType):
        return
    if other.is_float or (isinstance(src, ir.PointerType) and other.bits != 64):
        raise TypingError(f"cannot cast between {dtype_name(src)} and {dtype_name(to)}: pointers convert "
                          "only to and from integers (tl.int64 keeps the address)")


def bitcast_to(ctx, x, to: ir.ElemType) -> Tensor:
    """Reinterpret bits as ``to`` (same width); a pointer end makes it a plain ``cast``."""
    x = to_tensor(ctx, x)
    if isinstance(x.elem, ir.PointerType) or isinstance(to, ir.PointerType):
        return cast_to(ctx, x, to)
    if x.elem.bits != to.bits:
        raise TypingError(f"cannot bitcast {dtype_name(x.elem)} ({x.elem.bits} bits) to {dtype_name(to)} "
                          f"({to.bits} bits): the widths must match")
    return x if x.elem == to else emit(ctx, ir.Bitcast, src=x.handle, to=to)


# --------------------------------------------------------------------------- #
# Operators
# --------------------------------------------------------------------------- #

def _pointer_offset(ctx, offset: Tensor, negate: bool) -> Tensor:
    """An ``addptr`` offset: unsigned offsets zero-extend to int64 (addptr's offset is signed)."""
    if isinstance(offset.elem, ir.PointerType) or offset.elem.is_float:
        raise TypingError(f"a pointer moves by integers, not {dtype_name(offset.elem)}")
    if offset.elem.kind == "uint" and offset.elem.bits < 64 or offset.elem.is_bool:
        offset = cast_to(ctx, offset, ir.i64)
    return emit(ctx, ir.Neg, src=offset.handle) if negate else offset


def _add(ctx, lhs, rhs) -> Tensor:
    a, b = operands(ctx, lhs, rhs, "+", allow_lhs_ptr=True, allow_rhs_ptr=True)
    if isinstance(b.elem, ir.PointerType):
        if isinstance(a.elem, ir.PointerType):
            raise TypingError("cannot add two pointers")
        a, b = b, a
    if isinstance(a.elem, ir.PointerType):
        return emit(ctx, ir.AddPtr, ptr=a.handle, offset=_pointer_offset(ctx, b, False).handle)
    return emit(ctx, ir.Add, lhs=a.handle, rhs=b.handle)


def _sub(ctx, lhs, rhs) -> Tensor:
    a, b = operands(ctx, lhs, rhs, "-", allow_lhs_ptr=True, allow_rhs_ptr=True)
    if isinstance(b.elem, ir.PointerType):
        raise TypingError("cannot subtract a pointer; to measure a distance, cast both pointers to tl.int64")
    if isinstance(a.elem, ir.PointerType):
        return emit(ctx, ir.AddPtr, ptr=a.handle, offset=_pointer_offset(ctx, b, True).handle)
    return emit(ctx, ir.Sub, lhs=a.handle, rhs=b.handle)


def _arith(cls: type, symbol: str, div_or_mod: bool = False):
    def build(ctx, lhs, rhs) -> Tensor:
        a, b = operands(ctx, lhs, rhs, symbol, div_or_mod=div_or_mod)
        return emit(ctx, cls, lhs=a.handle, rhs=b.handle)
    return build


def _truediv(ctx, lhs, rhs) -> Tensor:
    a, b = operands(ctx, lhs, rhs, "/", div_or_mod=True)
    if a.elem.is_int:
        a, b = cast_to(ctx, a, ir.f32), cast_to(ctx, b, ir.f32)
    return emit(ctx, ir.Div, lhs=a.handle, rhs=b.handle)


def _floordiv(ctx, lhs, rhs) -> Tensor:
    a, b = operands(ctx, lhs, rhs, "//", div_or_mod=True)
    if a.elem.is_float:
        raise TypingError(f"`//` is defined on integers only, as in Triton (got {describe(lhs)} // "
                          f"{describe(rhs)}); write tl.floor(a / b)")
    return emit(ctx, ir.Div, lhs=a.handle, rhs=b.handle)


def _integer_operands(ctx, lhs, rhs, symbol: str) -> tuple[Tensor, Tensor]:
    """``operands`` for the bitwise ops and shifts, which refuse floats and pointers."""
    a, b = operands(ctx, lhs, rhs, symbol)
    if not a.elem.is_int:
        raise TypingError(f"invalid operands of type {describe(lhs)} and {describe(rhs)} for `{symbol}`: "
                          "it needs integer or boolean operands")
    return a, b


def _bitwise(cls: type, symbol: str):
    def build(ctx, lhs, rhs) -> Tensor:
        a, b = _integer_operands(ctx, lhs, rhs, symbol)
        return emit(ctx, cls, lhs=a.handle, rhs=b.handle)
    return build


def with_signedness(t: ir.ScalarType, signed: bool) -> ir.ScalarType:
    """The int type of ``t``'s width and the given signedness (``i1`` stays ``i1``)."""
    if t.is_bool or (t.kind == "int") == signed:
        return t
    return ir.ScalarType(f"{'i' if signed else 'u'}{t.bits}")


def _shift_right(ctx, lhs, rhs) -> Tensor:
    """``>>`` gives the promoted type, but shifts arithmetically when the LEFT
    operand's own type is signed (Triton's rule: ``int8 >> uint8`` is a uint8
    that keeps the int8's sign fill, ``[-100] >> [2]`` is 231).  A number on
    the left takes the promoted type, so the promoted type decides there."""
    a, b = _integer_operands(ctx, lhs, rhs, ">>")
    left = a.elem if is_number(lhs) else lhs.elem
    shift_type = with_signedness(a.elem, left.kind == "int")
    shifted = emit(ctx, ir.Shr, lhs=bitcast_to(ctx, a, shift_type).handle, rhs=bitcast_to(ctx, b, shift_type).handle)
    return bitcast_to(ctx, shifted, a.elem)


def _unsupported_pow(ctx, lhs, rhs):
    raise TypingError("`**` is not supported on tensors (as in Triton); multiply, or use "
                      "tl.exp2(y * tl.log2(x))")


_BINARY = {
    "add": _add, "sub": _sub, "mul": _arith(ir.Mul, "*"), "truediv": _truediv, "floordiv": _floordiv,
    "mod": _arith(ir.Rem, "%", div_or_mod=True), "pow": _unsupported_pow,
    "and": _bitwise(ir.And, "&"), "or": _bitwise(ir.Or, "|"), "xor": _bitwise(ir.Xor, "^"),
    "lshift": _bitwise(ir.Shl, "<<"), "rshift": _shift_right,
}

@reports_errors
def binary(ctx, op: str, lhs, rhs) -> Tensor:
    """``lhs <op> rhs`` for ``op`` in add sub mul truediv floordiv mod and or xor lshift rshift."""
    if op not in _BINARY:
        raise TypingError(f"unknown binary operator {op!r}")
    return _BINARY[op](ctx, lhs, rhs)


@reports_errors
def compare(ctx, op: str, lhs, rhs) -> Tensor:
    """``lhs <op> rhs`` (eq ne lt le gt ge) as ``int1``; pointers compare with pointers of their type."""
    a, b = operands(ctx, lhs, rhs, _CMP_SYMBOLS[op], allow_lhs_ptr=True, allow_rhs_ptr=True)
    if a.elem != b.elem:
        raise TypingError(f"cannot compare {describe(a)} with {describe(b)}")
    return emit(ctx, ir.Compare, lhs=a.handle, rhs=b.handle, pred=op)


_CMP_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _no_pointer(x: Tensor, symbol: str) -> Tensor:
    if isinstance(x.elem, ir.PointerType):
        raise TypingError(f"`{symbol}` is not defined on pointers ({dtype_name(x.elem)})")
    return x


def _invert(ctx, x: Tensor) -> Tensor:
    if not _no_pointer(x, "~").elem.is_int:
        raise TypingError(f"`~` needs an integer or boolean, got {describe(x)}")
    return emit(ctx, ir.Not, src=x.handle)


_UNARY = {
    "neg": lambda ctx, x: emit(ctx, ir.Neg, src=_no_pointer(x, "-").handle),
    "pos": lambda ctx, x: _no_pointer(x, "+"),
    "invert": _invert,
    "not": lambda ctx, x: emit(ctx, ir.Not, src=nonzero(ctx, _no_pointer(x, "not")).handle),
}


@reports_errors
def unary(ctx, op: str, x) -> Tensor:
    """``-x`` (neg), ``+x`` (pos), ``~x`` (invert, ints), ``not x`` (``x == 0`` as ``int1``)."""
    return _UNARY[op](ctx, to_tensor(ctx, x))


@reports_errors
def logical(ctx, op: str, lhs, rhs) -> Tensor:
    """``lhs and rhs`` / ``lhs or rhs`` on tensors: both are made ``int1`` (``!= 0``), then combined."""
    a, b = broadcast_pair(ctx, cast_to(ctx, lhs, ir.i1), cast_to(ctx, rhs, ir.i1))
    return emit(ctx, {"and": ir.And, "or": ir.Or}[op], lhs=a.handle, rhs=b.handle)


@reports_errors
def truth(ctx, x) -> ir.Value:
    """A scalar ``i1`` for an ``if``/``while`` condition (numbers compare ``!= 0``)."""
    x = to_tensor(ctx, x)
    if x.shape:
        raise TypingError(f"a tile ({describe(x)}) cannot be a condition; reduce it first (tl.max, tl.sum) "
                          "or select elementwise with tl.where")
    return cast_to(ctx, x, ir.i1).handle


@reports_errors
def where(ctx, condition, x, y) -> Tensor:
    """``tl.where``: ``x``/``y`` promoted together, everything broadcast."""
    cond = cast_to(ctx, condition, ir.i1)
    a, b = operands(ctx, x, y, "tl.where", allow_lhs_ptr=True, allow_rhs_ptr=True)
    if a.elem != b.elem:
        raise TypingError(f"tl.where branches have incompatible types {describe(a)} and {describe(b)}")
    cond, a, b = broadcast_all(ctx, cond, a, b)
    return emit(ctx, ir.Select, cond=cond.handle, a=a.handle, b=b.handle)


# --------------------------------------------------------------------------- #
# Subscripts and attributes
# --------------------------------------------------------------------------- #

def _is_full_slice(s) -> bool:
    return isinstance(s, slice) and s.start is None and s.stop is None and s.step is None


@reports_errors
def subscript(ctx, x, index) -> Any:
    """``x[None, :]``-style indexing of a tile, as Triton's: the ``None`` at
    position ``i`` of the index adds a size-1 dim at ``i``; ``:`` changes
    nothing (so ``scalar[None, :]`` has shape ``(1,)``)."""
    if not isinstance(x, Tensor):
        return x[index]
    items = index if isinstance(index, tuple) else (index,)
    if any(not (it is None or _is_full_slice(it)) for it in items):
        raise TypingError(f"unsupported tensor index {index!r}: tiles can only be indexed with None and ':' "
                          "(as x[:, None]); to pick elements, use tl.where with a mask, or a reduction")
    for pos, it in enumerate(items):
        if it is None:
            if pos > len(x.shape):
                raise TypingError(f"the None at position {pos} of the index is past the last dim of {describe(x)}")
            x = emit(ctx, ir.ExpandDims, src=x.handle, axis=pos)
    return x


@dataclass(frozen=True)
class BoundMethod:
    """``x.sum`` before it is called: the ``tl`` stub ``fn`` with ``x`` as its first argument."""

    fn: Any
    self_value: Tensor

    def call(self, ctx, args: list, kwargs: dict) -> Any:
        from tilec.frontend.tl_ops import call_builtin  # tl_ops imports this module
        return call_builtin(ctx, self.fn, [self.self_value, *args], kwargs)


def _transpose(ctx, x: Tensor) -> Tensor:
    return emit(ctx, ir.Permute, src=x.handle, order=tuple(reversed(range(len(x.shape)))))


def _type_of(ctx, x: Tensor):
    return tl.block_type(x.dtype, x.shape) if x.shape else x.dtype


_ATTRIBUTES = {
    "dtype": lambda ctx, x: x.dtype,
    "shape": lambda ctx, x: x.shape,
    "numel": lambda ctx, x: x.numel,
    "type": _type_of,
    "T": _transpose,
}


def is_number_tensor_attribute(x, name: str) -> bool:
    """Whether ``x.name`` reads a Python number as a tensor: ``name`` is a tensor's
    attribute or method that the number itself lacks (``to``, ``dtype``, not ``real``)."""
    return is_number(x) and not hasattr(x, name) and (name in _ATTRIBUTES or name in tl.TENSOR_METHODS)


@reports_errors
def attribute(ctx, x, name: str) -> Any:
    """``x.dtype``, ``x.shape``, ``x.type``, ``x.numel``, ``x.T``, or a method (``BoundMethod``).

    A Python number lacking ``name`` is the tensor Triton makes of it (its
    literal type: ``(0).to(tl.int64)``, ``(1.5).dtype`` is ``tl.float32``)."""
    if is_number_tensor_attribute(x, name):
        x = to_tensor(ctx, x)
    if not isinstance(x, Tensor):
        if not hasattr(x, name):
            raise TypingError(f"{describe(x)} has no attribute {name!r}")
        return getattr(x, name)
    if name in _ATTRIBUTES:
        return _ATTRIBUTES[name](ctx, x)
    if name in tl.TENSOR_METHODS:
        return BoundMethod(tl.TENSOR_METHODS[name], x)
    raise TypingError(f"a tensor has no attribute {name!r}; its methods are {', '.join(sorted(tl.TENSOR_METHODS))}")
