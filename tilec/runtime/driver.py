"""``driver.active``: the device kernels launch on, asked the way Triton code asks.

Libraries written for Triton size their launches from the device:
``driver.active.utils.get_device_properties(dev)["multiprocessor_count"]``,
``driver.active.get_current_target().arch``, ``get_active_torch_device()``.
Each backend answers those calls for its devices with a ``Driver`` of its own
(``Backend.driver()``): a GPU backend's while its GPU is usable here
(cuda-python, a driver, a device), the host interpreter's otherwise, whose
target is ``GPUTarget("host", "host", 32)`` (``backends/interpreter/driver.py``).

``driver.active`` is chosen on first use (``targets.registry.active_driver``:
a usable GPU first) and kept; ``set_active`` / ``reset_active`` replace it
(tests, or a caller that wants the host on a GPU machine).
``tilec.runtime.driver.active`` is the same object.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from tilec.targets.registry import active_driver


@dataclass(frozen=True)
class GPUTarget:
    """What ``get_current_target()`` returns: Triton's (backend, arch, warp_size)
    triple, e.g. ``GPUTarget("cuda", 90, 32)`` on an H100."""

    backend: str
    arch: Any  # int compute capability for "cuda" (90), "host" for the host
    warp_size: int


def torch_module(what: str) -> Any:
    """torch, imported on demand: only the torch-facing calls (``driver.active.<what>()``) need it."""
    try:
        import torch
    except ImportError:
        raise ModuleNotFoundError(f"driver.active.{what}() returns a torch object and needs torch installed",
                                  name="torch") from None
    return torch


def check_device(device: Any, count: int) -> int:
    """``device`` as a device index, or a ValueError naming it."""
    index = getattr(device, "index", device)  # a torch.device
    if index is None:
        index = 0
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise ValueError(f"device: expected a device index in [0, {count}), got {device!r}")
    return index


class Utils:
    """``driver.active.utils``: per-device facts, under Triton's keys."""

    def __init__(self, properties: Callable[[Any], dict[str, int]]):
        self._properties = properties

    def get_device_properties(self, device: Any) -> dict[str, int]:
        """``{"max_shared_mem", "max_num_regs", "multiprocessor_count", "warpSize",
        "sm_clock_rate", "mem_clock_rate", "mem_bus_width"}`` for ``device``
        (shared memory per block after opting in, in bytes; clocks in kHz)."""
        return self._properties(device)


class Driver:
    """What every backend's driver shares: ``utils`` over its ``properties(device)``
    and the benchmarker.  A backend's driver adds Triton's device calls:
    ``backend`` (a name), ``is_active()``, ``get_current_device()``,
    ``set_current_device(device)``, ``get_current_stream(device=None)``,
    ``get_current_target()`` (a ``GPUTarget``), ``get_active_torch_device()``
    and ``get_device_interface()`` (torch objects: ``torch_module``)."""

    backend = ""

    def __init__(self):
        self.utils = Utils(self.properties)

    def properties(self, device: Any) -> dict[str, int]:
        """``utils.get_device_properties(device)``: see ``Utils``."""
        raise NotImplementedError(f"{type(self).__name__} must define properties(device)")

    def get_benchmarker(self):
        """The timing function Triton's autotuner uses: tilec's ``do_bench``."""
        from tilec.testing import do_bench
        return do_bench


class DriverConfig:
    """``driver``: holds the active driver, picked on first use (a GPU when one is usable)."""

    def __init__(self):
        self._active: Optional[Driver] = None

    @property
    def active(self) -> Driver:
        if self._active is None:
            self._active = active_driver()
        return self._active

    def set_active(self, active: Driver) -> None:
        self._active = active

    def reset_active(self) -> None:
        self._active = None


driver = DriverConfig()
set_active = driver.set_active
reset_active = driver.reset_active


def __getattr__(name: str) -> Any:
    """``tilec.runtime.driver.active`` reads ``driver.active`` (chosen lazily, so
    importing this module never touches a device)."""
    if name == "active":
        return driver.active
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
