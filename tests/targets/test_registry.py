"""tilec.targets.registry: the backend of each target and place, the stages
every backend makes, what tilec picks when nobody said, and that a new
backend is its own module plus one line in ``FAMILIES`` (the toy family here)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from launch.kernels import add_kernel, fresh
from tilec.backends.host import launcher as host_launcher
from tilec.backends.interpreter import launcher as interpreter_launcher
from tilec.backends.amd import hip
from tilec.backends.nvidia import cuda
from tilec.ir.printer import print_function
from tilec.launch.cache_entry import kernel_sections, serialize_kernel, unpack_entry
from tilec.launch.compiler import run_stages
from tilec.targets import registry
from tilec.targets.registry import Backend, Stage

ROOT = Path(__file__).resolve().parents[2]


def vectors(n=256):
    x = np.zeros(n, np.float32)
    return x, x.copy(), x.copy(), n


def test_every_target_has_one_backend_and_an_unknown_one_is_refused():
    assert registry.target_names() == ("host", "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", "cpu", "cpu-streaming",
                                       "aarch64", "gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201")
    assert registry.backend_for("host") is registry.backend("interpreter")
    assert all(registry.backend_for(t) is registry.backend("nvidia") for t in registry.target_names()[1:6])
    assert all(registry.backend_for(t) is registry.backend("host") for t in ("cpu", "cpu-streaming", "aarch64"))
    assert all(registry.backend_for(t) is registry.backend("amd") for t in registry.target_names()[9:])
    for bad in ("sm_75", "gfx908", "", None, ["host"]):
        with pytest.raises(ValueError, match=r"unknown target .*; tilec compiles for host, sm_80, .*, sm_90a, cpu, "
                                             r"cpu-streaming, aarch64, gfx90a, .*, gfx1201$"):
            registry.backend_for(bad)


def test_each_place_has_the_launcher_of_one_backend():
    assert registry.backend_for_place("host").launcher() is host_launcher
    assert registry.backend_for_place("host", reference=True).launcher() is interpreter_launcher
    assert registry.backend_for_place("cuda").launcher() is cuda
    assert registry.backend_for_place("rocm").launcher() is hip
    assert registry.backend_for_place("xpu") is None


def test_stages_and_defaults_come_from_the_backends():
    assert registry.stage_names() == ("tir-gpu", "llir", "ptx", "cubin", "asm", "obj", "hsaco")
    assert registry.default_target() == "sm_90"  # a GPU family before the host
    assert [b.default_stage for b in registry.backends()] == ["tir-opt", "ptx", "asm", "asm"]


def test_importing_tilec_loads_no_backend_and_asking_loads_only_their_packages():
    code = ("import sys, tilec, tilec.runtime, tilec.cli\n"
            "def loaded(): return sorted(m for m in sys.modules if m.startswith(('tilec.backends', 'llvmlite', 'cuda')))\n"
            "print(loaded())\n"
            "from tilec.targets import registry\n"
            "registry.target_names()\n"
            "print(loaded())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.splitlines()
    assert out == ["[]", str(["tilec.backends", "tilec.backends.amd", "tilec.backends.amd.target",
                              "tilec.backends.host", "tilec.backends.interpreter",
                              "tilec.backends.nvidia", "tilec.backends.nvidia.target"])]


# --- a new family: this module is its rooms, one FAMILIES line registers it ---------------------
class ToyBackend(Backend):
    """A compile-only family: its one stage writes the optimized IR in capitals."""

    targets = ("toy",)
    default_target = "toy"
    default_stage = "shout"
    stages = (Stage("shout", "txt", lambda fn, context: print_function(fn).upper()),)

    def compile(self, compiled):
        run_stages(compiled, self.stages, None)


BACKEND = ToyBackend()


def forget_backends():
    for cached in (registry.backend, registry._backends_by_target, registry.backend_for_place):
        cached.cache_clear()


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(registry.FAMILIES, "toy", __name__)
    forget_backends()
    yield BACKEND
    forget_backends()  # before monkeypatch takes the line out: the next question reads FAMILIES again


def test_a_backend_is_its_rooms_and_one_registry_line(toy, tmp_path, monkeypatch):
    assert registry.target_names()[-1] == "toy" and registry.stage_names()[-1] == "shout"
    monkeypatch.setenv("TILEC_DUMP", "shout")
    monkeypatch.setenv("TILEC_DUMP_DIR", str(tmp_path))
    k = fresh(add_kernel).compile(*vectors(), target="toy")
    assert list(k.asm) == ["tir", "tir-opt", "shout"] and k.asm["shout"] == k.asm["tir-opt"].upper()
    assert [p.suffix for p in tmp_path.iterdir()] == [".txt"]
    sections = unpack_entry(serialize_kernel(k), "kernel", kernel_sections("toy"))[1]
    assert sections["shout"] == k.asm["shout"]
    assert registry.default_target() == "sm_90" and registry.backend_for_place("host") is not toy


def test_a_compile_only_backend_runs_nowhere(toy):
    with pytest.raises(NotImplementedError, match="ToyBackend runs nothing"):
        toy.launcher()
    assert toy.toolchain("toy") == () and toy.target("toy") is None and toy.report() == []
