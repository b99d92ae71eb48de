"""The kernel-argument buffer of an AMD kernel, laid out as its code object says.

The metadata note lists each argument's ``.offset``, ``.size`` and
``.value_kind`` (``global_buffer`` for a pointer, ``by_value`` for a scalar;
``hidden_*`` for the implicit ones the HIP runtime fills itself).  The
launcher packs the explicit ones into a buffer of their extent, each at its
offset, and hands it to ``hipModuleLaunchKernel`` as
``HIP_LAUNCH_PARAM_BUFFER_POINTER``.  Nothing here needs a GPU.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Sequence

from tilec.errors import TilecError
from tilec.ir.types import PointerType, ScalarType

# struct formats of each IR scalar type as the kernel reads it (an i1 travels as a byte, bf16 as its bits)
_FORMATS = {"i1": "B", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u8": "B", "u16": "H", "u32": "I",
            "u64": "Q", "f16": "e", "bf16": "H", "f32": "f", "f64": "d"}


@dataclass(frozen=True)
class KernelArgSlot:
    """Where one explicit argument goes: its byte offset, size and struct format."""

    name: str
    offset: int
    size: int
    fmt: str


@dataclass(frozen=True)
class KernargLayout:
    """The explicit arguments' slots, in the kernel's parameter order, and the buffer's size."""

    slots: tuple[KernelArgSlot, ...]
    size: int

    def pack(self, values: Sequence[Any]) -> bytes:
        """The buffer holding ``values`` (pointers as int addresses), one per slot."""
        if len(values) != len(self.slots):
            raise TilecError(f"the kernel takes {len(self.slots)} arguments, {len(values)} were given")
        buffer = bytearray(self.size)
        for slot, value in zip(self.slots, values):
            try:
                struct.pack_into("<" + slot.fmt, buffer, slot.offset, _raw(value, slot.fmt))
            except (struct.error, TypeError, OverflowError) as e:
                raise TilecError(f"argument `{slot.name}`: {value!r} does not fit its type ({e})") from None
        return bytes(buffer)


def _raw(value: Any, fmt: str) -> Any:
    """A launch value as ``struct`` packs it: bf16 as its 16 bits, bools and numpy scalars as Python numbers."""
    if hasattr(value, "dtype") and value.dtype.name == "bfloat16":
        return int(value.view("uint16"))
    if hasattr(value, "item"):
        value = value.item()
    return int(value) if fmt in "BbHhIiQq" and not isinstance(value, float) else value


def kernarg_layout(arg_types: Sequence[Any], arg_names: Sequence[str], kernel_meta: dict) -> KernargLayout:
    """The layout of a kernel whose IR parameters have ``arg_types`` and
    ``arg_names``, from its ``amdhsa.kernels`` entry ``kernel_meta``; a
    TilecError when the two disagree (a compiler bug, not a user's)."""
    explicit = [a for a in kernel_meta.get(".args", []) if not a[".value_kind"].startswith("hidden_")]
    if len(explicit) != len(arg_types):
        raise TilecError(f"internal compiler error: the code object lists {len(explicit)} kernel arguments, "
                         f"the kernel has {len(arg_types)}")
    slots = []
    for t, name, meta in zip(arg_types, arg_names, explicit):
        fmt = "Q" if isinstance(t, PointerType) else _FORMATS.get(t.name) if isinstance(t, ScalarType) else None
        if fmt is None or struct.calcsize(fmt) != meta[".size"]:
            raise TilecError(f"internal compiler error: kernel argument `{name}` ({t}) is {meta['.size']} bytes "
                             "in the code object")
        slots.append(KernelArgSlot(name, meta[".offset"], meta[".size"], fmt))
    end = max((s.offset + s.size for s in slots), default=0)
    return KernargLayout(tuple(slots), -(-end // 8) * 8)
