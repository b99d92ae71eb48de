"""Elementwise maps the kernel's author writes: ``inline_asm_elementwise``
(the target's assembly) and ``map_elementwise`` (a ``@jit`` function on
scalars).

Names, signatures and meanings follow Triton 3.6's ``triton.language``.
"""
from __future__ import annotations

from tilec.language.core import builtin


@builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Run the target's assembly ``asm`` over the tensors ``args``
    (broadcast to one shape), ``pack`` elements per run; which elements
    share a run is unspecified.  ``dtype`` is the result's dtype, or a tuple
    of dtypes for a tuple of results (at least one).

    ``constraints`` are LLVM's inline-assembly constraints (``"=r,r,r"``):
    first the outputs, then the inputs, ``pack`` per tensor, except that
    elements narrower than 32 bits share 32-bit registers (``pack=4`` of
    ``int8`` is one ``r``).  Pointers are 64-bit integers (``l``).  With
    ``is_pure`` the compiler may merge the asm with an equal one or drop it
    when its results are unused; otherwise it runs exactly where written.

    On NVIDIA GPUs ``asm`` is NVIDIA's virtual assembly language (as in
    Triton's examples).  The interpreter (and a target without
    inline assembly) cannot run it: launching such a kernel there raises an
    error naming the line; compiling it to tile IR works everywhere."""


@builtin
def map_elementwise(scalar_fn, *args, pack=1):
    """Apply the ``@jit`` function ``scalar_fn`` to the tensors ``args``
    (broadcast to one shape) element by element; returns a tensor, or a
    tuple of tensors when ``scalar_fn`` returns a tuple.

    ``scalar_fn`` sees scalars, so its ``if``/``else``, loops and early
    ``return`` decide per element (only the branch taken runs, unlike
    ``tl.where``).  With ``pack > 1`` it receives ``pack`` elements of each
    argument (``x0, x1, ..., y0, y1, ...``) and returns ``pack`` values of
    each result in the same order; ``pack`` must divide the number of
    elements, and which elements share a call is unspecified."""
