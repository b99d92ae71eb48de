"""A hypothesis strategy for random well-typed IR, built with ``Builder``:
chains of elementwise ops over ragged tile shapes and every dtype, nested in
``for`` and ``if``, with awkward value names.  Used by the printer/parser
round-trip tests and the verifier's damaged-IR tests."""
from __future__ import annotations

from hypothesis import strategies as st

from tilec import ir
from tilec.ir.ops import BinaryOp, UnaryOp, all_op_classes

SCALARS = sorted((t for t in ir.SCALAR_TYPES.values() if not t.is_fp8), key=str)  # fp8: tests/test_fp8.py
SHAPES_DRAWN = st.lists(st.integers(1, 9), min_size=0, max_size=3).map(tuple)
NAMES = st.sampled_from([None, "x", "x_1", "acc", "0", "7", "a b", "_", "x.y", "é"])
UNARY = [c for c in all_op_classes().values() if issubclass(c, UnaryOp)]
BINARY = [c for c in all_op_classes().values() if issubclass(c, BinaryOp) and c.NAME not in ("cmp",)]


def _accepts(cls: type, t: ir.Type) -> bool:
    return {"number": not ir.is_pointer(t), "int": ir.is_int(t), "float": ir.is_float(t), "any": True}[cls.ACCEPTS]


def _constant_value(draw, elem: ir.ScalarType):
    if elem.is_bool:
        return draw(st.booleans())
    if elem.is_int:
        return draw(st.integers(-(2 ** (elem.bits - 1)), 2 ** elem.bits - 1))
    return draw(st.floats(allow_nan=True, allow_infinity=True))


class RandomIR:
    """Grows a block with random well-typed ops; values live in a pool by scope."""

    def __init__(self, draw, builder: ir.Builder):
        self.draw, self.b = draw, builder

    def grow(self, pool: list[ir.Value], steps: int, depth: int) -> None:
        for _ in range(steps):
            actions = [self.constant, self.unary, self.binary, self.compare, self.cast]
            if depth < 2:
                actions += [self.loop, self.branch]
            self.draw(st.sampled_from(actions))(pool, depth)

    def pick(self, pool, ok=lambda v: True) -> ir.Value | None:
        choices = [v for v in pool if ok(v)]
        return self.draw(st.sampled_from(choices)) if choices else None

    def constant(self, pool, depth):
        elem = self.draw(st.sampled_from(SCALARS))
        t = ir.with_shape(elem, self.draw(SHAPES_DRAWN))
        pool.append(self.b.value(ir.Constant, value=_constant_value(self.draw, elem), type=t, name=self.draw(NAMES)))

    def unary(self, pool, depth):
        cls = self.draw(st.sampled_from(UNARY))
        v = self.pick(pool, lambda v: _accepts(cls, v.type))
        if v is not None:
            pool.append(self.b.value(cls, src=v, name=self.draw(NAMES)))

    def binary(self, pool, depth):
        cls = self.draw(st.sampled_from(BINARY))
        lhs = self.pick(pool, lambda v: _accepts(cls, v.type))
        if lhs is not None:
            rhs = self.pick(pool, lambda v: v.type == lhs.type)
            pool.append(self.b.value(cls, lhs=lhs, rhs=rhs, name=self.draw(NAMES)))

    def compare(self, pool, depth):
        lhs = self.pick(pool)
        rhs = self.pick(pool, lambda v: v.type == lhs.type)
        pred = self.draw(st.sampled_from(ir.Compare.PREDICATES))
        pool.append(self.b.value(ir.Compare, lhs=lhs, rhs=rhs, pred=pred, name=self.draw(NAMES)))

    def cast(self, pool, depth):
        to = self.draw(st.sampled_from(SCALARS))
        pool.append(self.b.value(ir.Cast, src=self.pick(pool), to=to, name=self.draw(NAMES)))

    def loop(self, pool, depth):
        bounds = [v for v in pool if v.type == ir.i32][:1] or [self.b.value(ir.Constant, value=4, type=ir.i32)]
        carried = self.draw(st.lists(st.sampled_from(pool), max_size=3))
        op = ir.For(lower=bounds[0], upper=bounds[0], step=bounds[0], inits=carried, loc=self.b.loc)
        args = [op.body.add_arg(ir.i32, self.draw(NAMES))] + [op.body.add_arg(v.type) for v in carried]
        self.region(op.body, pool + args, carried, depth)
        self.append(op, pool)

    def branch(self, pool, depth):
        cond = self.pick(pool, lambda v: v.type == ir.i1) or self.b.value(ir.Constant, value=True, type=ir.i1)
        yielded = self.draw(st.lists(st.sampled_from(pool), max_size=2))
        op = ir.If(cond=cond, loc=self.b.loc)
        self.region(op.then_body, list(pool), yielded, depth)
        self.region(op.else_body, list(pool), yielded, depth)
        self.append(op, pool)

    def region(self, block: ir.Block, pool, like: list[ir.Value], depth: int) -> None:
        """Random ops, then a yield of values typed as ``like`` (from the region's pool)."""
        with self.b.at(block):
            self.grow(pool, self.draw(st.integers(0, 4)), depth + 1)
            values = [self.pick(pool, lambda v, t=v.type: v.type == t) for v in like]
            self.b.create(ir.Yield, values=values)

    def append(self, op: ir.Op, pool) -> None:
        op.make_results([self.draw(NAMES) for _ in op.infer_types()])
        self.b.block.ops.append(op)
        pool.extend(op.results)


@st.composite
def random_functions(draw) -> ir.Function:
    b = ir.Builder(loc=ir.Loc(draw(st.sampled_from(["k.py", 'we"ird\\name.py'])), draw(st.integers(0, 99)), 3))
    arg_types = draw(st.lists(st.sampled_from(SCALARS + [ir.PointerType(ir.f16, 3)]), min_size=1, max_size=3))
    pool = [b.block.add_arg(t) for t in arg_types]
    names = [draw(NAMES.filter(bool)) for _ in pool]
    attrs = [draw(st.sampled_from([{}, {"divisibility": 16}])) for _ in pool]
    grower = RandomIR(draw, b)
    grower.constant(pool, 0)
    grower.grow(pool, draw(st.integers(1, 12)), 0)
    return ir.Function(draw(st.sampled_from(["k", "kernel_2"])), b.block, names, attrs)
