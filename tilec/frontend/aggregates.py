"""Front-end values made of several runtime scalars: what control flow carries of them.

A block pointer (``tl.make_block_ptr``) or a tensor descriptor
(``tl.make_tensor_descriptor``) is no IR value: it is a Python object holding
runtime scalars (its *parts*: a base pointer, shape, strides, offsets) and
compile-time facts (its block shape, order, padding).  ``Aggregate`` is what
such a value tells ``control.py`` so that runtime loops and branches can carry
it as its parts and build it again after them:

* ``parts()`` the runtime scalars, in a fixed order, and ``with_parts(parts)``
  the same value over other scalars of the same types;
* ``same_kind(other)``: whether the compile-time facts are equal (only then can
  two values share one IR representation);
* ``moving_parts()``: which parts a loop carries.  The others must stay the
  same objects through the loop body: carrying a block pointer's base, shape
  and strides as loop arguments would hide from the optimizer that they are
  invariant (a stride of 1 would no longer prove the accesses contiguous).
"""
from __future__ import annotations

from typing import Any


class Aggregate:
    """A front-end value made of runtime scalars and compile-time facts (see the module doc)."""

    def parts(self) -> tuple:
        """The runtime scalars (``semantic.Tensor``) this value is made of."""
        raise NotImplementedError

    def with_parts(self, parts: tuple) -> "Aggregate":
        """This value with ``parts`` (same count and types) in place of its own."""
        raise NotImplementedError

    def moving_parts(self) -> tuple[bool, ...]:
        """For each part, whether a loop may change it (and so carries it)."""
        raise NotImplementedError

    def same_kind(self, other: Any) -> bool:
        """Whether ``other`` is the same kind of value with the same compile-time facts."""
        raise NotImplementedError

    def describe(self) -> str:
        """What this value is, for messages ("a block pointer of block shape (32, 32)")."""
        raise NotImplementedError

    loop_advice = "make it before the loop"  # how to keep the parts that do not move unchanged
