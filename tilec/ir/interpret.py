"""The reference interpreter: runs a kernel's tile IR with numpy.  It defines every op.

``interpret(fn, grid, args)`` runs all programs of ``grid`` in chunks, each
chunk at once: every value has a leading batch axis with one entry per program
(``interp_ops`` explains the layout).  Where programs diverge -- an ``if``
whose condition, or a ``for``/``while`` whose trip count, differs across the
batch -- the batch splits: each side runs on the subset of programs that takes
it, in a sub-frame that reads outer values restricted to its rows, and the
results merge back.

Memory is real: pointers are addresses into the argument arrays, tagged with
the argument they came from and checked against it on every access
(``interp_memory``).  Programs of a chunk run in lockstep, so a
kernel that waits on another program (a spin lock: ``atomic_cas``, or
``atomic_rmw`` ``xchg``) could never make progress; such kernels run one
program at a time, in program order (x fastest, then y, then z).  Even so, a
program may only wait for programs launched before it.

The op table ``RUN`` maps each op class to ``fn(op, frame)``; pure ops come
from ``interp_ops.PURE`` (use ``evaluate_pure`` to run one on its own).
"""
from __future__ import annotations

import math
import time
from typing import Callable, Optional

import numpy as np

from tilec.errors import InterpreterError, TilecError
from tilec.ir import ops as ir
from tilec.ir.core import Block, Function, Op, Value, walk
from tilec.ir.interp_dtypes import ADDRESS, compute_dtype, convert_constant, memory_dtype, to_memory
from tilec.ir.interp_memory import REGION_BITS, Access, Memory
from tilec.ir.interp_ops import PURE, elementwise_fn, evaluate_pure  # noqa: F401  (re-exported)
from tilec.ir import interp_reduce  # noqa: F401  (registers reduce, scan, dot)
from tilec.ir import interp_indexing  # noqa: F401  (registers gather, histogram)
from tilec.ir.types import PointerType, ScalarType, elem_type, shape_of
from tilec.rules import registry

# Programs per chunk are chosen so the largest tile of a chunk has about this many elements.
CHUNK_ELEMENTS = 1 << 17

RUN, runs = registry("Register the decorated ``fn(op, frame)`` as what runs the given op classes.")


def interpret(fn: Function, grid, args: list) -> None:
    """Run kernel ``fn`` over ``grid`` (up to three ints) on ``args``; results land in the arrays."""
    launch = Launch(fn, _grid3(fn, grid), list(args))
    with np.errstate(all="ignore"):
        for pids in launch.chunks():
            frame = Frame(launch, pids)
            run_block(fn.body, frame, launch.arg_values)


def _grid3(fn: Function, grid) -> tuple[int, int, int]:
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(grid) <= 3 or any(not isinstance(g, (int, np.integer)) or g < 0 for g in grid):
        raise ValueError(f"grid of kernel `{fn.name}` must be 1 to 3 non-negative ints, got {grid}")
    return tuple(int(g) for g in grid) + (1,) * (3 - len(grid))


class Launch:
    """What every frame of one launch shares: kernel, grid, memory, which values are used."""

    def __init__(self, fn: Function, grid: tuple, args: list):
        self.fn, self.grid = fn, grid
        values = [_arg_value(fn, i, a) for i, a in enumerate(_check_arity(fn, args))]
        self.memory = Memory(fn, args, self.raise_at)
        self.arg_values = self.memory.tag_arguments(values)
        self.shared: dict[Value, np.ndarray] = {}  # local_alloc result -> its buffers (interp_gpu)
        ops = list(walk(fn.body))
        self.operands = {op: op.operands for op in ops}  # op.operands inspects fields: once per launch
        self.used = {v for operands in self.operands.values() for v in operands}
        serial = any(_may_wait_on_other_programs(op) for op in ops)
        self.chunk = 1 if serial else max(1, CHUNK_ELEMENTS // _largest_tile(ops))

    def chunks(self):
        """``(P, 3)`` program ids of each chunk, in program order (x fastest)."""
        gx, gy, gz = self.grid
        total = gx * gy * gz
        for start in range(0, total, self.chunk):
            lin = np.arange(start, min(total, start + self.chunk))
            yield np.stack([lin % gx, lin // gx % gy, lin // (gx * gy)], axis=1).astype(np.int32)

    def raise_at(self, op: Op, message: str):
        loc = op.loc
        raise InterpreterError(loc.file, loc.line, loc.col, message, kernel=self.fn.name)

    def program_name(self, pid) -> str:
        if self.grid[1:] == (1, 1):
            return f"program {int(pid[0])}"
        return "program ({}, {}, {})".format(*(int(p) for p in pid))


def _check_arity(fn: Function, args: list) -> list:
    if len(args) != len(fn.args):
        raise TypeError(f"kernel `{fn.name}` takes {len(fn.args)} arguments, got {len(args)}")
    return args


def _arg_value(fn: Function, i: int, a) -> np.ndarray:
    """Argument ``i`` as a batch-1 array: an address for a pointer, the converted scalar otherwise."""
    t, name = fn.args[i].type, fn.arg_names[i] if i < len(fn.arg_names) else f"#{i}"
    if isinstance(t, PointerType):
        if not isinstance(a, np.ndarray):
            raise TypeError(f"argument `{name}` of kernel `{fn.name}` is a {t} and needs a numpy array, "
                            f"got {type(a).__name__}")
        return np.array([a.__array_interface__["data"][0]], ADDRESS)
    if not isinstance(a, (bool, int, float, np.bool_, np.integer, np.floating)):
        raise TypeError(f"argument `{name}` of kernel `{fn.name}` is a scalar {t}, got {type(a).__name__}")
    return convert_constant(a.item() if isinstance(a, np.generic) else a, t)[None]


def _may_wait_on_other_programs(op: Op) -> bool:
    """Locks are built from compare-and-swap or exchange."""
    return isinstance(op, ir.AtomicCAS) or isinstance(op, ir.AtomicRMW) and op.kind == "xchg"


def _largest_tile(ops: list) -> int:
    values = [v for op in ops for v in op.results] + [a for op in ops for r in op.regions for a in r.args]
    return max([1] + [math.prod(shape_of(v.type)) for v in values])


# --------------------------------------------------------------------------- #
# Frames and blocks
# --------------------------------------------------------------------------- #

def take_rows(x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``x`` restricted to batch ``rows`` (a batch-1 value is the same for every row)."""
    return x if x.shape[0] == 1 else x[rows]


class Frame:
    """The values of a batch of programs.  A sub-frame (``subset``) reads its
    parent's values restricted to its rows, lazily, and defines its own."""

    def __init__(self, launch: Launch, pids: np.ndarray, parent: Optional["Frame"] = None,
                 rows: Optional[np.ndarray] = None):
        self.launch, self.pids, self.parent, self.rows = launch, pids, parent, rows
        self.values: dict[Value, np.ndarray] = {}
        self.pointers: dict[Value, OffsetPointers] = {}  # addptr results not yet turned into addresses

    @property
    def size(self) -> int:
        return len(self.pids)

    def __getitem__(self, v: Value) -> np.ndarray:
        got = self.values.get(v)
        if got is None:
            lazy = self.pointers.get(v)
            got = lazy.addresses() if lazy is not None else take_rows(self.parent[v], self.rows)
            self.values[v] = got
        return got

    def bind(self, values: list, arrays: list) -> None:
        self.values.update(zip(values, arrays))

    def subset(self, rows: np.ndarray) -> "Frame":
        return Frame(self.launch, self.pids[rows], self, rows)


class OffsetPointers:
    """Pointers ``base + offset`` (in elements of ``size`` bytes) kept apart, so that a
    load or store can index a typed view with ``offset`` instead of forming addresses."""

    def __init__(self, base: np.ndarray, offset: np.ndarray, size: int):
        self.base, self.offset, self.size = base, offset, size

    def addresses(self) -> np.ndarray:
        base = self.base.reshape(self.base.shape + (1,) * (self.offset.ndim - self.base.ndim))
        return base + np.multiply(self.offset, self.size, dtype=np.int64)


def run_block(block: Block, frame: Frame, args: list) -> list:
    """Run ``block`` with its arguments bound to ``args``; the arrays its terminator passes on."""
    frame.bind(block.args, args)
    for op in block.ops:
        if op.IS_TERMINATOR:
            return [frame[v] for v in frame.launch.operands[op]]
        runner = RUN.get(type(op))
        if runner is None:
            frame.launch.raise_at(op, f"the interpreter cannot run `{op.NAME}`")
        try:
            runner(op, frame)
        except TilecError:
            raise
        except Exception as e:  # a numpy failure deep inside must still name the user's line
            frame.launch.raise_at(op, f"`{op.NAME}` failed in the interpreter: {type(e).__name__}: {e}")
    return []


def _run_pure(op: Op, frame: Frame) -> None:
    frame.bind(op.results, PURE[type(op)](op, [frame[v] for v in frame.launch.operands[op]]))


def _merge(size: int, parts: list) -> list:
    """Full-batch arrays from ``[(rows, arrays)]`` parts that cover every row once."""
    merged = []
    for i, first in enumerate(parts[0][1]):
        out = np.empty((size,) + first.shape[1:], first.dtype)
        for rows, arrays in parts:
            out[rows] = arrays[i]
        merged.append(out)
    return merged


# --------------------------------------------------------------------------- #
# Program geometry and control flow
# --------------------------------------------------------------------------- #

@runs(ir.ProgramId)
def _program_id(op, frame):
    frame.bind(op.results, [frame.pids[:, op.axis]])


@runs(ir.NumPrograms)
def _num_programs(op, frame):
    frame.bind(op.results, [np.full(1, frame.launch.grid[op.axis], np.int32)])


@runs(ir.ProcessorId)
def _processor_id(op, frame):
    """The host runs every program on one processor, 0."""
    frame.bind(op.results, [np.zeros(1, np.int32)])


@runs(ir.GlobalTimer)
def _global_timer(op, frame):
    """Nanoseconds since the epoch, as the host's clock says when the read runs."""
    frame.bind(op.results, [np.full(1, time.time_ns(), np.int64)])


@runs(ir.If)
def _if(op, frame):
    cond = frame[op.cond]
    if cond.all() or not cond.any():
        frame.bind(op.results, run_block(op.then_body if cond.all() else op.else_body, frame, []))
        return
    taken, skipped = np.flatnonzero(cond), np.flatnonzero(~cond)
    parts = [(taken, run_block(op.then_body, frame.subset(taken), [])),
             (skipped, run_block(op.else_body, frame.subset(skipped), []))]
    frame.bind(op.results, _merge(frame.size, parts))


def _trip_counts(op, frame, lower, upper, step) -> np.ndarray:
    lo, hi, st = (x.astype(np.int64) for x in np.broadcast_arrays(lower, upper, step))
    if (st == 0).any():
        frame.launch.raise_at(op, "`for` loop step is 0 (the loop would never end)")
    distance = np.where(st > 0, hi - lo, lo - hi)
    return np.maximum(0, (distance + np.abs(st) - 1) // np.abs(st))


def _uniform(x: np.ndarray) -> bool:
    return x.shape[0] == 1 or bool((x == x[0]).all())


@runs(ir.For)
def _for(op, frame):
    lower, upper, step = frame[op.lower], frame[op.upper], frame[op.step]
    trips = _trip_counts(op, frame, lower, upper, step)
    carried = [frame[v] for v in op.inits]
    dtype = lower.dtype
    if _uniform(lower) and _uniform(step) and _uniform(trips):
        lo, st = int(lower[0]), int(step[0])
        for k in range(int(trips[0])):
            iv = np.array([lo + k * st]).astype(dtype)
            carried = run_block(op.body, frame, [iv] + carried)
    else:
        carried = _divergent_for(op, frame, lower.astype(np.int64), step.astype(np.int64), trips, carried)
    frame.bind(op.results, carried)


def _divergent_for(op, frame, lower, step, trips, carried) -> list:
    """Iterate while any program has trips left, running the body on those that do."""
    size, dtype = frame.size, op.lower.type
    trips = np.broadcast_to(trips, (size,))
    carried = [np.array(np.broadcast_to(c, (size,) + c.shape[1:])) for c in carried]
    for k in range(int(trips.max(initial=0))):
        active = np.flatnonzero(trips > k)
        iv = (lower + k * step).astype(compute_dtype(dtype))
        sub = frame if len(active) == size else frame.subset(active)
        new = run_block(op.body, sub, [take_rows(iv, active)] + [c[active] for c in carried])
        for c, n in zip(carried, new):
            c[active] = n
    return carried


@runs(ir.While)
def _while(op, frame):
    rows, sub, carried, done = np.arange(frame.size), frame, [frame[v] for v in op.inits], []
    while True:
        cond, *vals = run_block(op.before, sub, carried)
        if not cond.all():
            keep = np.broadcast_to(cond, (len(rows),))
            stop, live = np.flatnonzero(~keep), np.flatnonzero(keep)
            done.append((rows[stop], [take_rows(v, stop) for v in vals]))
            if not len(live):
                break
            rows, vals = rows[live], [take_rows(v, live) for v in vals]
            sub = frame.subset(rows)
        carried = run_block(op.after, sub, vals)
    frame.bind(op.results, _merge(frame.size, done))


# --------------------------------------------------------------------------- #
# Memory
# --------------------------------------------------------------------------- #

@runs(ir.AddPtr)
def _addptr(op, frame):
    """A splatted scalar pointer plus offsets stays ``OffsetPointers`` (see there)."""
    splat, size = op.ptr.owner, memory_dtype(elem_type(op.ptr.type).elem).itemsize
    frame.values.pop(op.result, None)  # a loop body's previous iteration may have left addresses
    if isinstance(splat, ir.Splat) and not isinstance(splat.src.type, ir.TileType):
        frame.pointers[op.result] = OffsetPointers(frame[splat.src], frame[op.offset], size)
    else:
        frame.pointers.pop(op.result, None)
        _run_pure(op, frame)


def _offset_form(op, frame) -> Optional[tuple[int, np.ndarray]]:
    """``op.ptr`` as one base address plus element offsets, when it was built that way.

    Per-program bases (``x_ptr + pid * stride`` then ``+ offs``) fold into the
    offsets relative to the lowest base, one int64 pass, when they are pointers
    of one argument (the access is checked against the lowest base's).
    """
    lazy = frame.pointers.get(op.ptr)
    if lazy is None:
        return None
    if lazy.base.shape[0] == 1:
        return int(lazy.base[0]), lazy.offset
    low = int(lazy.base.min())
    rows, rem = np.divmod(lazy.base - low, lazy.size)
    if rem.any() or int(lazy.base.max()) >> REGION_BITS != low >> REGION_BITS:
        return None
    return low, lazy.offset + rows.reshape(rows.shape + (1,) * (lazy.offset.ndim - 1))


def _access(op, frame, what: str, mask, others: list, every_program: bool = False) -> tuple[Access, tuple, list]:
    """The checked access of ``op.ptr`` under ``mask``, the full lane shape, and
    ``others`` (values, per lane) broadcast and restricted to the masked-in lanes.

    A load or store the same in every program may run once; an atomic may not
    (``every_program``): each program applies its own update.
    """
    offset_form = _offset_form(op, frame)
    ptr = frame[op.ptr] if offset_form is None else offset_form[1]
    if every_program:
        ptr = np.broadcast_to(ptr, (frame.size,) + ptr.shape[1:])
    arrays = np.broadcast_arrays(ptr, *([] if mask is None else [mask]), *others)
    shape = arrays[0].shape
    lanes = None if mask is None or arrays[1].all() else np.flatnonzero(arrays[1])
    pick = (lambda x: x.reshape(-1)) if lanes is None else (lambda x: x.reshape(-1)[lanes])
    acc = Access(what, lanes, elem_type(op.ptr.type).elem, _lane_namer(frame, shape), mask is not None)
    if offset_form is None:
        acc.addrs = pick(arrays[0])
    else:
        acc.base, acc.offsets = offset_form[0], pick(arrays[0])
    return acc, shape, [pick(x) for x in arrays[len(arrays) - len(others):]]


def _lane_namer(frame, shape: tuple) -> Callable[[int], str]:
    """Names the program of a flat lane of a ``shape`` access (for error messages)."""
    per_program = max(1, math.prod(shape[1:]))
    return lambda lane: frame.launch.program_name(frame.pids[min(lane // per_program, frame.size - 1)])


def _scatter_lanes(shape: tuple, acc: Access, flat: np.ndarray, fill) -> np.ndarray:
    """A ``shape`` array holding ``flat`` at the masked-in lanes and ``fill`` elsewhere."""
    if acc.lanes is None:
        return flat.reshape(shape)
    out = np.array(np.broadcast_to(fill, shape), dtype=flat.dtype, order="C")  # reshape(-1) must be a view
    out.reshape(-1)[acc.lanes] = flat
    return out


def masked_load(op, frame, what: str = "load") -> np.ndarray:
    """What ``op`` (any op with ``ptr``, ``mask``, ``other`` fields, as ``load``)
    reads: ``*ptr`` where ``mask``, ``other`` (default 0) elsewhere."""
    mask = None if op.mask is None else frame[op.mask]
    fill = 0 if op.other is None else frame[op.other]
    # a uniform access whose `other` differs per program gives a per-program result
    acc, shape, _ = _access(op, frame, what, mask, [], every_program=np.ndim(fill) > 0 and len(fill) > 1)
    return _scatter_lanes(shape, acc, frame.launch.memory.load(op, acc), fill)


@runs(ir.Load)
def _load(op, frame):
    frame.bind(op.results, [masked_load(op, frame)])


@runs(ir.Store)
def _store(op, frame):
    masked_store(op, frame, frame[op.value])


def masked_store(op, frame, value: np.ndarray, what: str = "store") -> None:
    """Write ``value`` to ``*op.ptr`` where ``op.mask`` (any op with ``ptr``
    and ``mask`` fields, as ``store``)."""
    mask = None if op.mask is None else frame[op.mask]
    acc, _, (value,) = _access(op, frame, what, mask, [value])
    frame.launch.memory.store(op, acc, value)


_ATOMIC_CLASSES = {"add": ir.Add, "max": ir.Maximum, "min": ir.Minimum, "and": ir.And, "or": ir.Or,
                   "xor": ir.Xor}
_ATOMIC_UFUNCS = {"add": np.add, "max": np.fmax, "min": np.fmin, "and": np.bitwise_and,
                  "or": np.bitwise_or, "xor": np.bitwise_xor}


def _native(t) -> bool:
    """Whether ``t``'s memory bytes are its compute values (so a ufunc may update memory directly)."""
    return isinstance(t, ScalarType) and not t.is_bool and memory_dtype(t) == compute_dtype(t)


@runs(ir.AtomicRMW)
def _atomic_rmw(op, frame):
    elem = elem_type(op.ptr.type).elem
    mask = None if op.mask is None else frame[op.mask]
    acc, shape, (val,) = _access(op, frame, f"atomic_{op.kind}", mask, [frame[op.val]], every_program=True)
    update = (lambda old, v: v) if op.kind == "xchg" else elementwise_fn(_ATOMIC_CLASSES[op.kind], elem)
    ufunc = _ATOMIC_UFUNCS.get(op.kind) if _native(elem) else None
    old = frame.launch.memory.atomic(op, acc, update, [val], op.result in frame.launch.used, ufunc)
    frame.bind(op.results, [_scatter_lanes(shape, acc, old, 0)])


def _same_bits(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    unsigned = np.dtype(f"u{memory_dtype(t).itemsize}")
    return to_memory(a, t).view(unsigned) == np.ascontiguousarray(to_memory(b, t)).view(unsigned)


@runs(ir.AtomicCAS)
def _atomic_cas(op, frame):
    elem = elem_type(op.ptr.type).elem
    acc, shape, (cmp, val) = _access(op, frame, "atomic_cas", None, [frame[op.cmp], frame[op.val]],
                                     every_program=True)
    update = lambda old, c, v: np.where(_same_bits(np.ascontiguousarray(old), c, elem), v, old)  # noqa: E731
    old = frame.launch.memory.atomic(op, acc, update, [cmp, val], True, None)
    frame.bind(op.results, [_scatter_lanes(shape, acc, old, 0)])


@runs(ir.Cast, ir.Bitcast)
def _cast(op, frame):
    """The ``cast`` rules, except that an address changes form: an int holds the real
    address, a pointer the tagged one (``interp_memory``)."""
    memory, x = frame.launch.memory, frame[op.src]
    src, dst = elem_type(op.src.type), elem_type(op.result.type)
    if isinstance(src, PointerType) and not isinstance(dst, PointerType):
        x = memory.real_addresses(x)
    (y,) = PURE[type(op)](op, [x])
    if isinstance(dst, PointerType) and not isinstance(src, PointerType):
        y = memory.pointers_from_ints(y)
    frame.bind(op.results, [y])


# --------------------------------------------------------------------------- #
# Debugging and hints
# --------------------------------------------------------------------------- #

def _format(x: np.ndarray, hex_: bool) -> str:
    if hex_ and x.dtype.kind in "iub":
        return np.array2string(np.asarray(x), formatter={"int": hex})
    return np.array2string(np.asarray(x)) if x.ndim else str(x)


@runs(ir.Print)
def _print(op, frame):
    memory = frame.launch.memory
    values = [memory.real_addresses(frame[v]) if isinstance(elem_type(v.type), PointerType) else frame[v]
              for v in op.values]
    for row, pid in enumerate(frame.pids):
        shown = " ".join(_format(v[min(row, v.shape[0] - 1)], op.hex) for v in values)
        print(f"pid ({pid[0]}, {pid[1]}, {pid[2]}) {op.prefix}: {shown}")


@runs(ir.Assert)
def _assert(op, frame):
    cond = np.broadcast_to(frame[op.cond], (frame.size,) + shape_of(op.cond.type))
    if cond.all():
        return
    first = np.argwhere(~cond)[0]
    where = f", index {tuple(int(i) for i in first[1:])}" if len(first) > 1 else ""
    launch = frame.launch
    launch.raise_at(op, f"device_assert failed: {op.msg} ({launch.program_name(frame.pids[first[0]])}{where})")


@runs(ir.Assume)
def _assume(op, frame):
    """The identity.  A scalar int ``multiple_of`` promise is checked: compiled code that
    trusts a broken one is silently wrong, so the interpreter says so."""
    x, t = frame[op.src], op.src.type
    if op.kind == "multiple_of" and isinstance(t, ScalarType) and t.is_int and not t.is_bool:
        broken = np.flatnonzero(x % op.values[0] != 0)
        if broken.size:
            row = min(broken[0], frame.size - 1)
            frame.launch.raise_at(op, f"multiple_of({op.values[0]}) promise broken: the value is {x[broken[0]]} "
                                      f"({frame.launch.program_name(frame.pids[row])})")
    frame.bind(op.results, [x])


@runs(ir.Barrier)
def _barrier(op, frame):
    """Programs run their ops in lockstep already: nothing to wait for."""


from tilec.ir import interp_gpu  # noqa: E402,F401  (registers the GPU-level ops; needs the helpers above)
from tilec.ir import interp_map  # noqa: E402,F401  (registers map_elementwise, inline_asm; needs run_block)

for _cls in PURE:
    RUN.setdefault(_cls, _run_pure)
