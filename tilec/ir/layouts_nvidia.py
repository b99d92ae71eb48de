"""NVIDIA's tensor-core layouts, as plain data: the one module of ``tilec.ir``
that names them.

The tile IR holds every backend's layouts side by side (as MLIR's TritonGPU
dialect holds NVIDIA's and AMD's): the text form and the verifier take them
like any other, and the generic functions of ``layouts.py`` reach them
through the ``RegisterLayout`` methods.  What picks them is the NVIDIA
backend (``tilec/backends/nvidia/layouts.py``).

* ``Mma(wpc)``: the accumulator of ``mma.sync.m16n8kK``;
* ``DotOperand(idx, kwidth, parent)``: its ``a`` or ``b`` operand in registers;
* ``swizzled_layout``: the ``Shared`` layout ``ldmatrix`` reads without bank
  conflicts.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

from tilec.ir.layouts import RegisterLayout, Shared, ThreadBit, exact_log2, int_list, is_pow2

# The accumulator tile of one ``mma.sync.m16n8kK``: 16 rows by 8 columns.
TILE_M, TILE_N = 16, 8
# One instruction covers ``K_PER_KWIDTH * kwidth`` of ``k``: 4 lanes of
# ``kwidth`` elements, twice (``DotOperand``).
K_PER_KWIDTH = 8


class TensorCoreLayout(RegisterLayout):
    """What ``Mma`` and ``DotOperand`` share: 2-D, registers in the
    instruction's order (``mma_register_offsets``)."""

    @property
    def rank(self) -> int:
        return 2

    def register_offsets(self, shape: tuple[int, ...]) -> list[tuple[int, ...]]:
        return mma_register_offsets(self, shape)

    def num_registers(self, shape: tuple[int, ...]) -> int:
        return len(mma_register_offsets(self, shape))

    def thread_bits(self, shape: tuple[int, ...], num_warps: int, warp_size: int) -> list[ThreadBit]:
        return mma_thread_bits(self, num_warps, warp_size)


@dataclass(frozen=True)
class Mma(TensorCoreLayout):
    """The accumulator layout of the tensor cores' ``mma.sync.m16n8kK``.

    A 2-D ``[M, N]`` tile is cut into 16x8 instruction tiles; warp ``w`` is
    ``(w % wm, w // wm)`` on a ``wpc = (wm, wn)`` grid and takes every
    ``wm``-th tile down and every ``wn``-th across.  In each 16x8 tile lane
    ``4g + t`` holds rows ``g, g+8`` and columns ``2t, 2t+1``; registers run
    ``[rep_m][rep_n][c0..c3]``, the order the instruction reads and writes.
    """

    WORD: ClassVar[str] = "mma"
    wpc: tuple[int, int]

    def __post_init__(self):
        if len(self.wpc) != 2 or not all(is_pow2(x) for x in self.wpc):
            raise ValueError(f"malformed mma layout {self}")

    def __str__(self) -> str:
        return f"{self.WORD}<{int_list(self.wpc)}>"


@dataclass(frozen=True)
class DotOperand(TensorCoreLayout):
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

    WORD: ClassVar[str] = "dot_op"
    idx: int
    kwidth: int
    parent: Mma

    def __post_init__(self):
        if self.idx not in (0, 1) or self.kwidth not in (1, 2, 4) or not isinstance(self.parent, Mma):
            raise ValueError(f"malformed dot operand layout {self}")

    @property
    def k_step(self) -> int:
        """The ``k`` one instruction covers."""
        return K_PER_KWIDTH * self.kwidth

    def __str__(self) -> str:
        return f"{self.WORD}<{self.idx}, {self.kwidth}, {self.parent}>"


def mma_thread_bits(layout: TensorCoreLayout, num_warps: int, warp_size: int) -> list[ThreadBit]:
    """``thread_bits`` of ``Mma`` and ``DotOperand`` (their docstrings say
    which lane holds what); warps past the ``wpc`` grid hold copies."""
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
    warps = [ThreadBit(True, k, m_dim, TILE_M << k) for k in range(exact_log2(wm))]
    warps += [ThreadBit(True, exact_log2(wm) + k, n_dim, TILE_N << k) for k in range(exact_log2(wn))]
    warps += [ThreadBit(True, k, None, 0) for k in range(exact_log2(wm * wn), exact_log2(num_warps))]
    return low + high + warps


def mma_grid(layout: TensorCoreLayout, shape: tuple[int, ...]) -> tuple[int, int]:
    """Instruction tiles per warp of an ``Mma`` or ``DotOperand`` tile:
    ``(rep_m, rep_n)`` for the accumulator, ``(rep_m, k steps)`` for ``a``,
    ``(rep_n, k steps)`` for ``b``."""
    if isinstance(layout, Mma):
        wm, wn = layout.wpc
        return max(1, shape[0] // (TILE_M * wm)), max(1, shape[1] // (TILE_N * wn))
    wm, wn = layout.parent.wpc
    steps = max(1, shape[1 - layout.idx] // layout.k_step)
    if layout.idx == 0:
        return max(1, shape[0] // (TILE_M * wm)), steps
    return max(1, shape[1] // (TILE_N * wn)), steps


def mma_register_offsets(layout: TensorCoreLayout, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """``register_offsets`` of the tensor-core layouts (their docstrings give the
    order).  Along a dim smaller than one instruction tile (a ``[M, 1]``
    column a reduction left) offsets wrap: a thread then holds copies."""
    return [(r % shape[0], c % shape[1]) for r, c in _mma_offsets(layout, shape)]


def _mma_offsets(layout: TensorCoreLayout, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    outer, inner = mma_grid(layout, shape)
    out = []
    if isinstance(layout, Mma):
        wm, wn = layout.wpc
        for rm, rn, c in itertools.product(range(outer), range(inner), range(4)):
            out.append((rm * TILE_M * wm + 8 * (c // 2), rn * TILE_N * wn + c % 2))
        return out
    kw, wm, wn = layout.kwidth, *layout.parent.wpc
    half = 4 * kw
    words = 4 if layout.idx == 0 else 2
    for rep, ks, w, e in itertools.product(range(outer), range(inner), range(words), range(kw)):
        if layout.idx == 0:
            out.append((rep * TILE_M * wm + 8 * (w % 2), ks * layout.k_step + (w // 2) * half + e))
        else:
            out.append((ks * layout.k_step + w * half + e, rep * TILE_N * wn))
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
        rows, cols = shape[0] // (TILE_M * wm), shape[1] // (TILE_N * wn)
        if rows >= cols and rows >= 2:
            wm *= 2
        elif cols >= 2:
            wn *= 2
        else:
            break
    return Mma((wm, wn))


def swizzled_layout(shape: tuple[int, ...], order: tuple[int, ...], elem_bytes: int) -> Shared:
    """The shared layout for a tile of ``shape`` whose matrix is stored along
    ``order[0]``: rows of 16-byte chunks (what one ``ldmatrix`` lane or one
    ``cp.async`` moves), swizzled so that 8 consecutive rows (the 8 rows one
    ``ldmatrix`` reads) cover the 8 chunk positions of a 128-byte bank line
    once each."""
    vec = max(1, 16 // elem_bytes)
    row_bytes = shape[order[0]] * elem_bytes
    if row_bytes < 32:
        return Shared(vec, 1, 1, order)
    return Shared(vec, max(1, 128 // row_bytes), min(8, row_bytes // 16), order)
