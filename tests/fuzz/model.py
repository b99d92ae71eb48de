"""The numpy model of a fuzz program: the state one program instance (one
``pid``) sees, which each op's ``evaluate`` reads and writes.

It follows Triton's semantics tile by tile, masked lanes included: a load
fills them with ``other``, every op computes them, a store skips them.
"""
from __future__ import annotations

import numpy as np

from .dtypes import numpy_type


class Env:
    """Values by name, the arrays of the launch (inputs and outputs, written in
    place), the index vectors ``r{a}`` of this program and the largest float
    magnitude seen (the scale of float error bounds)."""

    def __init__(self, arrays: dict, sizes: tuple, blocks: tuple, pid: int, scale: float = 0.0):
        self.arrays = arrays
        self.sizes = sizes
        self.tile = tuple(blocks)
        self.values: dict = {}
        self.scale = scale
        rank = len(blocks)
        self.r = [np.arange(b).reshape([-1 if i == a else 1 for i in range(rank)]) + (pid * b if a == 0 else 0)
                  for a, b in enumerate(blocks)]

    def __getitem__(self, v) -> np.ndarray:
        return self.values[v.name]

    def set(self, v, value: np.ndarray) -> None:
        """Bind ``v`` (checking the model kept the dtype the op promised) and note its magnitude."""
        value = np.asarray(value)
        assert value.dtype == numpy_type(v.dtype), f"model bug: {v.name} is {value.dtype}, promised {v.dtype}"
        self.values[v.name] = value
        self.note_scale(value)

    def note_scale(self, value) -> None:
        """Widen the float error scale to the finite magnitudes of ``value``."""
        x = np.abs(np.asarray(value).astype(np.float64))
        x = x[np.isfinite(x)]
        if x.size:
            self.scale = max(self.scale, float(x.max()))

    def offsets(self, axes: tuple) -> np.ndarray:
        """Row-major element offsets into an array spanning ``axes``."""
        total = 0
        for a in axes:
            total = total * self.sizes[a] + self.r[a]
        return total

    def mask(self, axes: tuple) -> np.ndarray:
        ok = True
        for a in axes:
            ok = ok & (self.r[a] < self.sizes[a])
        return np.asarray(ok)
