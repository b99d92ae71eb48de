"""The interpreter's memory: real addresses, bounds-checked against the kernel's arrays.

A pointer value is the address of an element of one of the arrays passed as
pointer arguments (``a.__array_interface__['data'][0]`` is the argument's
own value).  Each argument covers a *span* of bytes, from its lowest to its
highest element.  Every access must fall inside one span and be aligned to
its element size; otherwise ``InterpreterError`` names the kernel line, the
nearest argument and the offset in elements.  Masked-off lanes are never
touched.  Each access reads or writes typed numpy views over the spans
(built with ctypes, cached per span and dtype).

Atomics apply lanes in batch order (program 0 before program 1; within a
program, row-major), one occurrence of an address at a time, so repeated
addresses see each other's updates and the returned old values are those of
a serial execution in that order.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..errors import InterpreterError
from .interp_dtypes import from_memory, memory_dtype, to_memory
from .types import PointerType


@dataclass
class Span:
    """The bytes ``[lo, hi)`` covered by pointer argument ``name`` (whose value is ``ptr``)."""

    name: str
    ptr: int
    lo: int
    hi: int


def array_span(name: str, a: np.ndarray) -> Span:
    """The span of ``a``'s elements, whatever its strides (negative ones included)."""
    ptr = a.__array_interface__["data"][0]
    if a.size == 0:
        return Span(name, ptr, ptr, ptr)
    low = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(a.strides, a.shape) if s > 0)
    return Span(name, ptr, ptr + low, ptr + high + a.itemsize)


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
        self.spans = [array_span(n, a) for n, v, a in zip(names, fn.args, args) if isinstance(v.type, PointerType)]
        self.arrays = [a for v, a in zip(fn.args, args) if isinstance(v.type, PointerType)]  # keep alive
        self.raise_at = raise_at
        self.views: dict[tuple, np.ndarray] = {}

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
        fast = self._offsets_in_one_span(acc, dtype) if acc.offsets is not None else None
        if fast is not None:
            return [fast]
        a, size = acc.addresses(), dtype.itemsize
        first, last = int(a.min()), int(a.max())
        span = self._single_span(a, first, last + size, size)
        if span is None:
            return self._resolve_many(op, acc, size)
        view, base = self._view(span, dtype)
        idx = _indices(a, base, size)
        contiguous = _as_slice(idx, (first - base) // size, (last - base) // size, 0)
        return [(view, idx if contiguous is None else contiguous, None)]

    def _offsets_in_one_span(self, acc: Access, dtype: np.dtype):
        """``(view, indices, None)`` when ``base + offsets`` is aligned and inside one span."""
        size = dtype.itemsize
        low, high = int(acc.offsets.min()), int(acc.offsets.max())
        first, last = acc.base + low * size, acc.base + high * size + size
        span = next((s for s in self.spans if s.lo <= first and last <= s.hi), None)
        if span is None or acc.base % size:
            return None
        view, base = self._view(span, dtype)
        shift = (acc.base - base) // size
        contiguous = _as_slice(acc.offsets, low, high, shift)
        if contiguous is not None:
            return view, contiguous, None
        return view, (acc.offsets if shift == 0 else np.add(acc.offsets, shift, dtype=np.int64)), None

    def _single_span(self, a: np.ndarray, lo: int, hi: int, size: int) -> Optional[Span]:
        """The span holding bytes ``[lo, hi)`` of addresses ``a``, when they are aligned and share one."""
        if size > 1 and np.bitwise_or.reduce(a) & (size - 1):
            return None
        return next((s for s in self.spans if s.lo <= lo and hi <= s.hi), None)

    def _resolve_many(self, op, acc: Access, size: int):
        order = sorted(range(len(self.spans)), key=lambda i: self.spans[i].lo)
        starts = np.array([self.spans[i].lo for i in order], np.int64)
        ends = np.array([self.spans[i].hi for i in order], np.int64)
        a = acc.addresses()
        k = np.maximum(np.searchsorted(starts, a, "right") - 1, 0)
        ok = (a >= starts[k]) & (a + size <= ends[k]) & (a % size == 0) if len(starts) else np.zeros(a.shape, bool)
        if not ok.all():
            self._report(op, acc, int(np.argmin(ok)), size)
        groups = []
        for j in np.unique(k):
            pos = np.flatnonzero(k == j)
            view, base = self._view(self.spans[order[j]], memory_dtype(acc.elem))
            groups.append((view, _indices(a[pos], base, size), pos))
        return groups

    def _report(self, op, acc: Access, pos: int, size: int) -> None:
        addr = int(acc.addresses()[pos])
        lane = int(acc.lanes[pos]) if acc.lanes is not None else pos
        span = min(self.spans, key=lambda s: max(s.lo - addr, addr + size - s.hi, 0), default=None)
        who = f"({'masked-in ' if acc.masked else ''}lane of {acc.program_of(lane)})"
        if span is None:
            self.raise_at(op, f"{acc.what} out of bounds: address {addr:#x} with no pointer arguments {who}")
        offset, rem = divmod(addr - span.ptr, size)
        if addr % size:
            self.raise_at(op, f"{acc.what} misaligned: `{span.name}` + {addr - span.ptr} bytes is not a multiple "
                              f"of {size} bytes ({acc.elem}) {who}")
        count = (span.hi - span.ptr) // size
        where = "is before its first element" if addr < span.lo else f"is past its {count} elements"
        self.raise_at(op, f"{acc.what} out of bounds: `{span.name}` + {offset} {where} {who}")

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
