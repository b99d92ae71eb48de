"""``tilec.runtime.driver.active`` on an NVIDIA GPU: ``CudaDriver``.

Every figure comes from the CUDA driver through ``cuda_driver.py``, the stream
from ``cuda.py`` (torch's current one when torch set up CUDA, as tilec's
launches use).  The NVIDIA backend offers it while a GPU is usable here
(``cuda.available()``).
"""
from __future__ import annotations

import sys
from typing import Any, Optional

from tilec.backends.nvidia import cuda, cuda_driver as cd
from tilec.runtime.driver import Driver, GPUTarget, check_device, torch_module

# Triton's property names -> the CUDA device attributes they read (see Utils.get_device_properties).
CUDA_PROPERTIES = {
    "max_shared_mem": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_num_regs": "MAX_REGISTERS_PER_BLOCK",
    "multiprocessor_count": "MULTIPROCESSOR_COUNT",
    "warpSize": "WARP_SIZE",
    "sm_clock_rate": "CLOCK_RATE",
    "mem_clock_rate": "MEMORY_CLOCK_RATE",
    "mem_bus_width": "GLOBAL_MEMORY_BUS_WIDTH",
}


class CudaDriver(Driver):
    """An NVIDIA GPU through the CUDA driver; the current device is torch's when
    torch has set up CUDA (so both agree), else the one last set here."""

    backend = "cuda"

    def __init__(self):
        super().__init__()
        self._device = 0

    @staticmethod
    def is_active() -> bool:
        return cuda.available()

    def get_current_device(self) -> int:
        torch = _torch_with_cuda()
        return torch.cuda.current_device() if torch is not None else self._device

    def set_current_device(self, device: Any) -> None:
        self._device = check_device(device, cd.device_count())
        torch = _torch_with_cuda()
        if torch is not None:
            torch.cuda.set_device(self._device)

    def get_current_stream(self, device: Optional[Any] = None) -> int:
        """The stream tilec launches on by default: torch's current one, else 0."""
        index = self.get_current_device() if device is None else check_device(device, cd.device_count())
        return cuda.current_stream(index)

    def get_current_target(self) -> GPUTarget:
        device = self.get_current_device()
        capability = int(cd.compute_capability(device)[len("sm_"):])
        return GPUTarget("cuda", capability, cd.device_attribute(device, "WARP_SIZE"))

    def get_active_torch_device(self) -> Any:
        return torch_module("get_active_torch_device").device("cuda", self.get_current_device())

    def get_device_interface(self) -> Any:
        return torch_module("get_device_interface").cuda

    def properties(self, device: Any) -> dict[str, int]:
        index = check_device(device, cd.device_count())
        return {key: cd.device_attribute(index, name) for key, name in CUDA_PROPERTIES.items()}


def _torch_with_cuda() -> Any:
    """torch when this process imported it and it has set up CUDA, else None
    (asking torch earlier would make it create a context on every device)."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and torch.cuda.is_initialized() else None
