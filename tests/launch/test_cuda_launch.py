"""Kernels launched on a real NVIDIA GPU through ``cuda.py`` (``pytest -m gpu``;
skipped without one): results against torch, every kind of array and scalar,
streams, grids, shared memory past 48 KB, errors, and the cost of a launch.
``test_cuda_launcher.py`` checks the same plumbing everywhere with a fake driver."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tilec
import tilec.language as tl
from launch.kernels import add_kernel, empty_kernel, fresh, scalars_kernel, transpose_kernel
from tilec.backends.nvidia import libcuda

pytestmark = pytest.mark.gpu


@tilec.jit
def axpy_kernel(x_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    torch.zeros(1, device="cuda")  # torch sets up the primary context we share
    return torch


def launch_add(x, y, out, n, **options):
    add_kernel[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, n, **options)


class CudaArrayInterface:
    """A device array known only through ``__cuda_array_interface__`` (as numba's)."""

    def __init__(self, t):
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class DlpackOnly:
    """A device array known only through DLPack."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


@pytest.mark.parametrize("n", [1, 1000, 4096, 100_003, 1 << 22])
def test_vector_add_matches_torch(torch, n):
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n + 1,), -7.0, device="cuda")  # one spare element the mask must protect
    launch_add(x, y, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out[:n], x + y) and out[n].item() == -7.0


def test_interface_and_dlpack_arrays(torch):
    n = 5000
    x, y, out = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.zeros(n, device="cuda")
    launch_add(x, CudaArrayInterface(y), DlpackOnly(out), n)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y)


def test_offset_views_pass_their_own_address(torch):
    base = torch.randn(4099, device="cuda")
    x, out = base[3:], torch.zeros(4096, device="cuda")  # 12 bytes in: not 16-byte aligned
    launch_add(x, x, DlpackOnly(out), 4096)
    torch.cuda.synchronize()
    assert torch.equal(out, 2 * x)


def test_scalars(torch):
    out = torch.zeros(1, dtype=torch.int64, device="cuda")
    scalars_kernel[(1,)](out, 7, 2**40, 2.5, True)
    assert out.item() == 7 + 2**40 + 2
    scalars_kernel[(1,)](out, -3, -(2**40), 1.0, False)
    assert out.item() == 0
    x, got = torch.randn(1000, device="cuda"), torch.empty(1000, device="cuda")
    axpy_kernel[(4,)](x, got, 0.25, 1000)
    torch.cuda.synchronize()
    assert torch.equal(got, 0.25 * x)


def last_stream(kernel) -> int:
    """The stream of ``kernel``'s last launch, as its launch frame holds it."""
    (compiled,) = [c for c in kernel.cache.values() if c.runtime]
    frame = compiled.runtime[0].frame
    return libcuda.read_launch(frame.config_address, frame.params_address, ())["stream"]


def test_stream_argument_and_torch_current_stream(torch):
    kernel = fresh(add_kernel)
    n = 1 << 20
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x, y, out = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
        for _ in range(2):  # the general path, then the fast one
            out.zero_()
            kernel[(n // 1024,)](x, y, out, n)  # torch's current stream: s
            assert last_stream(kernel) == s.cuda_stream
    s.synchronize()
    assert torch.equal(out, x + y)
    out2 = torch.empty(n, device="cuda")
    kernel[(n // 1024,)](x, y, out2, n, stream=s)
    assert last_stream(kernel) == s.cuda_stream
    s.synchronize()
    assert torch.equal(out2, x + y)
    kernel[(n // 1024,)](x, y, out2, n)
    assert last_stream(kernel) == torch.cuda.current_stream().cuda_stream != s.cuda_stream


def test_grid_lambda_and_num_warps(torch):
    n = 70_000
    x, y, out = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    for warps in (1, 2, 4, 8):
        out.zero_()
        launch_add(x, y, out, n, BLOCK=512, num_warps=warps)
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)


@tilec.jit
def grid_y_kernel(out_ptr):
    """out[program_id(1)] = program_id(1) + 1, from program 0 of x and z."""
    if (tl.program_id(0) == 0) & (tl.program_id(2) == 0):
        tl.store(out_ptr + tl.program_id(1), tl.program_id(1) + 1)


def test_grid_limits_agree_with_the_driver(torch):
    """The largest y and z the checks allow run on the GPU; one more is refused before the driver."""
    out = torch.zeros(2**16 - 1, dtype=torch.int32, device="cuda")
    grid_y_kernel[(2, 2**16 - 1, 2)](out)
    torch.cuda.synchronize()
    assert torch.equal(out.cpu(), torch.arange(1, 2**16, dtype=torch.int32))
    for grid in ((1, 2**16), (1, 1, 2**16), (2**31,)):
        with pytest.raises(ValueError, match="is too large"):
            grid_y_kernel[grid](out)


def test_shared_memory_past_48_kb(torch):
    x = torch.randn(128, 128, device="cuda")
    out = torch.empty_like(x)
    kernel = fresh(transpose_kernel)
    kernel[(1,)](x, out, N=128, num_warps=8)
    torch.cuda.synchronize()
    (compiled,) = kernel.cache.values()
    assert compiled.metadata.shared == 64 * 1024
    assert torch.equal(out, x.T)


def test_compile_targets_this_device(torch):
    """The device's arch, in its arch-specific variant where it has one (sm_90a: wgmma)."""
    from tilec.backends.nvidia.target import ARCH_SPECIFIC

    major, minor = torch.cuda.get_device_capability()
    x = torch.zeros(16, device="cuda")
    arch = f"sm_{major}{minor}"
    assert fresh(add_kernel).compile(x, x, x, 16).target == ARCH_SPECIFIC.get(arch, arch)


def test_host_and_device_arrays_mixed(torch):
    x = torch.zeros(16, device="cuda")
    with pytest.raises(ValueError, match=r"different devices \(cuda: `x_ptr`, `out_ptr`; host: `y_ptr`\)"):
        add_kernel[(1,)](x, np.zeros(16, np.float32), x, 16)


def test_second_device_leaves_torch_current_device_alone(torch):
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = torch.randn(1000, device="cuda:1")
    out = torch.empty_like(x)
    launch_add(x, x, out, 1000)
    torch.cuda.synchronize(1)
    assert torch.equal(out, 2 * x) and torch.cuda.current_device() == 0


_FAULT_SCRIPT = textwrap.dedent("""
    import torch, tilec, tilec.language as tl

    @tilec.jit
    def oob_kernel(out_ptr, offset, BLOCK: tl.constexpr):
        tl.store(out_ptr + offset + tl.arange(0, BLOCK), tl.full((BLOCK,), 1.0, tl.float32))

    out = torch.zeros(128, device="cuda")
    oob_kernel[(1,)](out, 2**40, BLOCK=128)
    torch.cuda.synchronize()
""")


def test_fault_under_tilec_sync_names_the_kernel(torch, tmp_path):
    """A fault poisons the context, so it runs in a process of its own."""
    script = tmp_path / "fault.py"
    script.write_text(_FAULT_SCRIPT)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, TILEC_SYNC="1", PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0
    assert "CudaError: kernel `oob_kernel`: running it (TILEC_SYNC=1" in proc.stderr, proc.stderr
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in proc.stderr


def test_launch_overhead(torch):
    x = torch.empty(16, device="cuda")
    launch = empty_kernel[(1,)]
    for _ in range(100):
        launch(x, x, x, 16)
    torch.cuda.synchronize()
    samples = []
    for _ in range(2000):
        t0 = time.perf_counter_ns()
        launch(x, x, x, 16)
        samples.append(time.perf_counter_ns() - t0)
    torch.cuda.synchronize()
    us = statistics.median(samples) / 1000
    print(f"\n[cuda launch] empty 4-argument kernel, torch tensors, median host wall clock: {us:.2f} us")
    assert us < 30
