"""The interpreter's memory: pointers that remember their argument, bounds-checked against it.

Each pointer argument covers a *span* of bytes, from its lowest to its
highest element.  A pointer value is a *tagged* address: the real address
shifted into a region of ``2**52`` bytes that belongs to the argument it was
made from (the argument's region sits in the middle of it, so pointer
arithmetic short of ``2**51`` bytes never leaves it).  So two views of one
buffer passed as two arguments stay apart: every access must fall inside the
span of the argument its pointer came from, and be aligned to its element
size; otherwise ``InterpreterError`` names the kernel line, that argument and
the offset in elements.  Masked-off lanes are never touched.  Each access
reads or writes typed numpy views over the spans (built with ctypes, cached
per span and dtype).

Casting a pointer to an int gives the real address; casting an int to a
pointer tags it with the argument whose array holds that address (the
grouped-GEMM table of ``data_ptr()`` values), or leaves it untagged
(region 0), and an access through it says it points into no argument.

Atomics apply lanes in batch order (program 0 before program 1; within a
program, row-major), one occurrence of an address at a time, so repeated
addresses see each other's updates and the returned old values are those of
a serial execution in that order.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from tilec.ir.interp_dtypes import from_memory, memory_dtype, to_memory
from tilec.ir.types import PointerType


REGION_BITS = 52  # each argument's tagged pointers live in their own 2**52 bytes
_MIDDLE = 1 << (REGION_BITS - 1)  # real addresses must lie below it (user space does)
_PAGE = 4096  # tags move addresses by whole pages, so every alignment test sees the real one


@dataclass
class Span:
    """The bytes ``[lo, hi)`` covered by pointer argument ``name`` (whose value is ``ptr``);
    its pointers are tagged as ``real + delta``."""

    name: str
    ptr: int
    lo: int
    hi: int
    delta: int = 0
    layout: Optional[tuple] = None  # ((stride, count), ...) of a view with gaps (``element_layout``)


def array_span(name: str, a: np.ndarray, index: int = 0) -> Span:
    """The span of ``a``'s elements, whatever its strides (negative ones included), as the
    ``index``-th pointer argument: its tag puts ``ptr`` near the middle of region ``index + 1``."""
    ptr = a.__array_interface__["data"][0]
    low = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0)
    lo, hi = (ptr, ptr) if a.size == 0 else (ptr + low, ptr + high + a.itemsize)
    if not 0 <= lo <= hi < _MIDDLE:
        raise ValueError(f"argument `{name}` lies at {lo:#x}, above the {_MIDDLE:#x} bytes the interpreter can tag")
    return Span(name, ptr, lo, hi, ((index + 1) << REGION_BITS) + _MIDDLE - ptr // _PAGE * _PAGE,
                element_layout(a, hi - lo))


def element_layout(a: np.ndarray, span_bytes: int) -> Optional[tuple]:
    """``((|stride|, count), ...)``, largest stride first, of a view whose span has bytes
    between its elements (``buf[::2]``, a column of a matrix), when its strides nest (each
    steps over everything the smaller ones reach: any slice of a contiguous array does);
    None when every byte of the span belongs to an element, or the strides do not nest."""
    dims = sorted(((abs(s), n) for s, n in zip(a.strides, a.shape) if n > 1 and s != 0), reverse=True)
    reach = a.itemsize
    for stride, n in reversed(dims):
        if stride < reach:
            return None
        reach += stride * (n - 1)
    return tuple(dims) if math.prod(n for _, n in dims) * a.itemsize < span_bytes else None


def between_elements(layout: tuple, offsets: np.ndarray, size: int, itemsize: int) -> np.ndarray:
    """Which accesses of ``size`` bytes at byte ``offsets`` from a span's low end (inside it)
    do not lie within one element of a view with ``layout``: the greedy index along each
    nested stride leaves the offset inside an element, or not."""
    rest = np.array(offsets, np.int64)
    for stride, n in layout:
        rest -= np.minimum(rest // stride, n - 1) * stride
    return rest + size > itemsize


@dataclass
class Access:
    """One access to check: ``what`` (load/store/...), the masked-in lanes' addresses,
    which flat lanes those are (``None``: all), and how to name a lane's program.

    The addresses are ``addrs``, or ``base + offsets * size`` when the pointers
    are one pointer plus element offsets (``x_ptr + offs``, the common case):
    then the fast path indexes a view with the offsets and never forms
    64-bit addresses.
    """

    what: str
    lanes: Optional[np.ndarray]
    elem: object
    program_of: Callable[[int], str]
    masked: bool
    addrs: Optional[np.ndarray] = None
    base: int = 0
    offsets: Optional[np.ndarray] = None

    @property
    def count(self) -> int:
        return (self.addrs if self.addrs is not None else self.offsets).size

    def addresses(self) -> np.ndarray:
        if self.addrs is None:
            size = memory_dtype(self.elem).itemsize
            self.addrs = np.multiply(self.offsets, size, dtype=np.int64)
            self.addrs += self.base
        return self.addrs


class Memory:
    """The spans of one launch's pointer arguments and typed views over them."""

    def __init__(self, fn, args: list, raise_at: Callable[[object, str], None]):
        names = [fn.arg_names[i] if i < len(fn.arg_names) else f"#{i}" for i in range(len(fn.args))]
        self.positions = [i for i, v in enumerate(fn.args) if isinstance(v.type, PointerType)]
        self.spans = [array_span(names[i], args[i], k) for k, i in enumerate(self.positions)]
        self.arrays = [args[i] for i in self.positions]  # keep alive
        # per span, then a last entry that holds nothing (for pointers of no argument)
        self.los, self.his, self.deltas = (np.array([getattr(s, f) for s in self.spans] + [e], np.int64)
                                           for f, e in (("lo", 1), ("hi", 0), ("delta", 0)))
        self.raise_at = raise_at
        self.views: dict[tuple, np.ndarray] = {}

    # --- tagged pointers --------------------------------------------------------
    def tag_arguments(self, values: list) -> list:
        """The arguments' values (real addresses for pointers) with each pointer tagged as its own."""
        out = list(values)
        for i, span in zip(self.positions, self.spans):
            out[i] = values[i] + span.delta
        return out

    def argument_of(self, tagged) -> np.ndarray:
        """Which span each tagged pointer belongs to; ``len(spans)`` for none (region 0 or garbage)."""
        k = (np.asarray(tagged, np.int64) >> REGION_BITS) - 1
        return np.where((k >= 0) & (k < len(self.spans)), k, len(self.spans))

    def real_addresses(self, tagged: np.ndarray) -> np.ndarray:
        """The real addresses of tagged pointers (what ``ptr.to(tl.int64)`` gives)."""
        return tagged - self.deltas[self.argument_of(tagged)]

    def pointers_from_ints(self, real: np.ndarray) -> np.ndarray:
        """Real addresses tagged with the argument holding each: one starting there first, then one
        whose span holds it, then one ending there; in argument order.  Other addresses stay untagged."""
        delta, found = np.zeros(real.shape, np.int64), np.zeros(real.shape, bool)
        for holds in (lambda s: real == s.ptr, lambda s: (real >= s.lo) & (real < s.hi), lambda s: real == s.hi):
            for span in self.spans:
                hit = holds(span) & ~found
                delta[hit], found = span.delta, found | hit
        return real + delta

    # --- views ------------------------------------------------------------------
    def _view(self, span: Span, dtype: np.dtype) -> tuple[np.ndarray, int]:
        """A ``dtype`` view starting at or just below ``span.lo``, and its base address."""
        key = (span.lo, span.hi, dtype)
        base = span.lo - span.lo % dtype.itemsize
        if key not in self.views:
            count = (span.hi - base) // dtype.itemsize
            buf = (ctypes.c_byte * (count * dtype.itemsize)).from_address(base)
            self.views[key] = np.frombuffer(buf, dtype, count)
        return self.views[key], base

    # --- checking ---------------------------------------------------------------
    def resolve(self, op, acc: Access) -> list[tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]]:
        """``[(view, element indices, positions in the lanes or None for all)]`` for a valid access."""
        if acc.count == 0:
            return []
        dtype = memory_dtype(acc.elem)
        fast = self._offsets_in_argument(acc, dtype) if acc.offsets is not None else None
        if fast is not None:
            return [fast]
        return self._resolve_by_argument(op, acc, dtype)

    def _offsets_in_argument(self, acc: Access, dtype: np.dtype):
        """``(view, indices, None)`` when ``base + offsets`` is aligned and inside ``base``'s argument."""
        k, size = int(self.argument_of(acc.base)), dtype.itemsize
        if k == len(self.spans) or self.spans[k].layout is not None:
            return None
        span, base = self.spans[k], acc.base - self.spans[k].delta
        low, high = int(acc.offsets.min()), int(acc.offsets.max())
        if base % size or not (span.lo <= base + low * size and base + high * size + size <= span.hi):
            return None
        view, start = self._view(span, dtype)
        shift = (base - start) // size
        contiguous = _as_slice(acc.offsets, low, high, shift)
        if contiguous is not None:
            return view, contiguous, None
        return view, (acc.offsets if shift == 0 else np.add(acc.offsets, shift, dtype=np.int64)), None

    def _resolve_by_argument(self, op, acc: Access, dtype: np.dtype):
        """Check each lane against the argument its pointer came from; group the lanes by argument."""
        size, a = dtype.itemsize, acc.addresses()
        k = self._arguments_of_lanes(acc, a)
        real = a - self.deltas[k]
        if np.ndim(k) == 0:
            one = self._inside_one_argument(real, int(k), dtype)
            if one is not None:
                return [one]
        k = np.broadcast_to(k, a.shape)
        ok = (real >= self.los[k]) & (real + size <= self.his[k]) & (real % size == 0)
        for j, span in enumerate(self.spans):
            if span.layout is not None and (k == j).any():
                lanes = np.flatnonzero(ok & (k == j))
                ok[lanes] = ~between_elements(span.layout, real[lanes] - span.lo, size, self.arrays[j].itemsize)
        if not ok.all():
            bad = int(np.argmin(ok))
            self._report(op, acc, bad, size, int(k[bad]), int(real[bad]))
        groups = []
        for j in np.unique(k):
            pos = np.flatnonzero(k == j)
            view, start = self._view(self.spans[j], dtype)
            groups.append((view, _indices(real[pos], start, size), pos))
        return groups

    def _arguments_of_lanes(self, acc: Access, a: np.ndarray):
        """The argument of each lane's pointer: for ``base + offsets`` ``base``'s, however far the
        offsets go; else each address's own.  One int when every lane has the same (the usual case)."""
        if acc.offsets is not None:
            return int(self.argument_of(acc.base))
        first, last = int(self.argument_of(a.min())), int(self.argument_of(a.max()))
        return first if first == last else self.argument_of(a)

    def _inside_one_argument(self, real: np.ndarray, k: int, dtype: np.dtype):
        """``(view, indices, None)`` when real addresses ``real`` are aligned and inside argument
        ``k``, which has no gaps between its elements (a cheap check: min, max and one OR)."""
        size = dtype.itemsize
        if k == len(self.spans) or self.spans[k].layout is not None:
            return None
        first, last = int(real.min()), int(real.max())
        if first < self.spans[k].lo or last + size > self.spans[k].hi or np.bitwise_or.reduce(real) % size:
            return None
        view, start = self._view(self.spans[k], dtype)
        idx = _indices(real, start, size)
        contiguous = _as_slice(idx, (first - start) // size, (last - start) // size, 0)
        return view, idx if contiguous is None else contiguous, None

    def _report(self, op, acc: Access, pos: int, size: int, k: int, addr: int) -> None:
        """Raise for lane ``pos``, at real address ``addr``, of a pointer of argument ``k``."""
        lane = int(acc.lanes[pos]) if acc.lanes is not None else pos
        who = f"({'masked-in ' if acc.masked else ''}lane of {acc.program_of(lane)})"
        if k == len(self.spans):  # only an int cast to a pointer is untagged
            self.raise_at(op, f"{acc.what} through a pointer made from an integer ({addr:#x}) that does not "
                              f"point into any array passed to this launch {who}")
        span = self.spans[k]
        if addr % size:
            self.raise_at(op, f"{acc.what} misaligned: `{span.name}` + {addr - span.ptr} bytes is not a multiple "
                              f"of {size} bytes ({acc.elem}) {who}")
        offset, count = (addr - span.ptr) // size, (span.hi - span.ptr) // size
        if span.lo <= addr and addr + size <= span.hi:
            strides, shape = self.arrays[k].strides, self.arrays[k].shape
            self.raise_at(op, f"{acc.what} out of bounds: `{span.name}` + {offset} falls between the elements "
                              f"of its strided view (shape {shape}, strides {strides} bytes) {who}")
        where = "is before its first element" if addr < span.lo else f"is past its {count} elements"
        self.raise_at(op, f"{acc.what} out of bounds: `{span.name}` + {offset} {where} {who}"
                          f"{_int32_overflow_hint(offset, count)}")

    # --- accesses ---------------------------------------------------------------
    def load(self, op, acc: Access) -> np.ndarray:
        """The masked-in lanes' values (compute representation), flat."""
        out = np.empty(acc.count, memory_dtype(acc.elem))
        for view, idx, pos in self.resolve(op, acc):
            if pos is None:
                out = view[idx].copy() if isinstance(idx, slice) else view.take(idx)
            else:
                out[pos] = view.take(idx)
        return from_memory(out, acc.elem)

    def store(self, op, acc: Access, values: np.ndarray) -> None:
        bits = to_memory(values, acc.elem)
        for view, idx, pos in self.resolve(op, acc):
            view[idx] = bits if pos is None else bits[pos]

    def atomic(self, op, acc: Access, update: Callable, operands: list, need_old: bool,
               ufunc: Optional[np.ufunc]) -> np.ndarray:
        """Apply ``new = update(old, *operands)`` lane by lane in order; the old values, flat."""
        old = np.zeros(acc.count, memory_dtype(acc.elem))
        for view, idx, pos in self.resolve(op, acc):
            idx = np.arange(idx.start, idx.stop) if isinstance(idx, slice) else idx
            lane_ops = [x if pos is None else x[pos] for x in operands]
            if ufunc is not None and not need_old:
                ufunc.at(view, idx, lane_ops[0])  # applies repeats one by one, in order
                continue
            got = _serial_update(view, idx, lambda o, sel: to_memory(
                update(from_memory(o, acc.elem), *(x[sel] for x in lane_ops)), acc.elem))
            old[slice(None) if pos is None else pos] = got
        return from_memory(old, acc.elem)


def _int32_overflow_hint(offset: int, count: int) -> str:
    """Advice when an out-of-bounds element offset looks like int32 arithmetic that wrapped:
    negative yet in bounds ``2**32`` higher, or within a factor 2 of the int32 limits."""
    if not (offset < 0 <= offset + 2 ** 32 < count or abs(offset) >= 2 ** 30):
        return ""
    return ("; the offset is probably an int32 overflow: compute it in 64 bits, "
            "e.g. `pid.to(tl.int64) * stride`")


def _as_slice(idx: np.ndarray, low: int, high: int, shift: int) -> Optional[slice]:
    """``slice(low + shift, high + shift + 1)`` when flat ``idx`` is exactly ``low, low+1, ..., high``
    in order (a contiguous block: a slice copy is many times faster than a gather).

    ``idx`` spans ``high - low + 1`` values with as many entries, so it is that
    run exactly when it strictly increases.
    """
    if high - low + 1 != idx.size or not (idx[1:] > idx[:-1]).all():
        return None
    return slice(low + shift, high + shift + 1)


def _indices(a: np.ndarray, base: int, size: int) -> np.ndarray:
    """Element indices of aligned addresses ``a`` in a view starting at ``base``."""
    idx = np.subtract(a, base)
    return np.right_shift(idx, size.bit_length() - 1, out=idx)


def _serial_update(view: np.ndarray, idx: np.ndarray, update: Callable) -> np.ndarray:
    """Update ``view[idx]`` in rounds: round r takes every address's r-th occurrence, so
    each lane sees the lanes before it.  Returns the values each lane saw."""
    order = np.argsort(idx, kind="stable")
    sorted_idx = idx[order]
    starts = np.flatnonzero(np.r_[True, sorted_idx[1:] != sorted_idx[:-1]])
    rank = np.arange(len(idx)) - np.repeat(starts, np.diff(np.r_[starts, len(idx)]))
    by_round = order[np.argsort(rank, kind="stable")]
    bounds = np.searchsorted(np.sort(rank), np.arange(rank.max() + 2))
    old = np.empty(len(idx), view.dtype)
    for r in range(len(bounds) - 1):
        sel = by_round[bounds[r]:bounds[r + 1]]
        old[sel] = view[idx[sel]]
        view[idx[sel]] = update(old[sel], sel)
    return old
