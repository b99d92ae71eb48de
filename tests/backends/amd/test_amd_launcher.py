"""The AMD launcher (``tilec/backends/amd/hip.py``, ``kernargs.py``): what can
be checked without an AMD GPU -- the kernel-argument buffer at the offsets
and sizes the code object's metadata gives, a clear error without hip-python
or its runtime, no device, a device of another arch (hip-python stood in
for), ``python -m tilec info``'s line for each AMD GPU -- and, marked
``amd``, launches on a GPU (skipped without one)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import tilec
import tilec.language as tl
from backends.amd.amd_helpers import compile_amd, needs_lld
from kernels.vector_add import add_kernel
from tilec.backends.amd import hip
from tilec.backends.amd.kernargs import kernarg_layout
from tilec.errors import TilecError


@tilec.jit
def _mixed(flag, x_ptr, small, scale, big, half, out_ptr):
    if flag:
        tl.store(out_ptr, tl.load(x_ptr) * scale + small + big + half)


def layout_of(kernel, *args, **options):
    compiled, _, meta = compile_amd(kernel, *args, target="gfx942", **options)
    return compiled, kernarg_layout([a.type for a in compiled.fn.args], compiled.fn.arg_names, meta)


@needs_lld
def test_arguments_pack_at_the_offsets_the_code_object_gives():
    x = np.zeros(64, np.float32)
    compiled, layout = layout_of(_mixed, True, x, np.int16(-3), 2.5, np.int64(-2**40), np.float16(1.5), x)
    assert [(s.name, s.offset, s.size) for s in layout.slots] == [
        ("flag", 0, 1), ("x_ptr", 8, 8), ("small", 16, 2), ("scale", 20, 4), ("big", 24, 8), ("half", 32, 2),
        ("out_ptr", 40, 8)]
    buf = layout.pack([True, 0x1000, np.int16(-3), 2.5, -2**40, np.float16(1.5), 0x2000])
    assert len(buf) == layout.size == 48
    assert struct.unpack_from("<B", buf, 0) == (1,) and struct.unpack_from("<Q", buf, 8) == (0x1000,)
    assert [struct.unpack_from(f, buf, at)[0] for f, at in (("<h", 16), ("<f", 20), ("<q", 24), ("<e", 32))] == [
        -3, 2.5, -2**40, 1.5]
    assert struct.unpack_from("<Q", buf, 40) == (0x2000,)


@needs_lld
def test_a_value_that_does_not_fit_names_the_argument():
    x = np.zeros(98432, np.float32)
    _, layout = layout_of(add_kernel, x, x, x, 98432, BLOCK_SIZE=1024)
    assert [(s.offset, s.fmt) for s in layout.slots] == [(0, "Q"), (8, "Q"), (16, "Q"), (24, "i")]
    with pytest.raises(TilecError, match=r"argument `n_elements`: 4294967296 does not fit"):
        layout.pack([1, 2, 3, 2**32])
    with pytest.raises(TilecError, match="takes 4 arguments, 3 were given"):
        layout.pack([1, 2, 3])


def test_without_the_hip_runtime_the_error_says_what_to_install(monkeypatch):
    if hip.available():
        pytest.skip("this machine has an AMD GPU")
    hip.runtime.cache_clear()
    with pytest.raises(hip.HipUnavailable, match=r"(hip-python is not installed|no HIP runtime).*pip install 'tilec\[amd\]'"):
        hip.check_available()
    assert hip.device_report()[0][0] == "AMD GPUs"


@pytest.mark.amd
def test_vector_add_on_an_amd_gpu():
    torch = pytest.importorskip("torch")
    x = torch.rand(98432, device="cuda")
    y = torch.rand(98432, device="cuda")
    out = torch.empty_like(x)
    add_kernel[(tilec.cdiv(98432, 1024),)](x, y, out, 98432, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x + y)


# --- hip-python stood in for: what each machine without a usable GPU is told -------------------------
class _FakeHip:
    """hip-python's ``hip.hip`` as far as ``hip.py`` calls it, over ``devices``
    ((name, gcnArchName) each), or failing to load the runtime when ``dlopen_error``."""

    def __init__(self, devices=(), dlopen_error=None):
        self.devices, self.dlopen_error = list(devices), dlopen_error

    def hipInit(self, flags):
        if self.dlopen_error:
            raise RuntimeError(self.dlopen_error)
        return (0,)

    def hipGetDeviceCount(self):
        return (0, len(self.devices))

    def hipDeviceProp_t(self):
        return type("hipDeviceProp_t", (), {})()

    def hipGetDeviceProperties(self, props, device):
        props.name, props.gcnArchName = (s.encode() for s in self.devices[device])
        return (0,)


@pytest.fixture
def fake_hip(monkeypatch):
    """Install a ``_FakeHip`` as hip-python (``fake_hip(...)``); the launcher's caches cleared around it."""
    import sys
    import types

    caches = (hip.runtime, hip.available, hip._properties, hip.device_arch)

    def install(**kwargs):
        for cache in caches:
            cache.cache_clear()
        monkeypatch.setitem(sys.modules, "hip", types.SimpleNamespace(hip=_FakeHip(**kwargs)))

    yield install
    for cache in caches:
        cache.cache_clear()


def test_without_libamdhip64_the_error_says_there_is_no_hip_runtime(fake_hip):
    fake_hip(dlopen_error="failed to dlopen 'libamdhip64.so': cannot open shared object file")
    with pytest.raises(hip.HipUnavailable, match=r"no HIP runtime: failed to dlopen 'libamdhip64\.so'.*"
                                                 r"pip install 'tilec\[amd\]'\) and ROCm's HIP runtime"):
        hip.check_available()
    assert not hip.available()
    (label, why), = hip.device_report()
    assert label == "AMD GPUs" and why.startswith("no HIP runtime: failed to dlopen")


def test_a_runtime_without_a_device_says_so(fake_hip):
    fake_hip()
    with pytest.raises(hip.HipUnavailable, match="the HIP runtime finds no AMD GPU"):
        hip.check_available()
    assert hip.device_report() == [("AMD GPUs", "none")]
    assert hip.default_target([], None) == "gfx942"  # compiles for the default arch, launches nowhere


def test_info_lists_each_amd_gpu_and_its_arch(fake_hip):
    from tilec.cli import info_lines

    fake_hip(devices=[("AMD Instinct MI300X", "gfx942:sramecc+:xnack-"), ("Radeon RX 9070 XT", "gfx1201")])
    lines = dict(info_lines())
    assert lines["AMD GPU 0"] == "AMD Instinct MI300X (gfx942:sramecc+:xnack-)"
    assert lines["AMD GPU 1"] == "Radeon RX 9070 XT (gfx1201)"
    assert hip.device_arch(0) == "gfx942" and hip.target([], 1) == "gfx1201"


def test_a_gpu_of_another_arch_is_named_with_the_archs_tilec_has(fake_hip):
    fake_hip(devices=[("AMD Instinct MI100", "gfx908:sramecc+:xnack-")])
    with pytest.raises(TilecError, match="AMD device 0 is gfx908; tilec compiles for gfx90a, gfx942, gfx950, "
                                         "gfx1100, gfx1201"):
        hip.device_arch(0)
