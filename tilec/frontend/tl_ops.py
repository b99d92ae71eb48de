"""The IR every ``tl.*`` function builds: ``call_builtin(ctx, fn, args, kwargs)``.

Each stub of ``tilec.language`` maps to one implementation in ``BUILTINS``,
registered with ``@implements(tl.stub)``.  The call's arguments are bound to
the stub's own signature (so the docstring's signature is the truth and
defaults live in one place) and passed to the implementation by name:
``impl(ctx, **bound.arguments)``.  Implementations raise
``semantic.TypingError`` for user mistakes; ``call_builtin`` reports it at
the user's line through ``ctx.error``.

This file holds the registry, argument helpers, program geometry, tile
creation, casts, memory, atomics and debugging; ``tl_math``, ``tl_libdevice``,
``tl_shape``, ``tl_reduce``, ``tl_random``, ``tl_indexing``, ``tl_operators``,
``tl_dot_scaled``, ``tl_compat``, ``tl_block_pointers``, ``tl_tensor_descriptors`` and
``tl_custom`` hold the rest.
"""
from __future__ import annotations

import inspect
from typing import Any

from tilec import ir
from tilec import language as tl
from tilec.frontend.semantic import BoundMethod, Tensor, TypingError, broadcast_to, cast_to, constant, describe, dtype_name, emit, to_ir_type, to_tensor
from tilec.frontend import semantic
from tilec.frontend.common import bind_arguments
from tilec.rules import registry

BUILTINS, implements = registry("Register the decorated function as the implementation of the given ``tl`` stubs.")


def call_builtin(ctx, fn, args: list, kwargs: dict) -> Any:
    """Build the IR for ``fn(*args, **kwargs)``, ``fn`` a ``tl`` stub or a ``BoundMethod``."""
    if isinstance(fn, BoundMethod):
        fn, args = fn.fn, [fn.self_value, *args]
    name = f"tl.{fn.__name__}"
    impl = BUILTINS.get(fn)
    if impl is None:
        ctx.error(f"`{name}` is not supported yet")
    arguments = bind_arguments(ctx, inspect.signature(fn), name, args, kwargs)
    try:
        return impl(ctx, **arguments)
    except TypingError as e:
        ctx.error(str(e))


# --------------------------------------------------------------------------- #
# Argument helpers
# --------------------------------------------------------------------------- #

def const_int(value, what: str) -> int:
    """``value`` as a compile-time int, or a clear error naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int):
        hint = "; if it is a kernel parameter, annotate it `: tl.constexpr`" if isinstance(value, Tensor) else ""
        raise TypingError(f"{what} must be a constexpr int, got {describe(value)}{hint}")
    return value


def const_axis(value, rank: int, what: str) -> int:
    """A constexpr axis in ``[-rank, rank)``, normalized to ``[0, rank)``."""
    axis = const_int(value, what)
    if not -rank <= axis < rank:
        raise TypingError(f"{what} {axis} is out of range for a tile of rank {rank}")
    return axis % rank


def dtype_arg(value, what: str) -> ir.ElemType:
    if not isinstance(value, tl.dtype):
        raise TypingError(f"{what} must be a dtype such as tl.float32, got {describe(value)}")
    return to_ir_type(value)


def shape_arg(shape, what: str) -> tuple:
    """A shape given as ints, a tuple/list of ints, or ``*shape`` holding one tuple."""
    if isinstance(shape, tuple) and len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    dims = (shape,) if isinstance(shape, int) else tuple(shape) if isinstance(shape, (tuple, list)) else None
    if dims is None:
        raise TypingError(f"{what} must be a tuple of constexpr ints, got {describe(shape)}")
    return tuple(const_int(d, f"each dimension of {what}") for d in dims)


def block_shape(shape, what: str) -> tuple:
    """A tile shape as Triton requires it: positive powers of two (``semantic.emit``
    keeps the limit on elements)."""
    dims = shape_arg(shape, what)
    for d in dims:
        if d <= 0 or d & (d - 1):
            raise TypingError(f"{what} {dims}: every dimension must be a power of two (as in Triton), got {d}; "
                              "round up with tl.next_power_of_2 and mask the extra elements")
    return dims




def pointer_arg(ctx, value, fname: str) -> Tensor:
    x = to_tensor(ctx, value)
    if not isinstance(x.elem, ir.PointerType):
        raise TypingError(f"`{fname}` needs a pointer, got {describe(x)}")
    return x


def writable_pointer_arg(ctx, value, fname: str) -> Tensor:
    """``pointer_arg`` for a function that writes memory: a ``tl.const`` pointer is refused."""
    x = pointer_arg(ctx, value, fname)
    if x.elem.const:
        raise TypingError(f"Cannot store to a constant pointer: `{fname}` writes through a {dtype_name(x.elem)}, "
                          "which is read-only (a `tl.const` parameter, or a const `tl.pointer_type`)")
    return x


def fit_to(ctx, x: Tensor, shape: tuple, what: str, fname: str) -> Tensor:
    """``x`` broadcast to the pointer's ``shape`` (never the pointer to ``x``'s).

    As Triton, a scalar splats but a tile must have the pointer's rank: only
    its size-1 dims repeat.  numpy's rule would also add leading dims, so a
    (4, 4) value stored through a (4, 4, 4) pointer would silently write the
    same 16 values four times."""
    if x.shape and len(x.shape) != len(shape):
        raise TypingError(f"`{fname}`: {what} of shape {x.shape} does not fit the pointer's shape {shape}: "
                          f"a tile must have the pointer's rank ({len(shape)}), only its size-1 dims are "
                          "broadcast; add the missing dims explicitly (x[None, :], tl.reshape or tl.broadcast_to)")
    try:
        return broadcast_to(ctx, x, shape)
    except TypingError:
        raise TypingError(f"`{fname}`: {what} of shape {x.shape} does not fit the pointer's shape {shape}") from None


def mask_arg(ctx, mask, shape: tuple, fname: str):
    """An ``int1`` mask broadcast to ``shape`` (None stays None)."""
    if mask is None:
        return None
    m = to_tensor(ctx, mask)
    if m.elem != ir.i1:
        raise TypingError(f"the mask of `{fname}` must be a boolean (int1) tensor such as `offs < n`, "
                          f"got {describe(m)}")
    return fit_to(ctx, m, shape, "mask", fname).handle


def one_of(value, allowed: tuple, what: str):
    if value not in allowed:
        raise TypingError(f"{what} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


# --------------------------------------------------------------------------- #
# Program geometry, creation, casts
# --------------------------------------------------------------------------- #

def _grid_axis(axis, fname: str) -> int:
    """The constexpr grid axis of ``fname`` (0, 1 or 2); the message holds Triton's words."""
    n = const_int(axis, f"the axis of `{fname}`")
    if n not in (0, 1, 2):
        raise TypingError(f"`{fname}`: {fname.removeprefix('tl.')} axis must be 0, 1, or 2 but got {n}")
    return n


@implements(tl.program_id)
def _program_id(ctx, axis):
    return emit(ctx, ir.ProgramId, axis=_grid_axis(axis, "tl.program_id"))


@implements(tl.num_programs)
def _num_programs(ctx, axis):
    return emit(ctx, ir.NumPrograms, axis=_grid_axis(axis, "tl.num_programs"))


@implements(tl.arange)
def _arange(ctx, start, end):
    start, end = const_int(start, "`tl.arange` start"), const_int(end, "`tl.arange` end")
    n = end - start
    if n <= 0:
        raise TypingError(f"`tl.arange({start}, {end})`: end must be greater than start")
    if n & (n - 1):
        raise TypingError(f"`tl.arange({start}, {end})`: the length {n} must be a power of two; use "
                          f"tl.arange(0, {1 << (n - 1).bit_length()}) and mask the extra elements")
    if end > 2 ** 31 - 1 or start < -(2 ** 31):
        raise TypingError(f"`tl.arange({start}, {end})`: bounds must fit in int32")
    return emit(ctx, ir.Arange, start=start, end=end)


@implements(tl.full)
def _full(ctx, shape, value, dtype):
    dims = block_shape(shape, "the shape of `tl.full`")
    t = dtype_arg(dtype, "the dtype of `tl.full`")
    if isinstance(t, ir.PointerType):
        raise TypingError("`tl.full` makes number tiles; for a tile of pointers, add offsets to a pointer")
    if isinstance(value, Tensor):
        if value.shape:
            raise TypingError(f"the value of `tl.full` must be a scalar, got {describe(value)}")
        return broadcast_to(ctx, cast_to(ctx, value, t), dims)
    if not semantic.is_number(value):
        raise TypingError(f"the value of `tl.full` must be a number or scalar tensor, got {describe(value)}")
    return constant(ctx, value, t, dims)


@implements(tl.zeros)
def _zeros(ctx, shape, dtype):
    return _full(ctx, shape, 0, dtype)


@implements(tl.zeros_like)
def _zeros_like(ctx, input):
    return _full_like(ctx, input, 0, None)


@implements(tl.full_like)
def _full_like(ctx, input, value, dtype):
    x = to_tensor(ctx, input)
    return _full(ctx, x.shape, value, x.dtype if dtype is None else dtype)


@implements(tl.cast)
def _cast(ctx, input, dtype, fp_downcast_rounding, bitcast):
    to = dtype_arg(dtype, "the dtype of `tl.cast` / `.to()`")
    if bitcast:
        return semantic.bitcast_to(ctx, input, to)
    return cast_to(ctx, input, to, fp_downcast_rounding)


# --------------------------------------------------------------------------- #
# Memory
# --------------------------------------------------------------------------- #

_LOAD_CACHE = ("", ".ca", ".cg", ".cv")
_STORE_CACHE = ("", ".wb", ".cg", ".cs", ".wt")
_EVICTION = ("", "evict_first", "evict_last", "evict_normal")
_NO_BOUNDARY = ("`boundary_check` and `padding_option` are for block pointers (tl.make_block_ptr): a tile of "
                "pointers or a scalar one has no boundary to check; guard it with a mask")


def _storage_pointer(ctx, ptr: Tensor) -> Tensor:
    """Bools live in memory as bytes (as Triton): an ``int1`` pointer is used as an ``int8`` one."""
    if ptr.elem.elem != ir.i1:
        return ptr
    return cast_to(ctx, ptr, ir.PointerType(ir.i8, ptr.elem.space))


@implements(tl.load)
def _load(ctx, pointer, mask, other, boundary_check, padding_option, cache_modifier, eviction_policy, volatile):
    one_of(cache_modifier, _LOAD_CACHE, "`tl.load` cache_modifier")
    one_of(eviction_policy, _EVICTION, "`tl.load` eviction_policy")
    if isinstance(pointer, tl_block_pointers.BlockPointer):  # its pointer tile and mask: tl_block_pointers.py
        return tl_block_pointers.load(ctx, pointer, mask, other, boundary_check, padding_option, cache_modifier,
                                      eviction_policy, volatile)
    ptr = pointer_arg(ctx, pointer, "tl.load")
    if boundary_check or padding_option:
        raise TypingError(_NO_BOUNDARY)
    if other is not None and mask is None:
        raise TypingError("`tl.load`: `other` needs a `mask` (the value used where the mask is false)")
    is_bool = ptr.elem.elem == ir.i1
    ptr = _storage_pointer(ctx, ptr)
    other_value = None if other is None else fit_to(
        ctx, cast_to(ctx, other, ptr.elem.elem), ptr.shape, "other", "tl.load").handle
    result = emit(ctx, ir.Load, ptr=ptr.handle, mask=mask_arg(ctx, mask, ptr.shape, "tl.load"), other=other_value,
                  cache=cache_modifier, eviction=eviction_policy, volatile=bool(volatile))
    return cast_to(ctx, result, ir.i1) if is_bool else result


@implements(tl.store)
def _store(ctx, pointer, value, mask, boundary_check, cache_modifier, eviction_policy):
    """The value is converted to the pointee type with ``cast`` rules, as Triton
    does: a float stored through an int pointer truncates toward zero.  Unlike
    Triton (which stores ``int8(value)`` through an int1 pointer), a value stored
    through an int1 pointer is ``value != 0``."""
    one_of(cache_modifier, _STORE_CACHE, "`tl.store` cache_modifier")
    one_of(eviction_policy, _EVICTION, "`tl.store` eviction_policy")
    if isinstance(pointer, tl_block_pointers.BlockPointer):  # its pointer tile and mask: tl_block_pointers.py
        return tl_block_pointers.store(ctx, pointer, value, mask, boundary_check, cache_modifier, eviction_policy)
    ptr = writable_pointer_arg(ctx, pointer, "tl.store")
    if boundary_check:
        raise TypingError(_NO_BOUNDARY)
    # Through the pointee type first: a value stored to an int1 pointer is `!= 0`, then a 0/1 byte.
    val = cast_to(ctx, value, ptr.elem.elem)
    ptr = _storage_pointer(ctx, ptr)
    val = fit_to(ctx, cast_to(ctx, val, ptr.elem.elem), ptr.shape, "value", "tl.store")
    ctx.builder.create(ir.Store, ptr=ptr.handle, value=val.handle, mask=mask_arg(ctx, mask, ptr.shape, "tl.store"),
                       cache=cache_modifier, eviction=eviction_policy)


# --------------------------------------------------------------------------- #
# Atomics
# --------------------------------------------------------------------------- #

_SEMANTICS = ("acquire", "release", "acq_rel", "relaxed")
_SCOPES = ("gpu", "cta", "sys")


def _atomic_common(ctx, pointer, sem, scope, fname: str) -> tuple[Tensor, str, str]:
    ptr = writable_pointer_arg(ctx, pointer, fname)
    sem = one_of("acq_rel" if sem is None else sem, _SEMANTICS, f"`{fname}` sem")
    scope = one_of("gpu" if scope is None else scope, _SCOPES, f"`{fname}` scope")
    return ptr, sem, scope


def check_atomic_elem(elem: ir.ScalarType, kind: str, fname: str) -> None:
    """Which element types each atomic supports (Triton's rules)."""
    if elem.is_int and elem.bits < 32:
        raise TypingError(f"`{fname}` does not support {dtype_name(elem)}; use a 32- or 64-bit type")
    if elem.is_float and elem.bits == 16 and kind != "add":
        raise TypingError(f"`{fname}` does not support {dtype_name(elem)}; only atomic_add takes 16-bit floats")
    if elem.is_float and kind in ("and", "or", "xor"):
        raise TypingError(f"`{fname}` needs an integer pointer, got a pointer to {dtype_name(elem)}")


def _atomic_rmw(kind: str, fname: str):
    def impl(ctx, pointer, val, mask, sem, scope):
        ptr, sem, scope = _atomic_common(ctx, pointer, sem, scope, fname)
        check_atomic_elem(ptr.elem.elem, kind, fname)
        v = fit_to(ctx, cast_to(ctx, val, ptr.elem.elem), ptr.shape, "val", fname)
        return emit(ctx, ir.AtomicRMW, kind=kind, ptr=ptr.handle, val=v.handle,
                    mask=mask_arg(ctx, mask, ptr.shape, fname), sem=sem, scope=scope)
    return impl


for _stub, _kind in ((tl.atomic_add, "add"), (tl.atomic_max, "max"), (tl.atomic_min, "min"),
                     (tl.atomic_and, "and"), (tl.atomic_or, "or"), (tl.atomic_xor, "xor"),
                     (tl.atomic_xchg, "xchg")):
    implements(_stub)(_atomic_rmw(_kind, f"tl.{_stub.__name__}"))


@implements(tl.atomic_cas)
def _atomic_cas(ctx, pointer, cmp, val, sem, scope):
    ptr, sem, scope = _atomic_common(ctx, pointer, sem, scope, "tl.atomic_cas")
    elem = ptr.elem.elem
    if elem.bits not in (16, 32, 64):
        raise TypingError(f"`tl.atomic_cas` supports 16-, 32- and 64-bit elements, got {dtype_name(elem)}")
    c, v = (fit_to(ctx, cast_to(ctx, x, elem), ptr.shape, what, "tl.atomic_cas") for x, what in
            ((cmp, "cmp"), (val, "val")))
    return emit(ctx, ir.AtomicCAS, ptr=ptr.handle, cmp=c.handle, val=v.handle, sem=sem, scope=scope)


# --------------------------------------------------------------------------- #
# Debugging, hints, compile-time helpers
# --------------------------------------------------------------------------- #

@implements(tl.static_assert)
def _static_assert(ctx, cond, msg):
    if isinstance(cond, Tensor):
        raise TypingError("`tl.static_assert` needs a compile-time condition; check tensors with tl.device_assert")
    if not cond:
        raise TypingError(f"static_assert failed: {msg}" if msg else "static_assert failed")


@implements(tl.static_print)
def _static_print(ctx, values, sep, end, file, flush):
    print(*(describe(v) if isinstance(v, Tensor) else v for v in values), sep=sep, end=end, file=file, flush=flush)


@implements(tl.device_print)
def _device_print(ctx, prefix, args, hex):
    if not isinstance(prefix, str):
        raise TypingError(f"the prefix of `tl.device_print` must be a string, got {describe(prefix)}")
    values = [to_tensor(ctx, a).handle for a in args]
    ctx.builder.create(ir.Print, prefix=prefix, values=values, hex=bool(hex))


@implements(tl.device_assert)
def _device_assert(ctx, cond, msg, mask):
    ok = cast_to(ctx, cond, ir.i1)
    if mask is not None:
        ok = semantic.logical(ctx, "or", ok, semantic.unary(ctx, "not", mask))
    ctx.builder.create(ir.Assert, cond=ok.handle, msg=str(msg))


def _hint(kind: str):
    def impl(ctx, input, values):
        x = to_tensor(ctx, input)
        vals = shape_arg(values, f"the values of `tl.{kind}`")
        if len(vals) != max(1, len(x.shape)):
            raise TypingError(f"`tl.{kind}` needs one value per dimension of {describe(x)}, got {vals}")
        hinted = emit(ctx, ir.Assume, src=x.handle, kind=kind, values=vals)
        if x is input and _defined_in(x.handle, ctx.builder.block):
            input.handle = hinted.handle
        return hinted
    return impl


def _defined_in(v: ir.Value, block: ir.Block) -> bool:
    """Whether ``v`` is an argument or an op's result of ``block`` itself.

    A hint is a promise about the value, as in Triton (where it marks the
    value's defining op): ``tl.multiple_of(x, 16)`` with its result dropped
    still holds for the uses of ``x`` after it.  The tensor ``x`` then holds
    the hinted value, but only where the hint runs whenever ``x`` is defined
    (the same block): a hint inside an ``if`` is true on that path only, and
    the value it gives does not exist after the branch."""
    return v.owner is block or any(op is v.owner for op in block.ops)


for _stub in (tl.multiple_of, tl.max_contiguous, tl.max_constancy):
    implements(_stub)(_hint(_stub.__name__))


@implements(tl.debug_barrier)
def _debug_barrier(ctx):
    ctx.builder.create(ir.Barrier)


@implements(tl.cdiv)
def _cdiv(ctx, x, div):
    if isinstance(x, int) and isinstance(div, int):
        return -(-x // div)
    return semantic.binary(ctx, "floordiv", semantic.binary(ctx, "sub", semantic.binary(ctx, "add", x, div), 1), div)


@implements(tl.next_power_of_2)
def _next_power_of_2(ctx, n):
    n = const_int(n, "the argument of `tl.next_power_of_2`")
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


# The other tl_* modules register their functions on import.
from tilec.frontend import (  # noqa: E402,F401
    tl_compat, tl_dot_scaled, tl_indexing, tl_libdevice, tl_math, tl_operators, tl_random, tl_reduce, tl_shape,
    tl_target,
)
from tilec.frontend import tl_block_pointers, tl_tensor_descriptors  # noqa: E402  (block pointers, descriptors)
from tilec.frontend import tl_custom  # noqa: E402,F401  (inline_asm_elementwise, map_elementwise)
