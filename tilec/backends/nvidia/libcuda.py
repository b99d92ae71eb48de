"""The launch hot path's own door into the driver: ctypes straight to libcuda.

cuda-python converts and checks every argument of every call (a bare
``cuLaunchKernel`` through it cost about 5 µs on an H100), so the two calls a
launch makes go through ctypes instead, with their argument types set once:

* ``cuLaunchKernelEx(config, function, params, extra)``: four addresses, all
  fixed per loaded kernel.  Everything that changes between launches (grid,
  stream, the kernel's parameters) is written beforehand into one buffer, the
  ``LaunchFrame``, by one ``struct.pack_into``;
* ``cuCtxGetCurrent``: whether the kernel's context is the current one.

Everything else (loading, attributes, errors' names) stays with cuda-python in
``cuda_driver.py``, whose ``driver()`` has run ``cuInit`` before a kernel is
loaded, so these functions only ever run on an initialized driver.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import struct
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from tilec.errors import TilecError
from tilec.backends.nvidia import cuda_driver as cd

# Where the driver library is, by platform: tried in order.
LIBRARY_NAMES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")


class CUlaunchConfig(ctypes.Structure):
    """``CUlaunchConfig`` of cuda.h (CUDA 11.8 and later), for reading a frame back."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p), ("numAttrs", ctypes.c_uint)]


# The config as ``struct`` writes it: grid, block, shared bytes, the stream,
# then zeros for ``attrs`` (NULL), ``numAttrs`` (0) and the padding after it.
CONFIG_FORMAT = "<7I4xQ16x"
assert struct.calcsize(CONFIG_FORMAT) == ctypes.sizeof(CUlaunchConfig) == 56

# A tensor map (CUtensorMap) parameter: 128 bytes passed by value, 64-byte aligned.
TENSOR_MAP = "tmap"
TENSOR_MAP_BYTES, TENSOR_MAP_ALIGN = 128, 64
# struct codes for each scalar kind a kernel parameter can have; every value
# gets its own 8-byte, 8-aligned slot (enough for any of them).
ARG_FORMATS: dict[str, str] = {
    "ptr": "Q", "i1": "?",
    "i8": "b", "i16": "h", "i32": "i", "i64": "q",
    "u8": "B", "u16": "H", "u32": "I", "u64": "Q",
    "f16": "e", "f32": "f", "f64": "d",
    TENSOR_MAP: f"{TENSOR_MAP_BYTES}s",
}
SLOT = 8
PACK_ERRORS = (struct.error, OverflowError, TypeError)


@dataclass(frozen=True)
class Driver:
    """The libcuda functions a launch calls, argument types set."""

    launch_kernel_ex: Callable[[int, int, int, Optional[int]], int]  # (config*, CUfunction, void**, extra)
    ctx_get_current: Callable[[int], int]  # (CUcontext* out)


_driver: list[Driver] = []


def functions() -> Driver:
    """libcuda's launch functions, loaded once (``CudaUnavailable`` without it)."""
    if not _driver:
        library = _load_library()
        _driver.append(Driver(_declare(library, "cuLaunchKernelEx", 4), _declare(library, "cuCtxGetCurrent", 1)))
    return _driver[0]


def _load_library() -> ctypes.CDLL:
    for name in (*LIBRARY_NAMES, ctypes.util.find_library("cuda")):
        if name is None:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise cd.CudaUnavailable(f"no CUDA driver library ({', '.join(LIBRARY_NAMES)}) could be loaded; "
                          "kernels can still run on the host with numpy arrays")


def _declare(library: ctypes.CDLL, name: str, pointers: int) -> Callable:
    """``library.name`` taking ``pointers`` addresses and returning a CUresult."""
    try:
        function = getattr(library, name)
    except AttributeError:
        raise cd.CudaUnavailable(f"the CUDA driver has no {name}: tilec needs a driver of CUDA 11.8 or later") from None
    function.argtypes = [ctypes.c_void_p] * pointers
    function.restype = ctypes.c_int
    return function


# --- the frame a launch is written into -----------------------------------------
def device_pointer(value: Any) -> int:
    """The device address of a pointer argument: an int, a torch tensor, or
    anything with ``__cuda_array_interface__``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr):
        return data_ptr()
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is not None:
        return cai["data"][0]
    raise TilecError(f"expected a device pointer (int, torch tensor or __cuda_array_interface__), "
                     f"got {type(value).__name__}")


class LaunchFrame:
    """The memory ``cuLaunchKernelEx`` reads for one loaded kernel, built once:
    a ``CUlaunchConfig`` (at ``config_address``), one 8-byte slot a parameter
    (128 bytes, 64-byte aligned, for a tensor map), and the ``void**`` array
    of the slots' addresses (``params_address``).

    ``kinds`` lists the parameters' kinds (``"ptr"``, ``"i32"``, ``"f32"``...).
    A launch writes grid, block, shared bytes, stream and parameters with one
    ``pack_into(buffer, 0, *grid, *block, shared, stream, *values)``; reusing
    the frame is safe because the driver copies all of it when it queues the
    launch."""

    def __init__(self, kinds: Sequence[str]):
        unknown = [k for k in kinds if k not in ARG_FORMATS]
        if unknown:
            raise TilecError(f"kernel parameter kind {unknown[0]!r} cannot be passed to a CUDA kernel; "
                             f"known kinds: {', '.join(ARG_FORMATS)}")
        self.kinds = tuple(kinds)
        config = ctypes.sizeof(CUlaunchConfig)
        maps = self.kinds.count(TENSOR_MAP)
        room = config + SLOT * len(self.kinds) + (TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN) * maps
        self.buffer = (ctypes.c_uint64 * (room // SLOT))()  # c_uint64: 8-aligned slots
        self.config_address = ctypes.addressof(self.buffer)
        offsets = _slot_offsets(self.kinds, self.config_address, config)
        self.format = CONFIG_FORMAT + _slots_format(self.kinds, offsets, config)
        self.pack_into = struct.Struct(self.format).pack_into
        n = len(self.kinds)
        self.params = (ctypes.c_void_p * max(n, 1))(*(self.config_address + at for at in offsets))
        self.params_address = ctypes.addressof(self.params) if n else 0  # kernelParams (void**); NULL for none

    def pack(self, grid: Sequence[int], block: Sequence[int], shared: int, stream: int,
             values: Sequence[Any]) -> None:
        """Write one launch into the frame, checking it: the general form of
        what a generated launcher does inline, and what words its errors."""
        if len(values) != len(self.kinds):
            raise TilecError(f"kernel takes {len(self.kinds)} arguments ({', '.join(self.kinds)}), "
                             f"got {len(values)}")
        values = [device_pointer(v) if k == "ptr" and type(v) is not int else v for k, v in zip(self.kinds, values)]
        try:
            self.pack_into(self.buffer, 0, *grid, *block, shared, stream, *values)
        except PACK_ERRORS:
            self._explain(grid, stream, values)
            raise

    def _explain(self, grid: Sequence[int], stream: Any, values: Sequence[Any]) -> None:
        for i, (kind, value) in enumerate(zip(self.kinds, values)):
            try:
                struct.pack("<" + ARG_FORMATS[kind], value)
            except PACK_ERRORS as e:
                raise TilecError(f"argument {i} ({kind}): cannot pass {value!r}: {e}") from None
        try:
            struct.pack("<3IQ", *grid, stream)
        except PACK_ERRORS as e:
            raise TilecError(f"grid {tuple(grid)} or stream {stream!r} cannot be passed to the driver: {e}") from None

    def unpack(self) -> tuple:
        """The parameter values now in the slots (for tests and debugging)."""
        return struct.unpack_from(self.format, self.buffer, 0)[8:]


def _slot_offsets(kinds: Sequence[str], address: int, start: int) -> list[int]:
    """Each parameter's offset in a frame at ``address`` whose slots begin at
    ``start``: 8 bytes each, a tensor map 128 on a 64-byte aligned address."""
    offsets, at = [], start
    for kind in kinds:
        if kind == TENSOR_MAP:
            at += -(address + at) % TENSOR_MAP_ALIGN
        offsets.append(at)
        at += TENSOR_MAP_BYTES if kind == TENSOR_MAP else SLOT
    return offsets


def _slots_format(kinds: Sequence[str], offsets: Sequence[int], start: int) -> str:
    """The ``struct`` format of the slots: each value at its offset, padding between."""
    out, at = [], start
    for kind, offset in zip(kinds, offsets):
        code = ARG_FORMATS[kind]
        out.append(f"{offset - at}x{code}")
        at = offset + struct.calcsize("<" + code)
    return "".join(out)


def read_launch(config_address: int, params_address: int, kinds: Sequence[str]) -> dict[str, Any]:
    """What the driver reads from a launch's two addresses, followed as it
    follows them: grid, block, shared bytes, stream and the parameters'
    values (``kinds`` says how many and how wide).  For fake drivers in tests."""
    config = CUlaunchConfig.from_address(config_address)
    slots = (ctypes.c_void_p * len(kinds)).from_address(params_address) if kinds else ()
    values = [struct.unpack("<" + ARG_FORMATS[k], ctypes.string_at(slot, struct.calcsize("<" + ARG_FORMATS[k])))[0]
              for k, slot in zip(kinds, slots)]
    return dict(grid=(config.gridDimX, config.gridDimY, config.gridDimZ),
                block=(config.blockDimX, config.blockDimY, config.blockDimZ), shared=config.sharedMemBytes,
                stream=config.hStream or 0, attributes=(config.attrs or 0, config.numAttrs), values=values)


# --- launching ------------------------------------------------------------------
def launch(kernel: cd.Kernel, frame: LaunchFrame) -> None:
    """Queue ``kernel`` with what ``frame`` holds (``frame.pack`` wrote it); its
    context must be current.  Generated launchers inline this call."""
    err = functions().launch_kernel_ex(frame.config_address, kernel.address, frame.params_address, None)
    if err:
        raise launch_error(err, kernel, frame)


def launch_error(code: int, kernel: cd.Kernel, frame: LaunchFrame) -> cd.CudaError:
    """The ``CudaError`` of a failed launch, with the grid, block and shared
    bytes as the driver read them from ``frame``."""
    launched = read_launch(frame.config_address, frame.params_address, ())
    return cd.CudaError(code, *cd.describe_code(code),
                     f"kernel `{kernel.name}`: launching grid {launched['grid']} x block {launched['block']} "
                     f"with {launched['shared']} bytes of shared memory")
