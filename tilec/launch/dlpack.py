"""Read a DLPack array's address and element type from its capsule (dlpack.h).

``obj.__dlpack__()`` gives a ``"dltensor"`` capsule holding a
``DLManagedTensor`` whose first member is the ``DLTensor``; we only read it.
The capsule is left unconsumed, so when it is freed its destructor calls the
producer's deleter: the array itself stays alive through ``obj``.
"""
from __future__ import annotations

import ctypes
from typing import Any

# DLDataTypeCode -> numpy-style name prefix; bf16 is its own code.
_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 6: "bool"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def dlpack_address_and_dtype(obj: Any) -> tuple[int, str]:
    """(address of the first element, dtype name such as ``"float32"``) of a
    DLPack array; the dtype name is ``""`` for one numpy has no name for."""
    capsule = obj.__dlpack__()
    tensor = _DLTensor.from_address(_get_pointer(capsule, b"dltensor"))
    address = (tensor.data or 0) + tensor.byte_offset
    return address, _dtype_name(tensor.dtype)


def _dtype_name(dtype: _DLDataType) -> str:
    prefix = _CODES.get(dtype.code)
    if prefix is None or dtype.lanes != 1:
        return ""
    return "bool" if prefix == "bool" else f"{prefix}{dtype.bits}"
