"""Values, blocks, ops, functions and modules of the tile IR.

An op is a dataclass whose fields say what they are:

* ``operand()`` -- one ``Value``;  ``optional()`` -- a ``Value`` or ``None``;
  ``variadic()`` -- a ``list[Value]`` (``variadic(trailing=True)``: the op's
  last operand field, left out of the text form when empty);
* ``region()`` -- a ``Block`` the op owns (loop bodies, ``if`` branches,
  reduction combiners);
* ``attr()`` -- anything else: ints, strings, types, tuples.

Every op also has ``results`` (values it defines) and ``loc`` (the user's
source line).  Generic code -- printer, parser, verifier, passes -- walks
these fields by kind and never needs to know an op's class.

Ops are identity objects: two ``add`` ops are different ops even with equal
fields.  Passes build new ops through a value map (``clone_op``) rather than
mutating operands in place.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Iterator, Optional

from tilec.ir.types import Type


@dataclass(frozen=True)
class Loc:
    """A position in the user's source: file, 1-based line, 0-based column."""

    file: str
    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = Loc("<unknown>", 0, 0)


class Value:
    """An SSA value: the result of one op, or an argument of one block."""

    __slots__ = ("type", "owner", "index", "name")

    def __init__(self, type: Type, owner: Any = None, index: int = 0, name: Optional[str] = None):
        self.type = type
        self.owner = owner  # the defining Op, or the Block for a block argument
        self.index = index
        self.name = name  # a hint for the printer (the user's variable name)

    def __repr__(self) -> str:
        return f"<Value {self.name or '?'}: {self.type}>"


@dataclass(eq=False)
class Block:
    """A straight-line list of ops with arguments; regions hold exactly one block."""

    args: list[Value] = field(default_factory=list)
    ops: list["Op"] = field(default_factory=list)

    def add_arg(self, type: Type, name: Optional[str] = None) -> Value:
        v = Value(type, self, len(self.args), name)
        self.args.append(v)
        return v

    @property
    def terminator(self) -> Optional["Op"]:
        return self.ops[-1] if self.ops and self.ops[-1].IS_TERMINATOR else None


_KIND = "tilec_kind"


def operand():
    """An op field holding exactly one ``Value``."""
    return field(metadata={_KIND: "operand"})


def optional():
    """An op field holding a ``Value`` or ``None``."""
    return field(default=None, metadata={_KIND: "optional"})


def variadic(trailing: bool = False):
    """An op field holding a list of ``Value``; a ``trailing`` one is the op's
    last operand field and is left out of its text form when empty (an
    operand most ops of the class do without)."""
    return field(default_factory=list, metadata={_KIND: "variadic", "trailing": trailing})


def is_trailing(f: dataclasses.Field) -> bool:
    """Whether ``f`` is a ``variadic(trailing=True)`` field."""
    return bool(f.metadata.get("trailing"))


def region():
    """An op field holding a ``Block`` owned by the op."""
    return field(default_factory=Block, metadata={_KIND: "region"})


def attr(default: Any = dataclasses.MISSING):
    """An op field holding a plain attribute (int, str, type, tuple...)."""
    if default is dataclasses.MISSING:
        return field(metadata={_KIND: "attr"})
    return field(default=default, metadata={_KIND: "attr"})


@dataclass(eq=False, kw_only=True)
class Op:
    """Base of every op.  Subclasses set ``NAME`` and declare typed fields."""

    NAME: ClassVar[str] = "?"
    IS_TERMINATOR: ClassVar[bool] = False
    # True for ops that only compute a value: they may be folded, CSE'd,
    # hoisted out of loops and deleted when unused.
    PURE: ClassVar[bool] = True

    results: list[Value] = field(default_factory=list)
    loc: Loc = UNKNOWN_LOC

    # --- field introspection -------------------------------------------------
    @classmethod
    def fields_of_kind(cls, *kinds: str) -> tuple[dataclasses.Field, ...]:
        """The fields declared as one of ``kinds`` (``"operand"``, ``"region"``...),
        remembered per class: every pass and the verifier ask for every op."""
        got = _FIELDS_OF_KIND.get((cls, kinds))
        if got is None:
            got = _FIELDS_OF_KIND[cls, kinds] = tuple(f for f in _op_fields(cls) if f.metadata.get(_KIND) in kinds)
        return got

    @property
    def operands(self) -> list[Value]:
        """Every operand value, in field order (``None`` optionals skipped)."""
        out: list[Value] = []
        for f in self.fields_of_kind("operand", "optional", "variadic"):
            v = getattr(self, f.name)
            if isinstance(v, list):
                out.extend(v)
            elif v is not None:
                out.append(v)
        return out

    @property
    def regions(self) -> list[Block]:
        return [getattr(self, f.name) for f in self.fields_of_kind("region")]

    @property
    def attributes(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self.fields_of_kind("attr")}

    @property
    def result(self) -> Value:
        """The single result of a one-result op."""
        if len(self.results) != 1:
            raise ValueError(f"{self.NAME} has {len(self.results)} results, not one")
        return self.results[0]

    # --- typing ---------------------------------------------------------------
    def infer_types(self) -> list[Type]:
        """The result types implied by the operands and attributes."""
        raise NotImplementedError(f"{type(self).__name__}.infer_types")

    def verify(self) -> None:
        """Op-specific checks; raise ``VerifyError`` on a malformed op."""

    def make_results(self, names: Optional[list[Optional[str]]] = None) -> "Op":
        """Create fresh result values from ``infer_types()``; returns ``self``."""
        types = self.infer_types()
        names = names or [None] * len(types)
        self.results = [Value(t, self, i, n) for i, (t, n) in enumerate(zip(types, names))]
        return self


_FIELDS_CACHE: dict[type, tuple] = {}
_FIELDS_OF_KIND: dict[tuple, tuple] = {}


def _op_fields(cls: type) -> tuple:
    got = _FIELDS_CACHE.get(cls)
    if got is None:
        got = _FIELDS_CACHE[cls] = tuple(f for f in dataclasses.fields(cls) if _KIND in f.metadata)
    return got


class VerifyError(Exception):
    """A malformed piece of IR; the message names the op and its location."""


@dataclass(eq=False)
class Function:
    """A kernel: named arguments (the body's block arguments) and a body.

    ``arg_attrs[i]`` holds what specialization promises about argument ``i``
    (``{"divisibility": 16}``: the integer, or the pointer's byte address, is
    a multiple of 16).  ``constants`` records the constexpr values the body
    was specialized for (informational: they are already folded in).
    """

    name: str
    body: Block
    arg_names: list[str] = field(default_factory=list)
    arg_attrs: list[dict] = field(default_factory=list)
    loc: Loc = UNKNOWN_LOC

    @property
    def args(self) -> list[Value]:
        return self.body.args


@dataclass(eq=False)
class Module:
    functions: list[Function] = field(default_factory=list)

    def get(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)


def walk(block: Block) -> Iterator[Op]:
    """Every op in ``block`` and, recursively, in its ops' regions (pre-order)."""
    for op in block.ops:
        yield op
        for r in op.regions:
            yield from walk(r)


def clone_op(op: Op, vmap: dict[Value, Value], **changes: Any) -> Op:
    """Copy ``op`` with operands looked up in ``vmap`` and regions cloned.

    Fresh results are created and recorded in ``vmap`` (old -> new), so the
    ops after it can be cloned with the same map.  ``changes`` override
    fields (a region given there is used as it is, not cloned).
    """
    kw: dict[str, Any] = {"loc": op.loc}
    for f in _op_fields(type(op)):
        kind, v = f.metadata[_KIND], getattr(op, f.name)
        if f.name in changes:
            kw[f.name] = changes[f.name]
        elif kind in ("operand", "optional"):
            kw[f.name] = None if v is None else vmap.get(v, v)
        elif kind == "variadic":
            kw[f.name] = [vmap.get(x, x) for x in v]
        elif kind == "region":
            kw[f.name] = clone_block(v, vmap)
        else:
            kw[f.name] = v
    if "loc" in changes:
        kw["loc"] = changes["loc"]
    new = type(op)(**kw)
    new.results = [Value(r.type, new, i, r.name) for i, r in enumerate(op.results)]
    vmap.update(zip(op.results, new.results))
    return new


def clone_block(block: Block, vmap: dict[Value, Value]) -> Block:
    """Copy ``block`` (arguments and ops) through ``vmap``."""
    new = Block()
    for a in block.args:
        vmap[a] = new.add_arg(a.type, a.name)
    new.ops = [clone_op(op, vmap) for op in block.ops]
    return new


def map_block(block: Block, fn: Callable[[Op, dict], Optional[list[Op]]], vmap: dict) -> Block:
    """Rebuild ``block``, letting ``fn(op, vmap)`` replace any op.

    ``fn`` returns the ops that replace ``op`` (after recording in ``vmap``
    what ``op``'s results become), or ``None`` to keep a copy of ``op`` whose
    regions are rebuilt by the same ``fn``.  This is the skeleton of most
    passes: they never mutate the input.
    """
    new = Block()
    for a in block.args:
        vmap[a] = new.add_arg(a.type, a.name)
    for op in block.ops:
        replaced = fn(op, vmap)
        if replaced is None:
            regions = {f.name: map_block(getattr(op, f.name), fn, vmap) for f in op.fields_of_kind("region")}
            replaced = [clone_op(op, vmap, **regions)]
        new.ops.extend(replaced)
    return new
