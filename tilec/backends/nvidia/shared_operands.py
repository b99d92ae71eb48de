"""A loop-invariant ``a`` operand of warpgroup dots kept in shared memory
(sm_90a; after ``pipeline.py``).

Attention's ``q`` is loaded once, before the key loop, and converted to the
``a`` operand layout, which held it in registers for the whole loop (32 a
thread at 128 x 128 f16 over 8 warps, beside a 64 x 128 accumulator).
``wgmma`` reads ``a`` from shared memory as well as ``b``, through a
descriptor, so such an operand is stored once into a swizzled buffer and
each dot reads it there (Triton keeps ``q`` in shared memory the same way)::

    %q_cv = convert_layout %q {layout = dot_op<0, ...>}    # before the loop
    for ... { ... dot %q_cv, %k, %acc ... }

becomes::

    %q_smem = local_alloc {shape = (1, M, K), layout = shared<...>}
    local_store %q_smem, %zero, %q       # then fence.proxy.async (async_copy.py)
    barrier
    for ... { %q_a = local_load %q_smem, %zero : dot_op<0, ...>
              ... dot %q_a, %k, %acc ... }

The ``local_load`` is a read the dot defers (``async_copy._local_load``) and
``wgmma.py`` turns into a descriptor: no instruction in the loop.  The
candidates: a ``convert_layout`` to an ``a`` layout outside every loop
that uses it, each of whose users is a dot in a loop body that fits the
warpgroups and reads ``b`` from a pipelined buffer, when the tensor cores
can read the buffer (``wgmma.descriptor_for``).
"""
from __future__ import annotations

from typing import Optional

from tilec import ir
from tilec.ir.core import Function, Op, Value, clone_op
from tilec.ir.layouts_nvidia import DotOperand
from tilec.ir.types import elem_type, i32
from tilec.opt.pipelining import users_of
from tilec.opt.rewrite import make_constant, make_op, rebuild
from tilec.targets.base import Target
from tilec.backends.nvidia.layouts import fits_warpgroups
from tilec.backends.nvidia.pipeline import swizzled_buffer_layout
from tilec.backends.nvidia.wgmma import descriptor_for


def stage_invariant_operands(fn: Function, target: Target, num_warps: int) -> Function:
    """``fn`` with each candidate (module doc) kept in shared memory."""
    if not target.group_matrix_instructions:
        return fn
    users = users_of(fn.body)
    loop_of = {op: loop.body for loop in ir.walk(fn.body) if isinstance(loop, ir.For) for op in loop.body.ops}
    staged = {op for op in ir.walk(fn.body) if _stageable(op, users, loop_of, num_warps, target)}
    if not staged:
        return fn
    buffers: dict[Value, tuple[Value, Value]] = {}  # a convert's result: its buffer and slot 0

    def rewrite(op: Op, vmap: dict) -> Optional[list[Op]]:
        if op in staged:
            return _store_once(op, vmap, buffers)
        if isinstance(op, ir.Dot) and op.a in buffers:
            buf, zero = buffers[op.a]
            read = make_op(ir.LocalLoad, op, buf=buf, slot=zero)
            read.result.name, read.result.type = op.a.name, op.a.type
            vmap[op.a] = read.result
            return [read, clone_op(op, vmap)]
        return None

    return rebuild(fn, rewrite)


def _stageable(op: Op, users: dict, loop_of: dict, num_warps: int, target: Target) -> bool:
    if not (isinstance(op, ir.ConvertLayout) and isinstance(op.layout, DotOperand) and op.layout.idx == 0):
        return False
    t = op.result.type
    layout = _buffer_layout(op)
    if descriptor_for(layout, (1,) + t.shape, elem_type(t), is_a=True) is None:
        return False
    readers = users.get(op.result, [])
    return bool(readers) and all(
        isinstance(r, ir.Dot) and r.a is op.result and op.result not in (r.b, r.acc)
        and r in loop_of and loop_of[r] is not loop_of.get(op)
        and isinstance(r.b.owner, ir.LocalLoad) and fits_warpgroups(r, num_warps, target) for r in readers)


def _buffer_layout(cv: ir.ConvertLayout):
    t = cv.src.type
    return swizzled_buffer_layout(t.shape, t.layout, elem_type(t).bytes, 1)


def _store_once(cv: ir.ConvertLayout, vmap: dict, buffers: dict) -> list[Op]:
    """``cv``'s source stored into a one-slot buffer, behind a barrier."""
    t = cv.result.type
    alloc = make_op(ir.LocalAlloc, cv, shape=(1,) + t.shape, elem=elem_type(t), layout=_buffer_layout(cv))
    alloc.result.name = f"{cv.result.name}_smem" if cv.result.name else None
    zero = make_constant(0, i32, cv)
    zero.result.name = None
    store = make_op(ir.LocalStore, cv, buf=alloc.result, slot=zero.result, value=vmap.get(cv.src, cv.src))
    buffers[cv.result] = (alloc.result, zero.result)
    return [alloc, zero, store, make_op(ir.Barrier, cv)]
