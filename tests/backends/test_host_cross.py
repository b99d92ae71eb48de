"""The host backend's cross target ``aarch64`` (``tilec/backends/host/target.py``,
``CROSS_TRIPLES``): any machine compiles a kernel to AArch64 Linux object
code at the ``generic`` level (the test suite does so for its kernels,
``tests/gpu_compile_check.py``), which runs only in an AArch64 process;
anywhere else the launcher refuses it before anything runs."""
from __future__ import annotations

import re

import numpy as np
import pytest

import tilec
import tilec.language as tl
from kernels.vector_add import add_kernel
from tilec import cli
from tilec.errors import TilecError
from tilec.targets import registry

HOST = registry.backend("host")
EM_AARCH64 = 0xB7  # ELF's e_machine of AArch64


@tilec.jit
def scaled(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0 + 1.0)


def test_aarch64_is_a_target_of_the_host_backend_at_its_baseline():
    assert "aarch64" in registry.target_names() and registry.backend_for("aarch64") is HOST
    facts = HOST.target("aarch64")
    assert facts.triple.startswith("aarch64-") and facts.cpu == "generic"
    assert HOST.toolchain("aarch64")[1:] == (facts.triple, "generic") != HOST.toolchain("cpu")[1:]
    assert HOST.language_target("aarch64") == ("cpu", "aarch64", 32)


def test_a_kernel_compiles_to_aarch64_object_code_with_neon_vectors():
    x = np.zeros(1024, np.float32)
    k = scaled.compile(x, x, BLOCK=1024, target="aarch64")
    assert k.target == "aarch64" and list(k.asm)[-3:] == ["llir", "asm", "obj"]
    assert 'target triple = "aarch64' in k.asm["llir"] and "<4 x float>" in k.asm["llir"]
    obj = k.asm["obj"]
    assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[18:20], "little") == EM_AARCH64
    assert re.search(r"\bf(add|mul|mla)\tv\d+\.4s", k.asm["asm"])  # four f32 lanes of a NEON register


@pytest.mark.skipif(HOST.target("cpu").triple.startswith("aarch64"), reason="an AArch64 process runs it")
def test_an_aarch64_variant_is_refused_by_a_process_of_another_cpu():
    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    k = add_kernel.compile(x, x, out, 8, BLOCK_SIZE=8, target="aarch64")
    with pytest.raises(TilecError, match="compiled for target `aarch64`.*nothing ran"):
        HOST.launcher().launch(k, (1, 1, 1), add_kernel.plan((x, x, out, 8), {"BLOCK_SIZE": 8}).args)
    assert (out == 0).all()


def test_python_m_tilec_compiles_for_aarch64(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    status = cli.main(["compile", f"{add_kernel.fn.__code__.co_filename}:add_kernel", "--signature",
                       "*fp32:16,*fp32:16,*fp32:16,i32", "--constexpr", "BLOCK_SIZE=8", "--target", "aarch64"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "add_kernel_grid:" in out and re.search(r"\bldr\b", out)
