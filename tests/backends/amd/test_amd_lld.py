"""Where the AMD backend finds ld.lld (``tilec/backends/amd/lld.py``):
``TILEC_LLD`` first, then the ziglang wheel's, then ROCm's (``$ROCM_PATH``,
then ``/opt/rocm``); without any, a compile ends at the object and says why,
and linking says what to install."""
from __future__ import annotations

import stat

import numpy as np
import pytest

import tilec
from backends.amd.amd_helpers import needs_lld
from kernels.vector_add import add_kernel
from tilec.backends.amd import lld
from tilec.errors import TilecError


@pytest.fixture
def search(monkeypatch, tmp_path):
    """ld.lld's search with no wheel and no ROCm unless a test adds them; the cache cleared around it."""
    monkeypatch.delenv("TILEC_LLD", raising=False)
    monkeypatch.delenv("ROCM_PATH", raising=False)
    monkeypatch.setattr(lld, "ROCM_LLDS", (str(tmp_path / "opt-rocm" / "llvm" / "bin" / "ld.lld"),))
    monkeypatch.setattr(lld, "_ziglang_lld", lambda: None)
    lld.find_lld.cache_clear()
    yield monkeypatch
    lld.find_lld.cache_clear()


def executable(path, text="#!/bin/sh\nexit 1\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_search_order_is_tilec_lld_the_wheel_then_rocm(search, tmp_path):
    assert lld.find_lld() is None
    standard = executable(tmp_path / "opt-rocm" / "llvm" / "bin" / "ld.lld")
    lld.find_lld.cache_clear()
    assert lld.find_lld() == (standard,)
    search.setenv("ROCM_PATH", str(tmp_path / "rocm-6.4"))
    rocm = executable(tmp_path / "rocm-6.4" / "llvm" / "bin" / "ld.lld")
    lld.find_lld.cache_clear()
    assert lld.find_lld() == (rocm,)
    search.setattr(lld, "_ziglang_lld", lambda: ("/wheel/ziglang/zig", "ld.lld"))
    lld.find_lld.cache_clear()
    assert lld.find_lld() == ("/wheel/ziglang/zig", "ld.lld")
    search.setenv("TILEC_LLD", str(tmp_path / "mine" / "ld.lld"))
    lld.find_lld.cache_clear()
    assert lld.find_lld() == (str(tmp_path / "mine" / "ld.lld"),)
    assert lld.lld_file() == tmp_path / "mine" / "ld.lld"


def test_without_ld_lld_a_compile_ends_at_the_object_and_says_why(search):
    from tilec.targets.registry import backend

    x = np.zeros(1024, np.float32)
    # a kernel of its own: the variant without a code object stays out of add_kernel's cache
    compiled = tilec.jit(add_kernel.fn).compile(x, x, x, 1024, BLOCK_SIZE=1024, target="gfx942")
    assert list(compiled.asm)[-2:] == ["asm", "obj"] and "hsaco" not in compiled.asm
    assert "no ld.lld was found" in backend("amd").why_missing("hsaco")
    with pytest.raises(TilecError, match=r"linking the AMD code object of `add_kernel` needs ld\.lld, which was not "
                                         r"found: install tilec's `amd` extra .*, or set TILEC_LLD"):
        lld.link(compiled.asm["obj"], "add_kernel")
    assert lld.toolchain_report()[0][1].startswith("not found")


@needs_lld
def test_tilec_lld_links_with_the_binary_it_names(search, tmp_path):
    lld.find_lld.cache_clear()
    search.undo()  # the real search, for the ld.lld this machine has
    real = " ".join(lld.find_lld())
    lld.find_lld.cache_clear()
    search.setenv("TILEC_LLD", executable(tmp_path / "ld.lld", f'#!/bin/sh\nexec {real} "$@"\n'))
    x = np.zeros(1024, np.float32)
    code = lld.link(add_kernel.compile(x, x, x, 1024, BLOCK_SIZE=1024, target="gfx1100").asm["obj"], "add_kernel")
    assert code[:4] == b"\x7fELF"
    failing = executable(tmp_path / "failing" / "ld.lld", "#!/bin/sh\necho 'ld.lld: error: no' >&2\nexit 1\n")
    search.setenv("TILEC_LLD", failing)
    lld.find_lld.cache_clear()
    with pytest.raises(TilecError, match=rf"ld\.lld failed to link the AMD code object of `k` \({failing}\):\n"
                                         r"ld\.lld: error: no"):
        lld.link(b"", "k")
