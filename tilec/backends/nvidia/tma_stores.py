"""Stores of host tensor descriptors' blocks written by the tensor memory
accelerator (sm_90 on; after ``pipeline.py``, ``shared_operands.py``).

A ``desc.store([row, col], value)`` of a host descriptor (``ir.Store`` with
``descriptor`` and ``coords``) is, on a target with bulk tensor copies::

    store %ptrs, %value, %mask, [%row, %col] {descriptor = "c_desc"}

becomes::

    %value_smem = local_alloc {shape = (1, M, N), layout = shared<...>}   row-major, swizzled
    barrier                              no warp still reads what the buffer may reuse
    local_store %value_smem, %zero, %v   then fence.proxy.async (async_copy.py)
    barrier
    tma_store %value_smem, %zero, %ptrs, %mask, [%row, %col] {descriptor = "c_desc"}
    barrier                              thread 0 has waited for the slot to be read

``%v`` is the value before its last ``convert_layout`` when the store is that
conversion's only user: the accumulator goes to shared memory from the
tensor cores' layout once, where the coalescing conversion went through
shared memory anyway.  A block the accelerator cannot write (not a matrix,
no box for its buffer: ``tma.tensor_map_for``) stays an ordinary store.
"""
from __future__ import annotations

from typing import Optional

from tilec import ir
from tilec.ir.core import Function, Op
from tilec.ir.layouts_nvidia import swizzled_layout
from tilec.ir.types import TileType, elem_type, i32
from tilec.opt.pipelining import users_of
from tilec.opt.rewrite import make_constant, make_op, rebuild
from tilec.targets.base import Target
from tilec.backends.nvidia.tma import tensor_map_for


def store_blocks_in_bulk(fn: Function, target: Target) -> Function:
    """``fn`` with every host descriptor block store the accelerator can write rewritten (module doc)."""
    if not target.bulk_tensor_copies:
        return fn
    users = users_of(fn.body)
    stores = {op: buf for op in ir.walk(fn.body) if isinstance(op, ir.Store) and op.descriptor
              for buf in [_buffer_type(op)] if buf is not None}
    sources = {store: _source(store, users) for store in stores}
    dropped = {store.value.owner for store, src in sources.items() if src is not store.value}

    def rewrite(op: Op, vmap: dict) -> Optional[list[Op]]:
        if op in dropped:
            return []
        if op in stores:
            return _bulk_store(op, stores[op], vmap.get(sources[op], sources[op]), vmap)
        return None

    return rebuild(fn, rewrite)


def _source(store: ir.Store, users: dict) -> ir.Value:
    """What ``store`` writes, before a ``convert_layout`` only it uses."""
    value = store.value
    if isinstance(value.owner, ir.ConvertLayout) and users.get(value) == [store]:
        return value.owner.src
    return value


def _buffer_type(store: ir.Store) -> Optional[TileType]:
    """A one-slot row-major swizzled buffer of the stored block, when a box writes it out."""
    t = store.value.type
    if not isinstance(t, TileType) or len(t.shape) != 2:
        return None
    elem = elem_type(t)
    buf = TileType((1,) + t.shape, elem, swizzled_layout((1,) + t.shape, (2, 1, 0), elem.bytes))
    return buf if tensor_map_for(buf, store.descriptor) is not None else None


def _bulk_store(store: ir.Store, buffer: TileType, value: ir.Value, vmap: dict) -> list[Op]:
    """``store`` of ``value`` as the ops the module doc shows."""
    alloc = make_op(ir.LocalAlloc, store, shape=buffer.shape, elem=buffer.elem, layout=buffer.layout)
    alloc.result.name = f"{value.name}_smem" if value.name else None
    zero = make_constant(0, i32, store)
    zero.result.name = None
    local = make_op(ir.LocalStore, store, buf=alloc.result, slot=zero.result, value=value)
    bulk = make_op(ir.TmaStore, store, buf=alloc.result, slot=zero.result, ptr=vmap.get(store.ptr, store.ptr),
                   mask=None if store.mask is None else vmap.get(store.mask, store.mask),
                   coords=[vmap.get(c, c) for c in store.coords], descriptor=store.descriptor)
    return [alloc, zero, make_op(ir.Barrier, store), local, make_op(ir.Barrier, store), bulk,
            make_op(ir.Barrier, store)]
