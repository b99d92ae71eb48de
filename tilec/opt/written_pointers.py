"""Which pointer arguments a kernel may write through: the launcher refuses a
read-only array only where the kernel stores, so read-only inputs keep working.

``written_arguments(fn)`` traces every pointer value of the tile IR back to
the pointer arguments it may be derived from ("origins"), through any chain
of ops: a pure op's pointer results come from its pointer operands
(``addptr``, ``splat``, ``broadcast``, ``select``, ``reshape``, casts between
pointers...), a ``for``/``while`` carries origins around its loop, an ``if``
joins its branches, and an op with any other region (a reduction) mixes all it
gets.  Calls are inlined by the front end, so they need nothing here.

Some pointers cannot be traced to an argument: one loaded from memory (the
result of a ``load`` or an atomic), or built from an integer (an int cast to
a pointer, which has no pointer operand).  Their origin is ``UNTRACED``, and a
write through one is taken, conservatively, as a write through *every*
pointer argument: a read-only array is then refused wherever it is passed,
with a message saying why.

The result depends only on ``fn``, so it is worked out once per compiled
variant (remembered per ``Function`` object) and a launch pays one lookup.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from tilec.ir.core import Block, Function, Loc, Op, Value, walk
from tilec.ir.ops import AtomicCAS, AtomicRMW, Condition, For, If, Load, Store, While, Yield
from tilec.ir.types import is_pointer

UNTRACED = -1  # the origin of a pointer that may point anywhere (its arguments are numbered from 0)

#: Ops that write memory, and the field holding the pointer they write through.
WRITES: dict[type, str] = {Store: "ptr", AtomicRMW: "ptr", AtomicCAS: "ptr"}

#: Ops whose results are read from memory: a pointer among them may point anywhere.
READS_MEMORY = (Load, AtomicRMW, AtomicCAS)

Origins = dict[Value, frozenset]


@dataclass(frozen=True)
class WriteSite:
    """Where a kernel writes through an argument: the op's name (``store``,
    ``atomic_rmw``...) and line, and whether its pointer was traced to that
    argument (False: it may point anywhere, so every argument counts)."""

    op: str
    loc: Loc
    traced: bool


_WRITTEN: "weakref.WeakKeyDictionary[Function, dict[str, WriteSite]]" = weakref.WeakKeyDictionary()


def written_arguments(fn: Function) -> dict[str, WriteSite]:
    """The pointer arguments of ``fn`` it may write through, by name, each with
    its first write (computed once per function)."""
    written = _WRITTEN.get(fn)
    if written is None:
        written = _WRITTEN[fn] = _find_written(fn)
    return written


def refuse_read_only_arrays(kernel: str, fn: Function, arrays: Iterable[tuple[str, Any]]) -> None:
    """A ValueError naming the first read-only numpy array among ``arrays``
    (argument name, array or None) that kernel ``fn`` may write, and where
    (the analysis is remembered per variant: a launch pays a lookup and a loop)."""
    written = written_arguments(fn)
    for name, array in arrays:
        if name in written and array is not None and not array.flags.writeable:
            raise ValueError(_read_only_message(kernel, name, written[name]))


def _read_only_message(kernel: str, name: str, site: WriteSite) -> str:
    # an op built without a source location (line 0) is named by its op alone
    where = site.op if site.loc.line <= 0 else f"{site.op} at {site.loc.file}:{site.loc.line}"
    how = (f"stores through `{name}` ({where})" if site.traced else
           f"stores through a pointer tilec cannot trace to one argument ({where}: loaded from memory or "
           f"made from an integer), so it may write any array, `{name}` too")
    return (f"kernel `{kernel}` {how}, but the array passed as `{name}` is read-only (np.frombuffer over "
            "bytes, a read-only mmap, setflags(write=False)...); nothing ran. Pass a writable array, "
            f"e.g. a copy: np.array(...)")


def _find_written(fn: Function) -> dict[str, WriteSite]:
    """Each write's pointer, traced back to its arguments (to all of them when it cannot be)."""
    origins = pointer_origins(fn)
    pointer_args = [i for i, a in enumerate(fn.args) if is_pointer(a.type)]
    written: dict[str, WriteSite] = {}
    for op in walk(fn.body):
        if type(op) in WRITES:
            came_from = origins.get(getattr(op, WRITES[type(op)]), frozenset({UNTRACED}))
            traced = UNTRACED not in came_from
            for i in (came_from if traced else pointer_args):
                written.setdefault(fn.arg_names[i], WriteSite(op.NAME, op.loc, traced))
    return written


def pointer_origins(fn: Function) -> Origins:
    """Every pointer value of ``fn`` -> the indices of the arguments it may
    derive from (``UNTRACED`` among them when it may point anywhere)."""
    origins: Origins = {a: frozenset({i}) for i, a in enumerate(fn.args) if is_pointer(a.type)}
    while _propagate(fn.body, origins):
        pass  # loops carry origins around: repeat until nothing grows
    return origins


def _propagate(block: Block, origins: Origins) -> bool:
    """One walk over ``block`` joining each pointer value's origins; whether any grew."""
    grew = False
    for op in block.ops:
        if op.regions:
            edges = _REGION_EDGES.get(type(op), _mixed_edges)(op)
            grew |= _flow_edges(edges, origins)  # into the regions' arguments before their ops
            for region in op.regions:
                grew |= _propagate(region, origins)
            grew |= _flow_edges(edges, origins)  # what they yield, into the results
        else:
            for r in op.results:
                grew |= _join(origins, r, _result_origins(op, origins))
    return grew


def _result_origins(op: Op, origins: Origins) -> frozenset:
    """A region-free op's pointer results derive from its pointer operands;
    read from memory, or made without one (an int cast to a pointer), they may point anywhere."""
    if isinstance(op, READS_MEMORY):
        return frozenset({UNTRACED})
    sources = [v for v in op.operands if is_pointer(v.type)]
    return _union(sources, origins) if sources else frozenset({UNTRACED})


def _union(values: Iterable[Value], origins: Origins) -> frozenset:
    """The origins of ``values`` together (a value not reached yet has none so far)."""
    return frozenset().union(*(origins.get(v, frozenset()) for v in values))


def _join(origins: Origins, value: Value, new: frozenset) -> bool:
    """Add ``new`` to a pointer ``value``'s origins; whether they grew (non-pointers are not tracked)."""
    if not is_pointer(value.type):
        return False
    old = origins.get(value, frozenset())
    if new <= old:
        return False
    origins[value] = old | new
    return True


# --- ops with regions: which values flow into which ------------------------------------
Edges = list[tuple[Value, list[Value]]]  # (target, the values flowing into it)


def _flow_edges(edges: Edges, origins: Origins) -> bool:
    grew = False
    for target, sources in edges:
        grew |= _join(origins, target, _union(sources, origins))
    return grew


def _yielded(block: Block) -> list[Value]:
    term = block.terminator
    return list(term.values) if isinstance(term, (Yield, Condition)) else []


def _for_edges(op: For) -> Edges:
    """The carried values: ``inits`` and what the body yields, into the body's arguments and the results."""
    yielded = _yielded(op.body)
    carried = [[init, *yielded[i:i + 1]] for i, init in enumerate(op.inits)]
    return list(zip(op.body.args[1:], carried)) + list(zip(op.results, carried))


def _if_edges(op: If) -> Edges:
    """Each result: what either branch yields in its place."""
    return [(r, [*_yielded(op.then_body)[i:i + 1], *_yielded(op.else_body)[i:i + 1]])
            for i, r in enumerate(op.results)]


def _while_edges(op: While) -> Edges:
    """``inits`` and the body's yields into ``before``; the condition's values into ``after`` and the results."""
    yielded, forwarded = _yielded(op.after), _yielded(op.before)
    into_before = [(a, [init, *yielded[i:i + 1]]) for i, (a, init) in enumerate(zip(op.before.args, op.inits))]
    return (into_before + [(a, forwarded[i:i + 1]) for i, a in enumerate(op.after.args)]
            + [(r, forwarded[i:i + 1]) for i, r in enumerate(op.results)])


def _mixed_edges(op: Op) -> Edges:
    """Any other op with regions (a reduction's combiner): every pointer it
    takes or yields may flow into every argument of its regions and every result."""
    sources = [v for v in op.operands if is_pointer(v.type)]
    sources += [v for region in op.regions for v in _yielded(region) if is_pointer(v.type)]
    targets = [a for region in op.regions for a in region.args] + list(op.results)
    return [(t, sources) for t in targets]


_REGION_EDGES: dict[type, Callable[[Op], Edges]] = {For: _for_edges, If: _if_edges, While: _while_edges}
