"""Tile ops that move or count elements by index: ``gather``, ``flip``,
``cat``, ``sort``, ``bitonic_merge``, ``topk``, ``histogram``, ``swizzle2d``; and the function
forms of the arithmetic operators (``add``, ``sub``, ``mul``).

Names, signatures and meanings follow Triton 3.6's ``triton.language``.
"""
from __future__ import annotations

from tilec.language.core import builtin


@builtin
def gather(src, index, axis):
    """``src`` read along ``axis`` at the integer tile ``index``:
    ``result[i][j] = src[index[i][j]][j]`` for ``axis=0`` (numpy's
    ``take_along_axis``).  ``src`` and ``index`` have one rank and agree on
    every dim but ``axis``; the result has ``index``'s shape and ``src``'s
    dtype.  An index outside ``[0, src.shape[axis])`` wraps modulo that
    length (Triton leaves it undefined).  Also ``src.gather(index, axis)``."""


@builtin
def flip(x, dim=None):
    """``x`` reversed along ``dim`` (default: the last dim; negative counts
    from the end).  Also ``x.flip(dim)``."""


@builtin
def cat(input, other, can_reorder=False):
    """The 1-D tiles ``input`` and ``other`` (one type) as one tile of twice
    the length.  As Triton, ``can_reorder=True`` is required (the order is
    free); tilec's result is ``input`` followed by ``other``."""


@builtin
def sort(x, dim=None, descending=False):
    """``x`` sorted along its last dim (``dim`` may only name it), ascending
    unless ``descending``.  A bitonic network; NaNs end up in unspecified
    places.  Also ``x.sort()``."""


@builtin
def bitonic_merge(x, dim=None, descending=False):
    """The last stage of ``tl.sort``'s bitonic network along the last dim
    (``dim`` may only name it): ``x`` sorted, ascending unless ``descending``,
    where it holds a bitonic sequence there (an ascending run then a
    descending one: a sorted tile followed by a reverse-sorted one); other
    inputs come out as Triton's network leaves them."""


@builtin
def topk(x, k, dim=None):
    """The ``k`` (a constexpr power of two) largest elements along the last
    dim, largest first: shape ``x.shape[:-1] + (k,)``."""


@builtin
def histogram(input, num_bins, mask=None):
    """How many elements of the 1-D integer tile ``input`` equal each of
    ``0 .. num_bins - 1``, as an ``int32`` tile of ``num_bins`` (a power of
    two).  Elements where ``mask`` is false, and values outside
    ``[0, num_bins)``, are not counted.  Also ``input.histogram(num_bins)``."""


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Map the row-major position ``(i, j)`` of a ``size_i x size_j`` grid to
    the one where groups of ``size_g`` rows are traversed column-major
    (Triton's grouped program ordering): returns ``(new_i, new_j)``."""


@builtin
def add(x, y, sanitize_overflow=True):
    """``x + y`` (pointer arithmetic included).  ``sanitize_overflow`` is
    accepted for Triton's signature; tilec's integers always wrap."""


@builtin
def sub(x, y, sanitize_overflow=True):
    """``x - y``; ``sanitize_overflow`` as ``add``."""


@builtin
def mul(x, y, sanitize_overflow=True):
    """``x * y``; ``sanitize_overflow`` as ``add``."""
