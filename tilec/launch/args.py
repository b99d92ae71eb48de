"""What each kernel argument is: its IR type, what specialization promises about
it, the value the launcher passes, and where its memory lives.

``classify_arg`` turns one bound argument into a ``KernelArg``:

* a ``tl.constexpr`` parameter keeps its plain Python value (``type`` None);
* ``bool`` -> ``i1``; ``int`` -> ``i32`` if it fits, else ``i64`` (``u64`` from
  2**63 up); ``float`` -> ``f32`` (Triton's rule; a finite value beyond f32's range
  is an error, not inf); numpy scalars by their dtype;
* ``None`` becomes a constexpr None, whatever the parameter (Triton's rule:
  an optional pointer left out makes its own variant);
* an ``int`` equal to 1 becomes a constexpr (as in Triton: code like
  ``offs * stride`` then folds away for contiguous inputs); an integer
  divisible by 16 carries ``("divisibility", 16)``;
* arrays become pointers to their element type: numpy arrays and CPU torch
  tensors live on the ``"host"``; torch CUDA tensors and objects exposing
  ``__cuda_array_interface__`` or a CUDA/ROCm ``__dlpack_device__`` live on a
  device (``device`` is its index when the array says; an array with only
  ``__cuda_array_interface__`` does not, and the launcher asks the driver).
  A DLPack array's address and dtype are read from its capsule (``dlpack.py``).
  A pointer whose address is 16-byte aligned carries
  ``("divisibility", 16)``.  bf16 host memory is passed as an ``int16`` view
  of the same bytes (numpy has no bf16), fp8 host memory as a ``uint8``
  view (torch's ``float8_e4m3fn``, ``float8_e5m2``, ``float8_e4m3fnuz`` and
  ``float8_e5m2fnuz`` are Triton's ``float8e4nv``, ``float8e5``,
  ``float8e4b8`` and ``float8e5b16``); the IR type says what they hold.  A
  numpy ``uint8`` array stays ``uint8``.  ``reinterpret(x, dtype)``'s
  wrapper is ``x`` with its element type replaced by ``dtype``'s (same width).
* a host tensor descriptor (``tilec.tools.tensor_descriptor.TensorDescriptor``)
  is one argument of type ``ir.kernel_params.DescriptorParam`` (its block shape
  and padding select the variant) whose value is the tuple of what the kernel's
  IR arguments for it take: the base's launch value, the shape (int32) and
  the strides but the last (int64); ``launch_values`` spreads it out.

``SPECS`` is the launch fast path's cheap twin of ``classify_arg``: per exact
type, a function from a value to its ``dispatch_key`` and the value a launch
passes, without building a ``KernelArg``.  A spec may only return the key
``classify_arg`` gives the value (``tests/launch/test_fast_path.py`` checks each
against it); what it cannot decide cheaply -- an unknown type, a host array
of a dtype numpy lacks, a CUDA array that does not say its device, a float
past f32's range, an int past 64 bits -- raises ``NotFast``
and the general path takes that launch, with its checks and error messages.
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Optional, Sequence

import numpy as np

from tilec.errors import ArgumentOverflowError
from tilec.ir.kernel_params import DescriptorParam, ir_arguments
from tilec.ir.types import (PointerType, ScalarType, Type, bf16, f8e4b8, f8e4nv, f8e5, f8e5b16, f16, f32, f64, i1, i8, i16,
                             i32, i64, u8, u16, u32, u64)
from tilec.launch.dlpack import dlpack_address_and_dtype
from tilec.launch.reinterpret import TensorWrapper
from tilec.tools.tensor_descriptor import TensorDescriptor

DIVISIBLE_16 = (("divisibility", 16),)

# numpy (and torch, ml_dtypes) dtype names -> IR element types.
ELEM_TYPES = {
    "bool": i1, "int8": i8, "int16": i16, "int32": i32, "int64": i64,
    "uint8": u8, "uint16": u16, "uint32": u32, "uint64": u64,
    "float16": f16, "bfloat16": bf16, "float32": f32, "float64": f64,
    "float8_e4m3fn": f8e4nv, "float8_e5m2": f8e5, "float8_e4m3fnuz": f8e4b8, "float8_e5m2fnuz": f8e5b16,
}
# The numpy dtype holding the bytes of an element type numpy lacks (bf16, fp8).
_HOST_VIEWS = {bf16: np.int16, f8e4nv: np.uint8, f8e5: np.uint8, f8e4b8: np.uint8, f8e5b16: np.uint8}
_NUMPY_SCALAR = {t: np.dtype(n).type for n, t in ELEM_TYPES.items() if t not in _HOST_VIEWS}

# DLPack device types (dlpack.h): where a ``__dlpack_device__`` array lives.
_DLPACK_PLACES = {1: "host", 2: "cuda", 10: "rocm"}


@dataclass(eq=False, slots=True)  # not frozen: a frozen init costs a µs, and there is one per argument per launch
class KernelArg:
    """One bound argument, classified.

    ``type`` is the IR type (``None`` for a constexpr); ``value`` the
    constexpr's value or what the launcher passes (a host numpy array, a
    device address, a typed numpy scalar); ``place`` where an array's memory
    lives (``None`` for scalars and constexprs) and ``device`` the index of
    the device there (``None`` on the host or when the array does not say).
    """

    name: str
    type: Optional[Type]
    value: Any
    attrs: tuple = ()
    place: Optional[str] = None
    device: Optional[int] = None

    @property
    def is_constexpr(self) -> bool:
        return self.type is None

    @property
    def key(self) -> tuple:
        """What the compiled variant depends on (``type(value)`` keeps 1, 1.0 and True apart)."""
        if self.is_constexpr:
            return (None, type(self.value), self.value)
        return (self.type, self.attrs)

    @property
    def dispatch_key(self) -> Hashable:
        """What a launch on the fast path is found by: ``key`` (the variant)
        and, for an array, where it lives (the kernel loaded there).  A
        constexpr's is its ``key``; any other's one str (``dispatch_text``): the
        fast path's specs hand out strs made once, whose hash Python keeps, so
        hashing a launch's keys costs no walk through nested tuples."""
        if self.is_constexpr:
            return self.key
        return dispatch_text(str(self.type), self.attrs, self.place, self.device)


def dispatch_text(type_name: str, attrs: tuple, place: Optional[str] = None, device: Optional[int] = None) -> str:
    """A non-constexpr argument's dispatch key: ``"*fp32 divisibility=16 @cuda:0"``."""
    text = " ".join([type_name, *(f"{name}={value}" for name, value in attrs)])
    return text if place is None else f"{text} @{place}:{device}"


def classify_arg(name: str, value: Any, constexpr: bool, kernel: str) -> KernelArg:
    """``value`` bound to parameter ``name`` of ``kernel``, classified (see the module doc)."""
    where = f"argument `{name}` of kernel `{kernel}`"
    if constexpr:
        return _constexpr_arg(name, value, where)
    make = _MAKER_OF_TYPE.get(type(value))
    if make is not None:
        return make(name, value, where)
    for accepts, make in _CLASSIFIERS:
        if accepts(value):
            return make(name, value, where)
    raise TypeError(f"{where}: expected an array or a scalar, got {type(value).__name__}")


def without_specialization(a: KernelArg, keep_one: bool) -> KernelArg:
    """``a`` without what specialization promised about its value: being
    divisible by 16 (an int's value, a pointer's alignment) and, unless
    ``keep_one``, an int being 1 (it stays an ``i32``).  ``@jit``'s
    ``do_not_specialize`` options ask for this (``params.py``)."""
    if a.is_constexpr and not keep_one and type(a.value) is int and a.value == 1 and a.place is None:
        return KernelArg(a.name, i32, np.int32(1))
    if a.attrs:
        return KernelArg(a.name, a.type, a.value, (), a.place, a.device)
    return a


def launch_values(args: Sequence[KernelArg]) -> list[tuple[str, Any]]:
    """(IR argument name, launch value) of each argument of the kernel's IR that
    ``args`` fill, in order: a tensor descriptor fills several, any other one."""
    out = []
    for a in args:
        if isinstance(a.type, DescriptorParam):
            out.extend(zip((n for n, _ in ir_arguments(a.name, a.type)), a.value))
        else:
            out.append((a.name, a.value))
    return out


def host_array(a: KernelArg) -> Optional[np.ndarray]:
    """The numpy array argument ``a`` passes to a host launch (a host tensor
    descriptor's base among them), or None."""
    value = a.value[0] if isinstance(a.type, DescriptorParam) else a.value
    return value if isinstance(value, np.ndarray) else None


def is_array(value: Any) -> bool:
    """True for anything ``classify_arg`` would pass as a pointer."""
    return any(accepts(value) for accepts, make in _CLASSIFIERS if make in _ARRAY_MAKERS)


# --------------------------------------------------------------------------- #
# constexprs and scalars
# --------------------------------------------------------------------------- #

_PLAIN_CONSTEXPR = frozenset({int, float, bool, str, type(None)})


def _constexpr_arg(name: str, value: Any, where: str) -> KernelArg:
    if type(value) in _PLAIN_CONSTEXPR:  # the usual case, with nothing to check (this runs every launch)
        return KernelArg(name, None, value)
    if is_array(value):
        raise TypeError(f"{where} is a tl.constexpr: pass a plain Python value, got {type(value).__name__}")
    if isinstance(value, np.generic):
        value = value.item()
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{where} is a tl.constexpr: its value must be hashable "
                        f"(a tuple, not a {type(value).__name__})") from None
    return KernelArg(name, None, value)


def _none_arg(name: str, value: None, where: str) -> KernelArg:
    """None for any parameter is a constexpr None (Triton's rule): the variant
    for it folds ``if ptr is not None:`` away at compile time."""
    return KernelArg(name, None, None)


def _bool_arg(name: str, value: Any, where: str) -> KernelArg:
    return KernelArg(name, i1, np.bool_(value))


def _int_arg(name: str, value: int, where: str) -> KernelArg:
    if value == 1:
        return KernelArg(name, None, 1)
    t = _int_type(value, where)
    return KernelArg(name, t, _NUMPY_SCALAR[t](value), _divisibility(value))


def _int_type(value: int, where: str) -> ScalarType:
    if -2**31 <= value < 2**31:
        return i32
    if -2**63 <= value < 2**63:
        return i64
    if 2**63 <= value < 2**64:
        return u64
    raise ArgumentOverflowError(f"{where}: integer {value} does not fit in 64 bits (int64 or uint64)")


def _float_arg(name: str, value: float, where: str) -> KernelArg:
    with np.errstate(over="ignore"):
        single = np.float32(value)
    if np.isinf(single) and not np.isinf(value):  # Triton would pass inf silently; say so instead
        raise ValueError(f"{where}: {value} overflows float32, the type of Python floats; "
                         "pass np.float64(...) for a double")
    return KernelArg(name, f32, single)


def _numpy_scalar_arg(name: str, value: np.generic, where: str) -> KernelArg:
    t = _elem_type_of(value.dtype, _dtype_name, where)
    attrs = _divisibility(int(value)) if t.is_int and not t.is_bool else ()
    return KernelArg(name, t, value, attrs)


def _divisibility(n: int) -> tuple:
    return DIVISIBLE_16 if n % 16 == 0 else ()


_ELEM_OF_DTYPE: dict[Any, ScalarType] = {}


def _elem_type_of(dtype: Any, name_of: Callable[[Any], str], where: str) -> ScalarType:
    """``_elem_type(name_of(dtype))``, remembered per dtype object (a numpy or
    torch dtype, a typestr): naming a dtype costs microseconds, every launch."""
    t = _ELEM_OF_DTYPE.get(dtype)
    if t is None:
        t = _ELEM_OF_DTYPE[dtype] = _elem_type(name_of(dtype), where)
    return t


def _dtype_name(dtype: Any) -> str:
    """numpy's name for a numpy dtype or typestr, torch's without ``torch.``."""
    return str(dtype).removeprefix("torch.") if type(dtype).__module__ == "torch" else np.dtype(dtype).name


def _elem_type(dtype_name: str, where: str) -> ScalarType:
    t = ELEM_TYPES.get(dtype_name)
    if t is None:
        raise TypeError(f"{where}: {dtype_name} is not supported (supported: {', '.join(ELEM_TYPES)})")
    return t


# --------------------------------------------------------------------------- #
# arrays
# --------------------------------------------------------------------------- #

def _numpy_arg(name: str, a: np.ndarray, where: str) -> KernelArg:
    t = _elem_type_of(a.dtype, _dtype_name, where)
    memory = a.view(_HOST_VIEWS[t]) if t in _HOST_VIEWS else a  # ml_dtypes: same bytes, a dtype numpy knows
    return _pointer_arg(name, t, memory, a.__array_interface__["data"][0], "host")



def _pointer_arg(name: str, elem: ScalarType, value: Any, address: int, place: str,
                 device: Optional[int] = None) -> KernelArg:
    return KernelArg(name, _pointer_to(elem), value, _divisibility(address), place, device)


@functools.cache
def _pointer_to(elem: ScalarType) -> PointerType:
    return PointerType(elem)


def _is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")  # only a program that imported torch can pass a tensor
    return torch is not None and isinstance(value, torch.Tensor)


def _torch_arg(name: str, t: Any, where: str) -> KernelArg:
    elem = _elem_type_of(t.dtype, _dtype_name, where)
    if t.device.type != "cpu":
        address = t.data_ptr()
        return _pointer_arg(name, elem, address, address, _torch_place(t), t.device.index)
    t = t.detach()
    view = _HOST_VIEWS.get(elem)
    host = (t.view(getattr(sys.modules["torch"], np.dtype(view).name)) if view else t).numpy()  # shares t's memory
    return _pointer_arg(name, elem, host, t.data_ptr(), "host")


def _torch_place(t: Any) -> str:
    """Where a torch tensor off the CPU lives: ROCm builds of torch call their
    GPUs ``"cuda"`` too, and ``torch.version.hip`` tells them apart."""
    return "rocm" if t.device.type == "cuda" and rocm_torch() else t.device.type


def rocm_torch() -> bool:
    """Whether the torch this process imported is a ROCm build (``torch.version.hip`` set)."""
    return bool(getattr(getattr(sys.modules.get("torch"), "version", None), "hip", None))


def _cuda_array_arg(name: str, value: Any, where: str) -> KernelArg:
    iface = value.__cuda_array_interface__
    elem = _elem_type_of(iface["typestr"], _dtype_name, where)
    address = iface["data"][0]
    return _pointer_arg(name, elem, address, address, "cuda", _dlpack_device_index(value))


def _dlpack_device_index(value: Any) -> Optional[int]:
    """The device index an array with ``__dlpack_device__`` reports (CuPy, torch), else None."""
    return int(value.__dlpack_device__()[1]) if hasattr(value, "__dlpack_device__") else None


def _dlpack_arg(name: str, value: Any, where: str) -> KernelArg:
    device_type, device_index = value.__dlpack_device__()
    place = _DLPACK_PLACES.get(int(device_type))
    if place is None:
        raise TypeError(f"{where}: arrays on DLPack device type {device_type} are not supported")
    if place == "host":
        return _numpy_arg(name, np.from_dlpack(value), where)
    address, dtype = dlpack_address_and_dtype(value)
    return _pointer_arg(name, _elem_type(dtype or "an unknown DLPack dtype", where), address, address,
                        place, int(device_index))


def _wrapper_arg(name: str, w: TensorWrapper, where: str) -> KernelArg:
    """``reinterpret``'s wrapper: its base's pointer to ``w.dtype``'s elements."""
    from tilec.frontend.semantic import TypingError, to_ir_type  # what dtype means to the front end
    make = _array_maker(w.base)
    if make is None:
        raise TypeError(f"{where}: reinterpret wraps an array, not {type(w.base).__name__}")
    arg = make(name, w.base, where)
    try:
        elem = to_ir_type(w.dtype)
    except TypingError as e:
        raise TypeError(f"{where}: {e}") from None
    if not isinstance(elem, ScalarType) or elem.bytes != arg.type.elem.bytes or elem.is_bool:
        raise TypeError(f"{where}: cannot reinterpret {arg.type.elem} data as {w.dtype!r}: "
                        "the element widths must match")
    return KernelArg(name, _pointer_to(elem), arg.value, arg.attrs, arg.place, arg.device)


_ARRAY_MAKERS = (_numpy_arg, _torch_arg, _cuda_array_arg, _dlpack_arg, _wrapper_arg)


def _descriptor_arg(name: str, d: TensorDescriptor, where: str) -> KernelArg:
    """A host tensor descriptor: its base as an array, its shape and leading strides as
    the scalars the kernel's IR arguments for it take (see the module doc)."""
    make = _array_maker(d.base)
    if make is None:
        raise TypeError(f"{where}: the base of a TensorDescriptor must be an array, got {type(d.base).__name__}")
    base = make(name, d.base, where)
    if not all(0 <= n < 2**31 for n in d.shape):
        raise ValueError(f"{where}: a TensorDescriptor's shape must fit in int32, got {d.shape}")
    elem_bytes = base.type.elem.bytes
    bulk = all(n > 0 for n in d.shape) and all(0 < s * elem_bytes < 2**40 for s in d.strides[:-1])
    param = DescriptorParam(base.type, tuple(d.block_shape), d.padding, bulk)
    value = (base.value, *(np.int32(n) for n in d.shape), *(np.int64(s) for s in d.strides[:-1]))
    return KernelArg(name, param, value, base.attrs, base.place, base.device)


def _array_maker(value: Any) -> Optional[Callable[[str, Any, str], KernelArg]]:
    """The classifier of ``value`` when it is an array of a kind tilec takes (the base a
    ``reinterpret`` wrapper or a tensor descriptor holds), else None."""
    return next((make for accepts, make in _CLASSIFIERS if make in _ARRAY_MAKERS and accepts(value)), None)


# Exact types that decide their classification alone (duck-typed arrays never
# do: one JAX type holds host and device arrays); everything else goes down
# _CLASSIFIERS.
_MAKER_OF_TYPE: dict[type, Callable[[str, Any, str], KernelArg]] = {
    type(None): _none_arg, bool: _bool_arg, int: _int_arg, float: _float_arg, np.ndarray: _numpy_arg,
    TensorDescriptor: _descriptor_arg,
}

# First match wins: numpy scalars before Python ones (np.float64 is a float),
# bool before int (bool is an int).
_CLASSIFIERS: list[tuple[Callable[[Any], bool], Callable[[str, Any, str], KernelArg]]] = [
    (lambda v: v is None, _none_arg),
    (lambda v: isinstance(v, np.generic), _numpy_scalar_arg),
    (lambda v: isinstance(v, bool), _bool_arg),
    (lambda v: isinstance(v, int), _int_arg),
    (lambda v: isinstance(v, float), _float_arg),
    (lambda v: isinstance(v, np.ndarray), _numpy_arg),
    (lambda v: isinstance(v, TensorWrapper), _wrapper_arg),
    (_is_torch_tensor, _torch_arg),
    (lambda v: hasattr(v, "__cuda_array_interface__"), _cuda_array_arg),
    (lambda v: hasattr(v, "__dlpack_device__"), _dlpack_arg),
]


# --------------------------------------------------------------------------- #
# the fast path's specs: value -> (dispatch key, launch value)
# --------------------------------------------------------------------------- #

class NotFast(Exception):
    """A value the launch fast path leaves to the general one."""


Spec = Callable[[Any], tuple[Hashable, Any]]


# A dispatch key with ``divisibility=16`` -> the key of the same type and place without it.
_UNDIVIDED: dict[str, str] = {}


def _key_pair(type_name: str, place: Optional[str] = None, device: Optional[int] = None) -> tuple[str, str]:
    """The dispatch keys of a type (at a place) without and with
    ``{divisibility: 16}``: index them with ``n % 16 == 0``."""
    pair = dispatch_text(type_name, (), place, device), dispatch_text(type_name, DIVISIBLE_16, place, device)
    _UNDIVIDED[pair[1]] = pair[0]
    return pair


def _scalar_keys(t: ScalarType) -> tuple[str, str]:
    return _key_pair(str(t))


_ONE_KEY = (None, int, 1)  # an int equal to 1 is a constexpr
_NONE_KEY = (None, type(None), None)  # so is None
_I32_KEYS, _BOOL_KEY, _F32_KEY = _scalar_keys(i32), _scalar_keys(i1)[0], _scalar_keys(f32)[0]
_F32_MAX = float(np.finfo(np.float32).max)


def _int_spec(v: int) -> tuple[Hashable, Any]:
    if v == 1:
        return _ONE_KEY, v
    if -2**31 <= v < 2**31:  # the usual case, without a call
        return _I32_KEYS[v % 16 == 0], v
    if not -2**63 <= v < 2**64:
        raise NotFast  # the general path says it does not fit
    return _scalar_keys(_int_type(v, ""))[v % 16 == 0], v


def _none_spec(v: None) -> tuple[Hashable, Any]:
    return _NONE_KEY, v


def _bool_spec(v: bool) -> tuple[Hashable, Any]:
    return _BOOL_KEY, v


def _float_spec(v: float) -> tuple[Hashable, Any]:
    if -_F32_MAX <= v <= _F32_MAX:  # False for inf and NaN too: the general path handles them
        return _F32_KEY, v
    raise NotFast


def _numpy_scalar_spec(t: ScalarType) -> Spec:
    """The spec of numpy's scalar type for ``t``: integers carry their divisibility, as in ``_numpy_scalar_arg``."""
    keys = _scalar_keys(t)
    if t.is_int and not t.is_bool:
        return lambda v: (keys[int(v) % 16 == 0], v)
    return lambda v: (keys[0], v)


_ARRAY_KEYS: dict[tuple, tuple[str, str]] = {}


def _array_keys(dtype: Any, device: int) -> tuple[str, str]:
    """The dispatch keys of an array of ``dtype`` (a torch dtype or a typestr)
    on CUDA device ``device``, unaligned and 16-byte aligned, made once; an
    unsupported dtype raises TypeError, which leaves the launch to the general
    path to word."""
    keys = _ARRAY_KEYS.get((dtype, device))
    if keys is None:
        name = str(_pointer_to(_elem_type_of(dtype, _dtype_name, "")))
        keys = _ARRAY_KEYS[dtype, device] = _key_pair(name, "cuda", device)
    return keys


def _torch_spec(t: Any) -> tuple[Hashable, Any]:
    """A CUDA tensor: its address and the key ``_torch_arg`` gives it, read
    without ``t.device`` (which builds an object on every call); a CPU
    tensor: ``_cpu_tensor_spec``."""
    if not t.is_cuda:
        return _cpu_tensor_spec(t)
    if rocm_torch():
        raise NotFast  # a ROCm tensor runs on AMD GPUs: through the general path
    address, dtype, device = t.data_ptr(), t.dtype, t.get_device()
    keys = _ARRAY_KEYS.get((dtype, device))  # _array_keys's lookup without its call: often four tensors a launch
    if keys is None:
        keys = _array_keys(dtype, device)
    return keys[address % 16 == 0], address


def _cuda_array_spec(v: Any) -> tuple[Hashable, Any]:
    """An array with ``__cuda_array_interface__`` and ``__dlpack_device__``
    (CuPy): its address and the key ``_cuda_array_arg`` gives it.  One that
    does not say its device (numba) is left to the general path, which asks
    the driver, and so is an instance without the interface (a host array of
    a type that holds both)."""
    try:
        iface, device = v.__cuda_array_interface__, v.__dlpack_device__
    except AttributeError:
        raise NotFast from None
    address = iface["data"][0]
    return _array_keys(iface["typestr"], int(device()[1]))[address % 16 == 0], address


def _cpu_tensor_spec(t: Any) -> tuple[Hashable, Any]:
    """A CPU tensor: the numpy array over its memory that ``_torch_arg``
    passes, and the key it gives it.  A tensor of another device type, or
    one numpy cannot view as it is (the negative bit), is left to the general
    path, as ``_host_keys`` leaves dtypes numpy lacks."""
    if not getattr(t, "is_cpu", False):
        raise NotFast
    keys = _host_keys(t.dtype)
    try:
        host = t.detach().numpy()
    except RuntimeError:
        raise NotFast from None
    return keys[t.data_ptr() % 16 == 0], host


_HOST_KEYS: dict[Any, tuple[str, str]] = {}


def _host_keys(dtype: Any) -> tuple[str, str]:
    """The dispatch keys of a host array of ``dtype`` (numpy's or torch's),
    unaligned and 16-byte aligned; ``NotFast`` for a dtype numpy lacks (bf16,
    fp8: passed as a view of another dtype by the general path)."""
    keys = _HOST_KEYS.get(dtype)
    if keys is None:
        t = _elem_type_of(dtype, _dtype_name, "")
        if t in _HOST_VIEWS:
            raise NotFast
        keys = _HOST_KEYS[dtype] = _key_pair(str(_pointer_to(t)), "host")
    return keys


def _numpy_spec(a: np.ndarray) -> tuple[Hashable, Any]:
    """A numpy array: itself (the host launcher reads its address, size and
    flags) and the key ``_numpy_arg`` gives it."""
    return _host_keys(a.dtype)[a.__array_interface__["data"][0] % 16 == 0], a


def _not_fast(v: Any) -> tuple[Hashable, Any]:
    raise NotFast


class _Specs(dict):
    """Exact type -> spec.  A type first seen is looked at once, in
    ``_CLASSIFIERS``'s order: torch's tensor types (``nn.Parameter`` too; torch
    may be imported after tilec), then types whose class has the CUDA array
    interface (an instance's own attribute is only seen by the general path);
    any other gets ``_not_fast``."""

    def __missing__(self, t: type) -> Spec:
        torch = sys.modules.get("torch")
        if torch is not None and issubclass(t, torch.Tensor):
            spec = _torch_spec
        elif hasattr(t, "__cuda_array_interface__") and not issubclass(t, (np.ndarray, np.generic)):
            spec = _cuda_array_spec
        else:
            spec = _not_fast
        self[t] = spec
        return spec


SPECS: dict[type, Spec] = _Specs({int: _int_spec, bool: _bool_spec, float: _float_spec, type(None): _none_spec,
                                  np.ndarray: _numpy_spec})
SPECS.update({np_type: _numpy_scalar_spec(t) for t, np_type in _NUMPY_SCALAR.items()})


class _UnspecializedSpecs(dict):
    """Exact type -> a spec giving the key and value ``without_specialization``
    leaves of ``SPECS``' (``keep_one``: an int equal to 1 stays a constexpr),
    for the parameters ``@jit(do_not_specialize...)`` names."""

    def __init__(self, keep_one: bool):
        super().__init__()
        self.keep_one = keep_one

    def __missing__(self, t: type) -> Spec:
        spec, keep_one = SPECS[t], self.keep_one

        def unspecialized(v: Any) -> tuple[Hashable, Any]:
            key, value = spec(v)
            if key is _ONE_KEY and not keep_one:
                return _I32_KEYS[0], value
            return _UNDIVIDED.get(key, key), value

        self[t] = unspecialized
        return unspecialized


#: For ``do_not_specialize`` parameters, and for ``do_not_specialize_on_alignment`` ones.
UNSPECIALIZED_SPECS, UNALIGNED_SPECS = _UnspecializedSpecs(keep_one=False), _UnspecializedSpecs(keep_one=True)
