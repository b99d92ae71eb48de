"""The payload of a cache entry: data only, read without ever running any of it.

A payload is one line of JSON, the header, then the raw bytes of its sections
back to back::

    {"format": 2, "kind": "kernel", "sections": [{"name": "llir", "kind": "text", "size": 5512}, ...], ...}\\n
    <the 5512 bytes of "llir">...

The header names each section (from a fixed list the reader expects: the IR
and the stages of the target's backend; a section name is never a path), says
whether it is UTF-8 ``text`` or raw ``bytes``, and gives its size; the sizes
must add up to exactly the bytes that follow.  The header's other fields are
plain JSON, rebuilt field by field with their types checked (``KernelMetadata``
from its annotations).  Nothing is unpickled, evaluated or imported: an entry
crafted to run code is only a malformed entry (``EntryError``), which the cache
counts as corrupt and recompiles.

The same bytes carry a kernel from the autotuner's compile workers back to the
parent process (``serialize_kernel``), so no pickle is on that path either.
"""
from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any, Mapping, Sequence

from tilec.ir.core import Function
from tilec.ir.kernel_params import ir_arguments
from tilec.launch.args import KernelArg
from tilec.launch.compiler import CompiledKernel, KernelMetadata, Options
from tilec.targets.registry import backend_for

FORMAT = 2  # bump when the layout changes: older entries are then malformed, and recompiled
SECTION_KINDS = {str: "text", bytes: "bytes"}
#: The sections every kernel entry holds, with their kind: ``fn``, the optimized IR printed
#: with source locations (``asm["tir-opt"]`` is the same without them: printed again on
#: reading, so the two cannot disagree), and ``tir``, the IR as built.
REQUIRED_SECTIONS = {"fn": "text", "tir": "text"}


def kernel_sections(target: str) -> dict[str, str]:
    """The sections a kernel entry for ``target`` may hold, with their kind: the
    required ones and each stage of ``target``'s backend (which may be missing:
    a pipeline that ended early)."""
    stages = backend_for(target).stages
    return {**REQUIRED_SECTIONS, **{s.name: "bytes" if s.binary else "text" for s in stages}}


class EntryError(ValueError):
    """A payload that is not a well-formed entry of the expected kind."""


# --------------------------------------------------------------------------- #
# The container: a JSON header and named sections
# --------------------------------------------------------------------------- #

def pack_entry(kind: str, fields: Mapping[str, Any], sections: Mapping[str, "str | bytes"]) -> bytes:
    """``fields`` (plain JSON values) and ``sections`` as one payload of ``kind``."""
    raw = [s.encode() if isinstance(s, str) else bytes(s) for s in sections.values()]
    table = [{"name": n, "kind": SECTION_KINDS[type(s)], "size": len(r)}
             for (n, s), r in zip(sections.items(), raw)]
    header = {"format": FORMAT, "kind": kind, "sections": table, **fields}
    return json.dumps(header).encode() + b"\n" + b"".join(raw)


def unpack_entry(payload: bytes, kind: str, allowed: Mapping[str, str]) -> tuple[dict, dict[str, "str | bytes"]]:
    """(header, sections) of a payload of ``kind`` whose sections are among
    ``allowed`` (name -> kind); raises ``EntryError`` on anything else."""
    line, newline, body = payload.partition(b"\n")
    try:
        header = json.loads(line.decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # RecursionError: "[[[[...]]]]"
        raise EntryError(f"the header is not JSON ({e})") from None
    expect(isinstance(header, dict) and header.get("format") == FORMAT and header.get("kind") == kind
           and newline, f"not a format-{FORMAT} {kind} entry")
    table = header.get("sections")
    expect(isinstance(table, list), "`sections` is not a list")
    return header, split_sections(body, table, allowed)


def split_sections(body: bytes, table: list, allowed: Mapping[str, str]) -> dict[str, "str | bytes"]:
    """``body`` cut as ``table`` says, every name, kind and size checked before any byte is read."""
    sections, offset = {}, 0
    for row in table:
        expect(isinstance(row, dict) and set(row) == {"name", "kind", "size"}, f"a malformed section {row!r}")
        name, size = row["name"], row["size"]
        expect(isinstance(name, str) and allowed.get(name) == row["kind"] and name not in sections,
               f"an unexpected or repeated section {name!r} ({row['kind']!r})")
        expect(is_int(size) and 0 <= size <= len(body) - offset, f"section {name!r} has a bad size {size!r}")
        sections[name] = body[offset:offset + size]
        offset += size
    expect(offset == len(body), f"the sections hold {offset} bytes, the entry {len(body)}")
    return {n: decode_text(n, raw) if allowed[n] == "text" else raw for n, raw in sections.items()}


def decode_text(name: str, raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as e:
        raise EntryError(f"section {name!r} is not UTF-8 text ({e})") from None


def expect(condition: Any, problem: str) -> None:
    if not condition:
        raise EntryError(problem)


def is_int(value: Any) -> bool:
    """An int, and not a bool (JSON's ``true`` reads as ``True``, an int to Python)."""
    return isinstance(value, int) and not isinstance(value, bool)


# --------------------------------------------------------------------------- #
# Compiled kernels
# --------------------------------------------------------------------------- #

def serialize_kernel(compiled: CompiledKernel) -> bytes:
    """``compiled``'s name, metadata, every stage of ``asm`` and its IR with locations."""
    from tilec.ir.printer import print_function

    stages = {name: stage for name, stage in compiled.asm.items() if name != "tir-opt"}
    sections = {"fn": print_function(compiled.fn, locs=True), **stages}
    return pack_entry("kernel", {"name": compiled.name, "metadata": dataclasses.asdict(compiled.metadata)},
                      sections)


def deserialize_kernel(payload: bytes, args: Sequence[KernelArg], options: Options, target: str) -> CompiledKernel:
    """The ``CompiledKernel`` of ``serialize_kernel``'s bytes for these classified
    ``args``, ``options`` and ``target``, which the entry must agree with; its
    ``fn`` parsed back from the located IR (raises ``EntryError`` on anything wrong)."""
    from tilec.ir.printer import print_function
    from tilec.launch.compiler import _arg_spec

    header, sections = unpack_entry(payload, "kernel", kernel_sections(target))
    name = header.get("name")
    expect(isinstance(name, str) and name.isidentifier(), f"the kernel name {name!r} is not an identifier")
    metadata = kernel_metadata(header.get("metadata"))
    expect((metadata.name, metadata.target, metadata.num_warps, metadata.num_stages)
           == (name, target, options.num_warps, options.num_stages), "the metadata is for another variant")
    expect(set(REQUIRED_SECTIONS) <= set(sections), "a stage is missing")
    specs = tuple(_arg_spec(a) for a in args)
    fn = kernel_ir(sections.pop("fn"), name, specs)
    asm = {"tir": sections.pop("tir"), "tir-opt": print_function(fn), **sections}
    return CompiledKernel(name, fn, specs, options, target, asm, metadata)


def kernel_ir(text: str, name: str, specs: Sequence) -> Function:
    """The IR of kernel ``name`` parsed from ``text``; its runtime arguments must be
    those of ``specs`` (names and types), or a launch would pass it the wrong values."""
    from tilec.ir.parser import ParseError, parse_function

    try:
        fn = parse_function(text)
    except ParseError as e:
        raise EntryError(f"the IR does not parse: {e}") from None
    expect(fn.name == name, f"the IR is of `{fn.name}`, not `{name}`")
    runtime = [pair for s in specs if s.type is not None for pair in ir_arguments(s.name, s.type)]
    expect(list(zip(fn.arg_names, (a.type for a in fn.args))) == runtime, "the IR's arguments are not the variant's")
    return fn


def kernel_metadata(stored: Any) -> KernelMetadata:
    """A ``KernelMetadata`` from its JSON object: exactly its fields, each of its declared type."""
    fields = {f.name: f for f in dataclasses.fields(KernelMetadata)}
    expect(isinstance(stored, dict) and set(stored) == set(fields), "the metadata's fields are not KernelMetadata's")
    hints = typing.get_type_hints(KernelMetadata)
    for name, value in stored.items():
        expect(has_type(value, hints[name]), f"metadata field {name!r} is not {hints[name]}: {value!r}")
    return KernelMetadata(**stored)


def has_type(value: Any, hint: Any) -> bool:
    """``value`` is of the plain type ``hint`` (``int``, ``str``, ``Optional[float]``...);
    a bool is no int, an int may stand for a float (JSON writes ``2.0`` as ``2.0``, others may not)."""
    if typing.get_origin(hint) is typing.Union:
        return any(has_type(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, float) or is_int(value)
    return is_int(value) if hint is int else isinstance(value, hint)
