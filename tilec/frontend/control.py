"""Control flow for the front end: Python loops and branches -> structured IR.

``ControlFlowMixin`` is part of ``ast_parse.CodeGenerator``:

* ``if`` on a constexpr walks one branch; on a tensor it builds ``ir.If``,
  walking each branch on a copy of the scope and yielding the names whose
  value differs between the branches (defined before the ``if`` or in both).
* ``for`` over ``range``/``tl.range`` builds ``ir.For``; the names assigned
  in the body that are defined before the loop are carried as block
  arguments.  ``tl.static_range`` and tuples are unrolled.  ``while`` builds
  ``ir.While`` the same way.
* A carried or yielded value keeps its type, or the user gets an error that
  names the variable and both types (Triton's rule).
* A block pointer or tensor descriptor (an ``aggregates.Aggregate``) is carried
  as its runtime parts and built again after the statement (``_Slot``): a loop
  carries the parts that may move (a block pointer's offsets), a branch the
  parts its two sides give different values.
* A tuple is carried as its runtime leaves (``_TupleSlot``, ``tuples.flatten``):
  every path must give it the same structure, and a branch yields only the
  leaves its two sides give different values.

``normalize_returns`` rewrites ``if c: ...; return`` + rest into
``if c: ... else: rest`` before the walk, so the IR needs no return op;
a ``return`` sets the pseudo-variable ``RETURN_SLOT`` that branches merge.
"""
from __future__ import annotations

import ast
import builtins as py
from dataclasses import dataclass
from typing import Any

import tilec.language as tl
from tilec import ir
from tilec.frontend import semantic
from tilec.frontend.aggregates import Aggregate
from tilec.frontend.common import is_tensor
from tilec.frontend.tuples import describe_structure, flatten, rebuild

RETURN_SLOT = "$return"  # the value returned so far (a name no Python variable can have)
VALUE_SLOT = "$value"  # the value of a runtime `x if c else y`
_MISSING = object()


# --------------------------------------------------------------------------- #
# Syntax rewrites and queries
# --------------------------------------------------------------------------- #

def contains_return(stmts: list[ast.stmt]) -> bool:
    """Whether a ``return`` is reachable in ``stmts`` through ``if``s only (not loops)."""
    for s in stmts:
        if isinstance(s, ast.Return) or isinstance(s, ast.If) and contains_return(s.body + s.orelse):
            return True
    return False


def normalize_returns(stmts: list[ast.stmt]) -> list[ast.stmt]:
    """Move the statements after an ``if`` that returns into both of its branches.

    After this, every ``return`` ends its statement list, so a branch either
    returns or falls through to the end of the function.
    """
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            return stmts[:i + 1]
        if isinstance(s, ast.If) and contains_return(s.body + s.orelse):
            rest = stmts[i + 1:]
            branches = ast.If(test=s.test, body=normalize_returns(s.body + rest),
                              orelse=normalize_returns(s.orelse + rest))
            return stmts[:i] + [ast.copy_location(branches, s)]
    return stmts


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Every name that ``stmts`` assign, in order of first assignment."""
    names = {}
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.setdefault(node.id, None)
    return list(names)


def _describe(name: str) -> str:
    """A carried name for messages; a tuple leaf of a slot (``$return[0]``) names its element."""
    root, bracket, path = name.partition("[")
    slot = {RETURN_SLOT: "the returned value", VALUE_SLOT: "the conditional expression"}.get(root)
    if slot is None:
        return f"`{name}`"
    return f"{slot} (element [{path})" if bracket else slot


def _type_mismatch(name: str) -> str:
    """The head of the error for a value whose type differs between two branches, in
    Triton's words (its tests look for them): a variable's, a return's, a ternary's."""
    root = name.partition("[")[0]
    if root == RETURN_SLOT:
        return "Inconsistent return types"
    if root == VALUE_SLOT:
        return "Ternary expression with dynamic condition has inconsistent type"
    return f"Mismatched type for {name}"


def _returns_nothing(v: Any) -> bool:
    """A branch that returned None or fell off the end."""
    return v is None or v is _MISSING


def _same_constant(a: Any, b: Any) -> bool:
    constant = (bool, int, float, str, type(None), tl.dtype)
    return isinstance(a, constant) and type(a) is type(b) and a == b


@dataclass(frozen=True)
class _Slot:
    """One variable runtime control flow carries: ``template``, its value on entry
    (before a loop, in the then-branch), and for each of the template's parts
    whether it travels as an IR value (a tensor or number is one part, carried)."""

    name: str
    template: Any
    carried: tuple

    @staticmethod
    def of(name: str, template: Any, carried: Any = None) -> "_Slot | _TupleSlot":
        """A slot for ``template``; an aggregate carries ``carried`` (default: its moving
        parts), a tuple each of its leaves (``_TupleSlot``)."""
        if isinstance(template, tuple):
            leaves, shape = flatten(template, name)
            return _TupleSlot(name, template, shape, tuple(_Slot.of(n, v) for n, v in leaves))
        if not isinstance(template, Aggregate):
            return _Slot(name, template, (True,))
        return _Slot(name, template, template.moving_parts() if carried is None else tuple(carried))

    @staticmethod
    def kept(name: str, template: Any) -> "_Slot":
        """A slot that carries nothing: its value is ``template`` on every path."""
        return _Slot(name, template, (False,) * (len(template.parts()) if isinstance(template, Aggregate) else 1))

    def part_names(self) -> list[str]:
        return [self.name] * sum(self.carried)

    def rebuild(self, tensors) -> Any:
        """The slot's value over the carried ``tensors`` (an iterator, consumed)."""
        if not isinstance(self.template, Aggregate):
            return next(tensors) if self.carried[0] else self.template
        parts = self.template.parts()
        return self.template.with_parts(tuple(next(tensors) if c else p for p, c in zip(parts, self.carried)))


@dataclass(frozen=True)
class _TupleSlot:
    """A tuple variable runtime control flow carries: ``template`` its value on
    entry, its structure ``shape`` (``tuples.flatten``'s) and a slot per runtime
    leaf (named ``t[0]``...)."""

    name: str
    template: tuple
    shape: Any
    leaves: tuple

    def part_names(self) -> list[str]:
        return [n for leaf in self.leaves for n in leaf.part_names()]

    def rebuild(self, tensors) -> Any:
        """The tuple over the carried ``tensors`` (an iterator, consumed)."""
        return rebuild(self.shape, iter([leaf.rebuild(tensors) for leaf in self.leaves]))


class ControlFlowMixin:
    """The ``if``/``for``/``while`` visitors of ``CodeGenerator`` (see the module docstring)."""

    # --- helpers shared by branches and loops ---------------------------------
    def as_carried(self, value: Any, name: str) -> semantic.Tensor:
        """``value`` as a tensor that runtime control flow can carry or yield."""
        if is_tensor(value):
            return value
        if isinstance(value, (bool, int, float)):
            return semantic.to_tensor(self, value)
        self.error(f"{_describe(name)} holds a compile-time {type(value).__name__} ({value!r}) that would change "
                   "inside runtime control flow; only tensors and numbers can")

    def carried_tensors(self, slots: list[_Slot], values: list[Any]) -> list[semantic.Tensor]:
        """The tensors that carry ``values`` (one per slot): numbers become tensors, an
        aggregate gives its carried parts once it is checked against the slot's template."""
        out = []
        for slot, value in zip(slots, values):
            if isinstance(slot, _TupleSlot):
                out.extend(self.carried_tensors(list(slot.leaves), self.tuple_leaves(slot, value)))
            elif isinstance(slot.template, Aggregate) or isinstance(value, Aggregate):
                out.extend(self.aggregate_parts(slot, value))
            elif slot.carried[0]:
                out.append(self.as_carried(value, slot.name))
        return out

    def tuple_leaves(self, slot: _TupleSlot, value: Any) -> list[Any]:
        """The runtime leaves of ``value``, which must have the structure of the slot's tuple."""
        leaves, shape = flatten(value, slot.name)
        if shape != slot.shape:
            self.error(f"{_describe(slot.name)} is {describe_structure(slot.shape)} on one path but "
                       f"{describe_structure(shape)} on another; a tuple must keep its structure (length, "
                       "nesting and compile-time elements) through runtime control flow")
        return [v for _, v in leaves]

    def aggregate_parts(self, slot: _Slot, value: Any) -> list[semantic.Tensor]:
        """The carried parts of ``value``, which must be an aggregate of the template's
        kind whose other parts are the template's own (see the module doc)."""
        template = slot.template
        if not (isinstance(template, Aggregate) and template.same_kind(value)):
            what = [v.describe() if isinstance(v, Aggregate) else self.describe(v) for v in (template, value)]
            self.error(f"{_describe(slot.name)} is {what[0]} on one path but {what[1]} on another; runtime "
                       "control flow needs it to be the same kind of value on every path")
        parts = value.parts()
        if any(p is not t for p, t, c in zip(parts, template.parts(), slot.carried) if not c):
            self.error(f"{_describe(slot.name)} is {template.describe()} that runtime control flow carries by "
                       f"its moving parts only, but it is rebuilt inside the loop; {template.loop_advice}")
        return [p for p, c in zip(parts, slot.carried) if c]

    @staticmethod
    def rebuild(slots: list[_Slot], tensors: list) -> dict[str, Any]:
        """Each slot's value over the carried ``tensors``, by name."""
        it = iter(tensors)
        return {slot.name: slot.rebuild(it) for slot in slots}

    def yield_values(self, slots: list[_Slot], values: list[Any]) -> list[semantic.Tensor]:
        """Append ``yield values`` to the current block (numbers become tensors there)."""
        tensors = self.carried_tensors(slots, values)
        self.builder.create(ir.Yield, values=[t.handle for t in tensors])
        return tensors

    def bind_results(self, op: ir.Op, slots: list[_Slot], scope: dict) -> dict:
        """``scope`` updated with ``op``'s results, named after the variables they become."""
        names = [n for slot in slots for n in slot.part_names()]
        for name, result in zip(names, op.results):
            result.name = None if name.startswith("$") else name
        return {**scope, **self.rebuild(slots, [semantic.Tensor(r) for r in op.results])}

    def forget_names(self, inner: dict, where: str, before: str) -> None:
        """Remember why the names ``inner`` (a branch's or a loop body's scope) assigned
        have no value after the statement being walked, for ``load_name``'s error."""
        line = self.frame.source.loc(self.node).line
        for name in inner.keys() - self.frame.scope.keys():
            if not name.startswith("$"):
                self.frame.forgotten[name] = (f"`{name}` is assigned {where} at line {line}, so it has no value "
                                              f"after it; assign it before {before}")

    # --- if ------------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> None:
        cond = self.visit(node.test)
        if isinstance(cond, tl.condition):
            self.error("tl.condition(...) can only be the test of a `while` loop; write `if c:`", node.test)
        if not is_tensor(cond):
            return self.visit_block(node.body if cond else node.orelse)
        self.runtime_if(semantic.truth(self, cond), node.body, node.orelse)

    def runtime_if(self, cond: ir.Value, then_stmts: list, else_stmts: list) -> None:
        before = self.frame.scope
        then_block, then_scope = self.walk_branch(then_stmts, before)
        else_block, else_scope = self.walk_branch(else_stmts, before)
        merged, names = self.merge_branches(then_scope, else_scope)
        slots = self.branch_slots(names, then_scope, else_scope)
        op = self.build_if(cond, (then_block, then_scope), (else_block, else_scope), slots)
        self.frame.scope = self.bind_results(op, slots, {**before, **merged})
        for scope in (then_scope, else_scope):
            self.forget_names(scope, "in only one branch of the runtime `if`", "the `if` (or in both branches)")

    def walk_branch(self, stmts: list, before: dict) -> tuple[ir.Block, dict]:
        """Walk ``stmts`` into a new block on a copy of ``before``; the block and the scope at its end."""
        block, self.frame.scope = ir.Block(), dict(before)
        with self.builder.at(block):
            self.visit_block(stmts)
        scope, self.frame.scope = self.frame.scope, before
        return block, scope

    def merge_branches(self, then_scope: dict, else_scope: dict) -> tuple[dict, list[str]]:
        """What both branches agree on, and the names whose value depends on the branch taken.

        A name defined in one branch only (and not before) is not visible after the ``if``.
        """
        same, differ = {}, []
        for name in dict.fromkeys([*then_scope, *else_scope]):
            a, b = then_scope.get(name, _MISSING), else_scope.get(name, _MISSING)
            if a is b or _same_constant(a, b):
                same[name] = a
            elif name == RETURN_SLOT and _returns_nothing(a) != _returns_nothing(b):
                self.error("this function returns a value on some paths but not on others")
            elif a is not _MISSING and b is not _MISSING:
                differ.append(name)
        return same, differ

    def branch_slots(self, names: list[str], then_scope: dict, else_scope: dict) -> list:
        """The slots of the names two branches give different values."""
        return [self.branch_slot(name, then_scope[name], else_scope[name]) for name in names]

    def branch_slot(self, name: str, a: Any, b: Any) -> "_Slot | _TupleSlot":
        """The slot of ``name``, ``a`` in the then-branch and ``b`` in the else-branch:
        an aggregate carries the parts that differ (a branch that only moves a block
        pointer yields its offsets), a tuple the leaves that differ."""
        if isinstance(a, tuple) and isinstance(b, tuple):
            slot = _Slot.of(name, a)
            pairs = zip(flatten(a, name)[0], self.tuple_leaves(slot, b))
            return _TupleSlot(name, a, slot.shape, tuple(
                _Slot.kept(n, x) if x is y or _same_constant(x, y) else self.branch_slot(n, x, y)
                for (n, x), y in pairs))
        differ = None
        if isinstance(a, Aggregate) and isinstance(b, Aggregate) and a.same_kind(b):
            differ = [p is not q for p, q in zip(a.parts(), b.parts())]
        return _Slot.of(name, a, differ)

    def build_if(self, cond: ir.Value, then: tuple, other: tuple, slots: list[_Slot]) -> ir.Op:
        """Close both branch blocks with yields of ``slots`` (same types) and append the ``if``."""
        yielded = []
        for block, scope in (then, other):
            with self.builder.at(block):
                yielded.append(self.yield_values(slots, [scope[s.name] for s in slots]))
        for name, a, b in zip([n for s in slots for n in s.part_names()], *yielded):
            if a.handle.type != b.handle.type:
                self.error(f"{_type_mismatch(name)}: {_describe(name)} has type {a.handle.type} in the then-branch "
                           f"but {b.handle.type} in the else-branch; both branches must give it the same type")
        return self.builder.create(ir.If, cond=cond, then_body=then[0], else_body=other[0])

    def runtime_if_expr(self, cond: semantic.Tensor, body: ast.expr, orelse: ast.expr) -> Any:
        """``x if c else y`` with a runtime ``c``: an ``if`` yielding one value, or
        none where both branches give the same constant, which is then the value
        (``tl.store(p, a) if c else tl.store(p, b)`` is None, as in Triton)."""
        branches = []
        for expr in (body, orelse):
            block = ir.Block()
            with self.builder.at(block):
                branches.append((block, {VALUE_SLOT: self.visit(expr)}))
        same, names = self.merge_branches(branches[0][1], branches[1][1])
        slots = self.branch_slots(names, branches[0][1], branches[1][1])
        op = self.build_if(semantic.truth(self, cond), *branches, slots)
        return self.bind_results(op, slots, {})[VALUE_SLOT] if names else same[VALUE_SLOT]

    # --- for -------------------------------------------------------------------------
    def visit_For(self, node: ast.For) -> None:
        self.check_loop_syntax(node)
        fn, args, kwargs = self.loop_iterable(node.iter)
        if fn is tl.static_range:
            return self.unroll(node, self.static_values(args, kwargs))
        if fn is None:
            return self.unroll(node, args)
        if fn is py.range and kwargs:
            self.error("range() takes no keyword arguments; use tl.range(..., num_stages=...) for loop options")
        self.runtime_for(node, self.fold(tl.range, *args, **kwargs))

    def check_loop_syntax(self, node: ast.stmt) -> None:
        """Refuse a loop's ``else`` and any ``break``/``continue`` in its body, before the
        body is walked: otherwise ``while True: ... break`` is reported as a loop that
        never ends.  Visiting the statement reports it with its own message and line."""
        if node.orelse:
            self.error("`else` on a loop is not supported (there is no `break`)", node.orelse[0])
        jumps = [n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Break, ast.Continue))]
        if jumps:
            self.visit(min(jumps, key=lambda n: (n.lineno, n.col_offset)))

    def loop_iterable(self, it: ast.expr) -> tuple[Any, Any, dict]:
        """``(range kind, args, kwargs)`` for a range call, or ``(None, values, {})`` for a tuple."""
        fn = self.visit(it.func) if isinstance(it, ast.Call) else None
        if any(fn is f for f in (py.range, tl.range, tl.static_range)):
            args, kwargs = self.call_arguments(it)
            return fn, args, kwargs
        value = self.call(fn, *self.call_arguments(it)) if fn is not None else self.visit(it)
        if not isinstance(value, tuple):
            self.error("a for loop must iterate over range(...), tl.range(...), tl.static_range(...) or a tuple", it)
        return None, value, {}

    def static_values(self, args: list, kwargs: dict) -> range:
        """The values a ``tl.static_range(...)`` loop variable takes."""
        r = self.fold(tl.static_range, *args, **kwargs)
        bounds = (r.start, r.end, r.step)
        if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
            self.error("tl.static_range needs compile-time int bounds; use tl.range for runtime bounds")
        return self.fold(py.range, *bounds)

    def unroll(self, node: ast.For, values) -> None:
        """One copy of the body per value, the loop variable bound to it (a constexpr)."""
        self.frame.loop_depth += 1
        try:
            for v in values:
                self.assign(node.target, v)
                self.visit_block(node.body)
        finally:
            self.frame.loop_depth -= 1

    def runtime_for(self, node: ast.For, r: tl.range) -> None:
        if not isinstance(node.target, ast.Name):
            self.error("the variable of a runtime loop must be a single name", node.target)
        lower, upper, step = self.loop_bounds(r)
        var = node.target.id
        slots = self.loop_slots([n for n in self.carried_names(node.body) if n != var])
        inits = self.carried_tensors(slots, [s.template for s in slots])
        body = ir.Block()
        iv = semantic.Tensor(body.add_arg(lower.type, var))
        self.walk_loop_body(body, slots, inits, node.body, {var: iv})
        op = self.builder.create(ir.For, lower=lower, upper=upper, step=step,
                                 inits=[t.handle for t in inits], body=body)
        self.frame.scope = self.bind_results(op, slots, self.frame.scope)

    def loop_bounds(self, r: tl.range) -> list[ir.Value]:
        """start, end, step as scalar ints of one type: i64 if any is 64-bit, else i32."""
        if isinstance(r.step, int) and r.step == 0:
            self.error("the step of a loop cannot be zero")
        values = [self.loop_bound(b) for b in (r.start, r.end, r.step)]
        wide = ir.i64 if any(v.type.bits == 64 for v in values) else ir.i32
        return [v if v.type == wide else self.builder.value(ir.Cast, src=v, to=wide) for v in values]

    def loop_bound(self, b: Any) -> ir.Value:
        if isinstance(b, int) and not isinstance(b, bool):
            return semantic.to_tensor(self, b).handle
        t = b.handle.type if is_tensor(b) else None
        if not (isinstance(t, ir.ScalarType) and t.is_int and not t.is_bool):
            self.error(f"loop bounds must be integers or scalar integer tensors, got {self.describe(b)}")
        return b.handle

    def carried_names(self, body: list[ast.stmt]) -> list[str]:
        """Names the loop body assigns that are defined before the loop."""
        return [n for n in assigned_names(body) if n in self.frame.scope]

    def loop_slots(self, names: list[str]) -> list[_Slot]:
        return [_Slot.of(n, self.frame.scope[n]) for n in names]

    def block_args(self, block: ir.Block, slots: list[_Slot], inits: list) -> dict[str, Any]:
        """``block``'s arguments, one per carried tensor, as the slots' values by name."""
        names = [n for s in slots for n in s.part_names()]
        return self.rebuild(slots, [semantic.Tensor(block.add_arg(t.handle.type, n)) for n, t in zip(names, inits)])

    def walk_loop_body(self, block: ir.Block, slots: list[_Slot], inits: list, stmts: list, extra: dict) -> None:
        """Walk ``stmts`` into ``block`` with the slots as its arguments; yield their new values."""
        before = self.frame.scope
        self.frame.scope = {**before, **self.block_args(block, slots, inits), **extra}
        self.frame.loop_depth += 1
        try:
            with self.builder.at(block):
                self.visit_block(stmts)
                new = self.yield_values(slots, [self.frame.scope[s.name] for s in slots])
        finally:
            self.frame.loop_depth -= 1
            self.frame.scope, body_scope = before, self.frame.scope
        self.check_carried_types([n for s in slots for n in s.part_names()], inits, new)
        self.forget_names(body_scope, "only inside the runtime loop", "the loop (it may run zero times)")

    def check_carried_types(self, names: list[str], inits: list, new: list) -> None:
        for name, a, b in zip(names, inits, new):
            if a.handle.type != b.handle.type:
                self.error(f"loop-carried variable `{name}` has type {a.handle.type} before the loop but "
                           f"{b.handle.type} after one iteration; give it its final type before the loop "
                           f"(e.g. tl.zeros(shape, dtype) or x.to(dtype))")

    # --- while -----------------------------------------------------------------------
    def visit_While(self, node: ast.While) -> None:
        self.check_loop_syntax(node)
        slots = self.loop_slots(self.carried_names(node.body))
        inits = self.carried_tensors(slots, [s.template for s in slots])
        before = ir.Block()
        cond = self.while_condition(before, slots, inits, node.test)
        if cond is None:
            return
        after = ir.Block()
        self.walk_loop_body(after, slots, inits, node.body, {})
        op = self.builder.create(ir.While, inits=[t.handle for t in inits], before=before, after=after)
        self.frame.scope = self.bind_results(op, slots, self.frame.scope)

    def while_condition(self, block: ir.Block, slots: list[_Slot], inits: list, test: ast.expr):
        """Fill the ``before`` region; None when the condition is a compile-time false (no loop)."""
        saved = self.frame.scope
        self.frame.scope = {**saved, **self.block_args(block, slots, inits)}
        args = list(block.args)
        try:
            with self.builder.at(block):
                cond = self.visit(test)
                if isinstance(cond, tl.condition):  # Triton's `while tl.condition(c, disable_licm=...)`
                    cond = cond.condition
                if not is_tensor(cond):
                    if cond:
                        self.error("this while loop never ends: its condition is a compile-time true", test)
                    return None
                return self.builder.create(ir.Condition, cond=semantic.truth(self, cond), values=args)
        finally:
            self.frame.scope = saved
