"""Tuple kernel arguments (Triton's ``kernel[grid]((x, y), (3, 4), ...)``),
flattened into leaf arguments.

A tuple bound to a parameter that is not ``tl.constexpr`` becomes:

* a constexpr argument under the parameter's name holding the tuple's
  ``TupleLayout`` (its nesting, named tuple class and leaf names): the
  structure is part of the variant's key, so a launch with another structure
  compiles another variant;
* then each leaf, depth-first, as an argument of its own named after its
  place (``t_0``, ``t_1_2``), classified as it would be alone
  (``args.classify_arg``): an array is a pointer, an int equal to 1 or None a
  constexpr, an int divisible by 16 carries its divisibility.  A
  ``tl.constexpr(v)`` element, a string, a ``tl`` dtype or a ``@jit``
  function is a constexpr leaf.

The front end rebuilds the tuple from the leaves (``frontend/tuples.py``).
The launcher sees leaves only.  (A ``tl.constexpr`` parameter's tuple is one
compile-time value and is not flattened.)
"""
from __future__ import annotations

from typing import Any

import tilec.language as tl
from tilec.frontend.tuples import TupleLayout, named_kind
from tilec.launch.args import KernelArg, classify_arg


def classify_tuple(name: str, value: tuple, kernel: str) -> list[KernelArg]:
    """The layout argument of tuple ``value`` bound to parameter ``name``, then its leaves."""
    leaves: list[KernelArg] = []
    layout = _layout(name, value, leaves, kernel)
    return [KernelArg(name, None, layout), *leaves]


def _layout(name: str, value: tuple, leaves: list[KernelArg], kernel: str) -> TupleLayout:
    """``value``'s layout, its leaves appended to ``leaves`` in order."""
    items = []
    for i, v in enumerate(value):
        leaf = f"{name}_{i}"
        if isinstance(v, tuple):
            items.append(_layout(leaf, v, leaves, kernel))
        else:
            leaves.append(_leaf_arg(leaf, v, kernel))
            items.append(leaf)
    return TupleLayout(tuple(items), named_kind(value))


def _leaf_arg(name: str, value: Any, kernel: str) -> KernelArg:
    """One element, classified as an argument of its own (see the module doc)."""
    if isinstance(value, (tl.constexpr, str, tl.dtype)) or getattr(value, "is_tilec_jit", False):
        return KernelArg(name, None, value)
    return classify_arg(name, value, False, kernel)


def check_distinct_names(args: list[KernelArg], kernel: str) -> None:
    """A tuple's leaf names (``t_0``) must not be another parameter's name:
    the launcher finds each argument by name."""
    seen = set()
    for a in args:
        if a.name in seen:
            raise TypeError(f"kernel `{kernel}`: parameter `{a.name}` has the name tilec gives an element of a "
                            f"tuple argument (`{a.name.rsplit('_', 1)[0]}`); rename the parameter")
        seen.add(a.name)
