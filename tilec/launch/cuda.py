"""Launches compiled kernels on NVIDIA GPUs through cuda-python (the NVIDIA backend; not built yet)."""
from __future__ import annotations

from typing import Sequence

from ..errors import TilecError
from .args import KernelArg
from .compiler import CompiledKernel


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[KernelArg]) -> None:
    """Run ``compiled`` over ``grid`` on device arrays."""
    raise TilecError("running on NVIDIA GPUs comes with the NVIDIA backend (not built yet); "
                     "pass numpy arrays to run on the host")


def available() -> bool:
    """True when kernels can run on an NVIDIA GPU here: the backend is built and a device is present."""
    return False  # the NVIDIA backend is the next milestone
