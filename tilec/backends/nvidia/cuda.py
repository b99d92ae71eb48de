"""Launches compiled kernels on NVIDIA GPUs (the driver layer is ``cuda_driver.py``,
the launch call itself ``libcuda.py``).

A launch on device arrays, after ``jit.py`` has classified the arguments:

1. the device: the arrays' device index (torch, DLPack and CuPy arrays say; for
   an array with only ``__cuda_array_interface__`` the driver is asked);
2. ``target``: that device's arch, which picks the variant ``jit.py`` compiles;
3. the first launch of a variant on a device ``load``s its cubin (its PTX when
   ptxas was missing at compile time), checks its registers, opts in to its
   dynamic shared memory and generates its launch function (``make_launcher``)
   over a ``libcuda.LaunchFrame``, all kept in a ``Loaded`` in
   ``compiled.runtime[device]``;
4. every launch: grid, stream and the kernel's parameters written into the
   frame by one ``pack_into``, then ``cuLaunchKernelEx`` through ctypes
   (``libcuda.py``).  The stream: ``stream=`` if given, else torch's current
   stream on that device when torch has set up CUDA, else the legacy default
   stream 0.  When another context than the kernel's is current (torch on
   another device), the kernel's is pushed over it for the launch and popped.

A launch is asynchronous: a fault inside the kernel (an illegal address...)
surfaces at a later synchronization, without the kernel's name.  With
``TILEC_SYNC=1`` in the environment (read when a kernel is loaded) every launch
synchronizes its stream and such a fault raises ``CudaError`` naming the kernel.
"""
from __future__ import annotations

import ctypes
import functools
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Optional, Sequence

from tilec.environment import sync_enabled
from tilec.errors import TilecError
from tilec.ir.types import PointerType
from tilec.backends.nvidia.target import ARCH_SPECIFIC, ARCHS, DEFAULT_ARCH, WARP_SIZE
from tilec.backends.nvidia import cuda_driver as cd, libcuda
from tilec.launch.args import KernelArg, launch_values
from tilec.launch.compiler import CompiledKernel
from tilec.backends.nvidia.stages import check_registers

# Errors that stay with the context once a kernel has faulted: every later
# call reports them, so the launch that sees one is usually not the culprit.
STICKY_ERRORS = frozenset({
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_ASSERT",
})
_last_launched: list[str] = [""]  # the kernel name a sticky error most likely belongs to


def check_available() -> None:
    """A ``CudaUnavailable`` saying why kernels cannot run on an NVIDIA GPU here
    (no cuda-python, no driver, no device); nothing when they can."""
    if cd.device_count() == 0:
        raise cd.CudaUnavailable("the CUDA driver finds no device; kernels can still run on the host "
                                 "with numpy arrays")


@functools.cache
def available() -> bool:
    """True when kernels can run on an NVIDIA GPU here (cuda-python, a driver and a device)."""
    try:
        check_available()
    except TilecError:
        return False
    return True


# --- which device, which variant ----------------------------------------------
def target(args: Sequence[KernelArg], device: Optional[int]) -> str:
    """The arch of the device the arrays live on (raises CudaUnavailable without CUDA)."""
    return _device_arch(_resolve_device(args, device))


def default_target(args: Sequence[KernelArg], device: Optional[int]) -> str:
    """``kernel.compile``'s target for CUDA arrays: their device's arch, or
    ``DEFAULT_ARCH`` on a machine with no usable GPU (compiling needs none)."""
    return target(args, device) if available() else DEFAULT_ARCH


def device_name(args: Sequence[KernelArg], device: Optional[int]) -> str:
    """The name of the GPU the arrays live on (``"NVIDIA H100 80GB HBM3"``)."""
    return cd.device_name(_resolve_device(args, device))


@functools.cache
def _device_arch(device: int) -> str:
    """The arch to compile for: the device's own, with its arch-specific
    features (``sm_90`` -> ``sm_90a``: code built for this device alone may
    use wgmma)."""
    arch = cd.compute_capability(device)
    if arch not in ARCHS:
        raise TilecError(f"CUDA device {device} ({cd.device_name(device)}) is {arch}; "
                         f"tilec compiles for {', '.join(ARCHS)}")
    return ARCH_SPECIFIC.get(arch, arch)


def _resolve_device(args: Sequence[KernelArg], device: Optional[int]) -> int:
    """``device``, or the device of the first array's memory when no array said."""
    if device is not None:
        return device
    return cd.pointer_device(next(a.value for a in args if a.place is not None))


# --- loading --------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Loaded:
    """A variant ready to launch on one device: everything a launch needs, computed once.

    ``launch(grid, values, stream)`` runs it over ``grid`` (three ints) on
    ``stream`` (None: torch's current one); ``values`` holds every bound
    argument's launch value in signature order (addresses for arrays), of
    which the kernel takes those at ``positions``, then a tensor map made
    from them by each of ``tensor_maps``.  It is generated for this kernel
    (``make_launcher``): one ``pack_into`` writes grid, stream and parameters
    into ``frame``, one ctypes call queues it."""

    kernel: cd.Kernel
    context: Any
    context_handle: int
    frame: libcuda.LaunchFrame
    positions: tuple[int, ...]
    block: tuple[int, int, int]
    shared: int
    sync: bool
    tensor_maps: tuple["TensorMapSource", ...] = ()
    launch: Callable[[tuple[int, int, int], Sequence, Any], None] = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "launch", make_launcher(self))


def load(compiled: CompiledKernel, args: Sequence[KernelArg], device: int) -> Loaded:
    """Load ``compiled`` on ``device`` (its primary context), check it fits, build its launcher."""
    ctx = cd.retain_primary_context(device)
    pushed = cd.enter_context(ctx, int(ctx))
    try:
        kernel = cd.get_function(_load_module(compiled, device), compiled.name)
        threads = compiled.options.num_warps * WARP_SIZE
        if compiled.metadata.registers is None:  # no ptxas at compile time: ask the driver now
            check_registers(compiled.name, cd.function_attribute(kernel, "NUM_REGS"), threads)
        cd.set_max_dynamic_shared(kernel, compiled.metadata.shared)
    finally:
        if pushed:
            cd.leave_context()
    names = [name for name, _ in launch_values(args)]
    maps = tuple(TensorMapSource.of(compiled, names, *m) for m in compiled.metadata.tensor_maps)
    return Loaded(kernel, ctx, int(ctx), parameter_frame(compiled), tuple(names.index(n) for n in compiled.fn.arg_names),
                  (threads, 1, 1), compiled.metadata.shared, sync_enabled(), maps)


def _load_module(compiled: CompiledKernel, device: int) -> cd.Module:
    cubin = compiled.asm.get("cubin")
    if cubin is not None:
        try:
            return cd.load_image(cubin, device, "cubin")
        except cd.CudaError:
            pass  # a cubin from a newer ptxas than this driver knows: the driver compiles the PTX instead
    return cd.load_ptx(compiled.asm["ptx"], device)


def parameter_frame(compiled: CompiledKernel) -> libcuda.LaunchFrame:
    """The launch frame for the kernel's parameters: ``fn.args`` in order,
    pointers as addresses, then its tensor maps."""
    kinds = ["ptr" if isinstance(a.type, PointerType) else a.type.name for a in compiled.fn.args]
    return libcuda.LaunchFrame(kinds + [libcuda.TENSOR_MAP] * len(compiled.metadata.tensor_maps))


@dataclass(frozen=True, eq=False)
class TensorMapSource:
    """How a launch makes one of the kernel's tensor maps (``tma.py``): from
    the launch values at ``base`` (an address), ``shape`` and ``strides`` (a
    host descriptor's, strides in elements, the last 1 left out), read in
    ``box``es with ``swizzle``.  Encoded once per distinct tensor (the last
    few are kept): the driver's encoding costs more than a launch."""

    base: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    elem_bytes: int
    box: tuple[int, ...]
    swizzle: int
    encoded: dict = field(default_factory=dict)

    KEPT: ClassVar[int] = 16

    @staticmethod
    def of(compiled: CompiledKernel, names: list[str], descriptor: str, box: list, swizzle: int) -> "TensorMapSource":
        """The source of tensor map ``[descriptor, box, swizzle]`` of ``compiled``'s
        metadata, ``names`` the launch values' names."""
        r = len(box)
        base_type = compiled.fn.args[compiled.fn.arg_names.index(descriptor)].type
        return TensorMapSource(names.index(descriptor), tuple(names.index(f"{descriptor}_shape{i}") for i in range(r)),
                               tuple(names.index(f"{descriptor}_stride{i}") for i in range(r - 1)),
                               base_type.elem.bytes, tuple(box), swizzle)

    def __call__(self, values: Sequence) -> bytes:
        key = (values[self.base], *(int(values[i]) for i in self.shape), *(int(values[i]) for i in self.strides))
        got = self.encoded.get(key)
        if got is None:
            if len(self.encoded) >= self.KEPT:
                self.encoded.clear()
            r = len(self.shape)
            got = self.encoded[key] = cd.encode_tensor_map(key[0], self.elem_bytes, key[1:1 + r], key[1 + r:],
                                                           self.box, self.swizzle)
        return got


# --- the generated launcher -----------------------------------------------------
# Every constant of a launch is a literal of the generated code, every lookup
# done when the kernel is loaded; what is left per launch is the stream, one
# ``pack_into`` of grid, stream and parameters, and two ctypes calls.
_LAUNCHER = """
def launch(grid, values, stream):
    if 0 in grid:
        return  # an empty grid launches nothing (the driver would reject it)
    if stream is None:
        stream = current_stream({device})
    elif type(stream) is not int:
        stream = stream_handle(stream)
    gx, gy, gz = grid
    try:
        pack_into(buffer, 0, gx, gy, gz, {block}, {shared}, stream, {values})
    except PACK_ERRORS:
        frame.pack(grid, ({block}), {shared}, stream, [{values}])  # raises, naming the value
        raise
    get_current({current_address})
    if current.value == {context}:
        err = launch_kernel_ex({config_address}, {function}, {params_address}, None)
        if err:
            raise blame_earlier(launch_error(err, kernel, frame))
    else:
        launch_pushed(loaded)
    last_launched[0] = {name!r}
"""
_SYNCHRONIZED = """\
    synchronize(stream, {what!r})
"""


def make_launcher(loaded: Loaded) -> Callable[[tuple[int, int, int], Sequence, Any], None]:
    """``loaded``'s launch function, generated: see ``_LAUNCHER``."""
    lib = libcuda.functions()
    current = ctypes.c_void_p()
    frame = loaded.frame
    source = _LAUNCHER.format(
        device=loaded.kernel.device, block=", ".join(map(str, loaded.block)), shared=loaded.shared,
        values=", ".join([f"values[{i}]" for i in loaded.positions]
                         + [f"tensor_maps[{j}](values)" for j in range(len(loaded.tensor_maps))]),
        current_address=ctypes.addressof(current),
        context=loaded.context_handle, config_address=frame.config_address, function=loaded.kernel.address,
        params_address=frame.params_address, name=loaded.kernel.name)
    if loaded.sync:
        source += _SYNCHRONIZED.format(what=f"kernel `{loaded.kernel.name}`: running it (TILEC_SYNC=1 "
                                             "synchronizes after every launch)")
    namespace = dict(current_stream=current_stream, stream_handle=stream_handle, pack_into=frame.pack_into,
                     buffer=frame.buffer, PACK_ERRORS=libcuda.PACK_ERRORS, frame=frame, current=current,
                     get_current=lib.ctx_get_current, launch_kernel_ex=lib.launch_kernel_ex,
                     blame_earlier=_blame_earlier, launch_error=libcuda.launch_error, kernel=loaded.kernel,
                     launch_pushed=_launch_pushed, loaded=loaded, last_launched=_last_launched,
                     tensor_maps=loaded.tensor_maps,
                     synchronize=cd.synchronize)
    exec(source, namespace)
    return namespace["launch"]


def _launch_pushed(loaded: Loaded) -> None:
    """Launch what ``loaded.frame`` holds with its context pushed over the
    current one (torch working on another device), then pop it: the caller's
    current device stays what it was."""
    pushed = cd.enter_context(loaded.context, loaded.context_handle)
    try:
        libcuda.launch(loaded.kernel, loaded.frame)
    except cd.CudaError as e:
        raise _blame_earlier(e) from None
    finally:
        if pushed:
            cd.leave_context()


# --- streams --------------------------------------------------------------------
_stream_source: list = [None, None]  # [torch module, its current-stream getter] once torch has set up CUDA


def current_stream(device: int) -> int:
    """torch's current stream on ``device`` once torch has set up CUDA (so kernels
    queue behind torch's work), else the legacy default stream 0.  torch never
    undoes its setup, so the getter is found once per torch module."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    if torch is not _stream_source[0]:
        if not torch.cuda.is_initialized():
            return 0
        _stream_source[:] = torch, _stream_getter(torch)
    return _stream_source[1](device)


def _stream_getter(torch: Any) -> Callable[[int], int]:
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # 10x cheaper than current_stream()
    return raw if raw is not None else (lambda device: torch.cuda.current_stream(device).cuda_stream)


def stream_handle(stream: Any) -> int:
    """The handle ``cuLaunchKernelEx`` takes for a user's ``stream=``: an int
    handle as it is, a torch stream's ``.cuda_stream``, a CuPy stream's
    ``.ptr``, an object with ``__cuda_stream__`` (cuda.core), or a cuda-python
    ``CUstream``'s address."""
    if type(stream) is int:
        return stream
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    if hasattr(stream, "__cuda_stream__"):
        return stream.__cuda_stream__()[1]
    if isinstance(stream, cd.driver().CUstream):
        return int(stream)
    raise TypeError(f"stream= takes an int handle, a torch or CuPy stream or a CUstream, "
                    f"got {type(stream).__name__}")


# --- the launch -----------------------------------------------------------------
def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[KernelArg],
           device: Optional[int], stream: Any = None) -> None:
    """Run ``compiled`` over ``grid`` on ``device`` (None: ask the driver where the arrays live)."""
    if 0 in grid:
        return  # nothing to run: not even a reason to load the kernel
    values = [value for _, value in launch_values(args)]
    loaded_on(compiled, args, _resolve_device(args, device)).launch(grid, values, stream)


def fast_launch(compiled: CompiledKernel, args: Sequence[KernelArg], device: int) -> Callable[..., None]:
    """What ``jit.py``'s fast path calls for later launches of ``compiled`` with
    arguments like ``args`` on ``device``: ``Loaded.launch``, every decision taken."""
    return loaded_on(compiled, args, device).launch


def loaded_on(compiled: CompiledKernel, args: Sequence[KernelArg], device: int) -> Loaded:
    """``compiled`` loaded on ``device``: on its first launch there, then from ``compiled.runtime``."""
    loaded = compiled.runtime.get(device)
    if loaded is None:
        loaded = compiled.runtime[device] = load(compiled, args, device)
    return loaded


def _blame_earlier(error: cd.CudaError) -> cd.CudaError:
    """A launch's ``error``, pointing at the previous launch when it is a sticky fault that one left behind."""
    if error.name not in STICKY_ERRORS or not _last_launched[0]:
        return error
    return cd.CudaError(error.code, error.name, error.description,
                        f"{error.what} (a sticky error: it most likely comes from an earlier kernel, "
                        f"such as `{_last_launched[0]}`, the last one tilec launched; rerun with "
                        "TILEC_SYNC=1 to check every launch)")
