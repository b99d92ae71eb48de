"""The declarations users write inside kernels: dtypes, ``constexpr``, ``tensor``
and the core ``tl.*`` functions (program geometry, creation, memory, atomics,
shape ops, debugging, hints, loops).

Names, signatures and meanings follow Triton's ``triton.language``.  The
functions here are *stubs*: their bodies never run.  The compiler
(``tilec.frontend.tl_ops``) recognises each one by identity and builds IR for it;
their docstrings are the user reference.  This module imports nothing from
tilec, so it can be read on its own.
"""
from __future__ import annotations

import builtins as _py
import enum
import functools
import math
from typing import Any

# --------------------------------------------------------------------------- #
# dtypes
# --------------------------------------------------------------------------- #


class dtype:
    """A scalar element type: ``tl.int32``, ``tl.float16``, ``tl.int1`` (bool)...

    ``name`` is Triton's short name ("int32", "uint8", "fp16", "bf16", "fp32").
    """

    # name -> (bit width, kind) where kind is "bool", "int", "uint" or "float"
    _INFO = {
        "int1": (1, "bool"), "int8": (8, "int"), "int16": (16, "int"), "int32": (32, "int"),
        "int64": (64, "int"), "uint8": (8, "uint"), "uint16": (16, "uint"), "uint32": (32, "uint"),
        "uint64": (64, "uint"), "fp8e4b15": (8, "float"), "fp8e4nv": (8, "float"), "fp8e4b8": (8, "float"),
        "fp8e5": (8, "float"), "fp8e5b16": (8, "float"), "fp16": (16, "float"), "bf16": (16, "float"),
        "fp32": (32, "float"), "fp64": (64, "float"),
    }
    # Triton's fp_mantissa_width: which float keeps more precision.
    _MANTISSA = {"fp8e4b15": 3, "fp8e4nv": 3, "fp8e4b8": 3, "fp8e5": 2, "fp8e5b16": 2,
                 "fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52}
    # Triton's exponent_bias of each float type.
    _EXPONENT_BIAS = {"fp8e4b15": 15, "fp8e4nv": 7, "fp8e4b8": 8, "fp8e5": 15, "fp8e5b16": 16,
                      "fp16": 15, "bf16": 127, "fp32": 127, "fp64": 1023}

    # Triton's lists of type names, by kind (``int1`` counts as unsigned, as in Triton).
    SINT_TYPES = [n for n, (_, kind) in _INFO.items() if kind == "int"]
    UINT_TYPES = [n for n, (_, kind) in _INFO.items() if kind in ("bool", "uint")]
    FP_TYPES = [n for n, (_, kind) in _INFO.items() if kind == "float"]
    STANDARD_FP_TYPES = ["fp16", "bf16", "fp32", "fp64"]
    OTHER_TYPES: list = []

    class SIGNEDNESS(enum.Enum):
        SIGNED = 0
        UNSIGNED = 1

    class KIND(enum.Enum):
        """Triton's order of kinds for promotion: bool < integral < floating."""
        BOOLEAN = 0
        INTEGRAL = 1
        FLOATING = 2

    def __init__(self, name: str):
        name = getattr(name, "value", name)  # a tl.constexpr holding the name
        if name not in self._INFO:
            raise ValueError(f"unknown dtype {name!r}")
        self.name = name

    @property
    def primitive_bitwidth(self) -> int:
        return self._INFO[self.name][0]

    @property
    def int_bitwidth(self) -> int:
        return self.primitive_bitwidth

    @property
    def fp_mantissa_width(self) -> int:
        return self._MANTISSA[self.name]

    @property
    def exponent_bias(self) -> int:
        return self._EXPONENT_BIAS[self.name]

    @property
    def itemsize(self) -> int:
        """Bytes per element (0 for ``int1``, as Triton's ``primitive_bitwidth // 8``)."""
        return self.primitive_bitwidth // 8

    @property
    def int_signedness(self) -> "dtype.SIGNEDNESS":
        if not self.is_int():
            raise AttributeError(f"{self!r} is not an integer type: it has no int_signedness")
        return dtype.SIGNEDNESS.SIGNED if self.is_int_signed() else dtype.SIGNEDNESS.UNSIGNED

    @property
    def scalar(self) -> "dtype":
        return self

    @property
    def _kind(self) -> str:
        """"bool", "int", "uint" or "float" (a pointer's is "pointer": none of the is_* kinds)."""
        return self._INFO[self.name][1]

    def is_floating(self) -> bool:
        return self._kind == "float"

    def is_standard_floating(self) -> bool:
        return self.name in self.STANDARD_FP_TYPES

    def is_fp8(self) -> bool:
        return self.name.startswith("fp8")

    def is_int(self) -> bool:
        """True for every integer type, ``int1`` included (as Triton)."""
        return self._kind in ("bool", "int", "uint")

    def is_int_signed(self) -> bool:
        """``int8``...``int64`` (``int1`` is unsigned, as Triton's ``UINT_TYPES``)."""
        return self._kind == "int"

    def is_int_unsigned(self) -> bool:
        return self._kind in ("bool", "uint")

    def is_bool(self) -> bool:
        return self.name == "int1"

    def kind(self) -> "dtype.KIND":
        """BOOLEAN, INTEGRAL or FLOATING (Triton's promotion order)."""
        if self.is_bool():
            return dtype.KIND.BOOLEAN
        if self.is_int():
            return dtype.KIND.INTEGRAL
        if self.is_floating():
            return dtype.KIND.FLOATING
        raise TypeError(f"{self!r} is not a number type: it has no kind")

    def get_int_max_value(self) -> int:
        if not self.is_int():
            raise TypeError(f"{self!r} is not an integer type")
        return (1 << self.primitive_bitwidth) - 1 if self.is_int_unsigned() else (1 << self.primitive_bitwidth - 1) - 1

    def get_int_min_value(self) -> int:
        if not self.is_int():
            raise TypeError(f"{self!r} is not an integer type")
        return 0 if self.is_int_unsigned() else -(1 << self.primitive_bitwidth - 1)

    @staticmethod
    def is_dtype(type_str: str) -> bool:
        """Whether ``type_str`` names a dtype ("int32", "fp16"...)."""
        return type_str in dtype._INFO

    def is_const(self) -> bool:
        return False

    def codegen_name(self) -> str:
        """The long name: "float16", "bfloat16", "int32"."""
        return _LONG_NAMES.get(self.name, self.name)

    def with_element_ty(self, element_ty: "dtype") -> "dtype":
        """A scalar type's version of ``block_type.with_element_ty``: ``element_ty`` itself."""
        return element_ty

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("tl.dtype", self.name))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"tl.{self.codegen_name()}"


_LONG_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
               **{n: "float" + n[2:] for n in dtype.FP_TYPES if n.startswith("fp8")}}


def _add_name_tests() -> None:
    """Triton's ``is_int8()``, ``is_uint32()``, ``is_int1()``, ``is_fp8e4nv()``...:
    one test per integer and fp8 type name."""
    for name in dtype.SINT_TYPES + dtype.UINT_TYPES + [n for n in dtype.FP_TYPES if n.startswith("fp8")]:
        setattr(dtype, f"is_{name}", lambda self, name=name: self.name == name)


_add_name_tests()


class const:
    """The annotation of a kernel parameter that points to memory the kernel
    only reads (Triton's ``tl.const``): ``def kernel(x_ptr: tl.const, ...)``
    makes ``x_ptr`` a ``pointer_type(..., const=True)``.  Loads through it
    work; a store or an atomic through it is a compile error.  Constness is
    part of the pointer's type: a const and a plain pointer cannot meet in one
    variable across the branches of a runtime ``if``."""


class pointer_type(dtype):
    """A pointer to ``element_ty`` elements in ``address_space`` (1 = global
    memory); ``const=True`` makes it read-only (see ``const``)."""

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        if not isinstance(element_ty, dtype) or isinstance(element_ty, pointer_type):
            raise TypeError(f"pointer_type needs a scalar dtype, got {element_ty!r}")
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = _py.bool(const)
        self.name = f"{'const_' if const else ''}pointer<{element_ty.name}>"

    @property
    def primitive_bitwidth(self) -> int:
        return 64

    @property
    def _kind(self) -> str:
        return "pointer"

    def is_ptr(self) -> bool:
        return True

    def is_const(self) -> bool:
        return self.const

    def __eq__(self, other) -> bool:
        return (isinstance(other, pointer_type) and other.element_ty == self.element_ty
                and other.address_space == self.address_space and other.const == self.const)

    def __hash__(self) -> int:
        return hash(("tl.pointer_type", self.element_ty, self.address_space, self.const))

    def __repr__(self) -> str:
        return f"tl.pointer_type({self.element_ty!r}{', const=True' if self.const else ''})"


class block_type:
    """The type of a tile: ``shape`` and the element dtype ``element_ty`` (what ``x.type`` gives)."""

    def __init__(self, element_ty: dtype, shape: tuple):
        self.element_ty = element_ty
        self.shape = _py.tuple(shape)

    @property
    def scalar(self) -> dtype:
        return self.element_ty

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * (self.element_ty.primitive_bitwidth // 8)

    def with_element_ty(self, element_ty: dtype) -> "block_type":
        return block_type(element_ty, self.shape)

    def get_block_shapes(self) -> tuple:
        return self.shape

    def is_block(self) -> bool:
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, block_type) and (other.element_ty, other.shape) == (self.element_ty, self.shape)

    def __hash__(self) -> int:
        return hash(("tl.block_type", self.element_ty, self.shape))

    def __repr__(self) -> str:
        return f"<{'x'.join(map(str, self.shape))}x{self.element_ty.name}>"


int1 = dtype("int1")
int8, int16, int32, int64 = (dtype(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (dtype(n) for n in ("uint8", "uint16", "uint32", "uint64"))
float16, bfloat16, float32, float64 = (dtype(n) for n in ("fp16", "bf16", "fp32", "fp64"))
# The 8-bit floats (formats: docs/language.md): OCP E4M3FN and E5M2 (NVIDIA's
# from Ada and Hopper on), E4M3 with bias 15, and AMD's E4M3FNUZ and E5M2FNUZ.
float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16 = (
    dtype(n) for n in ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16"))
pi32_t = pointer_type(int32)  # Triton's name for a pointer to int32

# The most elements a tile may hold: a larger one is a compile error (as in Triton).
TRITON_MAX_TENSOR_NUMEL = 1048576

# --------------------------------------------------------------------------- #
# constexpr, tensor, builtin
# --------------------------------------------------------------------------- #


class constexpr:
    """A value known at compile time.

    Annotate a kernel parameter ``BLOCK: tl.constexpr`` to compile one variant
    per value; wrap a global ``N = tl.constexpr(128)`` to use it in kernels.
    Inside a kernel a constexpr is just its Python value.
    """

    def __init__(self, value: Any):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self) -> str:
        return f"constexpr[{self.value!r}]"

    def __eq__(self, other) -> bool:
        return self.value == (other.value if isinstance(other, constexpr) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __bool__(self) -> bool:
        return _py.bool(self.value)

    def __index__(self) -> int:
        return self.value.__index__()

    @property
    def type(self) -> "constexpr_type":
        return constexpr_type(self.value)


class constexpr_type:
    """The type of a constexpr holding ``value`` (``tl.constexpr(4).type``), as Triton's."""

    def __init__(self, value: Any):
        self.value = value

    def __eq__(self, other) -> bool:
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"constexpr_type[{self.value}]"


class ConstexprFunction:
    """A host function that kernels call at compile time (made by ``constexpr_function``).

    Called from host code it is ``fn``; called in a kernel its arguments are
    the compile-time values (constexprs unwrapped; a tensor argument is
    passed as the front end's tensor, whose ``dtype`` and ``shape`` it may
    read) and its result must be a compile-time value.
    """

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


def constexpr_function(fn):
    """Decorate a plain Python function so kernels may call it on constexprs at compile time.

    ``@tl.constexpr_function def block_for(n): return max(16, next_pow2(n))``
    then ``BLOCK: tl.constexpr = block_for(N)`` inside a kernel.
    """
    return ConstexprFunction(fn)


class tensor:
    """A value inside a kernel: a scalar or a tile (a block of elements).

    Attributes: ``x.dtype`` (element dtype, a ``tl.pointer_type`` for pointers),
    ``x.shape`` (tuple of ints, ``()`` for a scalar), ``x.type``, ``x.numel``,
    ``x.T`` (transpose of a 2-D tile).  Operators follow Triton's promotion and
    broadcasting rules.  Methods: the ``tl`` functions listed in
    ``TENSOR_METHODS`` (``x.to(tl.float16)``, ``x.sum(axis=0)``,
    ``x.reshape(4, 8)``, ``x.exp()``...) -- ``x.f(args)`` is ``tl.f(x, args)``.
    """


def builtin(fn):
    """Mark ``fn`` as a ``tl`` stub: the compiler implements it; calling it outside a kernel raises."""

    @functools.wraps(fn)
    def stub(*args, **kwargs):
        raise RuntimeError(f"tl.{fn.__name__} can only be called inside a @tilec.jit kernel")

    stub.__tilec_builtin__ = True
    return stub


def named_builtin(fn, name: str, doc: str):
    """``builtin(fn)`` named ``name`` and documented by ``doc``: one of a family
    of stubs made by a factory (``atomic_*``, the one-argument math functions),
    whose ``fn`` only gives the parameters."""
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return builtin(fn)


# --------------------------------------------------------------------------- #
# Program geometry and tile creation
# --------------------------------------------------------------------------- #


@builtin
def program_id(axis):
    """The index (``int32``) of this program along grid axis ``axis`` (constexpr 0, 1 or 2)."""


@builtin
def num_programs(axis):
    """The number of programs (``int32``) launched along grid axis ``axis`` (0, 1 or 2)."""


@builtin
def arange(start, end):
    """``[start, start+1, ..., end-1]`` as a 1-D ``int32`` tile.

    ``start`` and ``end`` must be constexpr ints and ``end - start`` a power of two.
    """


@builtin
def full(shape, value, dtype):
    """A tile of ``shape`` (constexpr ints, powers of two) filled with ``value`` as ``dtype``.

    ``value`` may be a Python number or a scalar tensor.
    """


@builtin
def zeros(shape, dtype):
    """A tile of ``shape`` filled with zeros of ``dtype``."""


@builtin
def zeros_like(input):
    """A tile of zeros with the shape and dtype of ``input``."""


@builtin
def full_like(input, value, dtype=None):
    """A tile like ``input`` (its shape, and its dtype unless ``dtype`` is given) filled with ``value``."""


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """Convert ``input`` to ``dtype`` (also ``x.to(dtype)``).

    Float -> int truncates toward zero; int narrowing wraps; conversion to
    ``int1`` is ``x != 0``.  ``fp_downcast_rounding`` ("rtne" default, or
    "rtz") rounds float narrowing.  ``bitcast=True`` reinterprets the bits
    (same width required).
    """


# --------------------------------------------------------------------------- #
# Memory
# --------------------------------------------------------------------------- #


@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    """Read the elements ``pointer`` points to (a scalar pointer or a tile of pointers).

    Where ``mask`` (an ``int1`` tile, broadcast to the pointer's shape) is
    false nothing is read and the result is ``other`` (cast to the pointee
    type; undefined if not given).  ``cache_modifier``: "", ".ca", ".cg",
    ".cv"; ``eviction_policy``: "", "evict_first", "evict_last".

    ``pointer`` may be a block pointer (``tl.make_block_ptr``): the result is
    its block, and ``boundary_check`` (dimensions) says which dimensions are
    checked against the tensor's shape; an element outside them reads
    ``padding_option`` ("zero", "nan"; "" reads zero too, where Triton leaves
    it undefined).  A block pointer takes no ``mask`` or ``other``.
    """


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """Write ``value`` (broadcast to the pointer's shape) where ``mask`` is true.

    As in Triton, ``value`` is converted to the pointee type with ``tl.cast``
    rules: a float stored through an int pointer is truncated toward zero.
    ``cache_modifier``: "", ".wb", ".cg", ".cs", ".wt".

    Through a block pointer (``tl.make_block_ptr``) ``value`` is its block (a
    scalar splats); elements outside the dimensions ``boundary_check`` names
    are not written.  A block pointer takes no ``mask``.
    """


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A block pointer: the ``block_shape`` block at ``offsets`` of the tensor
    at ``base`` of ``shape`` and ``strides`` (in elements).

    ``shape`` and ``strides`` are int64, ``offsets`` int32 (one per dimension,
    numbers or scalar tensors); ``block_shape`` is constexpr powers of two and
    ``order`` a permutation of the dimensions (Triton's layout hint, checked
    and kept).  ``tl.load``/``tl.store`` read and write the block, with
    ``boundary_check`` guarding the dimensions it names; ``tl.advance`` moves
    it.  A block pointer is carried through loops and branches like a tensor.
    """


@builtin
def advance(base, offsets):
    """The block pointer ``base`` moved by ``offsets`` (int32, one per dimension)."""


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A tensor descriptor over the tensor at ``base`` of ``shape`` (int32) and
    ``strides`` (int64, the last the constant 1), read and written in blocks of
    ``block_shape`` (constexpr powers of two, 1 to 5 dimensions, at least 16
    bytes in the last).

    ``desc.load(offsets)`` reads the block at element ``offsets``: outside the
    tensor it reads ``padding_option`` ("zero", or "nan" for floats).
    ``desc.store(offsets, value)`` writes the block; elements outside the
    tensor are not written.  ``desc.atomic_add/min/max/and/or/xor(offsets,
    value)`` update it atomically the same way.  ``desc.shape``,
    ``desc.strides``, ``desc.block_shape``, ``desc.dtype`` are Triton's.
    """


@builtin
def load_tensor_descriptor(desc, offsets):
    """``desc.load(offsets)``: the block of tensor descriptor ``desc`` at ``offsets``."""


@builtin
def store_tensor_descriptor(desc, offsets, value):
    """``desc.store(offsets, value)``: write ``value`` as the block of ``desc`` at ``offsets``."""


class tensor_descriptor:
    """A tensor descriptor inside a kernel (``tl.make_tensor_descriptor``, or a
    kernel argument bound to a host ``TensorDescriptor``): see
    ``make_tensor_descriptor`` for its methods and attributes."""


class tensor_descriptor_type:
    """The type of a tensor descriptor (``desc.type``): its ``block_type`` (element
    dtype and block shape) and the number of dimensions of its shape and strides."""

    def __init__(self, block_type: "block_type", rank: int):
        self.block_type = block_type
        self.rank = rank

    def __eq__(self, other) -> bool:
        return isinstance(other, tensor_descriptor_type) and (self.block_type, self.rank) == (other.block_type,
                                                                                               other.rank)

    def __hash__(self) -> int:
        return hash((self.block_type, self.rank))

    def __repr__(self) -> str:
        return f"tensor_descriptor<{self.block_type!r}>"


def _atomic_doc(what: str) -> str:
    return (f"Atomically {what} where ``mask`` is true; returns the old values.\n\n"
            "``sem``: \"acq_rel\" (default), \"acquire\", \"release\", \"relaxed\"; "
            "``scope``: \"gpu\" (default), \"cta\", \"sys\".  ``val`` is cast to the pointee type.")


def _atomic(name: str, what: str):
    def stub(pointer, val, mask=None, sem=None, scope=None):
        pass
    return named_builtin(stub, name, _atomic_doc(what))


atomic_add = _atomic("atomic_add", "``*pointer += val``")
atomic_max = _atomic("atomic_max", "``*pointer = max(*pointer, val)`` (ints and floats)")
atomic_min = _atomic("atomic_min", "``*pointer = min(*pointer, val)`` (ints and floats)")
atomic_and = _atomic("atomic_and", "``*pointer &= val`` (ints)")
atomic_or = _atomic("atomic_or", "``*pointer |= val`` (ints)")
atomic_xor = _atomic("atomic_xor", "``*pointer ^= val`` (ints)")
atomic_xchg = _atomic("atomic_xchg", "``*pointer = val``")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomically ``old = *pointer; if old == cmp: *pointer = val``; returns ``old`` (16/32/64-bit)."""


# --------------------------------------------------------------------------- #
# Shape ops
# --------------------------------------------------------------------------- #


@builtin
def expand_dims(input, axis):
    """``input`` with new size-1 dimensions at ``axis`` (an int or a tuple of ints)."""


@builtin
def broadcast(input, other):
    """``input`` and ``other`` broadcast to their common shape (a pair)."""


@builtin
def broadcast_to(input, *shape):
    """``input`` broadcast to ``shape`` (numpy rules: size-1 dims repeat, missing leading dims added)."""


@builtin
def reshape(input, *shape, can_reorder=False):
    """``input``'s elements (row-major) laid out as ``shape`` (same number of elements)."""


@builtin
def view(input, *shape):
    """Deprecated: ``reshape(input, shape, can_reorder=True)`` (element order unspecified)."""


@builtin
def ravel(x, can_reorder=False):
    """``x`` flattened to 1-D."""


@builtin
def trans(input, *dims):
    """Permute ``input``'s dims (default ``(1, 0)``: transpose a 2-D tile)."""


@builtin
def permute(input, *dims):
    """``input`` with dims reordered: result dim ``i`` is ``input`` dim ``dims[i]``."""


@builtin
def join(a, b):
    """Stack ``a`` and ``b`` (broadcast together) along a new minor dim of size 2."""


@builtin
def split(a):
    """The two halves of ``a`` along its minor dim, which must have size 2 (a pair)."""


@builtin
def interleave(a, b):
    """Interleave ``a`` and ``b`` along their last dim (``reshape(join(a, b), ...)``)."""


# --------------------------------------------------------------------------- #
# Debugging, hints and compile-time helpers
# --------------------------------------------------------------------------- #


@builtin
def static_assert(cond, msg=""):
    """Fail compilation with ``msg`` unless the constexpr ``cond`` is true."""


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    """Print constexpr values (and tensor types) at compile time."""


@builtin
def device_print(prefix, *args, hex=False):
    """Print ``prefix`` and the values of ``args`` from every program at run time."""


@builtin
def device_assert(cond, msg="", mask=None):
    """Fail the launch with ``msg`` where ``cond`` is false (and ``mask``, if given, true).

    Unlike Triton, the check is always on (Triton needs ``TRITON_DEBUG=1``).
    """


@builtin
def multiple_of(input, values):
    """``input`` unchanged, with the promise that each element is a multiple of ``values``."""


@builtin
def max_contiguous(input, values):
    """``input`` unchanged, promising runs of ``values`` consecutive increasing elements."""


@builtin
def max_constancy(input, values):
    """``input`` unchanged, promising runs of ``values`` equal elements."""


@builtin
def assume(cond):
    """Promise the compiler that ``cond`` (a boolean scalar or tile) is true.

    A hint: tilec checks that ``cond`` is a boolean or integer value and does
    not use the promise yet, which is always correct (as Triton's interpreter).
    """


@builtin
def debug_barrier():
    """Synchronize all threads of the program."""


# --------------------------------------------------------------------------- #
# Loops
# --------------------------------------------------------------------------- #


class range:
    """``for i in tl.range(start, end, step, num_stages=...)``: a run-time loop.

    Like Python's ``range`` (one, two or three arguments).  The options
    (``num_stages``, ``loop_unroll_factor``, ``disallow_acc_multi_buffer``,
    ``flatten``, ``warp_specialize``, ``disable_licm``) are Triton's
    scheduling hints: accepted, and not acted on by tilec yet (the loop
    computes the same either way).
    """

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False, disable_licm=False):
        self.start, self.end = (0, arg1) if arg2 is None else (arg1, arg2)
        self.step = 1 if step is None else step
        self.num_stages = num_stages
        self.loop_unroll_factor = loop_unroll_factor
        self.disallow_acc_multi_buffer = disallow_acc_multi_buffer
        self.flatten = flatten
        self.warp_specialize = warp_specialize
        self.disable_licm = disable_licm

    def __iter__(self):
        raise RuntimeError(f"tl.{type(self).__name__} can only be used inside a @tilec.jit kernel")


class static_range(range):
    """``for i in tl.static_range(start, end, step)``: unrolled at compile time.

    The bounds must be constexprs; ``i`` is a constexpr in each copy of the body.
    """

    def __init__(self, arg1, arg2=None, step=None):
        super().__init__(arg1, arg2, step)


class PropagateNan:
    """How ``tl.maximum``/``minimum``/``clamp`` treat NaN: ``NONE`` (the other operand wins) or ``ALL``."""

    NONE = 0
    ALL = 0xFFFF


class condition:
    """``while tl.condition(cond, disable_licm=False):``: a while loop's condition with
    Triton's scheduling hint (``disable_licm``: accepted, not acted on).  The loop
    is the same as ``while cond:``; ``tl.condition`` may only be a while loop's test."""

    def __init__(self, arg1, disable_licm=False):
        self.condition = arg1
        self.disable_licm = disable_licm

    def __bool__(self):
        raise TypeError("tl.condition(...) can only be the test of a `while` loop")


class slice:
    """``start:stop:step`` as a value (``x[tl.slice(None, None, None)]`` is ``x[:]``),
    as Triton's ``tl.slice``; a subscript treats it as the Python slice."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step


class _AnyTuple(type):
    """``isinstance(t, tl.tuple)`` holds for every tuple: in a kernel ``(a, b)`` is as much one."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _py.tuple)


class tuple(_py.tuple, metaclass=_AnyTuple):
    """A tuple of kernel values, as Triton's ``tl.tuple``: ``tl.tuple([a, b])``
    is ``(a, b)``.  Inside a kernel every tuple is a compile-time structure of
    values (tensors, numbers, None, dtypes, other tuples): index it with
    compile-time ints (``t[0]``, ``t[-1]``, ``t[1:]``), unpack it
    (``a, b = t``), take ``len(t)``, iterate it (``for x in t:``, unrolled),
    pass it to and return it from ``@jit`` functions, and carry it through
    runtime loops and branches (each path must give it the same structure).
    A kernel parameter takes a tuple too: nested, mixing arrays, numbers,
    None and ``tl.constexpr`` values, each element specialized as it would
    be alone; a ``tl.constexpr`` parameter's tuple is one compile-time value."""

    def __new__(cls, args=(), type=None):
        return _py.tuple.__new__(cls, args)

    @property
    def type(self) -> "tuple_type":
        """The element types (a tensor's ``type``, a constexpr's ``constexpr_type``)."""
        return tuple_type([v.type if isinstance(v, tensor) else constexpr_type(v) for v in self],
                          getattr(self, "_fields", None))


class tuple_type:
    """The type of a ``tuple`` (Triton's ``tl.tuple_type``): its element types
    ``types`` and, for a named tuple, the field names ``fields``."""

    def __init__(self, types, fields=None):
        self.types = _py.tuple(types)
        self.fields = None if fields is None else _py.tuple(fields)

    @property
    def name(self) -> str:
        names = self.fields or ("",) * len(self.types)
        return "[" + ",".join(f"{k}:{v}" if k else str(v) for k, v in zip(names, self.types)) + "]"

    def __iter__(self):
        return iter(self.types)

    def __len__(self) -> int:
        return len(self.types)

    def __getitem__(self, index):
        return self.types[index]

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and (other.types, other.fields) == (self.types, self.fields)

    def __hash__(self) -> int:
        return hash(("tl.tuple_type", self.types, self.fields))

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"tl.tuple_type({list(self.types)!r}{'' if self.fields is None else f', {list(self.fields)!r}'})"
