"""Layouts: which thread of a program holds which element of a tile.

Target lowering (``tilec/opt/layouts.py``) gives every tile type a layout; the
codegen then holds a tile as a Python list of LLVM values, one per *register*
(element a thread owns), in the order this module defines.

* ``Blocked(spt, tpw, wpc, order)``: per dimension ``d``, each thread holds
  ``spt[d]`` consecutive elements, ``tpw[d]`` threads of a warp and ``wpc[d]``
  warps of the program line up along ``d``; ``order`` lists the dims fastest
  first (lane and warp ids, and the register list, run along ``order[0]``
  first).  The covered extent ``spt*tpw*wpc`` repeats over a larger tile, and
  wraps around a smaller one (several threads then hold the same element).
* ``Slice(parent, dim)``: the layout of a tile that ``parent`` would hold
  with ``dim`` of size 1 removed -- what a reduction along ``dim`` leaves, and
  what ``expand_dims`` at ``dim`` turns back into ``parent`` at no cost.

Everything is a power of two: tile dims, and the fields of a layout.

Coordinates split into a per-thread part and a per-register part:
``coord[d] = thread_base[d] + register_offset[d]`` where ``thread_base[d] =
(lane_d*spt[d] + warp_d*spt[d]*tpw[d]) mod shape[d]`` and ``register_offset``
is a constant per register -- the sum never wraps (see ``dim_plan``).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class DimPlan:
    """How one dim of a tile of ``size`` spreads over a blocked layout's threads.

    ``regs`` registers per thread along the dim; register ``r`` sits at offset
    ``(r // per_rep) * extent + r % per_rep`` from the thread's base.  Only the
    first ``lanes`` lane coordinates and ``warps`` warp coordinates hold
    distinct elements; the others repeat them (``reduce`` must not count twice).
    """

    size: int
    spt: int
    tpw: int
    wpc: int

    @property
    def extent(self) -> int:
        return self.spt * self.tpw * self.wpc

    @property
    def per_rep(self) -> int:
        return min(self.spt, self.size)

    @property
    def regs(self) -> int:
        return self.per_rep * max(1, self.size // self.extent)

    def offset(self, r: int) -> int:
        return (r // self.per_rep) * self.extent + r % self.per_rep

    @property
    def lanes(self) -> int:
        return max(1, min(self.tpw, self.size // self.spt))

    @property
    def warps(self) -> int:
        return max(1, min(self.wpc, self.size // (self.spt * self.tpw)))


@dataclass(frozen=True)
class Blocked:
    """A blocked layout (module docstring).  Tuples have one entry per dim."""

    spt: tuple[int, ...]
    tpw: tuple[int, ...]
    wpc: tuple[int, ...]
    order: tuple[int, ...]

    def __post_init__(self):
        n = len(self.order)
        if sorted(self.order) != list(range(n)) or not len(self.spt) == len(self.tpw) == len(self.wpc) == n:
            raise ValueError(f"malformed blocked layout {self}")
        if not all(_is_pow2(x) for x in self.spt + self.tpw + self.wpc):
            raise ValueError(f"blocked layout fields must be powers of two: {self}")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def threads_per_warp(self) -> int:
        return math.prod(self.tpw)

    @property
    def warps(self) -> int:
        return math.prod(self.wpc)

    def dim_plans(self, shape: tuple[int, ...]) -> list[DimPlan]:
        if len(shape) != self.rank:
            raise ValueError(f"layout {self} has rank {self.rank}, the tile {shape}")
        return [DimPlan(s, *f) for s, f in zip(shape, zip(self.spt, self.tpw, self.wpc))]

    def __str__(self) -> str:
        return "blocked<" + ", ".join(_int_list(t) for t in (self.spt, self.tpw, self.wpc, self.order)) + ">"


@dataclass(frozen=True)
class Slice:
    """``parent`` with dimension ``dim`` removed (module docstring)."""

    parent: "Layout"
    dim: int

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def __str__(self) -> str:
        return f"slice<{self.dim}, {self.parent}>"


Layout = Union[Blocked, Slice]


def _is_pow2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def _int_list(t: tuple) -> str:
    return "[" + ", ".join(str(x) for x in t) + "]"


# --------------------------------------------------------------------------- #
# What the codegen asks of a layout
# --------------------------------------------------------------------------- #

def root_blocked(layout: Layout) -> Blocked:
    """The blocked layout at the bottom of a chain of slices."""
    while isinstance(layout, Slice):
        layout = layout.parent
    return layout


def root_shape(layout: Layout, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with a 1 put back for every sliced-away dim (the root's shape)."""
    if isinstance(layout, Slice):
        inner = list(shape)
        inner.insert(layout.dim, 1)
        return root_shape(layout.parent, tuple(inner))
    return tuple(shape)


def kept_dims(layout: Layout) -> list[int]:
    """For each dim of a tile in ``layout``, the root blocked layout's dim it is."""
    if isinstance(layout, Slice):
        dims = kept_dims(layout.parent)
        del dims[layout.dim]
        return dims
    return list(range(layout.rank))


def register_offsets(layout: Layout, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Each register's offset from the thread's base coordinates, in register order.

    Registers run along the root's ``order[0]`` first; a slice keeps its
    parent's order (the removed dim has one register), so ``expand_dims`` of
    a slice and ``reduce`` to it keep registers where they are.
    """
    root = root_blocked(layout)
    plans = root.dim_plans(root_shape(layout, shape))
    ranges = [range(plans[d].regs) for d in reversed(root.order)]  # slowest first for product()
    keep = kept_dims(layout)
    out = []
    for regs in itertools.product(*ranges):
        by_dim = dict(zip(reversed(root.order), regs))
        out.append(tuple(plans[d].offset(by_dim[d]) for d in keep))
    return out


def num_registers(layout: Layout, shape: tuple[int, ...]) -> int:
    """How many elements each thread holds of a tile of ``shape``."""
    root = root_blocked(layout)
    return math.prod(p.regs for p in root.dim_plans(root_shape(layout, shape)))


def register_strides(layout: Layout, shape: tuple[int, ...]) -> list[int]:
    """For each dim of the tile, how far apart (in the register list) the
    registers one step apart along that dim's register index are."""
    root = root_blocked(layout)
    plans = root.dim_plans(root_shape(layout, shape))
    strides, step = {}, 1
    for d in root.order:
        strides[d] = step
        step *= plans[d].regs
    return [strides[d] for d in kept_dims(layout)]


def register_counts(layout: Layout, shape: tuple[int, ...]) -> list[int]:
    """For each dim of the tile, how many registers a thread has along it."""
    root = root_blocked(layout)
    plans = root.dim_plans(root_shape(layout, shape))
    return [plans[d].regs for d in kept_dims(layout)]


# --------------------------------------------------------------------------- #
# Choosing layouts
# --------------------------------------------------------------------------- #

def blocked_layout(shape: tuple[int, ...], order: tuple[int, ...], vector: int,
                   num_warps: int, warp_size: int = 32) -> Blocked:
    """A blocked layout for ``shape`` whose threads hold ``vector`` consecutive
    elements along ``order[0]`` (fewer if the tile is too small to give every
    thread that many), neighbouring lanes the neighbouring vectors, and warps
    the rest: accesses along ``order[0]`` coalesce."""
    n = len(shape)
    threads = num_warps * warp_size
    spt = [1] * n
    fast = order[0]
    spt[fast] = max(1, min(vector, shape[fast], math.prod(shape) // threads))
    tpw, wpc = [1] * n, [1] * n
    lanes_left, warps_left = warp_size, num_warps
    for d in order:
        room = max(1, shape[d] // spt[d])
        tpw[d] = min(lanes_left, room)
        lanes_left //= tpw[d]
        wpc[d] = min(warps_left, max(1, room // tpw[d]))
        warps_left //= wpc[d]
    tpw[order[-1]] *= lanes_left  # what the tile cannot use wraps around (replicates)
    wpc[order[-1]] *= warps_left
    return Blocked(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))
