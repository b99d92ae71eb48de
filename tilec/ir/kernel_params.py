"""Kernel parameters that are more than one IR argument.

A kernel parameter is usually one argument of the IR function, of one IR
type.  A host tensor descriptor (``tilec.tools.tensor_descriptor``, Triton's
``TensorDescriptor``) passed to a kernel is several: its base pointer, its
shape and its strides, each a scalar argument, plus compile-time facts (the
block shape, the padding) that select the variant.  ``DescriptorParam`` is
that parameter's type: the launcher classifies the argument with it
(``launch/args.py``), the front end makes the IR arguments and the
descriptor value from it (``frontend/tl_tensor_descriptors.py``), and both
name the IR arguments through ``arguments``, so that the values a launch
passes line up with them.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilec.ir.types import PointerType, Type, i32, i64


@dataclass(frozen=True)
class DescriptorParam:
    """A parameter bound to a host tensor descriptor of ``rank`` dimensions over
    ``pointer``'s elements, read in blocks of ``block_shape`` padded with ``padding``.

    Its IR arguments: the base pointer (named as the parameter), the shape
    (``i32`` each) and every stride but the last (``i64`` each): the last is 1,
    which the host side checks, and as a constant it tells the optimizer that
    rows are contiguous."""

    pointer: PointerType
    block_shape: tuple
    padding: str
    # whether the tensor memory accelerator can read the tensor: no dim is 0 and
    # every stride but the last is positive and under 2**40 bytes (the host
    # descriptor already has 16-byte aligned base and strides)
    bulk: bool = True

    @property
    def rank(self) -> int:
        return len(self.block_shape)

    def arguments(self, name: str) -> list[tuple[str, Type]]:
        """(IR argument name, type) of each argument the parameter ``name`` becomes, in order."""
        shape = [(f"{name}_shape{i}", i32) for i in range(self.rank)]
        strides = [(f"{name}_stride{i}", i64) for i in range(self.rank - 1)]
        return [(name, self.pointer), *shape, *strides]

    def __str__(self) -> str:
        bulk = "" if self.bulk else ", no bulk copies"
        return f"tensordesc<{self.pointer.elem}[{', '.join(map(str, self.block_shape))}], {self.padding}{bulk}>"


def ir_arguments(name: str, t: object) -> list[tuple[str, Type]]:
    """(IR argument name, type) of each argument a kernel parameter of type ``t`` becomes."""
    return t.arguments(name) if isinstance(t, DescriptorParam) else [(name, t)]
