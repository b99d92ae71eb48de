"""``driver.active``: the device kernels launch on, asked the way Triton code asks.

Libraries written for Triton size their launches from the device:
``driver.active.utils.get_device_properties(dev)["multiprocessor_count"]``,
``driver.active.get_current_target().arch``, ``get_active_torch_device()``.
This module answers those calls for tilec's two places to run:

* ``CudaDriver`` when a CUDA GPU is usable (cuda-python, a driver, a device):
  every figure comes from the CUDA driver through ``launch/cuda_driver.py``,
  the stream from ``launch/cuda.py`` (torch's current one when torch set up
  CUDA, as tilec's launches use);
* ``HostDriver`` otherwise: kernels run on the host interpreter, whose target is
  ``GPUTarget("host", "host", 32)``.  The host runs a program's tile ops whole,
  so warps, registers and shared memory do not limit it; it reports the
  figures of tilec's default GPU target (warp size 32, sm_90's shared memory,
  64K registers) so a library's launch heuristics pick the configurations it
  would pick on that GPU, and the host's CPU count as its SM count.

``driver.active`` is chosen on first use and kept; ``set_active`` /
``reset_active`` replace it (tests, or a caller that wants the host on a GPU
machine).  ``tilec.runtime.driver.active`` is the same object.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Optional

from tilec.backends.nvidia import cuda as _cuda, cuda_driver as _cd
from tilec.backends.nvidia.target import MAX_SHARED_BYTES, WARP_SIZE

# Triton's property names -> the CUDA device attributes they read (see get_device_properties).
CUDA_PROPERTIES = {
    "max_shared_mem": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_num_regs": "MAX_REGISTERS_PER_BLOCK",
    "multiprocessor_count": "MULTIPROCESSOR_COUNT",
    "warpSize": "WARP_SIZE",
    "sm_clock_rate": "CLOCK_RATE",
    "mem_clock_rate": "MEMORY_CLOCK_RATE",
    "mem_bus_width": "GLOBAL_MEMORY_BUS_WIDTH",
}
HOST_REGISTERS = 64 * 1024  # an NVIDIA block's register file since sm_30


@dataclass(frozen=True)
class GPUTarget:
    """What ``get_current_target()`` returns: Triton's (backend, arch, warp_size)
    triple, e.g. ``GPUTarget("cuda", 90, 32)`` on an H100."""

    backend: str
    arch: Any  # int compute capability for "cuda" (90), "host" for the host
    warp_size: int


def _torch(what: str) -> Any:
    """torch, imported on demand: only the torch-facing calls need it."""
    try:
        import torch
    except ImportError:
        raise ModuleNotFoundError(f"driver.active.{what}() returns a torch object and needs torch installed",
                                  name="torch") from None
    return torch


def _check_device(device: Any, count: int) -> int:
    """``device`` as a device index, or a ValueError naming it."""
    index = getattr(device, "index", device)  # a torch.device
    if index is None:
        index = 0
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise ValueError(f"device: expected a device index in [0, {count}), got {device!r}")
    return index


class Utils:
    """``driver.active.utils``: per-device facts, under Triton's keys."""

    def __init__(self, properties):
        self._properties = properties

    def get_device_properties(self, device: Any) -> dict[str, int]:
        """``{"max_shared_mem", "max_num_regs", "multiprocessor_count", "warpSize",
        "sm_clock_rate", "mem_clock_rate", "mem_bus_width"}`` for ``device``
        (shared memory per block after opting in, in bytes; clocks in kHz)."""
        return self._properties(device)


class HostDriver:
    """The host interpreter as a device: one device (0), synchronous, stream 0."""

    backend = "host"

    def __init__(self):
        self.utils = Utils(self._properties)

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        _check_device(device, 1)

    def get_current_stream(self, device: Optional[Any] = None) -> int:
        """0: host launches are synchronous, there is nothing to order."""
        return 0

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("host", "host", WARP_SIZE)

    def get_active_torch_device(self) -> Any:
        return _torch("get_active_torch_device").device("cpu")

    def get_device_interface(self) -> Any:
        return _torch("get_device_interface").cpu

    def get_benchmarker(self):
        """The timing function Triton's autotuner uses: tilec's ``do_bench``."""
        from tilec.testing import do_bench
        return do_bench

    def _properties(self, device: Any) -> dict[str, int]:
        _check_device(device, 1)
        return {"max_shared_mem": MAX_SHARED_BYTES[_cuda.FALLBACK_TARGET], "max_num_regs": HOST_REGISTERS,
                "multiprocessor_count": os.cpu_count() or 1, "warpSize": WARP_SIZE,
                "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0}


class CudaDriver(HostDriver):
    """An NVIDIA GPU through the CUDA driver; the current device is torch's when
    torch has set up CUDA (so both agree), else the one last set here."""

    backend = "cuda"

    def __init__(self):
        super().__init__()
        self._device = 0

    @staticmethod
    def is_active() -> bool:
        return _cuda.available()

    def get_current_device(self) -> int:
        torch = _torch_with_cuda()
        return torch.cuda.current_device() if torch is not None else self._device

    def set_current_device(self, device: Any) -> None:
        self._device = _check_device(device, _cd.device_count())
        torch = _torch_with_cuda()
        if torch is not None:
            torch.cuda.set_device(self._device)

    def get_current_stream(self, device: Optional[Any] = None) -> int:
        """The stream tilec launches on by default: torch's current one, else 0."""
        index = self.get_current_device() if device is None else _check_device(device, _cd.device_count())
        return _cuda.current_stream(index)

    def get_current_target(self) -> GPUTarget:
        device = self.get_current_device()
        capability = int(_cd.compute_capability(device)[len("sm_"):])
        return GPUTarget("cuda", capability, _cd.device_attribute(device, "WARP_SIZE"))

    def get_active_torch_device(self) -> Any:
        return _torch("get_active_torch_device").device("cuda", self.get_current_device())

    def get_device_interface(self) -> Any:
        return _torch("get_device_interface").cuda

    def _properties(self, device: Any) -> dict[str, int]:
        index = _check_device(device, _cd.device_count())
        return {key: _cd.device_attribute(index, name) for key, name in CUDA_PROPERTIES.items()}


def _torch_with_cuda() -> Any:
    """torch when this process imported it and it has set up CUDA, else None
    (asking torch earlier would make it create a context on every device)."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and torch.cuda.is_initialized() else None


class DriverConfig:
    """``driver``: holds the active driver, picked on first use (a GPU when one is usable)."""

    def __init__(self):
        self._active: Optional[HostDriver] = None

    @property
    def active(self) -> HostDriver:
        if self._active is None:
            self._active = CudaDriver() if CudaDriver.is_active() else HostDriver()
        return self._active

    def set_active(self, active: HostDriver) -> None:
        self._active = active

    def reset_active(self) -> None:
        self._active = None


driver = DriverConfig()
set_active = driver.set_active
reset_active = driver.reset_active


def __getattr__(name: str) -> Any:
    """``tilec.runtime.driver.active`` reads ``driver.active`` (chosen lazily, so
    importing this module never touches CUDA)."""
    if name == "active":
        return driver.active
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
