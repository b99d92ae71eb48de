"""``TensorDescriptor``: a tensor with the block shape a kernel reads and writes it in
(Triton's ``triton.tools.tensor_descriptor.TensorDescriptor``).

Passed to a kernel, it is a tensor descriptor there (``desc.load(offsets)``,
``desc.store(offsets, value)``, as ``tl.make_tensor_descriptor`` makes): the
launcher passes its base pointer, shape and strides, and its block shape and
padding select the compiled variant.  Triton's checks hold when it is made:
1 to 5 dimensions, one stride and one block size per dimension, a contiguous
last dimension, 16-byte aligned base and leading strides, block sizes that
are powers of two, padding "zero" or "nan".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List


@dataclass
class TensorDescriptor:
    """``base`` (a torch tensor or numpy array) seen as a tensor of ``shape`` and
    ``strides`` (in elements), read in blocks of ``block_shape``; elements
    outside it read ``padding`` ("zero" or "nan") and are never written."""

    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        self.shape, self.strides, self.block_shape = list(self.shape), list(self.strides), list(self.block_shape)
        rank = len(self.shape)
        _require(0 < rank <= 5, f"a tensor descriptor has 1 to 5 dimensions, got {rank}")
        _require(len(self.strides) == rank and len(self.block_shape) == rank,
                 f"rank mismatch: shape {self.shape}, strides {self.strides}, block_shape {self.block_shape}")
        _require(all(isinstance(b, int) and b > 0 and b & (b - 1) == 0 for b in self.block_shape),
                 f"every block dimension must be a power of two, got {self.block_shape}")
        _require(self.strides[-1] == 1, f"Last dimension must be contiguous (stride 1), got strides {self.strides}")
        elem_bytes = _itemsize(self.base)
        _require(_address(self.base) % 16 == 0, "base must be 16-byte aligned")
        _require(all(s * elem_bytes % 16 == 0 for s in self.strides[:-1]),
                 f"strides must be 16-byte aligned: {self.strides} of {elem_bytes}-byte elements")
        _require(self.padding in ("zero", "nan"), f"Illegal value for padding: {self.padding!r} (\"zero\" or \"nan\")")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of all of ``tensor`` (its own shape and strides)."""
        return TensorDescriptor(tensor, list(tensor.shape), _strides(tensor), block_shape, padding)


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(f"TensorDescriptor: {message}")


def _itemsize(base: Any) -> int:
    return base.dtype.itemsize  # torch and numpy dtypes both say it


def _address(base: Any) -> int:
    """The address of the first element: torch's ``data_ptr()``, numpy's interface."""
    if hasattr(base, "data_ptr"):
        return base.data_ptr()
    return base.__array_interface__["data"][0]


def _strides(tensor: Any) -> list[int]:
    """Strides in elements: torch's ``stride()``, numpy's byte strides divided by the item size."""
    if callable(getattr(tensor, "stride", None)):
        return list(tensor.stride())
    return [s // tensor.dtype.itemsize for s in tensor.strides]
