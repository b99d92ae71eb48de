"""Launches compiled kernels on AMD GPUs through hip-python (``pip install
'tilec[amd]'``) and the HIP runtime of a ROCm install.  Not yet run on an
AMD GPU: written against HIP's module API and checked here only as far as
a machine without one can (the kernel-argument buffer, the errors).

A launch on ROCm arrays (torch tensors on a ROCm build of torch, which say
``device.type == "cuda"`` and ``torch.version.hip``; DLPack arrays on
``kDLROCM``), after ``jit.py`` has classified them:

1. ``target``: the device's arch (``gcnArchName``, ``gfx942:sramecc+:xnack-``
   -> ``gfx942``), which picks the variant ``jit.py`` compiles;
2. the first launch of a variant on a device loads its code object
   (``hipModuleLoadData``), finds the kernel (``hipModuleGetFunction``) and
   reads its argument layout from the code object's metadata
   (``kernargs.py``), kept in ``compiled.runtime[device]``;
3. every launch packs the arguments into one buffer at the offsets the code
   object gives and calls ``hipModuleLaunchKernel`` with it
   (``HIP_LAUNCH_PARAM_BUFFER_POINTER``); the HIP runtime fills the hidden
   arguments (the grid's size...).  The stream: ``stream=`` if given (an int
   handle or an object with ``.cuda_stream``, as torch's), else torch's
   current stream when torch has set up the GPU, else the null stream.  The
   workgroup's LDS is static (the code object says it): none is requested at
   launch.
"""
from __future__ import annotations

import ctypes
import functools
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from tilec.environment import sync_enabled
from tilec.errors import TilecError
from tilec.launch.args import KernelArg, launch_values
from tilec.launch.compiler import CompiledKernel
from tilec.backends.amd.kernargs import KernargLayout, kernarg_layout
from tilec.backends.amd.target import ARCHS, DEFAULT_ARCH, arch_facts

INSTALL_HIP = "install tilec's `amd` extra (pip install 'tilec[amd]') and ROCm's HIP runtime (libamdhip64.so)"


class HipUnavailable(TilecError):
    """Kernels cannot run on an AMD GPU here: no hip-python, no HIP runtime, or no device."""


class HipError(TilecError):
    """A HIP call failed."""


@functools.cache
def runtime() -> Any:
    """hip-python's ``hip`` module with the runtime initialized; HipUnavailable saying why not."""
    try:
        from hip import hip

        _check(hip, hip.hipInit(0), "hipInit")
    except ImportError:
        raise HipUnavailable(f"hip-python is not installed: {INSTALL_HIP}") from None
    except (RuntimeError, OSError) as e:  # hip-python's dlopen of libamdhip64.so failed (at the first call)
        raise HipUnavailable(f"no HIP runtime: {e}; {INSTALL_HIP}") from None
    return hip


def _check(hip: Any, result: Any, what: str) -> Any:
    """The values after the error code of hip-python's ``result`` tuple; HipError when the code is not success."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        text = hip.hipGetErrorString(err)
        raise HipError(f"{what} failed: {err} ({_text(text[-1] if isinstance(text, tuple) else text)})")
    return rest[0] if len(rest) == 1 else tuple(rest)


def device_count() -> int:
    hip = runtime()
    return _check(hip, hip.hipGetDeviceCount(), "hipGetDeviceCount")


def check_available() -> None:
    """A HipUnavailable saying why kernels cannot run on an AMD GPU here; nothing when they can."""
    if device_count() == 0:
        raise HipUnavailable("the HIP runtime finds no AMD GPU")


@functools.cache
def available() -> bool:
    try:
        check_available()
    except TilecError:
        return False
    return True


@functools.cache
def _properties(device: int) -> Any:
    hip = runtime()
    props = hip.hipDeviceProp_t()
    _check(hip, hip.hipGetDeviceProperties(props, device), "hipGetDeviceProperties")
    return props


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@functools.cache
def device_arch(device: int) -> str:
    """The arch of AMD device ``device`` (``gcnArchName`` without its feature suffixes)."""
    arch = _text(_properties(device).gcnArchName).split(":")[0]
    if arch not in ARCHS:
        raise TilecError(f"AMD device {device} is {arch}; tilec compiles for {', '.join(ARCHS)}")
    return arch


def device_report() -> list[tuple[str, str]]:
    """``python -m tilec info`` lines: each AMD GPU, or why there is none."""
    try:
        count = device_count()
    except TilecError as e:
        return [("AMD GPUs", str(e))]
    return [(f"AMD GPU {d}", f"{_text(_properties(d).name)} ({_text(_properties(d).gcnArchName)})")
            for d in range(count)] or [("AMD GPUs", "none")]


# --- which device, which variant ----------------------------------------------
def _device_of(args: Sequence[KernelArg], device: Optional[int]) -> int:
    if device is not None:
        return device
    return next((a.device for a in args if a.place is not None and a.device is not None), 0)


def target(args: Sequence[KernelArg], device: Optional[int]) -> str:
    return device_arch(_device_of(args, device))


def default_target(args: Sequence[KernelArg], device: Optional[int]) -> str:
    return target(args, device) if available() else DEFAULT_ARCH


def device_name(args: Sequence[KernelArg], device: Optional[int]) -> str:
    return _text(_properties(_device_of(args, device)).name)


# --- loading and launching --------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Loaded:
    """A variant loaded on one device: its function, argument layout and block."""

    function: Any
    layout: KernargLayout
    positions: tuple[int, ...]  # which bound values the kernel takes, in its parameter order
    block: int
    sync: bool


def load(compiled: CompiledKernel, args: Sequence[KernelArg], device: int) -> Loaded:
    """Load ``compiled``'s code object on ``device`` and read its argument layout."""
    from tilec.backends.amd.elf import read_code_object

    code = compiled.asm.get("hsaco")
    if code is None:
        raise TilecError(f"`{compiled.name}` has no AMD code object: it needs ld.lld at compile time")
    hip = runtime()
    _check(hip, hip.hipSetDevice(device), "hipSetDevice")
    module = _check(hip, hip.hipModuleLoadData(code), f"hipModuleLoadData of `{compiled.name}`")
    function = _check(hip, hip.hipModuleGetFunction(module, compiled.name.encode()), "hipModuleGetFunction")
    meta = read_code_object(code).kernel(compiled.name)
    layout = kernarg_layout([a.type for a in compiled.fn.args], compiled.fn.arg_names, meta)
    names = [name for name, _ in launch_values(args)]
    block = compiled.options.num_warps * arch_facts(device_arch(device)).wave_size
    return Loaded(function, layout, tuple(names.index(n) for n in compiled.fn.arg_names), block, sync_enabled())


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[KernelArg],
           device: Optional[int], stream: Any = None) -> None:
    """Run ``compiled`` over ``grid`` on ``device`` (module docstring)."""
    if 0 in grid:
        return
    device = _device_of(args, device)
    loaded = compiled.runtime.get(device)
    if loaded is None:
        loaded = compiled.runtime[device] = load(compiled, args, device)
    values = [value for _, value in launch_values(args)]
    buffer = loaded.layout.pack([values[i] for i in loaded.positions])
    hip = runtime()
    handle = stream_handle(stream) if stream is not None else current_stream(device)
    data = ctypes.create_string_buffer(buffer, max(1, len(buffer)))
    size = ctypes.c_size_t(len(buffer))
    extra = (ctypes.c_void_p * 5)(hip.HIP_LAUNCH_PARAM_BUFFER_POINTER, ctypes.addressof(data),
                                  hip.HIP_LAUNCH_PARAM_BUFFER_SIZE, ctypes.addressof(size), hip.HIP_LAUNCH_PARAM_END)
    gx, gy, gz = grid
    _check(hip, hip.hipModuleLaunchKernel(loaded.function, gx, gy, gz, loaded.block, 1, 1, 0, handle, None,
                                          ctypes.addressof(extra)), f"launching `{compiled.name}`")
    if loaded.sync:
        _check(hip, hip.hipStreamSynchronize(handle), f"kernel `{compiled.name}` (TILEC_SYNC=1)")


def fast_launch(compiled: CompiledKernel, args: Sequence[KernelArg], device: int) -> None:
    """No fast path yet: every launch takes ``launch``."""
    return None


def current_stream(device: int) -> int:
    """torch's current stream on ``device`` once torch has set up the GPU, else the null stream."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return 0
    return torch.cuda.current_stream(device).cuda_stream


def stream_handle(stream: Any) -> int:
    """The handle of a user's ``stream=``: an int as it is, a torch stream's ``.cuda_stream``."""
    if type(stream) is int:
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if isinstance(handle, int):
        return handle
    raise TypeError(f"stream= takes an int handle or a torch stream, got {type(stream).__name__}")
