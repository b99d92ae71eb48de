"""The GPU backends' layout choice: give every tile a layout
(``tilec.ir.layouts``; a dot's from the backend's ``MatrixUnit``),
inserting ``convert_layout`` where two layouts meet.  The target's facts
(``Target``: warp size, widest vector) and the backend's matrix unit (which
layouts a dot's operands and result take on it) drive it; the pass itself
names no vendor.

Three steps:

1. *Preferred layouts*, one per tile shape, from the memory accesses of that
   shape: the axis analysis says along which dim the addresses run and how
   many consecutive elements a thread may move as one vector (at most the
   target's ``max_vector_bytes``); the
   layout gives each thread that many along that dim and neighbouring lanes
   the neighbouring vectors, so a warp's accesses coalesce.  An access whose
   addresses run along another dim than its shape's first access (kᵀ beside
   q) gets a layout of its own.  A shape no access uses gets a plain
   row-major one.
2. *Wanted layouts*, walking backwards: a value takes the layout its first
   user will need (an ``arange`` that ``expand_dims`` makes a column wants
   the slice of the 2-D layout, a tile a ``broadcast`` widens wants the
   broadcast's layout), so most values are made where they are needed.
3. *Assignment*, walking forwards: each op's rule picks its results' layouts
   from its operands' (a reduction leaves a slice of its operand's layout,
   ``expand_dims`` of a slice gives the parent back) or from 1/2, and
   converts any operand that arrives in another layout; a tile made from
   scalars and aranges is made again in the layout wanted instead of moved.
   Loop-carried values keep their initial value's layout; a carried pointer
   tile wants the layout of the access in the loop that uses it, so its
   initial value is made (or converted once) in that layout.

Ops whose codegen moves elements through shared memory anyway (``dot``,
``reshape``, ``permute``, ``join``, ``split``) take operands in any layout;
``scan`` wants its whole axis inside each thread.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional, Protocol

from tilec import ir
from tilec.errors import CompilationError
from tilec.ir.core import Block, Function, Op, Value, clone_op
from tilec.ir.layouts import Blocked, Layout, Slice, blocked_layout
from tilec.ir.types import TileType, elem_type, shape_of
from tilec.opt.axis_info import analyze_axes

if TYPE_CHECKING:
    from tilec.targets.base import Target

MEMORY_OPS = (ir.Load, ir.Store, ir.AtomicRMW, ir.AtomicCAS)
# Ops whose codegen goes through shared memory: any operand layout will do.
SHARED_MEMORY_OPS = (ir.Dot, ir.Reshape, ir.Permute, ir.Join, ir.Split)


class MatrixUnit(Protocol):
    """What a backend's matrix unit (its warp-wide matrix instructions) tells
    the layout choice."""

    def dot_layouts(self, op: ir.Dot, num_warps: int, target: "Target",
                    along_m: bool) -> Optional[tuple[Optional[Layout], Optional[Layout], Layout]]:
        """The ``(a, b, acc)`` layouts of ``op`` on the unit (None for an
        operand the dot takes in any layout), or None when the dot runs on the
        FMA units.  ``along_m``: every warp owns whole rows of the result
        (chained dots: a row of the first result is a row of the second's ``a``)."""

    def is_accumulator(self, layout: Layout) -> bool:
        """Whether ``layout`` (not a slice) is one the unit's results come in."""


class NoMatrixUnit:
    """Every dot on the FMA units."""

    def dot_layouts(self, op, num_warps, target, along_m):
        return None

    def is_accumulator(self, layout: Layout) -> bool:
        return False


NO_MATRIX_UNIT = NoMatrixUnit()


def assign_layouts(fn: Function, num_warps: int, target: "Target", unit: MatrixUnit = NO_MATRIX_UNIT) -> Function:
    """A copy of ``fn`` in which every tile type has a layout for ``num_warps``
    warps of ``target.warp_size`` threads, chosen from ``target``'s facts
    (its widest vector access) and its matrix ``unit``."""
    for op in ir.walk(fn.body):
        for v in op.results:
            _check_power_of_two(fn, op, v)
    prefs = _PreferredLayouts(fn, num_warps, target, unit)
    prefs.dots_along_m = any(op.a in dot_derived(fn, prefs) for op in ir.walk(fn.body) if isinstance(op, ir.Dot))
    derived = dot_derived(fn, prefs)  # with the warp grids just chosen
    carried: dict[Value, Layout] = {}
    for _ in range(MAX_ROUNDS):
        wants = _wanted_layouts(fn, prefs, derived, carried)
        assigner = _Assigner(prefs, wants)
        body = assigner.block(fn.body, [a.type for a in fn.body.args])
        if not assigner.carried_changes or all(carried.get(v) == l for v, l in assigner.carried_changes.items()):
            break
        carried.update(assigner.carried_changes)
    return Function(fn.name, body, list(fn.arg_names), [dict(a) for a in fn.arg_attrs], fn.loc)


# Rounds of assignment: a loop-carried value whose next value comes out in
# another layout (an online softmax's running max, computed from a dot's rows)
# is carried in that layout from the next round on.
MAX_ROUNDS = 3


def dot_derived(fn: Function, prefs: "_PreferredLayouts") -> dict[Value, Layout]:
    """Tiles computed from a matrix-unit ``dot``'s result (through elementwise
    ops, reductions, ``expand_dims`` and broadcasts; loop-carried values
    included), each with the accumulator-family layout it has there: they
    stay in it, whatever their users would like, and what they are computed
    with (a causal mask, a scale) is made in it."""
    derived: dict[Value, Layout] = {}

    def layout_of(op: Op) -> Optional[Layout]:
        if isinstance(op, ir.Dot):
            unit = prefs.dot_layouts(op)
            return unit[2] if unit else None
        src = next((derived[v] for v in op.operands if v in derived), None)
        if src is None:
            return None
        if isinstance(op, ir.Reduce):
            return Slice(src, op.axis) if op.axis is not None and src.rank > 1 else None
        if isinstance(op, ir.ExpandDims):
            return src.parent if isinstance(src, Slice) and src.dim == op.axis else None
        return src if _is_elementwise(op) else None

    def visit(block: Block) -> bool:
        grew = False
        for op in block.ops:
            for region in op.regions:
                grew |= visit(region)
            if isinstance(op, ir.For):
                yielded = op.body.terminator.values
                for init, arg, res, out in zip(op.inits, op.body.args[1:], op.results, yielded):
                    got = derived.get(init) or derived.get(out)
                    if got is not None and res not in derived:
                        derived[arg] = derived[res] = got
                        grew = True
                continue
            layout = None if isinstance(op, MEMORY_OPS) else layout_of(op)
            if layout is not None:
                for r in op.results:
                    if isinstance(r.type, TileType) and r not in derived:
                        derived[r] = layout
                        grew = True
        return grew

    while visit(fn.body):
        pass
    return derived


def _check_power_of_two(fn: Function, op: Op, v: Value) -> None:
    if any(d & (d - 1) for d in shape_of(v.type)):
        raise CompilationError(op.loc.file, op.loc.line, op.loc.col,
                               f"GPU tiles need power-of-two dims; `{op.NAME}` makes a {v.type}", fn.name)


# --------------------------------------------------------------------------- #
# 1. One preferred layout per shape
# --------------------------------------------------------------------------- #

class _PreferredLayouts:
    """``prefs[shape]``: the layout tiles of ``shape`` get unless something
    says otherwise; ``prefs.access(op)``: the one memory op ``op`` coalesces in."""

    def __init__(self, fn: Function, num_warps: int, target: "Target", unit: MatrixUnit):
        self.num_warps, self.target, self.unit = num_warps, target, unit
        self.dots_along_m = False  # warps own whole rows of every dot's result (chained dots)
        self.by_shape: dict[tuple, Blocked] = {}
        axes = analyze_axes(fn)
        wishes: dict[tuple, tuple] = {}
        accesses: dict[Op, tuple] = {}
        for op in ir.walk(fn.body):
            if isinstance(op, MEMORY_OPS) and isinstance(op.ptr.type, TileType):
                order, vector = accesses[op] = _access_shape(op.ptr, axes, target.max_vector_bytes)
                shape = op.ptr.type.shape
                first = wishes.setdefault(shape, (order, vector))
                if first[0] == order:
                    wishes[shape] = (order, max(first[1], vector))
        for shape, (order, vector) in wishes.items():
            self.by_shape[shape] = blocked_layout(shape, order, vector, num_warps, target.warp_size)
        # An access along another dim than its shape's first one (kᵀ beside q)
        # gets its own layout, and so does a write of wider elements than the
        # shape's vector was chosen for (f32 partial sums beside the fp16 rows
        # they come from): 8 f32 a thread would be two half-used 16-byte
        # stores per warp instruction, each 32-byte sector written twice, so
        # it takes 4 and a conversion.  Its values stay in the shape's layout
        # and convert at the access (``widened``): pulling them into the
        # access's layout would move everything computed with them too.  A
        # load keeps the shape's layout: its two half-used vectors read the
        # same lines, the second from L1, which costs less than a conversion
        # through shared memory and the registers it holds (Triton's coalescing
        # pass makes the same distinction).
        self.widened = {op for op, (order, vector) in accesses.items()
                        if not isinstance(op, ir.Load) and order == self.by_shape[op.ptr.type.shape].order
                        and _too_wide(self.by_shape[op.ptr.type.shape], op, vector, target.max_vector_bytes)}
        self.by_access: dict[Op, Blocked] = {
            op: blocked_layout(op.ptr.type.shape, order, vector, num_warps, target.warp_size)
            for op, (order, vector) in accesses.items()
            if order != self.by_shape[op.ptr.type.shape].order or op in self.widened}

    def dot_layouts(self, op: ir.Dot) -> Optional[tuple]:
        """``op``'s layouts on the matrix unit (``MatrixUnit.dot_layouts``)."""
        return self.unit.dot_layouts(op, self.num_warps, self.target, self.dots_along_m)

    def is_accumulator_family(self, layout: Optional[Layout]) -> bool:
        """True for a matrix-unit result layout or a slice of one."""
        while isinstance(layout, Slice):
            layout = layout.parent
        return layout is not None and self.unit.is_accumulator(layout)

    def access(self, op: Op) -> Blocked:
        """The layout memory op ``op`` (of the input IR) takes its tiles in."""
        return self.by_access.get(op) or self[op.ptr.type.shape]

    def __getitem__(self, shape: tuple) -> Blocked:
        got = self.by_shape.get(shape)
        if got is None:
            order = tuple(reversed(range(len(shape))))
            got = self.by_shape[shape] = blocked_layout(shape, order, 4, self.num_warps, self.target.warp_size)
        return got


def _too_wide(layout: Blocked, op: Op, vector: int, max_vector_bytes: int) -> bool:
    """Whether ``layout`` gives each thread more consecutive elements of
    ``op``'s access than one vector holds, where the access could be a full
    vector (its addresses allow it: only the elements' size limits it)."""
    elem_bytes = elem_type(op.ptr.type).elem.bytes
    return layout.spt[layout.order[0]] > vector == max(1, max_vector_bytes // elem_bytes)


def _access_shape(ptr: Value, axes: dict, max_vector_bytes: int) -> tuple[tuple[int, ...], int]:
    """(dims fastest first, elements per vector of at most ``max_vector_bytes``)
    for a tile of pointers: the dim with the longest contiguous runs first
    (the last dim on a tie)."""
    info = axes[ptr]
    rank = info.rank
    order = tuple(sorted(range(rank), key=lambda d: (-info.contiguity[d], -d)))
    elem_bytes = elem_type(ptr.type).elem.bytes
    return order, info.vector_width(order[0], elem_bytes, max_vector_bytes)


# --------------------------------------------------------------------------- #
# 2. What each value's users want
# --------------------------------------------------------------------------- #

def _wanted_layouts(fn: Function, prefs: _PreferredLayouts, derived: dict[Value, Layout],
                    carried: dict[Value, Layout]) -> dict[Value, Layout]:
    """For values whose users agree on a layout, that layout (first user wins);
    ``carried`` (loop-carried values and their inits, from an earlier round)
    first.  A value computed from a dot's result wants its accumulator-family
    layout (``dot_derived``), so what it is computed with is made there."""
    wants: dict[Value, Layout] = dict(carried)

    def want_of(v: Value) -> Optional[Layout]:
        if not isinstance(v.type, TileType):
            return None
        got = wants.get(v)
        if v in derived:
            return got if prefs.is_accumulator_family(got) else derived[v]
        return got or prefs[v.type.shape]

    def visit(block: Block, parent: Optional[Op]) -> None:
        for op in reversed(block.ops):
            if isinstance(op, ir.For):
                for arg, layout in _carried_access_layouts(op, prefs).items():
                    wants.setdefault(arg, layout)
            for region in reversed(op.regions):
                visit(region, op)
            for operand, layout in _demands(op, parent, want_of, prefs):
                if operand in derived and not prefs.is_accumulator_family(layout):
                    continue  # made from a dot's result: it stays where that is, its user converts
                if layout is not None and operand not in wants and isinstance(operand.type, TileType):
                    wants[operand] = layout

    visit(fn.body, None)
    return wants


def _carried_access_layouts(loop: ir.For, prefs: _PreferredLayouts) -> dict[Value, Layout]:
    """Loop-carried pointer tiles that a memory op of the loop's body reads
    or writes through directly, each with that access's layout (the first
    such access's).  Walking backwards, the ``yield`` of the advanced pointer
    comes before the access: without this the carried tile would take its
    shape's layout and be converted at every iteration (a ``b`` stored along
    K beside an ``a`` of the same shape stored along rows)."""
    carried = {arg for arg in loop.body.args[1:] if isinstance(arg.type, TileType)}
    found: dict[Value, Layout] = {}
    for op in ir.walk(loop.body):
        if isinstance(op, MEMORY_OPS) and op.ptr in carried and op.ptr not in found:
            found[op.ptr] = prefs.access(op)
    return found


def _demands(op: Op, parent: Optional[Op], want_of: Callable,
             prefs: _PreferredLayouts) -> list[tuple[Value, Optional[Layout]]]:
    """(operand, the layout ``op`` would like it in) pairs."""
    if isinstance(op, ir.ExpandDims):
        if not isinstance(op.src.type, TileType):
            return []
        return [(op.src, Slice(_blocked_or(want_of(op.result), prefs, op.result), op.axis))]
    if isinstance(op, ir.Dot):
        unit = prefs.dot_layouts(op)
        return list(zip((op.a, op.b, op.acc), unit)) if unit else []
    if isinstance(op, ir.Broadcast):
        return [(op.src, _blocked_or(want_of(op.result), prefs, op.result))]
    if isinstance(op, MEMORY_OPS) and isinstance(op.ptr.type, TileType):
        access, own = prefs.access(op), prefs[op.ptr.type.shape]
        mask = getattr(op, "mask", None)  # a CAS has none
        return [(v, access if v is op.ptr or v is mask or op not in prefs.widened else own) for v in op.operands]
    if _is_elementwise(op) and isinstance(op.results[0].type, TileType):
        return [(v, want_of(op.results[0])) for v in op.operands]
    if isinstance(op, ir.Yield) and isinstance(parent, ir.For):
        return [(v, want_of(r)) for v, r in zip(op.values, parent.body.args[1:])]
    if isinstance(op, ir.For):
        return [(v, want_of(a)) for v, a in zip(op.inits, op.body.args[1:])]
    return []


def _blocked_or(layout: Optional[Layout], prefs: _PreferredLayouts, v: Value) -> Layout:
    """``layout`` if it is blocked or an accumulator's (or a slice of one),
    else ``v``'s shape's preferred layout: broadcasts, ``expand_dims`` and
    reductions need every dim's elements spread the same way at every size,
    which operand layouts are not."""
    return layout if is_blocked_family(layout) or prefs.is_accumulator_family(layout) else prefs[v.type.shape]


def is_blocked_family(layout: Optional[Layout]) -> bool:
    """True for a blocked layout or a slice of one."""
    while isinstance(layout, Slice):
        layout = layout.parent
    return isinstance(layout, Blocked)


def _is_elementwise(op: Op) -> bool:
    """Ops whose tile operands and results share one layout."""
    return isinstance(op, (ir.UnaryOp, ir.BinaryOp, ir.Fma, ir.MathCall, ir.Select, ir.Cast, ir.Bitcast, ir.AddPtr,
                           ir.Assume, ir.Broadcast))


# --------------------------------------------------------------------------- #
# 3. Assignment
# --------------------------------------------------------------------------- #

class _Assigner:
    """Rebuilds blocks with layouts, op by op (module docstring, step 3)."""

    def __init__(self, prefs: _PreferredLayouts, wants: dict[Value, Layout]):
        self.prefs, self.wants = prefs, wants
        self.vmap: dict[Value, Value] = {}
        # loop-carried values (old body args and inits) whose next value came out in
        # an accumulator-family layout other than theirs: the next round carries that
        self.carried_changes: dict[Value, Layout] = {}
        self.out: list[Op] = []

    def block(self, old: Block, arg_types: list) -> Block:
        new = Block()
        for a, t in zip(old.args, arg_types):
            self.vmap[a] = new.add_arg(t, a.name)
        saved, self.out = self.out, new.ops
        for op in old.ops:
            RULES.get(type(op), _same_layout)(self, op)
        self.out = saved
        return new

    # --- helpers for the rules ------------------------------------------------
    def layout_for(self, v: Value) -> Optional[Layout]:
        """The layout a new tile ``v`` gets: what its users want, else its shape's."""
        if not isinstance(v.type, TileType):
            return None
        return self.wants.get(v) or self.prefs[v.type.shape]

    def get(self, v: Value, layout: Optional[Layout] = None) -> Value:
        """The new value for ``v``, converted to ``layout`` if it is given and differs."""
        return self.convert(self.vmap.get(v, v), layout)

    def convert(self, new: Value, layout: Optional[Layout]) -> Value:
        """``new`` (a value of the rebuilt IR) in ``layout``: itself, or a ``convert_layout`` of it."""
        if layout is None or not isinstance(new.type, TileType) or new.type.layout == layout:
            return new
        owner = new.owner
        if _is_cheap(owner, layout, REMAKE_DEPTH, self.prefs):
            return self.remake(owner, layout)  # made again where needed, never moved
        loc = owner.loc if isinstance(owner, Op) else ir.UNKNOWN_LOC
        conv = ir.ConvertLayout(src=new, layout=layout, loc=loc).make_results([new.name])
        self.out.append(conv)
        return conv.result

    def remake(self, op: Op, layout: Layout) -> Value:
        """Another copy of cheap op ``op`` (``_is_cheap``) of the rebuilt IR in
        ``layout``, its tile operands made again there too."""
        tiles = {name: getattr(op, name) for name in _operand_fields(op)}
        operand_layout = _remade_operand_layout(op, layout, self.prefs)
        new = clone_op(op, {}, **{name: self.convert(v, operand_layout) for name, v in tiles.items()
                                  if isinstance(v, Value) and isinstance(v.type, TileType)})
        r = new.results[0]
        r.type = TileType(r.type.shape, r.type.elem, layout)
        self.out.append(new)
        return r

    def emit(self, op: Op, operands: dict, layouts: list[Optional[Layout]], **changes) -> Op:
        """Append a copy of ``op`` with ``operands`` (field -> new value(s)) and
        result ``layouts`` (None for scalars)."""
        new = clone_op(op, self.vmap, **operands, **changes)
        for r, layout in zip(new.results, layouts):
            if layout is not None:
                r.type = TileType(r.type.shape, r.type.elem, layout)
        self.out.append(new)
        return new


# How many ops deep a tile made from scalars and aranges may be and still be
# made again in another layout rather than moved there.
REMAKE_DEPTH = 4


def _is_cheap(op, layout: Layout, depth: int, prefs: _PreferredLayouts) -> bool:
    """Whether ``op``'s tile costs a thread a few instructions per element
    wherever its elements are, in ``layout`` too: a constant, a splat of a
    scalar, an ``arange``, or (at most ``depth`` deep) an elementwise op,
    ``expand_dims`` or broadcast of such tiles (``start_n + offs_n``,
    ``cols[None, :] < N``).  Converting one through shared memory would cost
    far more than making it again."""
    if isinstance(op, (ir.Constant, ir.Arange)):
        return True
    if isinstance(op, ir.Splat):
        return not isinstance(op.src.type, TileType)
    if depth == 0 or not isinstance(op, Op):
        return False
    operand_layout = _remade_operand_layout(op, layout, prefs)
    return operand_layout is not None and all(_is_cheap(v.owner, operand_layout, depth - 1, prefs)
                                              for v in op.operands if isinstance(v.type, TileType))


def _remade_operand_layout(op: Op, layout: Layout, prefs: _PreferredLayouts) -> Optional[Layout]:
    """The layout ``op``'s tile operands take when it is made again in
    ``layout``; None if ``op`` is not one ``_is_cheap`` looks through."""
    if isinstance(op, (ir.ExpandDims, ir.Broadcast)):
        if not (is_blocked_family(layout) or prefs.is_accumulator_family(layout)):
            return None  # a dot operand's elements are not spread the same way at every size
        return Slice(layout, op.axis) if isinstance(op, ir.ExpandDims) else layout
    return layout if _is_elementwise(op) else None


def _operand_fields(op: Op) -> list[str]:
    return [f.name for f in op.fields_of_kind("operand", "optional", "variadic")]


def _map_operands(a: _Assigner, op: Op, layout_of: Callable[[Value], Optional[Layout]]) -> dict:
    """Every operand field of ``op`` mapped to new values, converted by ``layout_of``."""
    out = {}
    for name in _operand_fields(op):
        v = getattr(op, name)
        if isinstance(v, list):
            out[name] = [a.get(x, layout_of(x)) for x in v]
        else:
            out[name] = None if v is None else a.get(v, layout_of(v))
    return out


def _same_layout(a: _Assigner, op: Op) -> None:
    """Elementwise ops, memory ops, broadcasts: one layout for every tile.
    It is what the result's users want, else the first tile operand's, else
    the shape's preferred one; memory ops always take their access's
    (the layout chosen for coalescing)."""
    tiles = [v for v in op.operands if isinstance(v.type, TileType)]
    if not tiles and not any(isinstance(r.type, TileType) for r in op.results):
        a.emit(op, _map_operands(a, op, lambda v: None), [None] * len(op.results))
        return
    if isinstance(op, MEMORY_OPS):
        layout = a.prefs.access(op)
    else:
        result = op.results[0]
        layout = a.wants.get(result) or _first_layout(a, tiles) or a.prefs[result.type.shape]
        if _narrows_in_place(a, op):
            layout = _first_layout(a, tiles)
        if isinstance(op, ir.Broadcast):
            layout = _blocked_or(layout, a.prefs, result)
    a.emit(op, _map_operands(a, op, lambda v: layout), [layout] * len(op.results))


def _narrows_in_place(a: _Assigner, op: Op) -> bool:
    """A cast to a narrower type of a matrix-unit result (``acc.to(f16)``)
    stays in its layout, so the conversion after it moves half the bytes."""
    if not isinstance(op, ir.Cast) or not isinstance(op.src.type, TileType):
        return False
    src = a.vmap[op.src].type
    return a.prefs.unit.is_accumulator(src.layout) and elem_type(op.result.type).bits < elem_type(src).bits


def _first_layout(a: _Assigner, tiles: list[Value]) -> Optional[Layout]:
    """The first operand's layout; an accumulator-family one if any operand has
    one (the other operands are small or cheap to convert; a dot's result is not)."""
    layouts = [a.vmap[v].type.layout for v in tiles if a.vmap[v].type.layout is not None]
    return next((x for x in layouts if a.prefs.is_accumulator_family(x)), layouts[0] if layouts else None)


def _fresh(a: _Assigner, op: Op) -> None:
    """Ops making a tile from scalars, and ops whose codegen goes through shared
    memory: operands as they are, results where their users want them."""
    a.emit(op, _map_operands(a, op, lambda v: None), [a.layout_for(r) for r in op.results])


def _expand_dims(a: _Assigner, op: ir.ExpandDims) -> None:
    have = _layout_of(a.vmap[op.src])
    if isinstance(have, Slice) and have.dim == op.axis and a.wants.get(op.result, have.parent) == have.parent:
        layout = have.parent
    else:
        layout = _blocked_or(a.layout_for(op.result), a.prefs, op.result)
    a.emit(op, {"src": a.get(op.src, Slice(layout, op.axis))}, [layout])


def _reduce(a: _Assigner, op: ir.Reduce) -> None:
    srcs = [a.vmap[v] for v in op.srcs]
    layout = _blocked_or(srcs[0].type.layout, a.prefs, srcs[0])
    rank = len(srcs[0].type.shape)
    out = Slice(layout, op.axis) if op.axis is not None and rank > 1 else None
    a.emit(op, {"srcs": [a.get(v, layout) for v in op.srcs]}, [out] * len(op.results),
           combine=a.block(op.combine, [x.type for x in op.combine.args]))


def _scan(a: _Assigner, op: ir.Scan) -> None:
    """The scanned axis whole inside each thread: the codegen scans registers."""
    shape = op.srcs[0].type.shape
    layout = scan_layout(shape, op.axis, a.prefs.num_warps, a.prefs.target.warp_size)
    a.emit(op, {"srcs": [a.get(v, layout) for v in op.srcs]}, [layout] * len(op.results),
           combine=a.block(op.combine, [x.type for x in op.combine.args]))


def scan_layout(shape: tuple, axis: int, num_warps: int, warp_size: int) -> Blocked:
    """A blocked layout holding all of ``axis`` in each thread, threads over the other dims."""
    order = (axis,) + tuple(d for d in reversed(range(len(shape))) if d != axis)
    rest = tuple(1 if d == axis else s for d, s in enumerate(shape))
    base = blocked_layout(rest, order[1:] + (axis,), 1, num_warps, warp_size)
    spt = tuple(shape[axis] if d == axis else 1 for d in range(len(shape)))
    return Blocked(spt, base.tpw, base.wpc, order)


def _dot(a: _Assigner, op: ir.Dot) -> None:
    """On the matrix unit: operands and result in its layouts (an operand it
    takes in any layout as it is).  On the FMA units (the codegen stages both
    operands in shared memory): operands as they are."""
    unit = a.prefs.dot_layouts(op)
    if unit:
        a_layout, b_layout, layout = unit
        a.emit(op, {"a": a.get(op.a, a_layout), "b": a.get(op.b, b_layout), "acc": a.get(op.acc, layout)}, [layout])
        return
    layout = _blocked_or(a.layout_for(op.result), a.prefs, op.result)
    a.emit(op, {"a": a.get(op.a), "b": a.get(op.b), "acc": a.get(op.acc, layout)}, [layout])


def _join(a: _Assigner, op: ir.Join) -> None:
    lhs = a.get(op.lhs)
    a.emit(op, {"lhs": lhs, "rhs": a.get(op.rhs, lhs.type.layout)}, [a.layout_for(op.result)])


def _for(a: _Assigner, op: ir.For) -> None:
    inits = [a.get(v, a.wants.get(arg)) for v, arg in zip(op.inits, op.body.args[1:])]
    arg_types = [a.get(op.lower).type] + [v.type for v in inits]
    body = a.block(op.body, arg_types)
    for init, arg, t, v in zip(op.inits, op.body.args[1:], arg_types[1:], body.terminator.values):
        got = _layout_of(v)
        if got != _layout_of_type(t) and a.prefs.is_accumulator_family(got):
            a.carried_changes[arg] = a.carried_changes[init] = got
    _convert_terminator(a, body, arg_types[1:])
    a.emit(op, {"lower": a.get(op.lower), "upper": a.get(op.upper), "step": a.get(op.step), "inits": inits},
           [_layout_of(v) for v in inits], body=body)


def _if(a: _Assigner, op: ir.If) -> None:
    then_body = a.block(op.then_body, [])
    types = [v.type for v in then_body.terminator.values]
    else_body = a.block(op.else_body, [])
    _convert_terminator(a, else_body, types)
    a.emit(op, {"cond": a.get(op.cond)}, [_layout_of_type(t) for t in types],
           then_body=then_body, else_body=else_body)


def _while(a: _Assigner, op: ir.While) -> None:
    inits = [a.get(v) for v in op.inits]
    types = [v.type for v in inits]
    before = a.block(op.before, types)
    forwarded = [v.type for v in before.terminator.values]
    after = a.block(op.after, forwarded)
    _convert_terminator(a, after, types)
    a.emit(op, {"inits": inits}, [_layout_of_type(t) for t in forwarded], before=before, after=after)


def _convert_terminator(a: _Assigner, block: Block, types: list) -> None:
    """Make ``block``'s yield pass values of ``types`` (converting layouts)."""
    term = block.ops.pop()
    saved, a.out = a.out, block.ops
    values = [a.convert(v, _layout_of_type(t)) for v, t in zip(term.values, types)]
    a.out = saved
    new = ir.Yield(values=values, loc=term.loc).make_results()
    block.ops.append(new)


def _layout_of(v: Value) -> Optional[Layout]:
    return _layout_of_type(v.type)


def _layout_of_type(t) -> Optional[Layout]:
    return t.layout if isinstance(t, TileType) else None


def _as_is(a: _Assigner, op: Op) -> None:
    """Terminators pass values through (their parent op fixes layouts); printing
    and asserting take tiles in any layout."""
    a.emit(op, _map_operands(a, op, lambda v: None), [])


RULES: dict[type, Callable[[_Assigner, Op], None]] = {
    ir.ExpandDims: _expand_dims, ir.Reduce: _reduce, ir.Scan: _scan, ir.Dot: _dot, ir.Join: _join,
    ir.For: _for, ir.If: _if, ir.While: _while, ir.Yield: _as_is, ir.Condition: _as_is, ir.Print: _as_is, ir.Assert: _as_is,
    ir.Constant: _fresh, ir.Arange: _fresh, ir.Splat: _fresh, ir.Reshape: _fresh, ir.Permute: _fresh,
    ir.Split: _fresh,
}

