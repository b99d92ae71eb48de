"""Tensor descriptors: ``tl.make_tensor_descriptor``, ``desc.load``/``desc.store``
(``tl.load_tensor_descriptor``/``tl.store_tensor_descriptor``), the descriptor
atomics, and kernel arguments bound to host ``TensorDescriptor``s.

A descriptor is a ``TensorDescriptor`` (an ``aggregates.Aggregate``): a
scalar base pointer, int32 shape and int64 strides (scalar tensors), and the
compile-time block shape and padding.  Every access checks every dimension:
it is ``tl_block_pointers.block_access`` with all dimensions bounded, so an
element outside the tensor reads the padding (zero or NaN) and is never
written, on every target alike (the Hopper issue will map it to the tensor
memory accelerator).  Triton's checks hold, with its messages: 1 to 5
dimensions, one stride and one block size per dimension, a last stride of 1,
at least 16 bytes in the block's last dimension, no NaN padding for integers.

A kernel parameter bound to a host descriptor has type
``ir.kernel_params.DescriptorParam``; ``kernel_argument`` makes its IR
arguments (base, shape, strides but the last) and the descriptor over them.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, NoReturn

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.aggregates import Aggregate
from tilec.frontend.common import bind_arguments
from tilec.frontend.semantic import Tensor, TypingError, constant, describe, dtype_name, emit, to_tl_dtype
from tilec.frontend.tl_block_pointers import (as_list, block_access, block_value, index_scalars, masked_load,
                                              padding_value)
from tilec.frontend.tl_ops import block_shape as power_of_two_shape, check_atomic_elem, implements, one_of
from tilec.ir.kernel_params import DescriptorParam

PADDINGS = ("zero", "nan")


class TensorDescriptor(Aggregate, tl.tensor_descriptor):
    """A tensor descriptor during the walk (see the module doc): ``shape`` and
    ``strides`` are tuples of scalar tensors, as Triton's ``desc.shape``."""

    def __init__(self, base: Tensor, shape: tuple, strides: tuple, block_shape: tuple, padding: str,
                 param: str = ""):
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape, self.padding = block_shape, padding
        self.param = param  # the kernel parameter bound to a host descriptor this is, or ""

    @property
    def elem(self) -> ir.ScalarType:
        return self.base.elem.elem

    @property
    def dtype(self) -> tl.dtype:
        return to_tl_dtype(self.elem)

    @property
    def block_type(self) -> tl.block_type:
        return tl.block_type(self.dtype, self.block_shape)

    @property
    def type(self) -> tl.tensor_descriptor_type:
        return tl.tensor_descriptor_type(self.block_type, len(self.block_shape))

    @property
    def load(self) -> semantic.BoundMethod:
        return semantic.BoundMethod(tl.load_tensor_descriptor, self)

    @property
    def store(self) -> semantic.BoundMethod:
        return semantic.BoundMethod(tl.store_tensor_descriptor, self)

    def __getattr__(self, name: str) -> Any:  # desc.atomic_add(offsets, value) and its siblings
        if name in _ATOMIC_KINDS:
            return _AtomicMethod(name, self)
        raise AttributeError(name)

    def parts(self) -> tuple:
        return (self.base, *self.shape, *self.strides)

    def with_parts(self, parts: tuple) -> "TensorDescriptor":
        r = len(self.block_shape)
        same = all(_handle(a) is _handle(b) for a, b in zip(parts, self.parts()))  # still the parameter's
        return TensorDescriptor(parts[0], tuple(parts[1:1 + r]), tuple(parts[1 + r:]), self.block_shape, self.padding,
                                self.param if same else "")

    def moving_parts(self) -> tuple:
        return (False,) * len(self.parts())

    def same_kind(self, other: Any) -> bool:
        return (isinstance(other, TensorDescriptor) and other.base.type == self.base.type
                and (other.block_shape, other.padding) == (self.block_shape, self.padding))

    def describe(self) -> str:
        return f"a tensor descriptor of {'x'.join(map(str, self.block_shape))} blocks of {dtype_name(self.elem)}"

    loop_advice = "make it before the loop (a descriptor does not move: load and store at other offsets)"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


def _handle(part: Any) -> Any:
    return part.handle if isinstance(part, Tensor) else part


def refuse(ctx, message: str) -> NoReturn:
    """Triton's compile error for a bad descriptor: the message is also the error's
    ``__cause__``, where Triton's own tests read it."""
    raise ctx.make_error(message) from ValueError(message)


def descriptor_arg(desc: Any, fname: str) -> TensorDescriptor:
    if not isinstance(desc, TensorDescriptor):
        raise TypingError(f"`{fname}` needs a tensor descriptor (tl.make_tensor_descriptor, or a TensorDescriptor "
                          f"argument), got {desc.describe() if isinstance(desc, Aggregate) else describe(desc)}")
    return desc


def descriptor_block(ctx, desc: TensorDescriptor, offsets: Any, fname: str) -> tuple[Tensor, Tensor, list]:
    """The pointers and the in-bounds mask of ``desc``'s block at ``offsets``,
    and the offsets as ``i32`` scalars (one per dimension)."""
    offs = as_list(offsets)
    if len(offs) != len(desc.block_shape):
        raise TypingError(f"`{fname}`: {desc.describe()} needs {len(desc.block_shape)} offsets, got {len(offs)}")
    offs = index_scalars(ctx, offs, ir.i32, f"the offsets of `{fname}`")
    every_dim = tuple(range(len(desc.block_shape)))
    return (*block_access(ctx, desc.base, desc.shape, desc.strides, offs, desc.block_shape, every_dim), offs)


# --------------------------------------------------------------------------- #
# Making descriptors
# --------------------------------------------------------------------------- #

@implements(tl.make_tensor_descriptor)
def _make_tensor_descriptor(ctx, base, shape, strides, block_shape, padding_option):
    if not (isinstance(base, Tensor) and not base.shape and isinstance(base.elem, ir.PointerType)):
        raise TypingError(f"`tl.make_tensor_descriptor` needs a scalar pointer as its base, got "
                          f"{base.describe() if isinstance(base, Aggregate) else describe(base)}")
    shape, strides, blocks = as_list(shape), as_list(strides), as_list(block_shape)
    ndim = len(shape)
    if not 1 <= ndim <= 5:
        refuse(ctx, f"Expected 1 <= ndim <= 5 but got {ndim} dimensions")
    if len(strides) != ndim:
        refuse(ctx, f"Expected {ndim} strides but got {len(strides)}")
    if len(blocks) != ndim:
        refuse(ctx, f"Expected block_shape to have {ndim} dimensions but got {len(blocks)}")
    dims = power_of_two_shape(blocks, "the block_shape of `tl.make_tensor_descriptor`")
    elem_bytes = base.elem.elem.bits // 8
    if dims[-1] * elem_bytes < 16:
        refuse(ctx, f"Descriptor block shape must have at least 16 bytes in the last dimension, but got "
                    f"{dims[-1]} * {elem_bytes} = {dims[-1] * elem_bytes} bytes")
    last = strides[-1]
    if isinstance(last, Tensor):
        refuse(ctx, "Tensor descriptor last dim must be 1: the last stride must be the constant 1 (the last "
                    f"dimension contiguous), got a runtime {describe(last)}")
    if last != 1:
        refuse(ctx, f"Tensor descriptor last dim must be 1 but got {last}")
    padding = one_of(padding_option, PADDINGS, "`tl.make_tensor_descriptor` padding_option")
    padding_value(ctx, padding, base.elem.elem, (), "blocks")  # refuses NaN padding for integers
    return TensorDescriptor(base, index_scalars(ctx, shape, ir.i32, "the shape of a tensor descriptor", wrap=True),
                            index_scalars(ctx, strides, ir.i64, "the strides of a tensor descriptor"), dims, padding)


def kernel_argument(ctx, fn: ir.Function, name: str, param: DescriptorParam, attrs: tuple) -> TensorDescriptor:
    """The descriptor a kernel parameter bound to a host ``TensorDescriptor`` is:
    ``param.arguments(name)`` appended to ``fn``'s arguments (the base pointer
    with the parameter's ``attrs``), the last stride the constant 1."""
    values = []
    for i, (arg_name, t) in enumerate(param.arguments(name)):
        fn.arg_names.append(arg_name)
        fn.arg_attrs.append(dict(attrs) if i == 0 else {})
        values.append(Tensor(fn.body.add_arg(t, arg_name)))
    r = param.rank
    strides = (*values[1 + r:], constant(ctx, 1, ir.i64))
    return TensorDescriptor(values[0], tuple(values[1:1 + r]), strides, param.block_shape, param.padding,
                            name if param.bulk else "")


# --------------------------------------------------------------------------- #
# Loads, stores, atomics
# --------------------------------------------------------------------------- #

@implements(tl.load_tensor_descriptor)
def _load_tensor_descriptor(ctx, desc, offsets):
    desc = descriptor_arg(desc, "tl.load_tensor_descriptor")
    pointers, inside, coords = descriptor_block(ctx, desc, offsets, "tl.load_tensor_descriptor")
    return masked_load(ctx, pointers, inside, desc.padding, "blocks", cache="", eviction="", volatile=False,
                       **block_of(desc, coords))


def block_of(desc: TensorDescriptor, coords: list) -> dict:
    """What a load or store of ``desc``'s block at ``coords`` says of it
    (``ir.Load``'s and ``ir.Store``'s ``descriptor`` and ``coords``): a backend
    may copy the block with the tensor memory accelerator through the host
    descriptor's parameter."""
    return dict(descriptor=desc.param, coords=[c.handle for c in coords]) if desc.param else {}


@implements(tl.store_tensor_descriptor)
def _store_tensor_descriptor(ctx, desc, offsets, value):
    desc = descriptor_arg(desc, "tl.store_tensor_descriptor")
    val = block_value(ctx, value, desc.elem, desc.block_shape, "tl.store_tensor_descriptor")
    pointers, inside, coords = descriptor_block(ctx, desc, offsets, "tl.store_tensor_descriptor")
    ctx.builder.create(ir.Store, ptr=pointers.handle, value=val.handle, mask=inside.handle, cache="", eviction="",
                       **block_of(desc, coords))


# desc.atomic_<kind>: Triton's element types for each (those tilec's atomics also take).
_ATOMIC_KINDS = {
    "atomic_add": ("add", (ir.u32, ir.i32, ir.u64, ir.f32, ir.f16, ir.bf16)),
    "atomic_min": ("min", (ir.u32, ir.i32, ir.u64, ir.i64)),
    "atomic_max": ("max", (ir.u32, ir.i32, ir.u64, ir.i64)),
    "atomic_and": ("and", (ir.u32, ir.i32, ir.u64, ir.i64)),
    "atomic_or": ("or", (ir.u32, ir.i32, ir.u64, ir.i64)),
    "atomic_xor": ("xor", (ir.u32, ir.i32, ir.u64, ir.i64)),
}
_ATOMIC_SIGNATURE = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                       for n in ("offsets", "value")])


def descriptor_atomic(ctx, desc: TensorDescriptor, method: str, offsets: Any, value: Any) -> None:
    """``desc.<method>(offsets, value)``: an atomic update of the block's in-bounds elements."""
    fname = f"desc.{method}"
    kind, elems = _ATOMIC_KINDS[method]
    if desc.elem not in elems:
        raise TypingError(f"`{fname}` does not support {dtype_name(desc.elem)}; it takes "
                          + ", ".join(dtype_name(t) for t in elems))
    check_atomic_elem(desc.elem, kind, fname)
    val = block_value(ctx, value, desc.elem, desc.block_shape, fname)
    pointers, inside, _ = descriptor_block(ctx, desc, offsets, fname)
    emit(ctx, ir.AtomicRMW, kind=kind, ptr=pointers.handle, val=val.handle, mask=inside.handle, sem="relaxed",
         scope="gpu")


@dataclass(frozen=True)
class _AtomicMethod(semantic.BoundMethod):
    """``desc.atomic_add`` and its siblings before the call (no ``tl`` function stands for them)."""

    def call(self, ctx, args: list, kwargs: dict) -> None:
        arguments = bind_arguments(ctx, _ATOMIC_SIGNATURE, f"desc.{self.fn}", args, kwargs)
        try:
            descriptor_atomic(ctx, self.self_value, self.fn, **arguments)
        except TypingError as e:
            ctx.error(str(e))
