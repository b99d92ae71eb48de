"""Tile ops driven by the *values* of an index tile: ``gather`` and ``histogram``.

Every other shape op moves elements by their coordinates alone; these two
read their operand's values to decide where an element goes (``gather``) or
which counter it bumps (``histogram``), so they are ops of their own.  The
front end builds ``tl.flip``, ``tl.sort`` and ``tl.topk`` from ``gather``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tilec.ir.core import Value, attr, operand, optional
from tilec.ir.ops import Op, _require
from tilec.ir.types import TileType, elem_type, i1, i32, is_int, shape_of, with_elem


@dataclass(eq=False, kw_only=True)
class Gather(Op):
    """``src`` read along ``axis`` at ``index``: ``result[c] = src[c with
    c[axis] = index[c]]`` (numpy's ``take_along_axis``).

    The result has ``index``'s shape and ``src``'s element type; the two
    agree on every dim but ``axis``.  An index outside ``[0, n)`` (``n`` =
    ``src``'s power-of-two length along ``axis``) wraps modulo ``n``: only
    its low bits are used, so no read leaves the tile.
    """

    NAME = "gather"
    src: Value = operand()
    index: Value = operand()
    axis: int = attr()

    def infer_types(self):
        return [TileType(shape_of(self.index.type), elem_type(self.src.type))]

    def verify(self):
        src, index = shape_of(self.src.type), shape_of(self.index.type)
        _require(self, is_int(self.index.type), f"index must be integers, got {self.index.type}")
        _require(self, len(src) == len(index) >= 1, f"src {src} and index {index} need one rank (at least 1)")
        _require(self, 0 <= self.axis < len(src), f"axis {self.axis} out of range for rank {len(src)}")
        _require(self, all(s == i for d, (s, i) in enumerate(zip(src, index)) if d != self.axis),
                 f"index {index} must match src {src} on every dim but {self.axis}")


@dataclass(eq=False, kw_only=True)
class Histogram(Op):
    """How many elements of the 1-D integer tile ``src`` equal each of
    ``0 .. num_bins - 1``, as ``num_bins`` ``i32`` counts.  Elements where
    ``mask`` (default all) is false, and values outside ``[0, num_bins)``,
    are not counted."""

    NAME = "histogram"
    src: Value = operand()
    mask: Optional[Value] = optional()
    num_bins: int = attr()

    def infer_types(self):
        return [TileType((self.num_bins,), i32)]

    def verify(self):
        _require(self, is_int(self.src.type) and len(shape_of(self.src.type)) == 1,
                 f"needs a 1-D integer tile, got {self.src.type}")
        _require(self, self.num_bins >= 1, f"num_bins must be positive, got {self.num_bins}")
        if self.mask is not None:
            _require(self, self.mask.type == with_elem(self.src.type, i1),
                     f"mask type {self.mask.type} does not match {self.src.type}")
