"""Layouts: which thread of a program holds which element of a tile.

A backend's layout pass gives every tile type a layout; the codegen then
holds a tile as a Python list of LLVM values, one per *register* (element a
thread owns), in the order the layout defines.  This module holds the
layouts every backend shares and the functions the codegen asks of any
layout; a vendor's own layouts (``layouts_nvidia.py``) subclass
``RegisterLayout`` and answer the same questions through its methods.

* ``Blocked(spt, tpw, wpc, order)``: per dimension ``d``, each thread holds
  ``spt[d]`` consecutive elements, ``tpw[d]`` threads of a warp and ``wpc[d]``
  warps of the program line up along ``d``; ``order`` lists the dims fastest
  first (lane and warp ids, and the register list, run along ``order[0]``
  first).  The covered extent ``spt*tpw*wpc`` repeats over a larger tile, and
  wraps around a smaller one (several threads then hold the same element).
* ``Slice(parent, dim)``: the layout of a tile that ``parent`` would hold
  with ``dim`` of size 1 removed -- what a reduction along ``dim`` leaves, and
  what ``expand_dims`` at ``dim`` turns back into ``parent`` at no cost.
* ``Shared(vec, per_phase, max_phase, order)``: a tile held in shared memory.

Everything is a power of two: tile dims, and the fields of a layout.

Coordinates split into a per-thread part and a per-register part:
``coord[d] = thread_base[d] + register_offset[d]`` where ``thread_base[d] =
(lane_d*spt[d] + warp_d*spt[d]*tpw[d]) mod shape[d]`` and ``register_offset``
is a constant per register -- the sum never wraps (see ``dim_plan``).

In the text form a layout is ``word<fields>``: each layout class names its
``WORD`` and so enters ``LAYOUT_WORDS``, the table the parser reads.
"""
from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Optional, Sequence


#: The text form's layout words, each the class it names (every ``Layout``
#: subclass with a ``WORD`` enters itself when it is defined).
LAYOUT_WORDS: dict[str, type["Layout"]] = {}


class Layout:
    """What every layout attribute is: frozen data a tile type carries,
    written ``WORD<fields>`` in the text form."""

    WORD: ClassVar[str]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "WORD" in cls.__dict__:
            LAYOUT_WORDS[cls.WORD] = cls

    @classmethod
    def from_text(cls, fields: Sequence) -> "Layout":
        """The layout whose text form lists ``fields`` (ints, int tuples and
        layouts, in the order ``__str__`` writes them)."""
        return cls(*fields)


class RegisterLayout(Layout, ABC):
    """A layout that spreads a tile over the registers of a program's threads
    and is not a slice of another: what the codegen asks of one."""

    @property
    @abstractmethod
    def rank(self) -> int:
        """The number of tile dims the layout covers."""

    @abstractmethod
    def register_offsets(self, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Each register's offset from its thread's base coordinates, in register order."""

    @abstractmethod
    def num_registers(self, shape: tuple[int, ...]) -> int:
        """How many elements each thread holds of a tile of ``shape``."""

    @abstractmethod
    def thread_bits(self, shape: tuple[int, ...], num_warps: int, warp_size: int) -> list["ThreadBit"]:
        """Every lane and warp id bit and what it adds to a thread's base (``thread_bits``)."""


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
class ThreadBit:
    """Bit ``bit`` of the thread's lane id (``warp`` False) or warp id adds
    ``value`` to its base coordinate along tile dim ``dim``; ``dim`` None:
    the bit picks no element (threads that differ in it hold copies)."""

    warp: bool
    bit: int
    dim: Optional[int]
    value: int


@dataclass(frozen=True)
class Blocked(RegisterLayout):
    """A blocked layout (module docstring).  Tuples have one entry per dim."""

    WORD: ClassVar[str] = "blocked"
    spt: tuple[int, ...]
    tpw: tuple[int, ...]
    wpc: tuple[int, ...]
    order: tuple[int, ...]

    def __post_init__(self):
        n = len(self.order)
        if sorted(self.order) != list(range(n)) or not len(self.spt) == len(self.tpw) == len(self.wpc) == n:
            raise ValueError(f"malformed blocked layout {self}")
        if not all(is_pow2(x) for x in self.spt + self.tpw + self.wpc):
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

    def register_offsets(self, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Registers run along ``order[0]`` first."""
        plans = self.dim_plans(shape)
        slowest_first = list(reversed(self.order))
        out = []
        for regs in itertools.product(*(range(plans[d].regs) for d in slowest_first)):
            by_dim = dict(zip(slowest_first, regs))
            out.append(tuple(plans[d].offset(by_dim[d]) for d in range(self.rank)))
        return out

    def num_registers(self, shape: tuple[int, ...]) -> int:
        return math.prod(p.regs for p in self.dim_plans(shape))

    def thread_bits(self, shape: tuple[int, ...], num_warps: int, warp_size: int) -> list[ThreadBit]:
        """Lane bits step ``spt`` along the dims in ``order``, then warp bits
        ``spt*tpw`` (``tpw`` and ``wpc`` say how many bits each dim takes)."""
        bits = []
        for warp, per_dim, unit in ((False, self.tpw, lambda d: self.spt[d]),
                                    (True, self.wpc, lambda d: self.spt[d] * self.tpw[d])):
            shift = 0
            for d in self.order:
                for k in range(exact_log2(per_dim[d])):
                    bits.append(ThreadBit(warp, shift + k, d, unit(d) << k))
                shift += exact_log2(per_dim[d])
        return bits

    def __str__(self) -> str:
        return f"{self.WORD}<" + ", ".join(int_list(t) for t in (self.spt, self.tpw, self.wpc, self.order)) + ">"


@dataclass(frozen=True)
class Slice(Layout):
    """``parent`` with dimension ``dim`` removed (module docstring); written
    ``slice<dim, parent>``."""

    WORD: ClassVar[str] = "slice"
    parent: Layout
    dim: int

    def __post_init__(self):
        if not isinstance(self.parent, (RegisterLayout, Slice)) or not isinstance(self.dim, int) \
                or not 0 <= self.dim < self.parent.rank:
            raise ValueError(f"malformed slice layout: dim {self.dim!r} of {self.parent}")

    @classmethod
    def from_text(cls, fields: Sequence) -> "Slice":
        dim, parent = fields
        return cls(parent, dim)

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def __str__(self) -> str:
        return f"{self.WORD}<{self.dim}, {self.parent}>"


@dataclass(frozen=True)
class Shared(Layout):
    """A tile held in shared memory (a buffer, not registers).

    The last two dims form a matrix stored along ``order[0]`` (the fast one
    of them) in rows of chunks of ``vec`` elements; leading dims (pipeline
    slots) are whole matrices one after another.  Chunk ``c`` of row ``r``
    sits at chunk ``c ^ ((r // per_phase) % max_phase)``: the XOR swizzle
    that spreads rows read or written together over all the memory banks.
    ``max_phase`` 1 is no swizzle.

    A swizzled row wider than its pattern (``vec * max_phase`` elements, an
    *atom*) is cut into atoms, and the matrix is stored as one ``rows x
    atom`` matrix per atom, one after another: element ``(r, c)`` is at
    ``(c // atom) * rows * atom + r * atom + swizzled(c % atom)``.  Those are
    the layouts NVIDIA's warpgroup instructions and bulk copies read (their
    "128-byte swizzle" is ``vec * bytes = 16``, ``per_phase`` 1,
    ``max_phase`` 8, on 1024-byte aligned matrices).
    """

    WORD: ClassVar[str] = "shared"
    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def __post_init__(self):
        if not all(is_pow2(x) for x in (self.vec, self.per_phase, self.max_phase)) or \
                sorted(self.order) != list(range(len(self.order))) or len(self.order) < 2:
            raise ValueError(f"malformed shared layout {self}")

    @property
    def rank(self) -> int:
        return len(self.order)

    @property
    def matrix_dims(self) -> tuple[int, int]:
        """The ``(slow, fast)`` dims of the matrix, counted within its last two."""
        fast = self.order[0] - (self.rank - 2)
        return 1 - fast, fast

    def atom_width(self, width: int) -> int:
        """Elements of a row of one atom, for rows of ``width``: the whole row
        unless a swizzled row is wider than its pattern (``vec * max_phase``)."""
        return width if self.max_phase == 1 else min(width, self.vec * self.max_phase)

    def unswizzled_offset(self, shape: tuple, coords: tuple) -> int:
        """The element offset of matrix ``coords`` (the last two dims of a
        tile of ``shape``) before the XOR, atoms included: where the element
        is for a row whose phase is 0 (a multiple of ``per_phase * max_phase``)."""
        slow, fast = self.matrix_dims
        rows, width = shape[-2:][slow], shape[-2:][fast]
        atom, row, col = self.atom_width(width), coords[slow], coords[fast]
        return (col // atom) * rows * atom + row * atom + col % atom

    def __str__(self) -> str:
        return f"{self.WORD}<{self.vec}, {self.per_phase}, {self.max_phase}, {int_list(self.order)}>"


def is_shared(layout) -> bool:
    """True for a tile held in shared memory (``Shared``)."""
    return isinstance(layout, Shared)


def is_pow2(n: int) -> bool:
    """True for a positive int power of two."""
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def exact_log2(n: int) -> int:
    """``log2`` of a power of two."""
    return n.bit_length() - 1


def int_list(t: tuple) -> str:
    """``t`` in the text form: ``[1, 2]``."""
    return "[" + ", ".join(str(x) for x in t) + "]"


# --------------------------------------------------------------------------- #
# What the codegen asks of a layout
# --------------------------------------------------------------------------- #

def root_layout(layout: Layout) -> Layout:
    """The layout at the bottom of a chain of slices."""
    while isinstance(layout, Slice):
        layout = layout.parent
    return layout


def root_blocked(layout: Layout) -> Blocked:
    """The blocked layout at the bottom of a chain of slices (the caller knows it is one)."""
    root = root_layout(layout)
    if not isinstance(root, Blocked):
        raise ValueError(f"{layout} is not a blocked layout or a slice of one")
    return root


def root_registers(layout: Layout) -> RegisterLayout:
    """The register layout at the bottom of a chain of slices (the caller knows it is one)."""
    root = root_layout(layout)
    if not isinstance(root, RegisterLayout):
        raise ValueError(f"{layout} does not hold a tile in registers")
    return root


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

    The root layout defines the order (``RegisterLayout.register_offsets``);
    a slice keeps its parent's (the removed dim has one register), so
    ``expand_dims`` of a slice and ``reduce`` to it keep registers where they are.
    """
    keep = kept_dims(layout)
    offsets = root_registers(layout).register_offsets(root_shape(layout, shape))
    return [tuple(o[d] for d in keep) for o in offsets]


def num_registers(layout: Layout, shape: tuple[int, ...]) -> int:
    """How many elements each thread holds of a tile of ``shape``."""
    return root_registers(layout).num_registers(root_shape(layout, shape))


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


def thread_bits(layout: Layout, shape: tuple[int, ...], num_warps: int, warp_size: int) -> list[ThreadBit]:
    """Every lane and warp id bit and what it adds to a thread's base, for
    ``num_warps`` warps of ``warp_size`` threads: a thread's base along dim
    ``d`` is the sum of the values of its set bits for ``d``, modulo the
    dim's size.  A bit whose value is at least the size (or that has no dim)
    only makes copies."""
    if isinstance(layout, Slice):
        renumber = {old: new for new, old in enumerate(kept_dims(layout))}
        return [ThreadBit(t.warp, t.bit, renumber.get(t.dim), t.value)
                for t in thread_bits(root_layout(layout), root_shape(layout, shape), num_warps, warp_size)]
    return root_registers(layout).thread_bits(shape, num_warps, warp_size)


def replicating(bit: ThreadBit, shape: tuple[int, ...]) -> bool:
    """True when threads that differ only in ``bit`` hold the same elements."""
    return bit.dim is None or bit.value >= shape[bit.dim]


def base_alignment(layout: Layout, shape: tuple[int, ...], warp_size: int) -> int:
    """A power of two that divides every thread's base coordinate along the
    tile's last dim (``vector_runs`` may then move that many at once): the
    least a lane or warp bit adds there (the dim's size when none does)."""
    last = len(shape) - 1
    bits = thread_bits(layout, shape, 1, warp_size)
    steps = [t.value for t in bits if t.dim == last and not replicating(t, shape)]
    return min(steps, default=shape[last])


def vector_runs(layout: Layout, shape: tuple[int, ...], limit: int, warp_size: int) -> list[tuple[int, int]]:
    """``(first register, count)`` groups covering the register list, each
    ``count`` (a power of two, at most ``limit``) registers holding
    consecutive elements of one row, starting at a multiple of ``count``:
    in a row-major buffer they are one aligned vector."""
    offsets = register_offsets(layout, shape)
    limit = min(limit, base_alignment(layout, shape, warp_size))
    runs, i = [], 0
    while i < len(offsets):
        width = limit
        while width > 1 and not _is_run(offsets, i, width):
            width //= 2
        runs.append((i, width))
        i += width
    return runs


def _is_run(offsets: list, i: int, width: int) -> bool:
    first = offsets[i]
    if i + width > len(offsets) or first[-1] % width:
        return False
    return all(offsets[i + j][:-1] == first[:-1] and offsets[i + j][-1] == first[-1] + j for j in range(width))


# --------------------------------------------------------------------------- #
# Choosing layouts
# --------------------------------------------------------------------------- #

def blocked_layout(shape: tuple[int, ...], order: tuple[int, ...], vector: int,
                   num_warps: int, warp_size: int) -> Blocked:
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
