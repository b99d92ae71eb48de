"""Rule tables: a dict from a key (an op class, a ``tl`` stub) to the function
that handles it, filled by a decorator beside each rule (JAX's
``register_lowering``).

Every table of tilec is made here: the interpreter's ``PURE`` and ``RUN``,
codegen's ``LOWER`` tables, each backend's rule overrides and the front
end's ``BUILTINS``.  It is the lowest room, so the interpreter, the front end,
codegen and the backends may all use it.
"""
from __future__ import annotations

from typing import Callable


def registry(doc: str = "") -> tuple[dict, Callable]:
    """A new, empty rule table and the decorator that fills it: after
    ``@register(A, B)`` both ``table[A]`` and ``table[B]`` are the decorated
    function, which is returned unchanged.  ``doc`` becomes the decorator's
    docstring: what a rule of this table takes and returns."""
    table: dict = {}

    def register(*keys) -> Callable:
        def add(rule: Callable) -> Callable:
            for key in keys:
                table[key] = rule
            return rule
        return add
    register.__doc__ = doc
    return table, register
