"""``Gather`` and ``Histogram`` on batched numpy arrays (axis 0 is the batch;
``interp_ops`` explains the representation).  These definitions are what the
codegen of ``tilec/codegen_llvm/indexing.py`` must match."""
from __future__ import annotations

import numpy as np

from tilec.ir import indexing_ops as ir
from tilec.ir.interp_ops import evaluates
from tilec.ir.types import shape_of


@evaluates(ir.Gather)
def _gather(op, vals):
    src, index = vals
    n = shape_of(op.src.type)[op.axis]
    wrapped = np.bitwise_and(index.astype(np.int64), n - 1)  # n is a power of two: the low bits
    batch = max(src.shape[0], index.shape[0])
    src = np.broadcast_to(src, (batch,) + src.shape[1:])
    wrapped = np.broadcast_to(wrapped, (batch,) + wrapped.shape[1:])
    return [np.take_along_axis(src, wrapped, axis=op.axis + 1)]


@evaluates(ir.Histogram)
def _histogram(op, vals):
    src = vals[0].astype(np.int64)
    counted = (src >= 0) & (src < op.num_bins)
    if op.mask is not None:
        counted = counted & vals[1]
    batch = max(src.shape[0], counted.shape[0])
    src, counted = np.broadcast_to(src, (batch, src.shape[1])), np.broadcast_to(counted, (batch, src.shape[1]))
    counts = np.zeros((batch, op.num_bins), np.int64)
    rows = np.broadcast_to(np.arange(batch)[:, None], src.shape)
    np.add.at(counts, (rows[counted], src[counted]), 1)
    return [counts.astype(np.int32)]
