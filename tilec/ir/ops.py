"""Every op of the tile IR.

Each op is a small dataclass (fields declared with ``operand``/``optional``/
``variadic``/``region``/``attr`` from ``core``), with ``NAME`` (its
mnemonic in the text form), ``infer_types()`` and ``verify()``.  The numpy
interpreter (``interpret.py``) is the definition of what each op computes;
the docstrings here summarize it.

Conventions shared by all elementwise ops: operands have *identical* types
(the front end inserts casts, splats and broadcasts first); signedness comes
from the element type (``u32`` divides unsigned, ``i32`` signed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Optional

from tilec.ir.core import Block, Op, Value, VerifyError, attr, operand, optional, region, variadic
from tilec.ir import math_functions
from tilec.ir.types import SCALAR_TYPES, ScalarType, TileType, Type, elem_type, i1, i32, i64, is_float, is_int, is_pointer, shape_of, with_elem, with_shape


def _fail(op: Op, msg: str) -> None:
    raise VerifyError(f"{op.loc}: {op.NAME}: {msg}")


def _require(op: Op, cond: bool, msg: str) -> None:
    if not cond:
        _fail(op, msg)


@dataclass(eq=False, kw_only=True)
class EffectOp(Op):
    """Base of ops that define no value and exist for their effect (stores,
    terminators, printing): never folded, moved or deleted."""

    PURE = False

    def infer_types(self):
        return []


# --------------------------------------------------------------------------- #
# Constants and program geometry
# --------------------------------------------------------------------------- #

@dataclass(eq=False, kw_only=True)
class Constant(Op):
    """``value`` (bool, int or float) as a scalar, or splat over a tile ``type``."""

    NAME = "constant"
    value: Any = attr()
    type: Type = attr()

    def infer_types(self):
        return [self.type]

    def verify(self):
        _require(self, not is_pointer(self.type), "pointer constants are not allowed")
        _require(self, isinstance(self.value, (bool, int, float)), f"bad value {self.value!r}")


@dataclass(eq=False, kw_only=True)
class ProgramId(Op):
    """The index of this program along grid ``axis`` (0, 1 or 2), ``i32``."""

    NAME = "program_id"
    axis: int = attr()

    def infer_types(self):
        return [i32]

    def verify(self):
        _require(self, self.axis in (0, 1, 2), f"axis must be 0, 1 or 2, got {self.axis}")


@dataclass(eq=False, kw_only=True)
class NumPrograms(Op):
    """The number of programs along grid ``axis``, ``i32``."""

    NAME = "num_programs"
    axis: int = attr()

    infer_types = ProgramId.infer_types
    verify = ProgramId.verify


@dataclass(eq=False, kw_only=True)
class ProcessorId(Op):
    """The index of the processor (a GPU's streaming multiprocessor) that
    runs this program, ``i32``: for scheduling studies and debugging, not a
    coordinate (the interpreter runs every program on processor 0)."""

    NAME = "processor_id"

    def infer_types(self):
        return [i32]


@dataclass(eq=False, kw_only=True)
class GlobalTimer(Op):
    """A nanosecond clock all of the device's processors share, ``i64``.  Not
    ``PURE``: every read is a value of its own, made where it stands (never
    merged with another, hoisted out of a loop or deleted)."""

    NAME = "global_timer"
    PURE = False

    def infer_types(self):
        return [i64]


@dataclass(eq=False, kw_only=True)
class Arange(Op):
    """``[start, start+1, ..., end-1]`` as a 1-D ``i32`` tile."""

    NAME = "arange"
    start: int = attr()
    end: int = attr()

    def infer_types(self):
        return [TileType((self.end - self.start,), i32)]

    def verify(self):
        n = self.end - self.start
        _require(self, n > 0 and n & (n - 1) == 0, f"end - start must be a power of two, got {n}")


# --------------------------------------------------------------------------- #
# Shape ops
# --------------------------------------------------------------------------- #

@dataclass(eq=False, kw_only=True)
class Splat(Op):
    """A tile of ``shape`` whose every element is the scalar ``src``."""

    NAME = "splat"
    src: Value = operand()
    shape: tuple = attr()

    def infer_types(self):
        return [TileType(tuple(self.shape), self.src.type)]

    def verify(self):
        _require(self, not isinstance(self.src.type, TileType), "operand must be a scalar")


@dataclass(eq=False, kw_only=True)
class Broadcast(Op):
    """``src`` with its size-1 dimensions repeated to ``shape`` (same rank)."""

    NAME = "broadcast"
    src: Value = operand()
    shape: tuple = attr()

    def infer_types(self):
        return [TileType(tuple(self.shape), elem_type(self.src.type))]

    def verify(self):
        s = shape_of(self.src.type)
        _require(self, len(s) == len(self.shape), f"rank of {s} differs from {self.shape}")
        _require(self, all(a in (1, b) for a, b in zip(s, self.shape)), f"cannot broadcast {s} to {self.shape}")


@dataclass(eq=False, kw_only=True)
class ExpandDims(Op):
    """``src`` with a new dimension of size 1 inserted at ``axis``."""

    NAME = "expand_dims"
    src: Value = operand()
    axis: int = attr()

    def infer_types(self):
        s = list(shape_of(self.src.type))
        s.insert(self.axis, 1)
        return [TileType(tuple(s), elem_type(self.src.type))]

    def verify(self):
        _require(self, 0 <= self.axis <= len(shape_of(self.src.type)), f"axis {self.axis} out of range")


@dataclass(eq=False, kw_only=True)
class Reshape(Op):
    """``src``'s elements in row-major order, laid out as ``shape``.

    ``can_reorder`` (``tl.view``) allows any element order; the interpreter
    keeps row-major order, which is one valid choice.
    """

    NAME = "reshape"
    src: Value = operand()
    shape: tuple = attr()
    can_reorder: bool = attr(False)

    def infer_types(self):
        return [with_shape(elem_type(self.src.type), tuple(self.shape))]

    def verify(self):
        src = shape_of(self.src.type)
        _require(self, math.prod(src) == math.prod(self.shape), f"cannot reshape {src} to {tuple(self.shape)}")


@dataclass(eq=False, kw_only=True)
class Permute(Op):
    """``src`` with dimensions reordered: result dim ``i`` is ``src`` dim ``order[i]``."""

    NAME = "permute"
    src: Value = operand()
    order: tuple = attr()

    def infer_types(self):
        s = shape_of(self.src.type)
        return [TileType(tuple(s[i] for i in self.order), elem_type(self.src.type))]

    def verify(self):
        _require(self, sorted(self.order) == list(range(len(shape_of(self.src.type)))),
                 f"order {self.order} is not a permutation of the dims")


@dataclass(eq=False, kw_only=True)
class Join(Op):
    """Stack ``lhs`` and ``rhs`` along a new minor dimension of size 2."""

    NAME = "join"
    lhs: Value = operand()
    rhs: Value = operand()

    def infer_types(self):
        return [TileType(shape_of(self.lhs.type) + (2,), elem_type(self.lhs.type))]

    def verify(self):
        _require(self, self.lhs.type == self.rhs.type, "operands must have the same type")


@dataclass(eq=False, kw_only=True)
class Split(Op):
    """The two halves of ``src`` along its minor dimension, which must be 2."""

    NAME = "split"
    src: Value = operand()

    def infer_types(self):
        t = with_shape(elem_type(self.src.type), shape_of(self.src.type)[:-1])
        return [t, t]

    def verify(self):
        s = shape_of(self.src.type)
        _require(self, len(s) >= 1 and s[-1] == 2, f"last dimension must be 2, got shape {s}")


# --------------------------------------------------------------------------- #
# Conversions
# --------------------------------------------------------------------------- #

@dataclass(eq=False, kw_only=True)
class Cast(Op):
    """Convert each element to ``to``: int<->float (truncating toward zero),
    widen/narrow ints (sign- or zero-extend by the source's signedness, wrap on
    narrowing), float<->float (``rounding`` ``"rtne"`` or ``"rtz"``),
    int<->pointer and pointer<->pointer (the address is kept).  Float -> int
    saturates out-of-range values and gives 0 for NaN (as NVIDIA GPUs convert);
    anything -> ``i1`` is ``x != 0`` (as Triton)."""

    NAME = "cast"
    src: Value = operand()
    to: Any = attr()  # ScalarType or PointerType
    rounding: str = attr("rtne")

    def infer_types(self):
        return [with_elem(self.src.type, self.to)]

    def verify(self):
        _require(self, self.rounding in ("rtne", "rtz"), f"unknown rounding {self.rounding!r}")


@dataclass(eq=False, kw_only=True)
class Bitcast(Op):
    """Reinterpret each element's bits as ``to`` (same bit width)."""

    NAME = "bitcast"
    src: Value = operand()
    to: Any = attr()

    def infer_types(self):
        return [with_elem(self.src.type, self.to)]

    def verify(self):
        _require(self, elem_type(self.src.type).bits == self.to.bits,
                 f"bitcast between {elem_type(self.src.type)} and {self.to} changes the width")


# --------------------------------------------------------------------------- #
# Elementwise arithmetic
# --------------------------------------------------------------------------- #

@dataclass(eq=False, kw_only=True)
class UnaryOp(Op):
    """Base of one-operand elementwise ops; the result has the operand's type."""

    src: Value = operand()
    ACCEPTS: ClassVar[str] = "number"  # "number", "int" or "float"

    def infer_types(self):
        return [self.src.type]

    def verify(self):
        _check_accepts(self, self.src.type)


@dataclass(eq=False, kw_only=True)
class BinaryOp(Op):
    """Base of two-operand elementwise ops on operands of identical type."""

    lhs: Value = operand()
    rhs: Value = operand()
    ACCEPTS: ClassVar[str] = "number"

    def infer_types(self):
        return [self.lhs.type]

    def verify(self):
        _require(self, self.lhs.type == self.rhs.type,
                 f"operand types differ: {self.lhs.type} and {self.rhs.type}")
        _check_accepts(self, self.lhs.type)


def _check_accepts(op: Op, t: Type) -> None:
    e = elem_type(t)
    ok = {
        "number": isinstance(e, ScalarType),
        "int": isinstance(e, ScalarType) and e.is_int,
        "float": isinstance(e, ScalarType) and e.is_float,
        "any": True,
    }[op.ACCEPTS]
    _require(op, ok, f"operand of type {t} is not accepted (needs {op.ACCEPTS})")


def _elementwise(base: type, name: str, accepts: str, doc: str) -> type:
    """Declare a field-less elementwise op class named after its mnemonic."""
    cls_name = "".join(part.title() for part in name.split("_"))
    body = {"NAME": name, "ACCEPTS": accepts, "__doc__": doc, "__module__": __name__}
    return dataclass(eq=False, kw_only=True)(type(cls_name, (base,), body))


def _unary(name: str, accepts: str = "number", doc: str = "") -> type:
    return _elementwise(UnaryOp, name, accepts, doc)


def _binary(name: str, accepts: str = "number", doc: str = "") -> type:
    return _elementwise(BinaryOp, name, accepts, doc)


Neg = _unary("neg", doc="``-x`` (wrapping for ints).")
Not = _unary("not", "int", "Bitwise ``~x``; logical not on ``i1``.")
Abs = _unary("abs", doc="``|x|`` (wrapping for the most negative int).")
Exp = _unary("exp", "float", "e**x.")
Exp2 = _unary("exp2", "float", "2**x.")
Log = _unary("log", "float", "Natural logarithm.")
Log2 = _unary("log2", "float", "Base-2 logarithm.")
Sqrt = _unary("sqrt", "float", "Square root.")
Rsqrt = _unary("rsqrt", "float", "1 / sqrt(x).")
Sin = _unary("sin", "float", "Sine.")
Cos = _unary("cos", "float", "Cosine.")
Floor = _unary("floor", "float", "Round toward -inf.")
Ceil = _unary("ceil", "float", "Round toward +inf.")
Erf = _unary("erf", "float", "The error function.")

Add = _binary("add", doc="``a + b`` (wrapping for ints).")
Sub = _binary("sub", doc="``a - b`` (wrapping for ints).")
Mul = _binary("mul", doc="``a * b`` (wrapping for ints).")


@dataclass(eq=False, kw_only=True)
class Div(BinaryOp):
    """Float: true division.  With ``rounding = "rn"`` (``tl.div_rn``) the
    correctly rounded quotient; without (Triton's ``/``) a backend may use a
    faster division within 2 ulp over the whole range (NVIDIA: ``div.full.f32``
    for float32, as Triton); the interpreter and the host are exact either way.
    Int: C division, truncating toward zero; ``MIN / -1`` wraps to ``MIN`` and
    ``x / 0`` is all bits set (-1; GPUs leave it unspecified)."""

    NAME = "div"
    rounding: str = attr("")

    def verify(self):
        super().verify()
        _require(self, self.rounding in ("", "rn"), f"rounding must be \"\" or \"rn\", got {self.rounding!r}")


Rem = _binary("rem", doc="Float: C ``fmod``.  Int: C remainder (sign of the dividend); ``x % 0`` is ``x``.")
And = _binary("and", "int", "Bitwise and.")
Or = _binary("or", "int", "Bitwise or.")
Xor = _binary("xor", "int", "Bitwise xor.")
Shl = _binary("shl", "int", "``a << b``; ``b`` is read unsigned and a count of the bit width or more gives 0 "
              "(as NVIDIA GPUs clamp the count).")
Shr = _binary("shr", "int", "``a >> b``: arithmetic for signed, logical for unsigned types; a count of the "
              "bit width or more gives the sign fill (signed) or 0 (unsigned).")
UMulHi = _binary("umulhi", "int", "The high half of the full product of two unsigned ints.")


@dataclass(eq=False, kw_only=True)
class Maximum(BinaryOp):
    """Elementwise max.  Floats: ``propagate_nan`` True returns NaN if either
    operand is NaN; False (Triton's default) returns the other operand.
    ``-0.0`` counts as less than ``+0.0`` (as on NVIDIA GPUs)."""

    NAME = "maximum"
    propagate_nan: bool = attr(False)


@dataclass(eq=False, kw_only=True)
class Minimum(BinaryOp):
    """Elementwise min; NaN rule as ``Maximum``."""

    NAME = "minimum"
    propagate_nan: bool = attr(False)


@dataclass(eq=False, kw_only=True)
class Compare(BinaryOp):
    """Elementwise comparison ``pred`` in eq ne lt le gt ge, giving ``i1``.

    Signedness follows the operand type; floats compare ordered (NaN gives
    False) except ``ne``, which is True when either is NaN (as Python).
    """

    NAME = "cmp"
    pred: str = attr()
    PREDICATES: ClassVar[tuple] = ("eq", "ne", "lt", "le", "gt", "ge")
    ACCEPTS: ClassVar[str] = "any"

    def infer_types(self):
        return [with_elem(self.lhs.type, i1)]

    def verify(self):
        super().verify()
        _require(self, self.pred in self.PREDICATES, f"unknown predicate {self.pred!r}")


@dataclass(eq=False, kw_only=True)
class Fma(Op):
    """``a * b + c`` rounded once (floats)."""

    NAME = "fma"
    a: Value = operand()
    b: Value = operand()
    c: Value = operand()

    def infer_types(self):
        return [self.a.type]

    def verify(self):
        _require(self, self.a.type == self.b.type == self.c.type, "operand types differ")
        _require(self, is_float(self.a.type), "fma needs float operands")


@dataclass(eq=False, kw_only=True)
class MathCall(Op):
    """``fn(*args)`` elementwise, ``fn`` a named function of
    ``math_functions.FUNCTIONS`` (``tanh``, ``ldexp``, ``isnan``, ``popc``...),
    which gives its operand and result types and its definition.  The
    operands share one shape; those the function calls ``VALUE`` share the
    value type T."""

    NAME = "math_call"
    fn: str = attr()
    args: list = variadic()

    @property
    def function(self) -> math_functions.MathFunction:
        return math_functions.FUNCTIONS[self.fn]

    @property
    def value_type(self) -> ScalarType:
        """T, the type of the operands the function calls ``VALUE``."""
        return elem_type(self.args[self.function.params.index(math_functions.VALUE)].type)

    def infer_types(self):
        result = self.function.result
        return [with_elem(self.args[0].type, self.value_type if result == math_functions.SAME else SCALAR_TYPES[result])]

    def verify(self):
        _require(self, self.fn in math_functions.FUNCTIONS, f"unknown math function {self.fn!r}")
        f = self.function
        _require(self, len(self.args) == len(f.params), f"{self.fn} takes {len(f.params)} operands, got {len(self.args)}")
        _require(self, len({shape_of(a.type) for a in self.args}) == 1, "operand shapes differ")
        t = self.value_type
        kind_ok = t.is_float if f.kinds == "float" else (t.is_int and not t.is_bool and t.bits in f.int_bits)
        _require(self, kind_ok, f"{self.fn} does not take {t}")
        for letter, a in zip(f.params, self.args):
            want = t if letter == math_functions.VALUE else i32
            _require(self, elem_type(a.type) == want, f"{self.fn}: operand of type {a.type}, expected {want}")


@dataclass(eq=False, kw_only=True)
class Select(Op):
    """``where(cond, a, b)``: ``cond`` is ``i1`` of the same shape as ``a`` and ``b``."""

    NAME = "select"
    cond: Value = operand()
    a: Value = operand()
    b: Value = operand()

    def infer_types(self):
        return [self.a.type]

    def verify(self):
        _require(self, self.a.type == self.b.type, f"branch types differ: {self.a.type} and {self.b.type}")
        _require(self, self.cond.type == with_elem(self.a.type, i1), f"condition type {self.cond.type} "
                 f"does not match {with_elem(self.a.type, i1)}")


# --------------------------------------------------------------------------- #
# Memory
# --------------------------------------------------------------------------- #

@dataclass(eq=False, kw_only=True)
class AddPtr(Op):
    """``ptr + offset``, ``offset`` counted in elements of the pointee type."""

    NAME = "addptr"
    ptr: Value = operand()
    offset: Value = operand()

    def infer_types(self):
        return [self.ptr.type]

    def verify(self):
        _require(self, is_pointer(self.ptr.type), f"first operand must be a pointer, got {self.ptr.type}")
        _require(self, is_int(self.offset.type), f"offset must be an integer, got {self.offset.type}")
        _require(self, shape_of(self.ptr.type) == shape_of(self.offset.type), "shapes differ")


def _check_mask(op: Op, ptr: Value, mask: Optional[Value]) -> None:
    if mask is not None:
        _require(op, mask.type == with_elem(ptr.type, i1),
                 f"mask type {mask.type} does not match pointer shape {shape_of(ptr.type)}")


def _pointee(t: Type) -> Type:
    return with_elem(t, elem_type(t).elem)


@dataclass(eq=False, kw_only=True)
class Load(Op):
    """Read ``*ptr`` where ``mask`` (default all) is true, ``other`` (default
    undefined; the interpreter gives 0) elsewhere.  Masked-off addresses are
    never touched.

    A load of a block of a host tensor descriptor (a kernel parameter) says
    so: ``descriptor`` names the parameter and ``coords`` (``i32`` scalars,
    one a dim) are the block's offsets.  ``ptr``, ``mask`` and ``other``
    still say everything the load does; the two only let a backend copy the
    block with the tensor memory accelerator instead (``tma_copy``)."""

    NAME = "load"
    PURE = False
    ptr: Value = operand()
    mask: Optional[Value] = optional()
    other: Optional[Value] = optional()
    coords: list = variadic(trailing=True)
    cache: str = attr("")
    eviction: str = attr("")
    volatile: bool = attr(False)
    descriptor: str = attr("")

    def infer_types(self):
        return [_pointee(self.ptr.type)]

    def verify(self):
        _require(self, is_pointer(self.ptr.type), f"needs a pointer, got {self.ptr.type}")
        _check_mask(self, self.ptr, self.mask)
        if self.other is not None:
            _require(self, self.other.type == _pointee(self.ptr.type),
                     f"other has type {self.other.type}, expected {_pointee(self.ptr.type)}")
        check_block_coords(self, self.ptr, self.coords, self.descriptor)


def check_block_coords(op: Op, ptr: Value, coords: list, descriptor: str) -> None:
    """A descriptor's block at ``coords``: one ``i32`` scalar per dim of the
    pointer tile ``ptr``, given exactly when ``descriptor`` names one."""
    if not descriptor:
        _require(op, not coords, "coords without a descriptor")
        return
    shape = shape_of(ptr.type)
    _require(op, len(coords) == len(shape) > 0,
             f"a block of descriptor {descriptor!r} needs {len(shape)} coords, got {len(coords)}")
    _require(op, all(c.type == i32 for c in coords), "a block's coords must be i32 scalars")


@dataclass(eq=False, kw_only=True)
class Store(EffectOp):
    """Write ``value`` to ``*ptr`` where ``mask`` (default all) is true.  A
    store of a block of a host tensor descriptor says so as ``load`` does
    (``descriptor``, ``coords``)."""

    NAME = "store"
    ptr: Value = operand()
    value: Value = operand()
    mask: Optional[Value] = optional()
    coords: list = variadic(trailing=True)
    cache: str = attr("")
    eviction: str = attr("")
    descriptor: str = attr("")

    def verify(self):
        _require(self, is_pointer(self.ptr.type), f"needs a pointer, got {self.ptr.type}")
        _require(self, self.value.type == _pointee(self.ptr.type),
                 f"value has type {self.value.type}, expected {_pointee(self.ptr.type)}")
        _check_mask(self, self.ptr, self.mask)
        check_block_coords(self, self.ptr, self.coords, self.descriptor)


@dataclass(eq=False, kw_only=True)
class AtomicRMW(Op):
    """Atomically ``*ptr = kind(*ptr, val)`` where ``mask``; returns the old values.

    ``kind`` is add, max, min, and, or, xor or xchg; ``sem`` acquire, release,
    acq_rel or relaxed; ``scope`` gpu, cta or sys.
    """

    NAME = "atomic_rmw"
    PURE = False
    KINDS: ClassVar[tuple] = ("add", "max", "min", "and", "or", "xor", "xchg")
    kind: str = attr()
    ptr: Value = operand()
    val: Value = operand()
    mask: Optional[Value] = optional()
    sem: str = attr("acq_rel")
    scope: str = attr("gpu")

    def infer_types(self):
        return [_pointee(self.ptr.type)]

    def verify(self):
        _require(self, self.kind in self.KINDS, f"unknown atomic kind {self.kind!r}")
        _require(self, is_pointer(self.ptr.type), f"needs a pointer, got {self.ptr.type}")
        _require(self, self.val.type == _pointee(self.ptr.type),
                 f"value has type {self.val.type}, expected {_pointee(self.ptr.type)}")
        _check_mask(self, self.ptr, self.mask)


@dataclass(eq=False, kw_only=True)
class AtomicCAS(Op):
    """Atomically: ``old = *ptr; if old == cmp: *ptr = val``; returns ``old``."""

    NAME = "atomic_cas"
    PURE = False
    ptr: Value = operand()
    cmp: Value = operand()
    val: Value = operand()
    sem: str = attr("acq_rel")
    scope: str = attr("gpu")

    def infer_types(self):
        return [_pointee(self.ptr.type)]

    def verify(self):
        _require(self, is_pointer(self.ptr.type), f"needs a pointer, got {self.ptr.type}")
        _require(self, self.cmp.type == self.val.type == _pointee(self.ptr.type), "operand types differ")


# --------------------------------------------------------------------------- #
# Reductions, scans, dot
# --------------------------------------------------------------------------- #

def _combine_types(op: Op, block: Block, srcs: list[Value]) -> None:
    n = len(srcs)
    elems = [elem_type(s.type) for s in srcs]
    _require(op, n >= 1, "needs at least one operand")
    _require(op, len({shape_of(s.type) for s in srcs}) == 1, "operands must have one shape")
    _require(op, [a.type for a in block.args] == elems + elems,
             f"combine block must take {2 * n} scalars of types {elems + elems}")
    term = block.terminator
    _require(op, isinstance(term, Yield) and [v.type for v in term.values] == elems,
             "combine block must yield one scalar per operand")


@dataclass(eq=False, kw_only=True)
class Reduce(Op):
    """Reduce ``srcs`` (same shape) along ``axis`` with the ``combine`` block.

    ``combine`` takes ``(acc_0..acc_n-1, x_0..x_n-1)`` scalars and yields the
    combined ``n`` scalars; it must be associative (the order of combination
    is unspecified).  ``axis`` None reduces every dimension to a scalar.
    """

    NAME = "reduce"
    srcs: list = variadic()
    axis: Optional[int] = attr()
    combine: Block = region()

    def infer_types(self):
        s = shape_of(self.srcs[0].type)
        out = () if self.axis is None else s[:self.axis] + s[self.axis + 1:]
        return [with_shape(elem_type(v.type), out) for v in self.srcs]

    def verify(self):
        _combine_types(self, self.combine, self.srcs)
        rank = len(shape_of(self.srcs[0].type))
        _require(self, rank >= 1, "cannot reduce a scalar")
        _require(self, self.axis is None or 0 <= self.axis < rank, f"axis {self.axis} out of range")


@dataclass(eq=False, kw_only=True)
class Scan(Op):
    """Inclusive prefix scan of ``srcs`` along ``axis`` with ``combine``
    (same signature as ``Reduce``'s); ``reverse`` scans from the end."""

    NAME = "scan"
    srcs: list = variadic()
    axis: int = attr()
    reverse: bool = attr(False)
    combine: Block = region()

    def infer_types(self):
        return [v.type for v in self.srcs]

    def verify(self):
        _combine_types(self, self.combine, self.srcs)
        _require(self, 0 <= self.axis < len(shape_of(self.srcs[0].type)), f"axis {self.axis} out of range")


@dataclass(eq=False, kw_only=True)
class Dot(Op):
    """``a @ b + acc`` for 2-D (or batched 3-D) tiles.

    ``a`` is ``[..., M, K]``, ``b`` ``[..., K, N]``, ``acc`` ``[..., M, N]``
    and gives the result type.  Products are accumulated in ``acc``'s type;
    ``input_precision`` ``"tf32"`` / ``"tf32x3"`` / ``"ieee"`` says how f32
    inputs are multiplied (``tf32`` rounds them to 10 mantissa bits first).
    """

    NAME = "dot"
    a: Value = operand()
    b: Value = operand()
    acc: Value = operand()
    input_precision: str = attr("ieee")

    def infer_types(self):
        return [self.acc.type]

    def verify(self):
        sa, sb, sc = (shape_of(v.type) for v in (self.a, self.b, self.acc))
        _require(self, len(sa) in (2, 3) and len(sa) == len(sb) == len(sc), "operands must be 2-D or 3-D")
        _require(self, sa[-1] == sb[-2], f"inner dimensions differ: {sa} @ {sb}")
        _require(self, sc == sa[:-1] + sb[-1:], f"accumulator shape {sc} is not {sa[:-1] + sb[-1:]}")
        _require(self, elem_type(self.a.type) == elem_type(self.b.type), "a and b element types differ")
        _require(self, self.input_precision in ("ieee", "tf32", "tf32x3"),
                 f"unknown input_precision {self.input_precision!r}")


# --------------------------------------------------------------------------- #
# Structured control flow
# --------------------------------------------------------------------------- #

@dataclass(eq=False, kw_only=True)
class Yield(EffectOp):
    """Ends a region, passing ``values`` to its parent op."""

    NAME = "yield"
    IS_TERMINATOR = True
    values: list = variadic()


@dataclass(eq=False, kw_only=True)
class Condition(EffectOp):
    """Ends a ``while``'s ``before`` region: loop on while ``cond``, passing ``values``."""

    NAME = "condition"
    IS_TERMINATOR = True
    cond: Value = operand()
    values: list = variadic()

    def verify(self):
        _require(self, self.cond.type == i1, f"condition must be i1, got {self.cond.type}")


def _check_yield(op: Op, block: Block, types: list[Type], what: str) -> None:
    term = block.terminator
    _require(op, isinstance(term, Yield), f"{what} must end with yield")
    got = [v.type for v in term.values]
    _require(op, got == types, f"{what} yields {got}, expected {types}")


@dataclass(eq=False, kw_only=True)
class For(Op):
    """``for iv in range(lower, upper, step)`` carrying ``inits`` through ``body``.

    ``body`` takes ``(iv, *carried)`` and yields the next carried values; the
    results are the carried values after the last iteration.  ``step`` may be
    negative; zero trips give ``inits``.
    """

    NAME = "for"
    PURE = False
    lower: Value = operand()
    upper: Value = operand()
    step: Value = operand()
    inits: list = variadic()
    body: Block = region()

    def infer_types(self):
        return [v.type for v in self.inits]

    def verify(self):
        t = self.lower.type
        _require(self, isinstance(t, ScalarType) and t.is_int and not t.is_bool, f"bounds must be ints, got {t}")
        _require(self, self.upper.type == t and self.step.type == t, "bounds and step must share a type")
        types = [v.type for v in self.inits]
        _require(self, [a.type for a in self.body.args] == [t] + types, "body arguments must be (iv, *carried)")
        _check_yield(self, self.body, types, "for body")


@dataclass(eq=False, kw_only=True)
class If(Op):
    """Run ``then_body`` or ``else_body`` on a scalar ``i1`` ``cond``; results are what it yields."""

    NAME = "if"
    PURE = False
    cond: Value = operand()
    then_body: Block = region()
    else_body: Block = region()

    def infer_types(self):
        term = self.then_body.terminator
        return [v.type for v in term.values] if isinstance(term, Yield) else []

    def verify(self):
        _require(self, self.cond.type == i1, f"condition must be a scalar i1, got {self.cond.type}")
        types = self.infer_types()
        _check_yield(self, self.then_body, types, "then branch")
        _check_yield(self, self.else_body, types, "else branch")


@dataclass(eq=False, kw_only=True)
class While(Op):
    """A general loop.  ``before`` takes the carried values and ends with
    ``condition(cond, vals)``; while ``cond``, ``after`` takes ``vals`` and
    yields the next carried values.  The results are ``vals`` at exit."""

    NAME = "while"
    PURE = False
    inits: list = variadic()
    before: Block = region()
    after: Block = region()

    def infer_types(self):
        term = self.before.terminator
        return [v.type for v in term.values] if isinstance(term, Condition) else []

    def verify(self):
        types = [v.type for v in self.inits]
        _require(self, [a.type for a in self.before.args] == types, "before arguments must match inits")
        _require(self, isinstance(self.before.terminator, Condition), "before must end with condition")
        fwd = self.infer_types()
        _require(self, [a.type for a in self.after.args] == fwd, "after arguments must match condition values")
        _check_yield(self, self.after, types, "while body")


# --------------------------------------------------------------------------- #
# Debugging, hints, synchronization
# --------------------------------------------------------------------------- #

@dataclass(eq=False, kw_only=True)
class Print(EffectOp):
    """``device_print(prefix, *values)``: each program prints its values."""

    NAME = "print"
    prefix: str = attr()
    values: list = variadic()
    hex: bool = attr(False)


@dataclass(eq=False, kw_only=True)
class Assert(EffectOp):
    """``device_assert(cond, msg)``: fail the launch where ``cond`` is false."""

    NAME = "assert"
    cond: Value = operand()
    msg: str = attr()

    def verify(self):
        _require(self, elem_type(self.cond.type) == i1, f"condition must be i1, got {self.cond.type}")


@dataclass(eq=False, kw_only=True)
class Barrier(EffectOp):
    """``debug_barrier()``: synchronize the threads of one program."""

    NAME = "barrier"


@dataclass(eq=False, kw_only=True)
class Assume(Op):
    """``src`` unchanged, with a promise for analysis: ``kind`` is
    ``multiple_of``, ``max_contiguous`` or ``max_constancy``, one value per dim."""

    NAME = "assume"
    src: Value = operand()
    kind: str = attr()
    values: tuple = attr()

    def infer_types(self):
        return [self.src.type]

    def verify(self):
        _require(self, self.kind in ("multiple_of", "max_contiguous", "max_constancy"), f"unknown hint {self.kind}")
        _require(self, len(self.values) == max(1, len(shape_of(self.src.type))), "one value per dimension")


@dataclass(eq=False, kw_only=True)
class ConvertLayout(Op):
    """``src`` unchanged, held in ``layout`` instead (target lowering inserts it
    where two layouts meet; the codegen moves the elements between threads)."""

    NAME = "convert_layout"
    src: Value = operand()
    layout: Any = attr()

    def infer_types(self):
        t = self.src.type
        return [TileType(t.shape, t.elem, self.layout)]

    def verify(self):
        _require(self, isinstance(self.src.type, TileType), "operand must be a tile")
        _require(self, self.layout is not None and self.layout.rank == len(self.src.type.shape),
                 f"layout {self.layout} does not fit {self.src.type}")


def all_op_classes() -> dict[str, type]:
    """Every concrete op class by its ``NAME``."""
    out: dict[str, type] = {}
    stack = list(Op.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.NAME != "?":
            out[cls.NAME] = cls
    return out
