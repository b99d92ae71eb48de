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
from typing import Optional, Union


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


@dataclass(frozen=True)
class Mma:
    """The accumulator layout of the tensor cores' ``mma.sync.m16n8kK``.

    A 2-D ``[M, N]`` tile is cut into 16x8 instruction tiles; warp ``w`` is
    ``(w % wm, w // wm)`` on a ``wpc = (wm, wn)`` grid and takes every
    ``wm``-th tile down and every ``wn``-th across.  In each 16x8 tile lane
    ``4g + t`` holds rows ``g, g+8`` and columns ``2t, 2t+1``; registers run
    ``[rep_m][rep_n][c0..c3]``, the order the instruction reads and writes.
    """

    wpc: tuple[int, int]

    def __post_init__(self):
        if len(self.wpc) != 2 or not all(_is_pow2(x) for x in self.wpc):
            raise ValueError(f"malformed mma layout {self}")

    @property
    def rank(self) -> int:
        return 2

    def __str__(self) -> str:
        return f"mma<{_int_list(self.wpc)}>"


@dataclass(frozen=True)
class DotOperand:
    """An operand of ``mma.sync`` in registers: ``idx`` 0 is ``a`` (``[M, K]``),
    1 is ``b`` (``[K, N]``), for the ``parent`` accumulator layout.

    ``kwidth`` consecutive ``k`` elements share one 32-bit register: 2 for
    f16/bf16 (``m16n8k16``), 1 for tf32 (``m16n8k8``), 4 for int8
    (``m16n8k32``); an instruction covers ``8 * kwidth`` of ``k``.  For
    ``a``, lane ``4g + t`` holds rows ``g, g+8`` and ``k`` from
    ``kwidth*t`` and ``kwidth*t + 4*kwidth``; registers run
    ``[rep_m][k step][4 words][kwidth]``.  For ``b``, column ``g`` and the
    same ``k``; registers ``[rep_n][k step][2 words][kwidth]``.  Warps along
    the other operand's dim hold copies.
    """

    idx: int
    kwidth: int
    parent: Mma

    def __post_init__(self):
        if self.idx not in (0, 1) or self.kwidth not in (1, 2, 4) or not isinstance(self.parent, Mma):
            raise ValueError(f"malformed dot operand layout {self}")

    @property
    def rank(self) -> int:
        return 2

    @property
    def k_step(self) -> int:
        """The ``k`` one instruction covers."""
        return 8 * self.kwidth

    def __str__(self) -> str:
        return f"dot_op<{self.idx}, {self.kwidth}, {self.parent}>"


@dataclass(frozen=True)
class Shared:
    """A tile held in shared memory (a buffer, not registers).

    The last two dims form a matrix stored along ``order[0]`` (the fast one
    of them) in rows of 16-byte chunks of ``vec`` elements; leading dims
    (pipeline slots) are whole matrices one after another.  Chunk ``c`` of
    row ``r`` sits at chunk ``c ^ ((r // per_phase) % max_phase)``: the
    XOR swizzle that spreads the 8 rows one ``ldmatrix`` reads (or a warp's
    16-byte writes) over all 32 banks.  ``max_phase`` 1 is no swizzle.
    """

    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    def __post_init__(self):
        if not all(_is_pow2(x) for x in (self.vec, self.per_phase, self.max_phase)) or \
                sorted(self.order) != list(range(len(self.order))) or len(self.order) < 2:
            raise ValueError(f"malformed shared layout {self}")

    @property
    def rank(self) -> int:
        return len(self.order)

    def __str__(self) -> str:
        return f"shared<{self.vec}, {self.per_phase}, {self.max_phase}, {_int_list(self.order)}>"


Layout = Union[Blocked, Slice, Mma, DotOperand, Shared]
REGISTER_LAYOUTS = (Blocked, Slice, Mma, DotOperand)


def is_shared(layout) -> bool:
    """True for a tile held in shared memory (``Shared``)."""
    return isinstance(layout, Shared)


def swizzled_layout(shape: tuple[int, ...], order: tuple[int, ...], elem_bytes: int) -> Shared:
    """The shared layout for a tile of ``shape`` whose matrix is stored along
    ``order[0]``: rows of 16-byte chunks, swizzled so that 8 consecutive rows
    cover the 8 chunk positions of a 128-byte bank line once each."""
    vec = max(1, 16 // elem_bytes)
    row_bytes = shape[order[0]] * elem_bytes
    if row_bytes < 32:
        return Shared(vec, 1, 1, order)
    return Shared(vec, max(1, 128 // row_bytes), min(8, row_bytes // 16), order)


def _is_pow2(n: int) -> bool:
    return isinstance(n, int) and n > 0 and n & (n - 1) == 0


def _int_list(t: tuple) -> str:
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
    a slice and ``reduce`` to it keep registers where they are.  Tensor-core
    layouts keep the instructions' order (``Mma``, ``DotOperand``).
    """
    root = root_layout(layout)
    if isinstance(root, (Mma, DotOperand)):
        keep = kept_dims(layout)
        return [tuple(o[d] for d in keep) for o in mma_register_offsets(root, root_shape(layout, shape))]
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
    if isinstance(root_layout(layout), (Mma, DotOperand)):
        return len(register_offsets(layout, shape))
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


@dataclass(frozen=True)
class ThreadBit:
    """Bit ``bit`` of the thread's lane id (``warp`` False) or warp id adds
    ``value`` to its base coordinate along tile dim ``dim``; ``dim`` None:
    the bit picks no element (threads that differ in it hold copies)."""

    warp: bool
    bit: int
    dim: Optional[int]
    value: int


def thread_bits(layout: Layout, shape: tuple[int, ...], num_warps: int, warp_size: int = 32) -> list[ThreadBit]:
    """Every lane and warp id bit and what it adds to a thread's base: a
    thread's base along dim ``d`` is the sum of the values of its set bits
    for ``d``, modulo the dim's size.  A bit whose value is at least the
    size (or that has no dim) only makes copies."""
    if isinstance(layout, Slice):
        kept = kept_dims(layout)
        renumber = {old: new for new, old in enumerate(kept)}
        return [ThreadBit(t.warp, t.bit, renumber.get(t.dim), t.value)
                for t in thread_bits(root_layout(layout), root_shape(layout, shape), num_warps, warp_size)]
    if isinstance(layout, Blocked):
        bits = []
        for warp, per_dim, unit in ((False, layout.tpw, lambda d: layout.spt[d]),
                                    (True, layout.wpc, lambda d: layout.spt[d] * layout.tpw[d])):
            shift = 0
            for d in layout.order:
                for k in range(exact_log2(per_dim[d])):
                    bits.append(ThreadBit(warp, shift + k, d, unit(d) << k))
                shift += exact_log2(per_dim[d])
        return bits
    mma = layout if isinstance(layout, Mma) else layout.parent
    wm, wn = mma.wpc
    outer_dim = 0 if isinstance(layout, Mma) or layout.idx == 0 else 1  # the dim lane bits 2..4 step
    if isinstance(layout, Mma):
        low = [ThreadBit(False, k, 1, 2 << k) for k in range(2)]
    else:
        low = [ThreadBit(False, k, 1 - layout.idx, layout.kwidth << k) for k in range(2)]
    high = [ThreadBit(False, 2 + k, outer_dim, 1 << k) for k in range(exact_log2(warp_size) - 2)]
    m_dim = 0 if not isinstance(layout, DotOperand) or layout.idx == 0 else None
    n_dim = 1 if not isinstance(layout, DotOperand) or layout.idx == 1 else None
    warps = [ThreadBit(True, k, m_dim, 16 << k) for k in range(exact_log2(wm))]
    warps += [ThreadBit(True, exact_log2(wm) + k, n_dim, 8 << k) for k in range(exact_log2(wn))]
    warps += [ThreadBit(True, k, None, 0) for k in range(exact_log2(wm * wn), exact_log2(num_warps))]
    return low + high + warps


def replicating(bit: ThreadBit, shape: tuple[int, ...]) -> bool:
    """True when threads that differ only in ``bit`` hold the same elements."""
    return bit.dim is None or bit.value >= shape[bit.dim]


def exact_log2(n: int) -> int:
    """``log2`` of a power of two."""
    return n.bit_length() - 1


def base_alignment(layout: Layout, shape: tuple[int, ...]) -> int:
    """A power of two that divides every thread's base coordinate along the
    tile's last dim (``vector_runs`` may then move that many at once): the
    least a lane or warp bit adds there (the dim's size when none does)."""
    last = len(shape) - 1
    steps = [t.value for t in thread_bits(layout, shape, 1) if t.dim == last and not replicating(t, shape)]
    return min(steps, default=shape[last])


def vector_runs(layout: Layout, shape: tuple[int, ...], limit: int) -> list[tuple[int, int]]:
    """``(first register, count)`` groups covering the register list, each
    ``count`` (a power of two, at most ``limit``) registers holding
    consecutive elements of one row, starting at a multiple of ``count``:
    in a row-major buffer they are one aligned vector."""
    offsets = register_offsets(layout, shape)
    limit = min(limit, base_alignment(layout, shape))
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


def mma_grid(layout, shape: tuple[int, ...]) -> tuple[int, int]:
    """Instruction tiles per warp of an ``Mma`` or ``DotOperand`` tile:
    ``(rep_m, rep_n)`` for the accumulator, ``(rep_m, k steps)`` for ``a``,
    ``(rep_n, k steps)`` for ``b``."""
    if isinstance(layout, Mma):
        wm, wn = layout.wpc
        return max(1, shape[0] // (16 * wm)), max(1, shape[1] // (8 * wn))
    wm, wn = layout.parent.wpc
    steps = max(1, shape[1 - layout.idx] // layout.k_step)
    if layout.idx == 0:
        return max(1, shape[0] // (16 * wm)), steps
    return max(1, shape[1] // (8 * wn)), steps


def mma_register_offsets(layout, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """``register_offsets`` of the tensor-core layouts (their docstrings give the
    order).  Along a dim smaller than one instruction tile (a ``[M, 1]``
    column a reduction left) offsets wrap: a thread then holds copies."""
    return [(r % shape[0], c % shape[1]) for r, c in _mma_offsets(layout, shape)]


def _mma_offsets(layout, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    outer, inner = mma_grid(layout, shape)
    out = []
    if isinstance(layout, Mma):
        wm, wn = layout.wpc
        for rm, rn, c in itertools.product(range(outer), range(inner), range(4)):
            out.append((rm * 16 * wm + 8 * (c // 2), rn * 8 * wn + c % 2))
        return out
    kw, wm, wn = layout.kwidth, *layout.parent.wpc
    half = 4 * kw
    words = 4 if layout.idx == 0 else 2
    for rep, ks, w, e in itertools.product(range(outer), range(inner), range(words), range(kw)):
        if layout.idx == 0:
            out.append((rep * 16 * wm + 8 * (w % 2), ks * layout.k_step + (w // 2) * half + e))
        else:
            out.append((ks * layout.k_step + w * half + e, rep * 8 * wn))
    return out


# --------------------------------------------------------------------------- #
# Choosing layouts
# --------------------------------------------------------------------------- #

def mma_layout(shape: tuple[int, int], num_warps: int) -> Mma:
    """The accumulator layout for an ``[M, N]`` dot: warps doubled along the
    dim with more instruction tiles left per warp (M's tiles are 16 tall,
    N's 8 wide), never past the tile; warps left over hold copies."""
    wm = wn = 1
    while wm * wn < num_warps:
        rows, cols = shape[0] // (16 * wm), shape[1] // (8 * wn)
        if rows >= cols and rows >= 2:
            wm *= 2
        elif cols >= 2:
            wn *= 2
        else:
            break
    return Mma((wm, wn))


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
