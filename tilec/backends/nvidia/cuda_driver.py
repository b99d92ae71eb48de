"""The CUDA driver layer the NVIDIA backend launches through (cuda-python).

Everything here is a thin, checked wrapper over the driver API:

* ``driver()`` imports the bindings lazily and calls ``cuInit(0)`` once; no
  package or no driver raises ``CudaUnavailable`` so callers can fall back to
  the host;
* ``check()`` turns a ``CUresult`` into ``CudaError``;
* ``primary_context`` / ``load_ptx`` / ``load_image`` / ``get_function`` share
  the device's primary context (the one torch uses) and cache modules per
  (device, image); ``enter_context`` makes one current for a launch without
  changing the caller's current device for good;
* ``function_attribute``, ``pointer_device`` and ``synchronize`` serve the
  launcher's resource checks, device lookup and ``TILEC_SYNC=1`` mode;
  ``encode_tensor_map`` makes the tensor maps kernels copy host descriptors'
  blocks with (``tma.py``);
* launches themselves go through ctypes (``libcuda.py``): cuda-python's
  argument conversion alone cost more than the whole launch may.

Importing this module does not import cuda-python; the first driver call does.
Not thread-safe: launch from one thread per device (like the rest of tilec).
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib
from dataclasses import dataclass, field
from typing import Any, Sequence

from tilec.errors import TilecError

# Tried in order: cuda-python 12.x/13.x, then the pre-12.6 layout.
BINDINGS = ("cuda.bindings.driver", "cuda.cuda")

# Static shared memory per block without opting in (see target.py).
DEFAULT_SHARED_BYTES = 48 * 1024


class CudaUnavailable(TilecError):
    """No usable CUDA here (package missing or no driver/device): run on the host instead."""


class CudaError(TilecError):
    """A CUDA driver call failed: ``code``/``name`` say how, ``what`` says doing what."""

    def __init__(self, code: int, name: str, description: str, what: str):
        self.code, self.name, self.description, self.what = code, name, description, what
        detail = f" ({description})" if description and description != name else ""
        super().__init__(f"{what}: {name}{detail}")


# --- the bindings -----------------------------------------------------------
_driver: Any = None


def driver() -> Any:
    """The cuda-python driver module, with ``cuInit(0)`` done (once per process)."""
    global _driver
    if _driver is None:
        mod = _import_bindings()
        try:
            (err,) = mod.cuInit(0)
        except Exception as e:  # cuda-bindings 13 raises when libcuda.so itself is missing
            raise CudaUnavailable(f"no CUDA driver: {str(e).rstrip('.')}; kernels can still run on the host "
                                  "with numpy arrays") from None
        if _code(err) != 0:
            name, description = _describe(err, mod)
            raise CudaUnavailable(f"no CUDA driver: {name} ({description}) from cuInit; "
                                  "kernels can still run on the host with numpy arrays")
        _driver = mod
    return _driver


def _import_bindings() -> Any:
    for name in BINDINGS:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise CudaUnavailable("running on NVIDIA GPUs needs cuda-python: install tilec[cuda] "
                          "(pip install cuda-python); kernels can still run on the host with numpy arrays")


def _code(err: Any) -> int:
    """A ``CUresult`` as an int: cuda-python's are ints (``int()`` costs a fifth
    of ``.value``), older ones plain enums."""
    return int(err) if isinstance(err, int) else int(getattr(err, "value", err))


def _describe(err: Any, mod: Any = None) -> tuple[str, str]:
    """(name, description) of a CUresult, asking the driver when it can."""
    name = getattr(err, "name", None) or f"CUresult {_code(err)}"
    description = ""
    mod = mod if mod is not None else _driver
    if mod is not None:
        try:
            e, text = mod.cuGetErrorName(err)
            if _code(e) == 0 and text:
                name = _text(text)
            e, text = mod.cuGetErrorString(err)
            if _code(e) == 0 and text:
                description = _text(text)
        except Exception:  # a broken or fake binding: keep the enum's own name
            pass
    return name, description


def describe_code(code: int) -> tuple[str, str]:
    """(name, description) of a plain int CUresult (what ctypes calls return)."""
    mod = _driver
    try:
        return _describe(mod.CUresult(code) if mod is not None else code)
    except ValueError:  # a code the bindings' enum does not list
        return _describe(code)


def _text(s: Any) -> str:
    return s.decode(errors="replace") if isinstance(s, (bytes, bytearray)) else str(s)


def check(result: Sequence[Any], what: str) -> Any:
    """Unwrap a driver call's ``(CUresult, *values)``: the value (or tuple of
    values, or None), raising ``CudaError`` naming ``what`` on failure."""
    err = result[0]
    if _code(err) != 0:
        name, description = _describe(err)
        raise CudaError(_code(err), name, description, what)
    if len(result) <= 2:  # no starred unpacking: ``enter_context`` checks a result every launch
        return result[1] if len(result) == 2 else None
    return tuple(result[1:])


# --- devices and contexts ---------------------------------------------------
_contexts: dict[int, Any] = {}


def retain_primary_context(device: int = 0) -> Any:
    """The device's primary context (shared with torch), retained once."""
    ctx = _contexts.get(device)
    if ctx is None:
        drv = driver()
        dev = check(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
        ctx = check(drv.cuDevicePrimaryCtxRetain(dev), f"retaining the primary context of device {device}")
        _contexts[device] = ctx
    return ctx


def primary_context(device: int = 0) -> Any:
    """The device's primary context, retained once and made current."""
    ctx = retain_primary_context(device)
    check(driver().cuCtxSetCurrent(ctx), f"making device {device}'s context current")
    return ctx


def enter_context(ctx: Any, handle: int) -> bool:
    """Make ``ctx`` (whose ``int()`` is ``handle``) current for a load or a launch.

    When another context is current (torch's, on another device) ours is
    pushed over it and True is returned: call ``leave_context`` afterwards so
    the caller's current device is what it was.  One ``cuCtxGetCurrent`` when
    ours is already current, the usual case."""
    current = int(check(_driver.cuCtxGetCurrent(), "cuCtxGetCurrent"))
    if current == handle:
        return False
    if current == 0:  # nothing current: ours may stay
        check(_driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return False
    check(_driver.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
    return True


def leave_context() -> None:
    """Undo an ``enter_context`` that returned True."""
    check(_driver.cuCtxPopCurrent(), "cuCtxPopCurrent")


def device_count() -> int:
    return check(driver().cuDeviceGetCount(), "cuDeviceGetCount")


def device_name(device: int = 0) -> str:
    drv = driver()
    dev = check(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
    return _text(check(drv.cuDeviceGetName(256, dev), f"name of device {device}")).split("\0", 1)[0]


def compute_capability(device: int = 0) -> str:
    """``"sm_90"`` for an H100: the arch to compile PTX for."""
    major, minor = (device_attribute(device, f"COMPUTE_CAPABILITY_{part}") for part in ("MAJOR", "MINOR"))
    return f"sm_{major}{minor}"


def device_report() -> list[tuple[str, str]]:
    """``python -m tilec info``'s lines: the driver's CUDA version and each GPU
    (name and arch), or one line saying why there are none."""
    try:
        version = check(driver().cuDriverGetVersion(), "cuDriverGetVersion")
        devices = [(f"gpu {i}", f"{device_name(i)} ({compute_capability(i)})") for i in range(device_count())]
    except TilecError as e:
        return [("gpu", f"none: {(str(e).splitlines() or [type(e).__name__])[0]}")]
    return [("driver", f"CUDA {version // 1000}.{version % 1000 // 10}")] + (devices or [("gpu", "none found")])


def device_attribute(device: int, name: str) -> int:
    """The CUDA device attribute ``CU_DEVICE_ATTRIBUTE_<name>`` of ``device``."""
    drv = driver()
    handle = check(drv.cuDeviceGet(device), f"cuDeviceGet({device})")
    attribute = getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
    return check(drv.cuDeviceGetAttribute(attribute, handle), f"{name.lower()} of device {device}")


# --- modules and functions --------------------------------------------------
@dataclass(eq=False)
class Kernel:
    """A loaded ``CUfunction``: ``handle`` goes to ``cuLaunchKernel``, ``name`` into errors."""
    handle: Any
    name: str
    device: int
    dynamic_shared_limit: int = DEFAULT_SHARED_BYTES

    @property
    def address(self) -> int:
        """The ``CUfunction`` as the plain address ctypes passes (``libcuda.py``)."""
        return int(self.handle)


@dataclass(eq=False)
class Module:
    """A ``CUmodule`` loaded from PTX on one device; its kernels are cached by name."""
    handle: Any
    device: int
    kernels: dict[str, Kernel] = field(default_factory=dict)


_modules: dict[tuple[int, str], Module] = {}


def load_ptx(ptx: str, device: int = 0) -> Module:
    """Load PTX text on ``device`` (JIT-compiled by the driver), cached per (device, PTX)."""
    return load_image(ptx.encode(), device, "PTX")


def load_image(image: bytes, device: int = 0, kind: str = "cubin") -> Module:
    """Load a cubin (or PTX, ``kind`` says which for errors) on ``device``,
    cached per (device, image)."""
    key = (device, hashlib.sha256(image).hexdigest())
    module = _modules.get(key)
    if module is None:
        primary_context(device)
        data = ctypes.create_string_buffer(image)  # NUL-terminated, as the driver requires of PTX
        handle = check(driver().cuModuleLoadData(ctypes.addressof(data)),
                       f"loading {kind} on device {device} (cuModuleLoadData)")
        module = _modules[key] = Module(handle, device)
    return module


def get_function(module: Module, name: str) -> Kernel:
    """The kernel ``name`` of ``module`` (a ``CudaError`` CUDA_ERROR_NOT_FOUND if it has none)."""
    kernel = module.kernels.get(name)
    if kernel is None:
        handle = check(driver().cuModuleGetFunction(module.handle, name.encode()),
                       f"kernel `{name}`: cuModuleGetFunction")
        kernel = module.kernels[name] = Kernel(handle, name, module.device)
    return kernel


def set_max_dynamic_shared(kernel: Kernel, nbytes: int) -> None:
    """Let ``kernel`` launch with ``nbytes`` of dynamic shared memory; above 48 KB
    the driver requires this opt-in (up to the arch's limit)."""
    if nbytes <= kernel.dynamic_shared_limit:
        return
    drv = driver()
    attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(drv.cuFuncSetAttribute(kernel.handle, attr, nbytes),
          f"kernel `{kernel.name}`: allowing {nbytes} bytes of dynamic shared memory")
    kernel.dynamic_shared_limit = nbytes


def function_attribute(kernel: Kernel, name: str) -> int:
    """``cuFuncGetAttribute``: ``name`` is a ``CU_FUNC_ATTRIBUTE_*`` suffix such as ``"NUM_REGS"``."""
    drv = driver()
    attr = getattr(drv.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
    return check(drv.cuFuncGetAttribute(attr, kernel.handle), f"kernel `{kernel.name}`: reading {name}")


# cuTensorMapEncodeTiled's swizzle enum by atom row bytes, and its unsigned data type by element bytes.
_SWIZZLE_NAMES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
_UNSIGNED_TYPES = {1: "UINT8", 2: "UINT16", 4: "UINT32", 8: "UINT64"}


def encode_tensor_map(address: int, elem_bytes: int, shape: Sequence[int], strides: Sequence[int],
                      box: Sequence[int], swizzle: int) -> bytes:
    """The 128 bytes of a ``CUtensorMap`` over the tensor at ``address`` of
    ``shape`` (outermost dim first) and leading ``strides`` (in elements; the
    last dim is contiguous), copied in boxes of ``box`` elements (innermost
    first) into shared memory with the ``swizzle``-byte pattern.  Elements
    are copied as unsigned integers of their width (bits, not values: out of
    the tensor they are 0); L2 fetches 256-byte lines."""
    drv = driver()
    u32, u64 = drv.cuuint32_t, drv.cuuint64_t
    dims = [u64(int(n)) for n in reversed(shape)]
    byte_strides = [u64(int(s) * elem_bytes) for s in reversed(strides)]
    got = check(drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{_UNSIGNED_TYPES[elem_bytes]}"), u32(len(dims)),
        address, dims, byte_strides, [u32(n) for n in box], [u32(1)] * len(dims),
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLE_NAMES[swizzle]}"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        f"encoding a tensor map of shape {list(shape)}, strides {list(strides)}, box {list(box)}")
    return ctypes.string_at(got.getPtr(), 128)


def pointer_device(address: int) -> int:
    """The ordinal of the device whose memory ``address`` points into (for
    arrays that only expose ``__cuda_array_interface__``, which does not say)."""
    drv = driver()
    attr = drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    return check(drv.cuPointerGetAttribute(attr, address),
                 f"finding the device of address {address:#x} (is it device memory?)")


def synchronize(stream: Any, what: str) -> None:
    """Wait for ``stream`` (a ``CUstream`` or int handle); a fault of any work
    queued before raises ``CudaError`` naming ``what``."""
    drv = driver()
    check(drv.cuStreamSynchronize(drv.CUstream(stream) if type(stream) is int else stream), what)
