"""Tuples in the front end.  Inside a kernel a tuple is a Python tuple of
front-end values (tensors, numbers, None, dtypes, nested tuples), or a named
tuple (a kernel may call a named tuple class to build one): indexing,
unpacking, ``len``, fields and unrolled iteration are Python's own.  Two
places need more, and this module is both:

* a tuple **kernel argument** arrives flattened: the launch layer
  (``launch/tuple_args.py``) passes each leaf as an argument of its own and
  a ``TupleLayout`` (a constexpr, so part of the variant's key) that says
  how to put the tuple back together;
* **runtime control flow** carries and merges only tensors, so a tuple is
  taken apart into its runtime leaves (``flatten``) and put back together
  after the loop or branch (``rebuild``); every path must give it the same
  structure, compile-time elements included.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from tilec.frontend.aggregates import Aggregate
from tilec.frontend.common import is_tensor, unwrap


def make_tuple(kind: Optional[type], values: list) -> tuple:
    """``values`` as a plain tuple, or as the named tuple class ``kind``."""
    return tuple(values) if kind is None else kind(*values)


def is_named_tuple_class(cls: Any) -> bool:
    """A ``NamedTuple`` / ``collections.namedtuple`` class (a kernel may call one to build a tuple)."""
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def named_kind(value: tuple) -> Optional[type]:
    """A named tuple's class (rebuilt as such, so that ``t.field`` works); None for any other tuple."""
    return type(value) if is_named_tuple_class(type(value)) else None


@dataclass(frozen=True)
class TupleLayout:
    """How a tuple kernel argument is rebuilt from its leaf arguments:
    ``items`` in order, each a leaf argument's name or a nested layout;
    ``kind`` the named tuple class to rebuild (None: a plain tuple)."""

    items: tuple
    kind: Optional[type] = None

    def rebuild(self, leaf: Callable[[str], Any]) -> tuple:
        """The tuple, each leaf argument's value given by ``leaf(name)``."""
        return make_tuple(self.kind, [item.rebuild(leaf) if isinstance(item, TupleLayout) else leaf(item)
                                      for item in self.items])

    def leaf_names(self) -> list[str]:
        """The leaf arguments' names, in order."""
        return [n for item in self.items for n in (item.leaf_names() if isinstance(item, TupleLayout) else [item])]


def unwrap_all(value: Any) -> Any:
    """``unwrap`` through tuples too: a compile-time tuple's ``tl.constexpr(4)`` is 4 in the kernel."""
    if isinstance(value, tuple):
        return make_tuple(named_kind(value), [unwrap_all(v) for v in value])
    return unwrap(value)


# --------------------------------------------------------------------------- #
# Runtime control flow: a value's runtime leaves and its structure
# --------------------------------------------------------------------------- #

#: The structure of a value that is one leaf (anything that is not a tuple).
LEAF = "leaf"


@dataclass(frozen=True)
class Static:
    """A compile-time element of a tuple (None, a dtype, a string...): kept in
    the structure, so two paths agree only if they hold the same one."""

    value: Any

    def __eq__(self, other) -> bool:
        return isinstance(other, Static) and type(other.value) is type(self.value) and other.value == self.value

    def __hash__(self) -> int:
        return hash(type(self.value))


@dataclass(frozen=True)
class Structure:
    """A tuple's structure: ``kind`` as in ``TupleLayout``, ``items`` each
    ``LEAF``, a ``Static`` element or a nested ``Structure``."""

    items: tuple
    kind: Optional[type] = None

    def __str__(self) -> str:
        parts = [repr(i.value) if isinstance(i, Static) else "value" if i == LEAF else str(i) for i in self.items]
        return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"


def _is_runtime(v: Any) -> bool:
    """A tuple element runtime control flow carries: a tensor, a number, a block pointer or descriptor."""
    return is_tensor(v) or isinstance(v, (bool, int, float, Aggregate))


def flatten(value: Any, name: str) -> tuple[list[tuple[str, Any]], Any]:
    """``value``'s runtime leaves, each named for messages (``t[1][0]``), and
    its structure for ``rebuild``.  A value that is not a tuple is one leaf
    (whatever it is: the caller says what may be carried); in a tuple, tensors
    and numbers are leaves and any other element stays in the structure."""
    if not isinstance(value, tuple):
        return [(name, value)], LEAF
    leaves, items = [], []
    for i, v in enumerate(value):
        if isinstance(v, tuple) or _is_runtime(v):
            inner, shape = flatten(v, f"{name}[{i}]")
            leaves += inner
            items.append(shape)
        else:
            items.append(Static(v))
    return leaves, Structure(tuple(items), named_kind(value))


def rebuild(shape: Any, leaves: Iterator) -> Any:
    """The value of structure ``shape`` (``flatten``'s) with its leaves taken in order from ``leaves``."""
    if shape == LEAF:
        return next(leaves)
    return make_tuple(shape.kind, [i.value if isinstance(i, Static) else rebuild(i, leaves) for i in shape.items])


def describe_structure(shape: Any) -> str:
    """``shape`` for a message: ``a tuple (value, None)`` or ``a single value``."""
    return "a single value" if shape == LEAF else f"a tuple {shape}"
