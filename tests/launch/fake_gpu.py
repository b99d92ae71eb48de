"""A fake CUDA driver layer and fake device arrays, for the launch tests that
run everywhere (``test_cuda_launcher.py``, ``test_fast_path.py``): the real
compile pipeline runs, the driver calls are recorded."""
from __future__ import annotations

import ctypes
import sys
import types

import pytest

from launch import kernels
from tilec.backends.nvidia import cuda, cuda_driver as cd, libcuda
from tilec.launch.jit import JITFunction, VariantCache


class FakeCudaArray:
    """A CUDA array as CuPy exposes it (``device`` None: only ``__cuda_array_interface__``)."""

    def __init__(self, address=0x7F00_0000_0000, device=0, typestr="<f4"):
        self.__cuda_array_interface__ = {"shape": (64,), "typestr": typestr, "data": (address, False), "version": 3}
        if device is not None:
            self.__dlpack_device__ = lambda: (2, device)


# Result names the fake driver gives the codes its tests return.
RESULT_NAMES = {1: ("CUDA_ERROR_INVALID_VALUE", "invalid argument"),
                700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered")}


# Kernels and launch frames of every fake GPU, by function address: a kernel
# loaded under one test's fake (module-level kernels stay loaded) launches
# under the next one's, whose calls reach it through ``ACTIVE``.
KERNELS: dict = {}
FRAMES: dict = {}
ACTIVE: list = [None]
FAKE_LIBCUDA = libcuda.Driver(lambda *args: ACTIVE[0].launch_kernel_ex(*args),
                              lambda address: ACTIVE[0].ctx_get_current(address))


class FakeGPU:
    """Records what the launcher asks of the driver: the ``cuda_driver`` calls
    and libcuda's two launch functions, as ctypes would call them (plain
    addresses).  A launch is recorded as the driver would read it, by
    following the config and ``void**`` addresses into memory.  Contexts are a
    stack, as the driver's are; two ``sm_90`` devices, named by ``names``."""

    def __init__(self, monkeypatch, arch="sm_90"):
        self.arch, self.launches, self.loads, self.syncs, self.shared_opt_ins = arch, [], [], [], []
        self.registers, self.rejected, self.pointer_devices = 32, set(), {}
        self.contexts, self.launch_result, self.names = [], 0, ["Fake GPU", "Fake GPU"]
        ACTIVE[0] = self
        for name in ("compute_capability", "device_name", "device_count", "retain_primary_context", "enter_context",
                     "leave_context", "load_image", "load_ptx", "get_function", "function_attribute",
                     "set_max_dynamic_shared", "synchronize", "pointer_device", "describe_code"):
            monkeypatch.setattr(cd, name, getattr(self, name))
        monkeypatch.setattr(libcuda, "functions", lambda: FAKE_LIBCUDA)
        real_load = cuda.load
        monkeypatch.setattr(cuda, "load", lambda *args: self.loaded(real_load(*args)))

    def compute_capability(self, device=0):
        return self.arch

    def device_name(self, device=0):
        return self.names[device]

    def device_count(self):
        return len(self.names)

    def retain_primary_context(self, device=0):
        return 1000 + device

    @property
    def current_context(self):
        return self.contexts[-1] if self.contexts else 0

    def enter_context(self, ctx, handle):
        if self.current_context == handle:
            return False
        if not self.contexts:
            self.contexts.append(handle)
            return False
        self.contexts.append(handle)
        return True

    def leave_context(self):
        assert len(self.contexts) > 1, "popped a context nobody pushed"
        self.contexts.pop()

    def load_image(self, image, device=0, kind="cubin"):
        if kind in self.rejected:
            raise cd.CudaError(209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "", f"loading {kind}")
        self.loads.append((kind, device))
        return cd.Module(handle=len(self.loads), device=device)

    def load_ptx(self, ptx, device=0):
        assert ".visible .entry" in ptx
        return self.load_image(ptx.encode(), device, "PTX")

    def get_function(self, module, name):
        kernel = cd.Kernel(handle=0xF000 + len(KERNELS), name=name, device=module.device)
        KERNELS[kernel.address] = kernel
        return kernel

    def function_attribute(self, kernel, name):
        assert name == "NUM_REGS"
        return self.registers

    def set_max_dynamic_shared(self, kernel, nbytes):
        self.shared_opt_ins.append(nbytes)

    def loaded(self, loaded):
        FRAMES[loaded.kernel.address] = loaded.frame
        return loaded

    def ctx_get_current(self, address):
        ctypes.c_void_p.from_address(address).value = self.current_context or None
        return 0

    def launch_kernel_ex(self, config, function, params, extra):
        if self.launch_result:
            return self.launch_result
        kernel, frame = KERNELS[function], FRAMES[function]
        assert (config, params, extra) == (frame.config_address, frame.params_address, None)
        launch = libcuda.read_launch(config, params, frame.kinds)
        assert launch.pop("attributes") == (0, 0)
        self.launches.append(dict(name=kernel.name, device=kernel.device, context=self.current_context,
                                  frame=frame, **launch))
        return 0

    def synchronize(self, stream, what):
        self.syncs.append((stream, what))

    def pointer_device(self, address):
        return self.pointer_devices.get(address, 0)

    def describe_code(self, code):
        return RESULT_NAMES.get(code, (f"CUresult {code}", ""))


def isolate_shared_kernels(monkeypatch) -> None:
    """The shared kernels (``launch/kernels.py``) start each fake-GPU test with
    empty variant caches, given back after it: on a machine with a GPU, a
    variant the real driver loaded earlier in the process
    (``test_cuda_launch.py``) would launch through the real driver with the
    fake arrays' addresses."""
    for kernel in vars(kernels).values():
        if isinstance(kernel, JITFunction):
            monkeypatch.setattr(kernel, "cache", VariantCache())
            monkeypatch.setattr(kernel, "_launches", kernel.cache.launches)


@pytest.fixture
def gpu(monkeypatch):
    """A fake GPU; the launcher's cached device facts are forgotten before and after."""
    for cached in (cuda.available, cuda._device_arch):
        cached.cache_clear()
    monkeypatch.delenv("TILEC_SYNC", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # no torch: the default stream is 0
    isolate_shared_kernels(monkeypatch)
    yield FakeGPU(monkeypatch)
    for cached in (cuda.available, cuda._device_arch):
        cached.cache_clear()


def arrays(n=3, device=0):
    return [FakeCudaArray(0x7F00_0000_0000 + 0x10000 * i, device) for i in range(n)]


class FakeTorchDtype:
    """A torch dtype as the launch layer reads it: its ``str`` and its module."""

    __module__ = "torch"

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


FLOAT32, FLOAT16, INT64 = FakeTorchDtype("float32"), FakeTorchDtype("float16"), FakeTorchDtype("int64")


class FakeTensor:
    """A torch tensor as the launch layer reads one (on CUDA unless ``device`` is None)."""

    def __init__(self, address=0x7F00_0000_0000, device=0, dtype=FLOAT32):
        self.address, self.index, self.dtype = address, device, dtype
        self.is_cuda = device is not None
        self.device = types.SimpleNamespace(type="cuda" if self.is_cuda else "cpu", index=device)

    def data_ptr(self):
        return self.address

    def get_device(self):
        return self.index if self.is_cuda else -1


@pytest.fixture
def fake_torch(gpu, monkeypatch):
    """A fake GPU and a ``torch`` whose tensors are ``FakeTensor``s (CUDA never
    set up: the default stream stays 0); the fast path's spec for them is
    forgotten before and after."""
    from tilec.launch.args import SPECS

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        Tensor=FakeTensor, cuda=types.SimpleNamespace(is_initialized=lambda: False)))
    SPECS.pop(FakeTensor, None)
    yield gpu
    SPECS.pop(FakeTensor, None)
