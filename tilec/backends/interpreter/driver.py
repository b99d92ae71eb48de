"""``tilec.runtime.driver.active`` when no GPU is usable: the host interpreter
as a device (one device, 0; synchronous; stream 0).

The host runs a program's tile ops whole, so warps, registers and shared
memory do not limit it; it reports the figures of tilec's default target
(``targets.registry.default_target()``, a GPU's: warp size, shared memory,
registers) so a library's launch heuristics pick the configurations they
would pick on that GPU, and the host's CPU count as its SM count.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Optional

from tilec.runtime.driver import Driver, GPUTarget, check_device, torch_module
from tilec.targets import registry
from tilec.targets.base import Target


@functools.cache
def mimicked_target() -> Target:
    """The facts of tilec's default target, which the host reports as its own."""
    name = registry.default_target()
    return registry.backend_for(name).target(name)


class HostDriver(Driver):
    """The host interpreter as a device: one device (0), synchronous, stream 0."""

    backend = "host"

    @staticmethod
    def is_active() -> bool:
        return True

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: Any) -> None:
        check_device(device, 1)

    def get_current_stream(self, device: Optional[Any] = None) -> int:
        """0: host launches are synchronous, there is nothing to order."""
        return 0

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("host", "host", mimicked_target().warp_size)

    def get_active_torch_device(self) -> Any:
        return torch_module("get_active_torch_device").device("cpu")

    def get_device_interface(self) -> Any:
        return torch_module("get_device_interface").cpu

    def properties(self, device: Any) -> dict[str, int]:
        check_device(device, 1)
        facts = mimicked_target()
        return {"max_shared_mem": facts.max_shared_bytes, "max_num_regs": facts.registers_per_block,
                "multiprocessor_count": os.cpu_count() or 1, "warpSize": facts.warp_size,
                "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0}
