"""A small MessagePack reader: the AMDGPU metadata note of a code object is
one MessagePack map (``amdhsa.kernels``...).  Reads every type the format
has but extensions; no dependency."""
from __future__ import annotations

import struct
from typing import Any

# first byte -> (struct format of the length or value, kind)
_FIXED = {
    0xC0: ("", "nil"), 0xC2: ("", "false"), 0xC3: ("", "true"),
    0xC4: (">B", "bin"), 0xC5: (">H", "bin"), 0xC6: (">I", "bin"),
    0xCA: (">f", "value"), 0xCB: (">d", "value"),
    0xCC: (">B", "value"), 0xCD: (">H", "value"), 0xCE: (">I", "value"), 0xCF: (">Q", "value"),
    0xD0: (">b", "value"), 0xD1: (">h", "value"), 0xD2: (">i", "value"), 0xD3: (">q", "value"),
    0xD9: (">B", "str"), 0xDA: (">H", "str"), 0xDB: (">I", "str"),
    0xDC: (">H", "array"), 0xDD: (">I", "array"), 0xDE: (">H", "map"), 0xDF: (">I", "map"),
}
_CONSTANTS = {"nil": None, "false": False, "true": True}


def unpack(data: bytes) -> Any:
    """The one value ``data`` holds; a ValueError when it is not exactly one MessagePack value."""
    value, end = _read(memoryview(data), 0)
    if end != len(data):
        raise ValueError(f"MessagePack value ends at byte {end} of {len(data)}")
    return value


def _read(data: memoryview, pos: int) -> tuple[Any, int]:
    if pos >= len(data):
        raise ValueError("MessagePack data ends inside a value")
    first = data[pos]
    pos += 1
    if first <= 0x7F or first >= 0xE0:
        return (first if first <= 0x7F else first - 0x100), pos
    if 0x80 <= first <= 0x8F:
        return _container("map", first & 0x0F, data, pos)
    if 0x90 <= first <= 0x9F:
        return _container("array", first & 0x0F, data, pos)
    if 0xA0 <= first <= 0xBF:
        return _bytes("str", first & 0x1F, data, pos)
    if first not in _FIXED:
        raise ValueError(f"unsupported MessagePack type byte 0x{first:02x} at {pos - 1}")
    fmt, kind = _FIXED[first]
    if kind in _CONSTANTS:
        return _CONSTANTS[kind], pos
    (n,) = struct.unpack_from(fmt, data, pos)
    pos += struct.calcsize(fmt)
    if kind == "value":
        return n, pos
    if kind in ("str", "bin"):
        return _bytes(kind, n, data, pos)
    return _container(kind, n, data, pos)


def _bytes(kind: str, n: int, data: memoryview, pos: int) -> tuple[Any, int]:
    if pos + n > len(data):
        raise ValueError("MessagePack data ends inside a string")
    raw = bytes(data[pos:pos + n])
    return (raw.decode() if kind == "str" else raw), pos + n


def _container(kind: str, n: int, data: memoryview, pos: int) -> tuple[Any, int]:
    items = []
    for _ in range(2 * n if kind == "map" else n):
        item, pos = _read(data, pos)
        items.append(item)
    if kind == "array":
        return items, pos
    return dict(zip(items[::2], items[1::2])), pos
