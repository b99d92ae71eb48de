"""What tilec checks of an HSA code object (an ELF64 shared object), read
with ``struct``: the header (machine, OS ABI and its version, the arch in
``e_flags``), the undefined symbols, and the AMDGPU metadata note
(``amdhsa.kernels``: each kernel's name, kernel-argument layout, LDS, VGPRs,
SGPRs, scratch, wave size), a MessagePack map (``msgpack.py``).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from tilec.backends.amd import msgpack

EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA = 64
ELFABIVERSION_AMDGPU_HSA_V5 = 3  # code object v5
EF_AMDGPU_MACH = 0xFF
# EF_AMDGPU_MACH_AMDGCN_* of each arch (llvm/BinaryFormat/ELF.h)
MACH = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx950": 0x4F, "gfx1100": 0x41, "gfx1201": 0x4E}
SHT_SYMTAB, SHT_NOTE, SHT_DYNSYM = 2, 7, 11
NT_AMDGPU_METADATA = 32
_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")


@dataclass(frozen=True)
class CodeObject:
    """The facts of one code object (module docstring)."""

    machine: int
    os_abi: int
    abi_version: int
    flags: int
    undefined: tuple[str, ...]  # symbols the object uses and nobody defines
    metadata: dict[str, Any]  # the AMDGPU metadata note

    @property
    def mach(self) -> int:
        return self.flags & EF_AMDGPU_MACH

    def kernel(self, name: str) -> dict[str, Any]:
        """The ``amdhsa.kernels`` entry of kernel ``name``; a KeyError naming those there."""
        kernels = self.metadata.get("amdhsa.kernels", [])
        found = next((k for k in kernels if k.get(".name") == name), None)
        if found is None:
            raise KeyError(f"no kernel {name!r} in the code object (it has {[k.get('.name') for k in kernels]})")
        return found


def read_code_object(data: bytes) -> CodeObject:
    """The ``CodeObject`` of ELF bytes ``data``; a ValueError for bytes that are not an ELF64 little-endian object."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 file")
    ident, _, machine, _, _, _, shoff, flags, _, _, _, shentsize, shnum, shstrndx = _HEADER.unpack_from(data, 0)
    sections = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    undefined, metadata = set(), {}
    for s in sections:
        kind, offset, size, link = s[1], s[4], s[5], s[6]
        if kind in (SHT_SYMTAB, SHT_DYNSYM):
            strings = sections[link]
            undefined |= _undefined(data, offset, size, strings[4])
        elif kind == SHT_NOTE:
            metadata.update(_metadata_notes(data[offset:offset + size]))
    return CodeObject(machine, ident[7], ident[8], flags, tuple(sorted(undefined)), metadata)


def _undefined(data: bytes, offset: int, size: int, strtab: int) -> set[str]:
    out = set()
    for i in range(1, size // _SYMBOL.size):  # entry 0 is the null symbol
        name, _, _, shndx, _, _ = _SYMBOL.unpack_from(data, offset + i * _SYMBOL.size)
        if shndx == 0 and name:
            out.add(_cstring(data, strtab + name))
    return out


def _cstring(data: bytes, at: int) -> str:
    return data[at:data.index(b"\0", at)].decode()


def _metadata_notes(notes: bytes) -> dict[str, Any]:
    """The AMDGPU metadata map of a note section (other notes skipped)."""
    out, pos = {}, 0
    while pos + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, pos)
        name = notes[pos + 12:pos + 12 + namesz].rstrip(b"\0")
        desc_at = pos + 12 + _aligned(namesz)
        if name == b"AMDGPU" and kind == NT_AMDGPU_METADATA:
            out.update(msgpack.unpack(notes[desc_at:desc_at + descsz]))
        pos = desc_at + _aligned(descsz)
    return out


def _aligned(n: int) -> int:
    return (n + 3) & ~3
