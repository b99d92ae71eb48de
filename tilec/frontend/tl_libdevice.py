"""The libdevice functions of ``tl.math`` / ``tl.extra.libdevice``: each
builds one ``math_call`` op naming its function (``ir.math_functions``), or,
for the correctly rounded arithmetic (``add_rn``...), the IR of the operator.

Operands follow Triton's libdevice rules: the value operands are promoted to
a common type (a Python number becomes float32, or int32 for the integer
functions); float functions take f32 and f64 as in Triton, and f16/bf16
too (computed in f32; not ``nextafter``); int32 operands (``ldexp``'s exponent, ``jn``'s order)
take any integer and convert it.  ``pow(x, n)`` with an integer ``n`` is
libdevice's ``powi``.
"""
from __future__ import annotations

import functools

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.semantic import Tensor, TypingError, broadcast_to, cast_to, describe, dtype_name, emit, to_tensor
from tilec.frontend.tl_ops import BUILTINS, implements
from tilec.ir.math_functions import FUNCTIONS, VALUE
from tilec.language.extra import libdevice as _libdevice  # the module itself: `tl.extra`'s attribute can be rebound

# Stub name -> the ``math_functions`` name where they differ.
_RENAMED = {"finitef": "finite", "isfinited": "finite"}
# Functions computed in the operand type itself (a step of its own ulp): no
# widening of 16-bit floats to float32 can give them.
_NOT_WIDENED = {"nextafter"}


def math_call(ctx, name: str, args: list, fname: str) -> Tensor:
    """``name(*args)`` as a ``math_call`` op, its operands typed and broadcast."""
    f = FUNCTIONS[name]
    values = _common_type(ctx, [a for p, a in zip(f.params, args) if p == VALUE], f.kinds, fname)
    t = values[0].elem
    if f.kinds == "float" and not semantic.is_float_tensor(values[0]):
        raise TypingError(f"`{fname}` takes floating-point values, got {describe(values[0])}; "
                          f"convert first: {fname}(x.to(tl.float32))")
    if name in _NOT_WIDENED and t.is_float and t.bits < 32:
        raise TypingError(f"`{fname}` takes float32/float64 values (as Triton), got {describe(values[0])}")
    if f.kinds == "int" and not (t.is_int and not t.is_bool and t.bits in f.int_bits):
        widths = "/".join(f"{k}{b}" for b in f.int_bits for k in ("int", "uint"))
        raise TypingError(f"`{fname}` takes {widths} values, got {describe(values[0])}")
    it = iter(values)
    operands = [next(it) if p == VALUE else _int32(ctx, a, fname) for p, a in zip(f.params, args)]
    shape = functools.reduce(semantic.broadcast_shapes, [o.shape for o in operands])
    handles = [broadcast_to(ctx, o, shape).handle for o in operands]
    return emit(ctx, ir.MathCall, fn=name, args=handles)


def _common_type(ctx, values: list, kinds: str, fname: str) -> list[Tensor]:
    """The value operands converted to one type: Triton's promotion of their
    types, Python numbers as float32 (int32 for an integer function)."""
    literal = ir.f32 if kinds == "float" else ir.i32
    tensors = [v if isinstance(v, Tensor) else to_tensor(ctx, v, literal if semantic.is_number(v) else None)
               for v in values]
    if any(isinstance(x.elem, ir.PointerType) for x in tensors):
        raise TypingError(f"`{fname}` does not take pointers")
    t = functools.reduce(semantic.computation_type, [x.elem for x in tensors])
    return [x if x.elem == t else cast_to(ctx, x, t) for x in tensors]


def _int32(ctx, value, fname: str) -> Tensor:
    """An int32 operand: an integer of any width converted, never a float."""
    x = to_tensor(ctx, value, ir.i32 if semantic.is_number(value) else None)
    if not (isinstance(x.elem, ir.ScalarType) and x.elem.is_int):
        raise TypingError(f"`{fname}` takes an integer (int32) here, got {describe(x)}")
    return x if x.elem == ir.i32 else cast_to(ctx, x, ir.i32)


def _implement(stub, name: str) -> None:
    fname = f"libdevice.{stub.__name__}"
    implements(stub)(lambda ctx, **args: math_call(ctx, name, list(args.values()), fname))


for _stub_name in tl.math.LIBDEVICE_FUNCTIONS:
    _name = _RENAMED.get(_stub_name, _stub_name)
    if _name in FUNCTIONS:
        _implement(getattr(tl.math, _stub_name), _name)
_implement(_libdevice.exp, "exp")  # libdevice's own, unlike tl.exp


@implements(tl.math.pow)
def _pow(ctx, arg0, arg1):
    """``x ** y``: libdevice's ``powi`` for an integer exponent, ``pow`` otherwise."""
    exponent = to_tensor(ctx, arg1, ir.i32 if isinstance(arg1, int) and not isinstance(arg1, bool) else None)
    integer = isinstance(exponent.elem, ir.ScalarType) and exponent.elem.is_int
    return math_call(ctx, "powi" if integer else "pow", [arg0, exponent], "libdevice.pow")


def _float_operands(ctx, args: tuple, fname: str) -> list[Tensor]:
    values = _common_type(ctx, list(args), "float", fname)
    if not semantic.is_float_tensor(values[0]):
        raise TypingError(f"`{fname}` takes floating-point values, got {dtype_name(values[0].elem)}")
    return values


def _rounded_to_nearest(op: str):
    """``add_rn``...: the operator, which rounds to nearest already."""
    def impl(ctx, arg0, arg1):
        a, b = _float_operands(ctx, (arg0, arg1), f"libdevice.{op}_rn")
        return semantic.binary(ctx, op, a, b)
    return impl


implements(tl.math.add_rn)(_rounded_to_nearest("add"))
implements(tl.math.sub_rn)(_rounded_to_nearest("sub"))
implements(tl.math.mul_rn)(_rounded_to_nearest("mul"))


@implements(tl.math.fma_rn)
def _fma_rn(ctx, arg0, arg1, arg2):
    return BUILTINS[tl.fma](ctx, *_float_operands(ctx, (arg0, arg1, arg2), "libdevice.fma_rn"))


@implements(tl.math.rcp_rn)
def _rcp_rn(ctx, arg0):
    (x,) = _float_operands(ctx, (arg0,), "libdevice.rcp_rn")
    return BUILTINS[tl.div_rn](ctx, semantic.constant(ctx, 1.0, x.elem), x)


# --------------------------------------------------------------------------- #
# Conversions and reinterpretations: casts, bitcasts and shifts
# --------------------------------------------------------------------------- #

_FLOATS = {"float": ir.f32, "double": ir.f64}
# libdevice's integer names -> (the type converted to, the type Triton gives the result:
# the unsigned ones come back as the signed type of their width, holding the same bits).
_INTS = {"int": (ir.i32, ir.i32), "uint": (ir.u32, ir.i32), "ll": (ir.i64, ir.i64), "ull": (ir.u64, ir.i64)}
# Rounding mode -> the function rounding to an integral value first (the cast then truncates exactly).
_INTEGRAL = {"rn": "rint", "rz": None, "rd": "floor", "ru": "ceil"}


def _typed(ctx, value, t: ir.ScalarType, fname: str) -> Tensor:
    """``value`` as type ``t``: a number converts, a narrower float widens (exactly);
    anything else is an error naming the type the function takes."""
    x = to_tensor(ctx, value, t if semantic.is_number(value) else None)
    if x.elem == t:
        return x
    if isinstance(x.elem, ir.ScalarType) and x.elem.is_float and t.is_float and x.elem.bits < t.bits:
        return cast_to(ctx, x, t)
    raise TypingError(f"`{fname}` takes {dtype_name(t)} values, got {describe(x)}")


def _float_to_int(src: str, dst: str, mode: str):
    fname = f"libdevice.{src}2{dst}_{mode}"

    def impl(ctx, arg0):
        x = _typed(ctx, arg0, _FLOATS[src], fname)
        if _INTEGRAL[mode] == "rint":
            x = math_call(ctx, "rint", [x], fname)
        elif _INTEGRAL[mode] is not None:
            x = emit(ctx, ir.Floor if mode == "rd" else ir.Ceil, src=x.handle)
        to, result = _INTS[dst]
        y = cast_to(ctx, x, to)  # saturating; NaN gives 0 (as the GPU's conversions)
        return y if to == result else semantic.bitcast_to(ctx, y, result)
    return impl


def _converting(src: ir.ScalarType, to: ir.ScalarType, fname: str, rounding=None):
    return lambda ctx, arg0: cast_to(ctx, _typed(ctx, arg0, src, fname), to, rounding)


def _reinterpreting(src: ir.ScalarType, to: ir.ScalarType, fname: str):
    return lambda ctx, arg0: semantic.bitcast_to(ctx, _typed(ctx, arg0, src, fname), to)


for _src in _FLOATS:
    for _dst in _INTS:
        for _mode in _INTEGRAL:
            implements(getattr(tl.math, f"{_src}2{_dst}_{_mode}"))(_float_to_int(_src, _dst, _mode))
    for _int, (_int_type, _) in _INTS.items():
        _fname = f"{_int}2{_src}_rn"
        implements(getattr(tl.math, _fname))(_converting(_int_type, _FLOATS[_src], f"libdevice.{_fname}"))
implements(tl.math.double2float_rn)(_converting(ir.f64, ir.f32, "libdevice.double2float_rn"))
implements(tl.math.double2float_rz)(_converting(ir.f64, ir.f32, "libdevice.double2float_rz", "rtz"))
for _fname, _from, _to in [("int_as_float", ir.i32, ir.f32), ("float_as_int", ir.f32, ir.i32),
                           ("uint_as_float", ir.u32, ir.f32), ("float_as_uint", ir.f32, ir.i32),
                           ("longlong_as_double", ir.i64, ir.f64), ("double_as_longlong", ir.f64, ir.i64)]:
    implements(getattr(tl.math, _fname))(_reinterpreting(_from, _to, f"libdevice.{_fname}"))


@implements(tl.math.double2loint)
def _double2loint(ctx, arg0):
    bits = semantic.bitcast_to(ctx, _typed(ctx, arg0, ir.f64, "libdevice.double2loint"), ir.i64)
    return cast_to(ctx, bits, ir.i32)


@implements(tl.math.double2hiint)
def _double2hiint(ctx, arg0):
    bits = semantic.bitcast_to(ctx, _typed(ctx, arg0, ir.f64, "libdevice.double2hiint"), ir.i64)
    return cast_to(ctx, semantic.binary(ctx, "rshift", bits, 32), ir.i32)


@implements(tl.math.hiloint2double)
def _hiloint2double(ctx, arg0, arg1):
    hi = cast_to(ctx, _typed(ctx, arg0, ir.i32, "libdevice.hiloint2double"), ir.i64)
    lo = cast_to(ctx, semantic.bitcast_to(ctx, _typed(ctx, arg1, ir.i32, "libdevice.hiloint2double"), ir.u32), ir.i64)
    bits = semantic.binary(ctx, "or", semantic.binary(ctx, "lshift", hi, 32), lo)
    return semantic.bitcast_to(ctx, bits, ir.f64)
