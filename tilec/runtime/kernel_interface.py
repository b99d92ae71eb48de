"""``KernelInterface``: the base Triton code subclasses to make its own launchable kernels.

A subclass defines ``run(*args, grid, warmup, **kwargs)``; ``kernel[grid](*args,
**kwargs)`` then calls it with ``warmup=False``, which is what Triton passes, so
a class written against Triton's base runs unchanged.  tilec's own kernels
(``JITFunction``, the autotuner's and heuristics' wrappers) launch the same
way and count as KernelInterfaces for ``isinstance``.
"""
from __future__ import annotations

import abc
import functools
from typing import Any, Callable

from ..autotune import KernelWrapper
from ..launch import JITFunction


class KernelInterface(abc.ABC):
    """Launch with ``kernel[grid](...)``: calls ``self.run(..., grid=grid, warmup=False)``."""

    @abc.abstractmethod
    def run(self, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        """Launch (or with ``warmup=True`` only compile) over ``grid``."""

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        return functools.partial(self.run, grid=grid, warmup=False)


KernelInterface.register(JITFunction)
KernelInterface.register(KernelWrapper)
