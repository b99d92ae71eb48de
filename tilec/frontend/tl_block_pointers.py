"""Block pointers: ``tl.make_block_ptr``, ``tl.advance``, and ``tl.load``/``tl.store``
through them, lowered in the front end to a tile of pointers and a mask.

A block pointer is a ``BlockPointer`` (an ``aggregates.Aggregate``): a scalar
base pointer, int64 shape and strides and int32 offsets (scalar tensors),
and the compile-time block shape and order.  No IR op stands for it: a load
or store builds, with existing ops, the pointers of the block's elements,

    base + sum over d of (offsets[d] + arange(block_shape[d])) * strides[d]

(in int64, each term broadcast along its dimension), and for the dimensions
``boundary_check`` names the mask ``0 <= offsets[d] + i < shape[d]``.  Every
target runs that as it runs any masked access (the Hopper issue will map it
to the tensor memory accelerator instead).  ``block_access`` is that
computation; tensor descriptors (``tl_tensor_descriptors.py``) use it too.

Triton's rules and messages hold: a base that is a scalar pointer (an
``int1`` one is used as ``int8``), one shape, stride and offset per
dimension of ``block_shape``, an ``order`` that permutes the dimensions, no
``mask``/``other`` with a block pointer, no "nan" padding for integers,
``boundary_check`` dimensions in range and distinct.  Where Triton leaves
an out-of-bounds element of a load undefined (no ``padding_option``), tilec
reads zero.
"""
from __future__ import annotations

from typing import Any, Optional

from tilec import ir
from tilec.frontend import semantic
from tilec.frontend.aggregates import Aggregate
from tilec.frontend.semantic import Tensor, TypingError, cast_to, constant, describe, dtype_name, emit, to_tensor
from tilec.frontend.tl_ops import block_shape as power_of_two_shape, const_int, fit_to, implements, one_of
from tilec import language as tl

PADDINGS = ("", "zero", "nan")


class BlockPointer(Aggregate):
    """A block pointer during the walk (see the module doc); immutable: ``tl.advance`` makes a new one."""

    def __init__(self, base: Tensor, shape: tuple, strides: tuple, offsets: tuple, block_shape: tuple,
                 order: tuple):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = block_shape, order

    @property
    def elem(self) -> ir.ScalarType:
        return self.base.elem.elem

    def parts(self) -> tuple:
        return (self.base, *self.shape, *self.strides, *self.offsets)

    def with_parts(self, parts: tuple) -> "BlockPointer":
        r = len(self.block_shape)
        return BlockPointer(parts[0], tuple(parts[1:1 + r]), tuple(parts[1 + r:1 + 2 * r]), tuple(parts[1 + 2 * r:]),
                            self.block_shape, self.order)

    def moving_parts(self) -> tuple:
        r = len(self.block_shape)
        return (False,) * (1 + 2 * r) + (True,) * r

    def same_kind(self, other: Any) -> bool:
        return (isinstance(other, BlockPointer) and (other.block_shape, other.order) == (self.block_shape, self.order)
                and other.base.type == self.base.type)

    def describe(self) -> str:
        return f"a block pointer to a {'x'.join(map(str, self.block_shape))} block of {dtype_name(self.elem)}"

    loop_advice = "make it before the loop and move it with tl.advance"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


# --------------------------------------------------------------------------- #
# Arguments
# --------------------------------------------------------------------------- #

def as_list(values: Any) -> list:
    """A per-dimension argument as a list: a tuple or list, or one value for one dimension (as Triton)."""
    return list(values) if isinstance(values, (tuple, list)) else [values]


def index_scalars(ctx, values: Any, to: ir.ScalarType, what: str, wrap: bool = False) -> tuple:
    """Each of ``values`` (ints or scalar integer tensors) as a scalar of type ``to``.

    int64 (shape, strides) takes any integer; int32 (offsets) refuses an int64
    tensor, as Triton does, rather than dropping its high bits, unless ``wrap``
    (a descriptor's shape: Triton casts it to int32)."""
    out = []
    for v in as_list(values):
        if isinstance(v, bool) or not isinstance(v, (int, Tensor)):
            raise TypingError(f"{what} must be integers or scalar integer tensors, got {describe(v)}")
        if isinstance(v, int):
            lo, hi = semantic.int_range(to)
            if not lo <= v <= hi:
                raise TypingError(f"{what}: {v} does not fit in {dtype_name(to)}")
            out.append(constant(ctx, v, to))
            continue
        if v.shape or not (isinstance(v.elem, ir.ScalarType) and v.elem.is_int and not v.elem.is_bool):
            raise TypingError(f"{what} must be integers or scalar integer tensors, got {describe(v)}")
        if v.elem.bits > to.bits and not wrap:
            raise TypingError(f"{what} are {dtype_name(to)} and got a {dtype_name(v.elem)} tensor; add a "
                              f"`.to(tl.{semantic.to_tl_dtype(to).name})` or use a tile of pointers for wider values")
        out.append(cast_to(ctx, v, to))
    return tuple(out)


def scalar_base(ctx, base: Any, fname: str) -> Tensor:
    """The base pointer of a block pointer or descriptor: a scalar pointer (``int1`` used as ``int8``)."""
    if isinstance(base, BlockPointer) or not isinstance(base, Tensor) or base.shape \
            or not isinstance(base.elem, ir.PointerType):
        raise TypingError(f"`{fname}` needs a scalar pointer as its base (not a block pointer or a tile), "
                          f"got {base.describe() if isinstance(base, Aggregate) else describe(base)}")
    if base.elem.elem == ir.i1:
        return cast_to(ctx, base, ir.PointerType(ir.i8, base.elem.space))
    return base


def constexpr_ints(values: Any, what: str) -> tuple:
    return tuple(const_int(v, f"each entry of {what}") for v in as_list(values))


def checked_dims(boundary_check: Any, rank: int) -> tuple:
    """``boundary_check`` as sorted distinct dimensions in ``[0, rank)`` (Triton's rule)."""
    dims = constexpr_ints(boundary_check, "`boundary_check`") if boundary_check not in (None, ()) else ()
    for d in dims:
        if not 0 <= d < rank:
            raise TypingError(f"`boundary_check` dimension {d} is out of range for a block of rank {rank}")
    if len(set(dims)) != len(dims):
        raise TypingError(f"`boundary_check` {dims} names a dimension twice")
    return tuple(sorted(dims))


# --------------------------------------------------------------------------- #
# The pointers and the mask of a block
# --------------------------------------------------------------------------- #

def block_access(ctx, base: Tensor, shape: tuple, strides: tuple, offsets: tuple, block_shape: tuple,
                 checked: tuple) -> tuple[Tensor, Optional[Tensor]]:
    """The pointer tile of the block at ``offsets`` and, when ``checked`` names
    dimensions, the mask of its elements inside ``shape`` along them."""
    rank = len(block_shape)
    address: Optional[Tensor] = None
    mask: Optional[Tensor] = None
    for d, size in enumerate(block_shape):
        index = _along(ctx, emit(ctx, ir.Arange, start=0, end=size), d, rank)
        position = semantic.binary(ctx, "add", cast_to(ctx, index, ir.i64), cast_to(ctx, offsets[d], ir.i64))
        term = semantic.binary(ctx, "mul", position, strides[d])
        address = term if address is None else semantic.binary(ctx, "add", address, term)
        if d in checked:
            inside = semantic.binary(ctx, "and", semantic.compare(ctx, "ge", position, 0),
                                     semantic.compare(ctx, "lt", position, shape[d]))
            mask = inside if mask is None else semantic.binary(ctx, "and", mask, inside)
    pointers = semantic.binary(ctx, "add", base, semantic.broadcast_to(ctx, address, block_shape))
    return pointers, None if mask is None else semantic.broadcast_to(ctx, mask, block_shape)


def _along(ctx, x: Tensor, d: int, rank: int) -> Tensor:
    """A 1-D tile as dimension ``d`` of a rank-``rank`` tile (size 1 in the others), made
    as ``x[None, :, None]`` is: the optimizer follows a range through new axes, not
    through a reshape, and a range it follows is what vector accesses are made of."""
    return semantic.subscript(ctx, x, tuple(slice(None) if i == d else None for i in range(rank)))


def padding_value(ctx, padding: str, elem: ir.ScalarType, shape: tuple, what: str) -> Tensor:
    """What an out-of-bounds element reads: zero, or NaN (floats only, as Triton)."""
    if padding == "nan":
        if not elem.is_float:
            raise TypingError(f"Padding option `nan` is not supported for integer {what}")
        return constant(ctx, float("nan"), elem, shape)
    return constant(ctx, 0, elem, shape)


def masked_load(ctx, pointers: Tensor, mask: Optional[Tensor], padding: str, what: str, **options) -> Tensor:
    other = None if mask is None else padding_value(ctx, padding, pointers.elem.elem, pointers.shape, what).handle
    return emit(ctx, ir.Load, ptr=pointers.handle, mask=None if mask is None else mask.handle, other=other,
                **options)


def block_value(ctx, value: Any, elem: ir.ScalarType, block_shape: tuple, fname: str) -> Tensor:
    """The value stored to a block: a scalar splats, a tile must have the block's shape (as Triton); cast to ``elem``."""
    x = to_tensor(ctx, value)
    if x.shape and x.shape != block_shape:
        raise TypingError(f"`{fname}`: the value's shape {x.shape} is not the block's shape {block_shape}")
    return fit_to(ctx, cast_to(ctx, x, elem), block_shape, "value", fname)


# --------------------------------------------------------------------------- #
# tl.make_block_ptr, tl.advance, and loads and stores through block pointers
# --------------------------------------------------------------------------- #

@implements(tl.make_block_ptr)
def _make_block_ptr(ctx, base, shape, strides, offsets, block_shape, order):
    base = scalar_base(ctx, base, "tl.make_block_ptr")
    if isinstance(block_shape, Tensor) or any(isinstance(d, Tensor) for d in as_list(block_shape)):
        raise TypingError("`tl.make_block_ptr`: block_shape must be constexpr ints (the block's shape is known "
                          f"at compile time), got {block_shape!r}; annotate the kernel parameters it comes from "
                          "`: tl.constexpr`")
    dims = power_of_two_shape(as_list(block_shape), "the block_shape of `tl.make_block_ptr`")
    order = constexpr_ints(order, "the order of `tl.make_block_ptr`")
    if sorted(order) != list(range(len(order))):
        raise TypingError(f"`tl.make_block_ptr`: order {order} must be a permutation of {tuple(range(len(order)))}")
    lists = {"shape": shape, "strides": strides, "offsets": offsets, "order": order}
    wrong = {n: len(as_list(v)) for n, v in lists.items() if len(as_list(v)) != len(dims)}
    if wrong:
        raise TypingError(f"`tl.make_block_ptr`: block_shape {dims} has {len(dims)} dimensions, but "
                          + ", ".join(f"{n} has {k}" for n, k in wrong.items())
                          + "; shape, strides, offsets and order need one entry per dimension")
    return BlockPointer(base, index_scalars(ctx, shape, ir.i64, "the shape of `tl.make_block_ptr`"),
                        index_scalars(ctx, strides, ir.i64, "the strides of `tl.make_block_ptr`"),
                        index_scalars(ctx, offsets, ir.i32, "the offsets of `tl.make_block_ptr`"), dims, order)


@implements(tl.advance)
def _advance(ctx, base, offsets):
    if not isinstance(base, BlockPointer):
        raise TypingError(f"`tl.advance` moves a block pointer (tl.make_block_ptr), got {describe(base)}")
    deltas = as_list(offsets)
    if len(deltas) != len(base.block_shape):
        raise TypingError(f"`tl.advance`: {base.describe()} needs {len(base.block_shape)} offsets, got {len(deltas)}")
    moved = [old if isinstance(delta, int) and not isinstance(delta, bool) and delta == 0
             else semantic.binary(ctx, "add", old, index_scalars(ctx, delta, ir.i32, "the offsets of `tl.advance`")[0])
             for old, delta in zip(base.offsets, deltas)]
    return BlockPointer(base.base, base.shape, base.strides, tuple(moved), base.block_shape, base.order)


def load(ctx, pointer: BlockPointer, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy,
         volatile) -> Tensor:
    """``tl.load`` through a block pointer (``tl_ops._load`` sends it here, its options checked)."""
    if mask is not None or other is not None:
        raise TypingError("`mask` and `other` arguments cannot be specified for loading block pointers; "
                          "use boundary_check and padding_option")
    padding = one_of(padding_option or "", PADDINGS, "`tl.load` padding_option")
    if padding == "nan":
        padding_value(ctx, padding, pointer.elem, (), "block pointers")  # refuses ints before anything is built
    pointers, inside = block_access(ctx, pointer.base, pointer.shape, pointer.strides, pointer.offsets,
                                    pointer.block_shape, checked_dims(boundary_check, len(pointer.block_shape)))
    return masked_load(ctx, pointers, inside, padding, "block pointers", cache=cache_modifier,
                       eviction=eviction_policy, volatile=bool(volatile))


def store(ctx, pointer: BlockPointer, value, mask, boundary_check, cache_modifier, eviction_policy) -> None:
    """``tl.store`` through a block pointer (``tl_ops._store`` sends it here, its options checked)."""
    if mask is not None:
        raise TypingError("`mask` cannot be specified for storing to block pointers; use boundary_check")
    checked = checked_dims(boundary_check, len(pointer.block_shape))
    val = block_value(ctx, value, pointer.elem, pointer.block_shape, "tl.store")
    pointers, inside = block_access(ctx, pointer.base, pointer.shape, pointer.strides, pointer.offsets,
                                    pointer.block_shape, checked)
    ctx.builder.create(ir.Store, ptr=pointers.handle, value=val.handle, mask=None if inside is None else inside.handle,
                       cache=cache_modifier, eviction=eviction_policy)
