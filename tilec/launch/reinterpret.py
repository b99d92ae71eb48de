"""Triton's ``triton.reinterpret``: pass an array's memory to a kernel as
elements of another dtype of the same width, the one way to hand a kernel
data no array library has a dtype for (``float8e4b15``; fp8 in numpy).

``reinterpret(x, tl.float8e4nv)`` wraps ``x`` (a torch tensor, a numpy
array, any array tilec accepts) in a ``TensorWrapper``; ``launch/args.py``
classifies the wrapper as ``x`` with the pointer's element type replaced.
"""
from __future__ import annotations

from typing import Any


class TensorWrapper:
    """``base``'s memory seen as ``dtype`` elements (a ``tl.dtype``), as Triton's."""

    def __init__(self, base: Any, dtype: Any):
        self.base = base
        self.dtype = dtype

    @property
    def data(self) -> Any:
        return self.base

    @property
    def shape(self) -> tuple:
        return tuple(self.base.shape)

    @property
    def device(self) -> Any:
        return getattr(self.base, "device", "cpu")

    def data_ptr(self) -> int:
        return self.base.data_ptr()

    def numel(self) -> int:
        return self.base.numel() if callable(getattr(self.base, "numel", None)) else self.base.size

    def element_size(self) -> int:
        return self.dtype.itemsize

    def __repr__(self) -> str:
        return f"TensorWrapper[{self.dtype}]({self.base!r})"


def reinterpret(tensor: Any, dtype: Any) -> Any:
    """``tensor``'s memory as ``dtype`` elements for a kernel (Triton's
    ``triton.reinterpret``); reinterpreting a wrapper as its base's own
    dtype gives the base back."""
    if isinstance(tensor, TensorWrapper):
        if dtype == getattr(tensor.base, "dtype", None):
            return tensor.base
        return TensorWrapper(tensor.base, dtype)
    return TensorWrapper(tensor, dtype)
