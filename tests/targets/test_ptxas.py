"""Assembling emitted PTX with ptxas (from the nvidia-cuda-nvcc wheel in CI)."""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import os
from pathlib import Path

import pytest

from tilec.errors import TilecError
from tilec.backends.nvidia.target import emit_ptx
from tilec.backends.nvidia import ptxas as ptxas_mod
from tilec.backends.nvidia.ptxas import PtxasError, PtxasResult, assemble, find_libdevice, find_ptxas, parse_ptxas_log

pytest.importorskip("llvmlite.binding")


def _load_nvptx_tests():
    # The sibling test module holds the tiny kernel; load it by path so this
    # does not depend on how pytest names test modules.
    path = Path(__file__).with_name("test_nvptx.py")
    spec = importlib.util.spec_from_file_location("_tilec_test_nvptx_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernel_ir = _load_nvptx_tests().kernel_ir

# Captured from `ptxas -arch=sm_80 -v` (CUDA 13.5.37): a kernel with 1 KiB of
# static shared memory and a barrier, then the tiny store kernel.
SAMPLE_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 's' for 'sm_80'
ptxas info    : Function properties for s
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 1 barriers, 1024 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 1.351 ms
ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Function properties for k
    16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 2.691 ms
"""


def need_ptxas():
    if find_ptxas() is None:
        pytest.skip("no ptxas found: `pip install 'tilec[cuda]'` or set TILEC_PTXAS")


@pytest.fixture
def fresh_caches():
    find_ptxas.cache_clear()
    find_libdevice.cache_clear()
    yield
    find_ptxas.cache_clear()
    find_libdevice.cache_clear()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_emitted_ptx_assembles(arch):
    need_ptxas()
    result = assemble(emit_ptx(kernel_ir(), arch), arch)
    assert isinstance(result, PtxasResult)
    assert result.cubin.startswith(b"\x7fELF")
    assert result.registers > 0
    assert (result.spill_stores, result.spill_loads) == (0, 0)
    assert result.shared_bytes == 0
    assert f"for '{arch}'" in result.log
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.registers = 1


def test_bad_ptx_raises_with_the_ptxas_message():
    need_ptxas()
    bad = ".version 8.5\n.target sm_80\n.address_size 64\n.visible .entry k() { bogus; }\n"
    with pytest.raises(PtxasError, match="bogus") as info:
        assemble(bad, "sm_80")
    assert isinstance(info.value, TilecError)
    assert info.value.arch == "sm_80"
    assert "sm_80" in str(info.value)


def test_parser_on_captured_log():
    assert parse_ptxas_log(SAMPLE_LOG) == (255, 12, 8, 1024)
    assert parse_ptxas_log("") == (0, 0, 0, 0)


def test_tilec_ptxas_env_wins(monkeypatch, tmp_path, fresh_caches):
    fake = tmp_path / "my-ptxas"
    monkeypatch.setenv("TILEC_PTXAS", str(fake))
    assert find_ptxas() == fake
    # A TILEC_PTXAS that is not runnable is a PtxasError, not an OSError.
    with pytest.raises(PtxasError, match="TILEC_PTXAS"):
        assemble(".version 8.5\n", "sm_80")


def test_no_ptxas_says_how_to_get_one(monkeypatch, fresh_caches):
    monkeypatch.delenv("TILEC_PTXAS", raising=False)
    monkeypatch.setattr(ptxas_mod, "find_ptxas", lambda: None)
    with pytest.raises(PtxasError, match=r"pip install 'tilec\[cuda\]'.*TILEC_PTXAS"):
        assemble(".version 8.5\n", "sm_90a")


def test_tilec_libdevice_env_wins(monkeypatch, tmp_path, fresh_caches):
    fake = tmp_path / "libdevice.10.bc"
    monkeypatch.setenv("TILEC_LIBDEVICE", str(fake))
    assert find_libdevice() == fake


def test_found_libdevice_is_bitcode():
    if os.environ.get("TILEC_LIBDEVICE"):
        pytest.skip("TILEC_LIBDEVICE is set")
    path = find_libdevice()
    if path is None:
        pytest.skip("no libdevice.10.bc found: `pip install 'tilec[cuda]'`")
    assert path.name == "libdevice.10.bc"
    assert path.read_bytes()[:4] == b"BC\xc0\xde"


@pytest.mark.parametrize("folder", ["cu13", "cuda_nvcc"], ids=["cuda13-wheels", "cuda12-wheel"])
def test_the_cuda_wheels_layouts_are_found(folder, monkeypatch, tmp_path, fresh_caches):
    """Where nvidia-nvvm and nvidia-cuda-nvcc 13, and nvidia-cuda-nvcc-cu12 12.9,
    put the files (their RECORDs), under an `nvidia` namespace folder."""
    wanted = [tmp_path / "nvidia" / folder / relative for relative in ("nvvm/libdevice/libdevice.10.bc", "bin/ptxas")]
    for path in wanted:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"")
    monkeypatch.delenv("TILEC_LIBDEVICE", raising=False)
    monkeypatch.delenv("TILEC_PTXAS", raising=False)
    monkeypatch.setattr(ptxas_mod, "_namespace_dirs", lambda package: [tmp_path / package] if package == "nvidia" else [])
    assert [find_libdevice(), find_ptxas()] == wanted


def test_an_installed_triton_is_found_behind_an_alias(monkeypatch, tmp_path, fresh_caches):
    """Where `triton` imports as an alias of tilec (drop-in mode, Triton's tests on
    tilec), the installed Triton's bundled tools are still found: through its
    distribution's files, not the import system."""
    site, alias = tmp_path / "site", tmp_path / "alias"
    (site / "triton-3.6.0.dist-info").mkdir(parents=True)
    (site / "triton-3.6.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: triton\nVersion: 3.6.0\n")
    (site / "triton").mkdir()
    (alias / "triton").mkdir(parents=True)
    (alias / "triton" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(alias))
    importlib.invalidate_caches()
    assert site / "triton" in ptxas_mod._triton_dirs()
