"""Run the host test suite's kernels on a CUDA device (``TILEC_TEST_DEVICE=cuda``;
under a ROCm build of torch, which calls its AMD GPU ``"cuda"`` too, on that GPU).

With the variable set, ``conftest.py`` installs ``mirror_launches``: every
``kernel[grid](...)`` a test makes with numpy arrays runs first on the host
interpreter (on copies: a kernel the interpreter rejects -- an out-of-bounds
access a test expects, say -- raises as before and never reaches the GPU),
then on the GPU with the arrays' bytes mirrored into device memory, and the
GPU's bytes are copied back into the test's arrays.  The test's own numpy
assertions then judge the GPU's results: the same hypothesis-drawn inputs,
the same checks, another machine.  On an AMD GPU, a kernel the AMD backend
refuses on purpose (a ``CompilationError``: ``device_print``, inline
assembly, a math function no AMD library has; ``OutOfResources``: more LDS
than a workgroup has; docs/amd.md) skips its test, naming why: the host ran
it, that GPU cannot.  On NVIDIA such an error fails the test.

A mirrored argument is a one-element torch tensor at the address that
corresponds to the array's data pointer inside a device copy of the array's
whole byte span (strided and negative-stride views keep working: a kernel
only ever sees the address), placed at the same address modulo 256 so
alignment specialization sees what the host saw.
"""
from __future__ import annotations

import copy
import ctypes
import dataclasses
import sys
import weakref
from typing import Any

import numpy as np
import pytest

from tilec.errors import CompilationError, OutOfResources
from tilec.tools.tensor_descriptor import TensorDescriptor

ALIGN = 256

#: Off while a test marked ``host_only`` runs: its launches stay on the host.
ENABLED = True


def byte_span(a: np.ndarray) -> tuple[int, int]:
    """[lo, hi): the bytes an array's elements occupy."""
    ptr = a.__array_interface__["data"][0]
    if a.size == 0:
        return ptr, ptr
    lo = hi = ptr
    for n, s in zip(a.shape, a.strides):
        reach = (n - 1) * s
        lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    return lo, hi + a.itemsize


class Mirror:
    """A device copy of one host array's byte span."""

    def __init__(self, a: np.ndarray, dtype):
        import torch

        self.host, self.dtype = a, dtype
        self.lo, hi = byte_span(a)
        n = hi - self.lo
        self.shift = self.lo % ALIGN
        self.device = torch.empty(n + 2 * ALIGN, dtype=torch.uint8, device="cuda")
        self.start = (-self.device.data_ptr()) % ALIGN + self.shift
        self.view = self.device[self.start:self.start + n]
        self.view.copy_(torch.from_numpy(self._host_bytes().copy()))

    def _host_bytes(self) -> np.ndarray:
        n = self.view.numel()
        return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(self.lo)) if n else np.empty(0, np.uint8)

    def argument(self):
        """A one-element tensor of the array's dtype at the device twin of its data pointer."""
        at = self.start + self.host.__array_interface__["data"][0] - self.lo
        return self.device[at:at + self.host.itemsize].view(self.dtype)

    def copy_back(self) -> None:
        self._host_bytes()[:] = self.view.cpu().numpy()


def _torch_dtype(dtype: np.dtype):
    import torch

    name = "bfloat16" if dtype.name == "bfloat16" else dtype.name
    return {"bool": torch.bool}.get(name) or getattr(torch, name)


def _host_array(value: Any):
    """(numpy view of the memory, torch dtype) of a host array argument, or None."""
    if isinstance(value, np.ndarray):
        return value, _torch_dtype(value.dtype)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor) and value.device.type == "cpu":
        bits = value.view(torch.int16) if value.dtype == torch.bfloat16 else value
        if value.is_floating_point() and value.element_size() == 1:  # fp8: numpy has no such dtype
            bits = value.view(torch.uint8)
        return bits.detach().numpy(), value.dtype
    return None


def _through_tuples(value: Any, fn) -> Any:
    """``fn`` applied to ``value``, to each element of a tuple argument (nested; a named
    tuple keeps its class), or to a host tensor descriptor's base: they hold arrays too."""
    if isinstance(value, TensorDescriptor):
        return dataclasses.replace(value, base=fn(value.base))
    if not isinstance(value, tuple):
        return fn(value)
    items = [_through_tuples(v, fn) for v in value]
    return type(value)(*items) if hasattr(type(value), "_fields") else tuple(items)


def _mirror(value: Any, mirrors: list) -> Any:
    if isinstance(value, tuple):
        return _through_tuples(value, lambda v: _mirror(v, mirrors))
    host = _host_array(value)
    if host is None:
        return value
    m = Mirror(*host)
    mirrors.append(m)
    return m.argument()


def mirror_launches(jit_function_class) -> None:
    """Make ``JITFunction.run`` run host launches on the interpreter, then the GPU."""
    host_run = jit_function_class.run

    def run(self, *args, grid, **kwargs):
        arrays = [v for v in list(args) + list(kwargs.values()) if _host_array(v) is not None]
        if not arrays or not ENABLED:
            return host_run(self, *args, grid=grid, **kwargs)
        _interpret_on_copies(host_run, self, args, kwargs, grid)
        mirrors: list[Mirror] = []
        dev_args = [_mirror(a, mirrors) for a in args]
        dev_kwargs = {k: _mirror(v, mirrors) for k, v in kwargs.items()}
        try:
            host_run(self, *dev_args, grid=grid, **dev_kwargs)
        except (CompilationError, OutOfResources) as e:
            skip_if_amd_refuses(e)
            raise
        sys.modules["torch"].cuda.synchronize()
        for m in mirrors:
            m.copy_back()

    jit_function_class.run = run


def skip_if_amd_refuses(error: Exception) -> None:
    """Skip the running test when ``error`` is the AMD backend refusing its
    kernel on purpose (module docstring); return otherwise."""
    if sys.modules["torch"].version.hip:
        pytest.skip(f"the AMD backend refuses this kernel: {str(error).splitlines()[0]}")


def _interpret_on_copies(host_run, kernel, args, kwargs, grid) -> Any:
    """Run on the interpreter with every array copied (errors raise as on the host);
    the variant that ran."""
    return host_run(kernel, *[_through_tuples(a, _copy) for a in args], grid=grid,
             **{k: _through_tuples(v, _copy) for k, v in kwargs.items()})


def _copy(v: Any) -> Any:
    """An array over a copy of ``v``'s byte span, with ``v``'s shape and strides, at the
    same address modulo ``ALIGN`` (alignment specialization sees what it saw)."""
    if not isinstance(v, np.ndarray):
        host = _host_array(v)
        if host is None:
            return v
        return sys.modules["torch"].from_numpy(_copy(host[0])).view(host[1])  # a CPU tensor
    if v.size == 0:
        return v.copy()
    lo, hi = byte_span(v)
    raw = np.empty(hi - lo + ALIGN, np.uint8)
    start = (lo - raw.ctypes.data) % ALIGN
    raw[start:start + hi - lo] = np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))
    offset = start + v.__array_interface__["data"][0] - lo
    return np.ndarray(v.shape, v.dtype, buffer=raw, offset=offset, strides=v.strides)


def mirror_launches_on_cpu(jit_function_class) -> None:
    """Make ``JITFunction.run`` run host launches on the interpreter (on copies:
    its errors raise as before), then compiled for the ``cpu`` target on the
    test's own arrays, whose results the test then judges
    (``TILEC_TEST_DEVICE=cpu``: the compiled host backend checked by the whole suite)."""
    from tilec.launch.grid import normalize_grid
    from tilec.targets.registry import backend

    host_run = jit_function_class.run

    def run(self, *args, grid, warmup=False, **kwargs):
        if not any(map(_holds_array, list(args) + list(kwargs.values()))) or not ENABLED or warmup:
            return host_run(self, *args, grid=grid, warmup=warmup, **kwargs)
        if not self.cache:  # never compiled, or cleared (to take new globals): so is the twin
            _TWINS.pop(self, None)
        interpreted = _interpret_on_copies(host_run, self, args, kwargs, grid)
        twin = _cpu_twin(self)
        plan, host = twin.plan(args, kwargs), backend("host").launcher()
        compiled = twin.compile(*args, target=host.target(plan.args, None), **kwargs)  # cpu, or cpu-streaming
        host.launch(compiled, normalize_grid(grid, plan.bound, self.__name__), plan.args)
        return interpreted  # the variant a plain run returns, which tests inspect

    jit_function_class.run = run


#: Each kernel's twin, which holds its ``cpu`` variants.
_TWINS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _cpu_twin(kernel):
    """``kernel`` with a variant cache of its own: the mirror's ``cpu`` variants stay
    out of ``kernel.cache``, whose variants (the interpreter's) tests count."""
    from tilec.launch.jit import VariantCache

    twin = _TWINS.get(kernel)
    if twin is None:
        twin = _TWINS[kernel] = copy.copy(kernel)
        twin.cache = VariantCache()
        twin._launches = twin.cache.launches
    return twin


def _holds_array(value: Any) -> bool:
    """Whether ``value`` is a numpy array, or a tuple or tensor descriptor holding one."""
    if isinstance(value, tuple):
        return any(map(_holds_array, value))
    if isinstance(value, TensorDescriptor):
        return _holds_array(value.base)
    return isinstance(value, np.ndarray)
