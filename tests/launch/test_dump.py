"""``TILEC_DUMP`` (``tilec/launch/dump.py``): each requested stage of each
compiled variant written to ``TILEC_DUMP_DIR`` as it is made, one stderr line
per variant.  Needs no GPU."""
from __future__ import annotations

import json

import numpy as np
import pytest

from launch.kernels import add_kernel, fresh, transpose_kernel
from tilec.errors import OutOfResources, TilecError
from tilec.launch import cache, dump
from tilec.opt import pass_manager
from tilec.backends.nvidia import ptxas


def vectors(n=4096):
    x = np.zeros(n, np.float32)
    return x, x.copy(), x.copy(), n


@pytest.fixture
def dump_to(tmp_path, monkeypatch):
    """Set TILEC_DUMP to the given stages, writing into a fresh directory (returned)."""
    def setup(stages: str):
        monkeypatch.setenv("TILEC_DUMP", stages)
        monkeypatch.setenv("TILEC_DUMP_DIR", str(tmp_path / "dump"))
        return tmp_path / "dump"
    return setup


def files_of(directory, compiled) -> dict[str, "str | bytes"]:
    """Extension -> content of every file of ``compiled``'s variant in ``directory``."""
    prefix = f"{compiled.name}-{dump.variant_id(compiled)}."
    return {p.name[len(prefix):]: (p.read_bytes() if p.suffix == ".cubin" else p.read_text())
            for p in directory.iterdir() if p.name.startswith(prefix)}


def test_the_named_stages_are_written_and_announced_once(dump_to, capsys):
    directory = dump_to("tir,llir, ptx")
    k = fresh(add_kernel).compile(*vectors(), target="sm_90")
    assert files_of(directory, k) == {"tir": k.asm["tir"], "ll": k.asm["llir"], "ptx": k.asm["ptx"]}
    lines = [line for line in capsys.readouterr().err.splitlines() if "add_kernel" in line]
    assert lines == [f"tilec: TILEC_DUMP: kernel `add_kernel` (sm_90, variant {dump.variant_id(k)}) -> "
                     f"{directory / ('add_kernel-' + dump.variant_id(k))}.*"]


def test_all_on_the_host_writes_the_tile_ir_and_metadata(dump_to):
    directory = dump_to("all")
    k = fresh(add_kernel).compile(*vectors())
    files = files_of(directory, k)
    assert sorted(files) == ["json", "opt.tir", "tir"] and files["opt.tir"] == k.asm["tir-opt"]
    assert json.loads(files["json"])["bytes_moved"] == 3 * 1024 * 4


def test_all_on_a_gpu_target_writes_every_stage(dump_to):
    directory = dump_to("all")
    k = fresh(add_kernel).compile(*vectors(), target="sm_80")
    files = files_of(directory, k)
    expected = ["gpu.tir", "json", "ll", "opt.tir", "ptx", "tir"] + ["cubin"] * (ptxas.find_ptxas() is not None)
    assert sorted(files) == sorted(expected)
    if "cubin" in files:
        assert files["cubin"] == k.asm["cubin"]
    assert json.loads(files["json"])["target"] == "sm_80"


def test_variants_get_their_own_files(dump_to):
    directory = dump_to("tir-opt")
    k = fresh(add_kernel)
    a, b = k.compile(*vectors(), BLOCK=256), k.compile(*vectors(), BLOCK=512)
    assert dump.variant_id(a) != dump.variant_id(b)
    assert "256" in files_of(directory, a)["opt.tir"] and "512" in files_of(directory, b)["opt.tir"]
    assert dump.variant_id(fresh(add_kernel).compile(*vectors(), BLOCK=256)) == dump.variant_id(a)


def test_stages_made_before_a_failure_are_there(dump_to):
    directory = dump_to("ptx")
    x = np.zeros(256 * 256, np.float32)
    with pytest.raises(OutOfResources):
        fresh(transpose_kernel).compile(x, x, N=256, target="sm_90", num_warps=32)
    (ptx,) = directory.glob("transpose_kernel-*.ptx")
    assert ".visible .entry transpose_kernel(" in ptx.read_text()


def test_default_directory_and_what_is_not_a_stage(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TILEC_DUMP_DIR", raising=False)
    monkeypatch.setenv("TILEC_DUMP", "ir")  # the pass manager's (stderr), not a file
    assert dump.requested() == frozenset()
    monkeypatch.setenv("TILEC_DUMP", "ptx")
    fresh(add_kernel).compile(*vectors(), target="sm_90")
    assert [p.suffix for p in (tmp_path / "tilec-dump").iterdir()] == [".ptx"]


# The pass manager only looks for ``ir``: it cannot know the backends' stages, and the
# launcher (these readers) checks every name before a compile reaches the passes.
READERS = {"dump": lambda: dump.requested(), "cache": lambda: cache.bypassed()}


@pytest.mark.parametrize("value", ["bogus", "1", "ptx,llvm", "PTX", "tir,ir,irx", "true", "ptx;llir"])
def test_an_unknown_name_is_an_error_naming_the_valid_ones(tmp_path, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TILEC_DUMP", value)
    monkeypatch.setenv("TILEC_CHECK", "0")  # else the cache is bypassed before TILEC_DUMP is read
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    valid = "tir, tir-opt, tir-gpu, llir, ptx, cubin, asm, obj, hsaco, metadata, ir, all"
    for reader in READERS.values():
        with pytest.raises(TilecError, match=f"TILEC_DUMP=.*unknown name.*{valid}"):
            reader()
    with pytest.raises(TilecError, match=f"TILEC_DUMP=.*{valid}"):
        fresh(add_kernel)[(1,)](*vectors(64))
    assert list(tmp_path.iterdir()) == []  # neither a dump nor a cache entry


@pytest.mark.parametrize("value, stages, ir", [("", set(), False), ("0", set(), False), ("ptx", {"ptx"}, False),
                                               (" tir , llir,", {"tir", "llir"}, False), ("ir", set(), True),
                                               ("all,ir", set(dump.dump_stages()), True)])
def test_valid_names_are_read_alike_everywhere(monkeypatch, value, stages, ir):
    monkeypatch.setenv("TILEC_DUMP", value)
    monkeypatch.setenv("TILEC_CHECK", "0")
    assert dump.requested() == stages and pass_manager.dump_requested() == ir
    assert cache.bypassed() == ("TILEC_DUMP is set" if stages or ir else None)


def test_nothing_is_written_without_tilec_dump(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TILEC_DUMP", raising=False)
    fresh(add_kernel).compile(*vectors(), target="sm_90")
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_directory_is_a_clear_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("TILEC_DUMP", "tir")
    monkeypatch.setenv("TILEC_DUMP_DIR", str(tmp_path / "file"))
    with pytest.raises(TilecError, match=r"^TILEC_DUMP: cannot write kernel `add_kernel`'s tir to .*file: "):
        fresh(add_kernel).compile(*vectors())
