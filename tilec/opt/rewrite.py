"""Small pieces every pass shares: rebuilding a function through a value map,
recognizing constants, and making replacement ops."""
from __future__ import annotations

from typing import Any, Callable, Optional

from tilec.ir import core
from tilec.ir.core import Function, Op, Value
from tilec.ir.ops import Constant

# What ``constant_value`` returns for a value that is not a constant; a
# sentinel because ``0``, ``False`` and ``0.0`` are perfectly good constants.
NOT_CONSTANT = object()


def rebuild(fn: Function, rewrite_op: Callable[[Op, dict], Optional[list[Op]]]) -> Function:
    """A copy of ``fn`` whose body is rebuilt by ``core.map_block`` with ``rewrite_op``."""
    body = core.map_block(fn.body, rewrite_op, {})
    return Function(fn.name, body, list(fn.arg_names), [dict(a) for a in fn.arg_attrs], fn.loc)


def constant_value(v: Value) -> Any:
    """The scalar a ``Constant`` op gives ``v`` (splat over a tile), else ``NOT_CONSTANT``."""
    return v.owner.value if isinstance(v.owner, Constant) else NOT_CONSTANT


def is_constant(v: Value) -> bool:
    return isinstance(v.owner, Constant)


def make_op(cls: type, like: Op, **fields) -> Op:
    """A new ``cls`` op replacing ``like``: its source location and result names, fresh results."""
    new = cls(loc=like.loc, **fields).make_results()
    for mine, theirs in zip(new.results, like.results):
        mine.name = theirs.name
    return new


def make_constant(value: Any, type_, like: Op) -> Op:
    """A ``Constant`` op of ``type_`` holding ``value``, at ``like``'s location."""
    return make_op(Constant, like, value=value, type=type_)


def replace_results(vmap: dict, old: Op, new_values: list[Value]) -> None:
    """Record in ``vmap`` that ``old``'s results are now ``new_values``."""
    vmap.update(zip(old.results, new_values))
