"""The GPU-level ops (``gpu_ops``) in the interpreter.

A ``local_alloc`` makes one buffer per program of its frame, an array
``(programs, *shape)`` kept in ``Launch.shared`` under the alloc's result;
the result's value is each program's row in that array.  Sub-frames (a
divergent ``if`` or ``for``) take their programs' rows as with any value,
so a copy made on a subset of programs lands in those programs' buffers.
A buffer starts as poison (NaN, or all bits set for ints), so a read of a
slot no copy filled shows in the results.

``async_copy`` copies at once (``masked_load``, the same reading as
``load``), ``tma_copy`` too in the programs where its ``pred`` holds, ``tma_store``
writes its slot as ``store`` would,
``local_store`` writes the registers' values; ``async_commit``,
``async_wait`` and ``tma_wait`` have nothing left to do.
"""
from __future__ import annotations

import numpy as np

from tilec.ir import gpu_ops as gpu
from tilec.ir.interp_dtypes import compute_dtype
from tilec.ir.interpret import masked_load, masked_store, runs


def _poison(dtype: np.dtype):
    if dtype.kind == "f":
        return np.nan
    return True if dtype.kind == "b" else np.invert(np.zeros((), dtype))


@runs(gpu.LocalAlloc)
def _local_alloc(op, frame):
    dtype = compute_dtype(op.elem)
    frame.launch.shared[op.result] = np.full((frame.size,) + tuple(op.shape), _poison(dtype), dtype)
    frame.bind(op.results, [np.arange(frame.size)])


def _slot_index(op, frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The buffers' array, and each program's (row, slot) in it; a slot out
    of range is an error naming the op."""
    buffers, rows, slots = frame.launch.shared[op.buf], frame[op.buf], frame[op.slot]
    bad = np.flatnonzero((slots < 0) | (slots >= buffers.shape[1]))
    if bad.size:
        frame.launch.raise_at(op, f"`{op.NAME}` of slot {int(slots[bad[0]])} of a buffer of "
                                  f"{buffers.shape[1]} slots")
    return buffers, rows, slots


@runs(gpu.AsyncCopy)
def _async_copy(op, frame):
    buffers, rows, slots = _slot_index(op, frame)
    buffers[rows, slots] = _copied(op, frame)


def _copied(op, frame) -> np.ndarray:
    """What a copy writes into each program's slot: its tile, transposed if it says so."""
    tile = masked_load(op, frame, op.NAME)
    return np.swapaxes(tile, -1, -2) if op.transpose else tile


@runs(gpu.TmaCopy)
def _tma_copy(op, frame):
    buffers, rows, slots = _slot_index(op, frame)
    block = np.broadcast_to(_copied(op, frame), rows.shape + tuple(op.buf.type.shape[1:]))
    copying = np.broadcast_to(frame[op.pred], rows.shape)
    buffers[rows[copying], np.broadcast_to(slots, rows.shape)[copying]] = block[copying]


@runs(gpu.TmaStore)
def _tma_store(op, frame):
    buffers, rows, slots = _slot_index(op, frame)
    masked_store(op, frame, buffers[rows, slots], "tma_store")


@runs(gpu.LocalStore)
def _local_store(op, frame):
    buffers, rows, slots = _slot_index(op, frame)
    buffers[rows, slots] = frame[op.value]


@runs(gpu.LocalLoad)
def _local_load(op, frame):
    buffers, rows, slots = _slot_index(op, frame)
    frame.bind(op.results, [buffers[rows, slots]])


@runs(gpu.DotWait)
def _dot_already_done(op, frame):
    """A ``dot`` computed at once: its value is ready."""
    frame.bind(op.results, [frame[op.value]])


@runs(gpu.AsyncCommit, gpu.AsyncWait, gpu.TmaWait, gpu.TmaRelease)
def _copies_already_done(op, frame):
    """``async_copy`` copied at once: there is never a copy in flight."""
