"""Cache entries are data, never code (tilec/launch/cache_entry.py): entries
crafted to run code or to mislead the reader -- each behind a valid header and
checksum, so they pass the integrity check -- are rejected as corrupt, nothing
in them runs, the launch still computes the right answer and the entry is
rewritten.  The tuning database is held to the same rules."""
from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilec.launch import cache
from tilec.launch.cache_entry import EntryError, kernel_sections, pack_entry, unpack_entry

from launch.kernels import add_kernel, fresh
from launch.test_cache import disk_cache, kernel_files, vectors  # noqa: F401 (a fixture)


class RunsCode:
    """Pickles to a call of ``os.system`` (what an attacker plants)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        import os

        return os.system, (self.command,)


def touch(marker) -> bytes:
    return f"touch {marker}".encode()


def pickled_calls(marker) -> dict[str, bytes]:
    """Pickles that call ``os.system("touch marker")`` when loaded, reached
    through a plain global, a ``tilec`` module's global (the old unpickler let
    those through) and a STACK_GLOBAL."""
    command = touch(marker)
    arg = b"\x8c" + bytes([len(command)]) + command + b"\x85R."  # SHORT_BINUNICODE, TUPLE1, REDUCE, STOP
    return {
        "plain global": pickle.dumps(RunsCode(command.decode())),
        "tilec module global": b"\x80\x04ctilec.launch.cache\nos.system\n" + arg,
        "tilec stack global": (b"\x80\x04\x8c\x12tilec.launch.cache\x8c\x09os.system\x93" + arg),
    }


def header_and_body(payload: bytes) -> tuple[dict, bytes]:
    line, body = payload.split(b"\n", 1)
    return json.loads(line), body


def rebuilt(header: dict, body: bytes) -> bytes:
    return json.dumps(header).encode() + b"\n" + body


def with_section(header: dict, index: int, **changes) -> dict:
    sections = [dict(s) for s in header["sections"]]
    sections[index].update(changes)
    return {**header, "sections": sections}


def with_metadata(header: dict, **changes) -> dict:
    return {**header, "metadata": {**header["metadata"], **changes}}


#: name -> what it does to a genuine kernel entry's (header, body): crafted header fields, all checked.
CRAFTED = {
    "negative size": lambda h, b: (with_section(h, 0, size=-5), b),
    "huge size": lambda h, b: (with_section(h, 0, size=2 ** 62), b),
    "size as text": lambda h, b: (with_section(h, 0, size=str(h["sections"][0]["size"])), b),
    "size as bool": lambda h, b: (with_section(h, 0, size=True), b),
    "size as float": lambda h, b: (with_section(h, 0, size=float(h["sections"][0]["size"])), b),
    "sizes short of the body": lambda h, b: (h, b + b"trailing"),
    "sizes past the body": lambda h, b: (h, b[:-3]),
    "parent path name": lambda h, b: (with_section(h, 0, name="../../tir-opt"), b),
    "absolute path name": lambda h, b: (with_section(h, 0, name="/etc/passwd"), b),
    "NUL in a name": lambda h, b: (with_section(h, 0, name="tir\0-opt"), b),
    "unknown section": lambda h, b: (with_section(h, 0, name="evil"), b),
    "twice the same section": lambda h, b: (with_section(h, 1, name=h["sections"][0]["name"]), b),
    "IR declared bytes": lambda h, b: (with_section(h, 0, kind="bytes"), b),
    "sections not a list": lambda h, b: ({**h, "sections": {"tir": 3}}, b),
    "header a list": lambda h, b: ([h], b),
    "other format": lambda h, b: ({**h, "format": 1}, b),
    "kernel name a path": lambda h, b: ({**h, "name": "../../etc/add_kernel"}, b),
    "kernel name with NUL": lambda h, b: ({**h, "name": "add\0kernel"}, b),
    "metadata field as text": lambda h, b: (with_metadata(h, num_warps="4"), b),
    "metadata int as bool": lambda h, b: (with_metadata(h, shared=True), b),
    "metadata unknown field": lambda h, b: (with_metadata(h, __class__="os.system"), b),
    "metadata missing field": lambda h, b: ({**h, "metadata": {"name": "add_kernel"}}, b),
    "metadata for another target": lambda h, b: (with_metadata(h, target="sm_90"), b),
    "metadata a list": lambda h, b: ({**h, "metadata": [1, 2]}, b),
}


def compile_twice_with_planted(disk_cache, plant) -> None:
    """Compile (storing a genuine entry), replace its payload with ``plant(payload)``
    behind a valid header, compile afresh: a corrupt entry, recompiled, rewritten."""
    x, y, out = vectors(100)
    first = fresh(add_kernel).compile(x, y, out, 100)
    entry, = kernel_files(disk_cache)
    genuine = entry.read_bytes()
    cache.write_entry("kernel", entry.stem, plant(cache.read_entry("kernel", entry.stem)))
    kernel = fresh(add_kernel)
    kernel[(1,)](x, y, out, 100)
    np.testing.assert_array_equal(out, x + y)
    assert cache.STATS["corrupt"] == 1 and cache.STATS["hit"] == 0 and cache.STATS["miss"] == 2
    assert entry.read_bytes() == genuine and next(iter(kernel.cache.values())).asm == first.asm


@pytest.mark.parametrize("how", ["plain global", "tilec module global", "tilec stack global"])
def test_a_pickle_that_runs_code_is_never_loaded(disk_cache, tmp_path, how):
    marker = tmp_path / "ran"
    compile_twice_with_planted(disk_cache, lambda genuine: pickled_calls(marker)[how])
    assert not marker.exists()


def test_a_pickle_in_a_section_is_only_bytes(disk_cache, tmp_path):
    """A section holding a pickle (the cubin's place) is never unpickled: on the host it is only data."""
    marker = tmp_path / "ran"

    def plant(payload: bytes) -> bytes:
        header, body = header_and_body(payload)
        evil = pickled_calls(marker)["tilec module global"]
        header["sections"].append({"name": "cubin", "kind": "bytes", "size": len(evil)})
        return rebuilt(header, body + evil)

    compile_twice_with_planted(disk_cache, plant)  # a host kernel has no cubin: an unexpected section
    assert not marker.exists()


@pytest.mark.parametrize("craft", list(CRAFTED))
def test_a_crafted_header_is_rejected(disk_cache, craft):
    def plant(payload: bytes) -> bytes:
        header, body = header_and_body(payload)
        return rebuilt(*CRAFTED[craft](header, body))

    compile_twice_with_planted(disk_cache, plant)


@pytest.mark.parametrize("garbage", [b"", b"\n", b"not json\n", b"\xff\xfe\n", b"{}\n", b"null\n",
                                     b'{"format": 2}\n', b"\x80\x04N."])
def test_a_payload_that_is_no_entry_is_rejected(disk_cache, garbage):
    compile_twice_with_planted(disk_cache, lambda genuine: garbage)


def test_a_text_section_that_is_no_text_or_no_ir_is_rejected(disk_cache):
    def plant(payload: bytes) -> bytes:
        header, body = header_and_body(payload)
        first = header["sections"][0]["size"]
        return rebuilt(header, b"\xff" * first + body[first:])

    compile_twice_with_planted(disk_cache, plant)


IR_EDITS = {
    "no IR": lambda text: "func @add_kernel( {\n",
    "another kernel's": lambda text: text.replace("@add_kernel(", "@other("),
    "an argument renamed": lambda text: text.replace("%out_ptr", "%dst"),
    "an argument retyped": lambda text: text.replace("%n: i32)", "%n: i64)"),
    "an argument more": lambda text: text.replace("%n: i32)", "%n: i32, %m: i32)"),
    "nested past the parser's depth": lambda text: "[" * 100_000,
}


@pytest.mark.parametrize("edit", list(IR_EDITS))
def test_the_ir_must_parse_and_be_the_variants(disk_cache, edit):
    def plant(payload: bytes) -> bytes:
        header, body = header_and_body(payload)
        sections, offset = [], 0
        for section in header["sections"]:
            raw = body[offset:offset + section["size"]]
            offset += section["size"]
            if section["name"] == "fn":
                raw = IR_EDITS[edit](raw.decode()).encode()
            sections.append(({**section, "size": len(raw)}, raw))
        return rebuilt({**header, "sections": [s for s, _ in sections]}, b"".join(r for _, r in sections))

    compile_twice_with_planted(disk_cache, plant)


def test_a_header_nested_past_the_json_readers_depth_is_rejected(disk_cache):
    compile_twice_with_planted(disk_cache, lambda genuine: b"[" * 100_000 + b"\n")


def test_an_entry_round_trips_every_stage_and_field(disk_cache):
    x, y, out = vectors(64)
    first = fresh(add_kernel).compile(x, y, out, 64, target="sm_80")
    plan = add_kernel.plan((x, y, out, 64), {})
    back = cache.deserialize_kernel(cache.serialize_kernel(first), plan.args, first.options, "sm_80")
    assert back.asm == first.asm and back.metadata == first.metadata and back.name == first.name
    assert all(type(back.asm[k]) is type(v) for k, v in first.asm.items())


GENUINE = pack_entry("kernel", {"name": "k", "metadata": {"name": "k"}},
                     {"tir": "func @k() {\n}\n", "ptx": "// ptx\n", "cubin": bytes(range(40))})


# --- the container, by property ------------------------------------------------------------------
SECTION_CONTENTS = st.one_of(st.text(), st.binary())
GPU_SECTIONS = kernel_sections("sm_90")


def test_the_sections_are_the_ir_and_the_backends_stages():
    assert kernel_sections("host") == {"fn": "text", "tir": "text"}
    assert GPU_SECTIONS == {"fn": "text", "tir": "text", "tir-gpu": "text", "llir": "text", "ptx": "text",
                            "cubin": "bytes"}


@given(sections=st.dictionaries(st.sampled_from(sorted(GPU_SECTIONS)), SECTION_CONTENTS),
       fields=st.dictionaries(st.text().filter(lambda k: k not in ("format", "kind", "sections")),
                              st.one_of(st.none(), st.integers(), st.text())))
def test_pack_and_unpack_round_trip_any_sections(sections, fields):
    allowed = {name: "text" if isinstance(content, str) else "bytes" for name, content in sections.items()}
    header, back = unpack_entry(pack_entry("kernel", fields, sections), "kernel", allowed)
    assert back == sections and {k: header[k] for k in fields} == fields


@given(payload=st.binary(max_size=300) | st.builds(lambda h, b: h.encode() + b"\n" + b, st.text(), st.binary()))
def test_any_bytes_unpack_or_raise_entry_error_only(payload):
    try:
        unpack_entry(payload, "kernel", GPU_SECTIONS)
    except EntryError:
        pass


@given(cut=st.integers(0, 10_000), flip=st.integers(0, 10_000), bit=st.integers(0, 7))
def test_a_damaged_genuine_payload_reads_back_or_raises_entry_error(cut, flip, bit):
    payload = bytearray(GENUINE[:max(1, len(GENUINE) - cut % len(GENUINE))])
    payload[flip % len(payload)] ^= 1 << bit
    try:
        unpack_entry(bytes(payload), "kernel", GPU_SECTIONS)
    except EntryError:
        pass


# --- the tuning database -------------------------------------------------------------------------
TUNING_CRAFTED = {
    "pickle": lambda marker, good: pickled_calls(marker)["tilec module global"],
    "index as bool": lambda marker, good: tuning_payload(good, index=True),
    "negative index": lambda marker, good: tuning_payload(good, index=-1),
    "index past the configs": lambda marker, good: tuning_payload(good, index=99),
    "index as text": lambda marker, good: tuning_payload(good, index="0"),
    "config not text": lambda marker, good: tuning_payload(good, config=["BLOCK", 32]),
    "another config's text": lambda marker, good: tuning_payload(good, config="BLOCK: 4096"),
    "a section": lambda marker, good: rebuilt({**header_and_body(good)[0],
                                               "sections": [{"name": "../x", "kind": "text", "size": 0}]}, b""),
    "not json": lambda marker, good: b"{index: 0}\n",
    "nested past the json reader's depth": lambda marker, good: b"[" * 100_000 + b"\n",
}


def tuning_payload(good: bytes, **changes) -> bytes:
    header, body = header_and_body(good)
    return rebuilt({**header, "record": {**header["record"], **changes}}, body)


@pytest.mark.parametrize("craft", list(TUNING_CRAFTED))
def test_a_crafted_tuning_entry_is_rejected_and_the_kernel_tuned_again(disk_cache, tmp_path, craft):
    from test_autotune import CONFIGS, data, grid, tuned

    x, out = data(300)
    tuned()[grid](x, out, 300)
    entry, = (disk_cache / "tuning").iterdir()
    genuine = cache.read_entry("tuning", entry.stem)
    marker = tmp_path / "ran"
    cache.write_entry("tuning", entry.stem, TUNING_CRAFTED[craft](marker, genuine))
    again = tuned()
    out[:] = 0
    again[grid](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert not marker.exists() and cache.STATS["corrupt"] == 1
    assert again.configs_timings is not None and set(again.configs_timings) == set(CONFIGS)  # tuned again
    assert cache.read_entry("tuning", entry.stem) == tuning_payload(
        genuine, **{"index": CONFIGS.index(again.best_config), "config": str(again.best_config),
                    "timings_ms": {str(c): t for c, t in again.configs_timings.items()}})  # rewritten
