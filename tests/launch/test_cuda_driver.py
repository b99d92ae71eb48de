"""The CUDA driver layer: the no-CUDA path and error text run everywhere; the
`gpu` tests load hand-written PTX and launch it through ``libcuda``."""
from __future__ import annotations

import enum
import statistics
import sys
import time
import types

import pytest

from tilec.errors import TilecError
from tilec.backends.nvidia import cuda_driver as cd, libcuda


@pytest.fixture
def fresh_driver(monkeypatch):
    """Forget any loaded bindings for the test, and restore them after."""
    monkeypatch.setattr(cd, "_driver", None)
    return monkeypatch


class FakeResult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NO_DEVICE = 100
    CUDA_ERROR_NOT_FOUND = 500


def fake_bindings(init_result: FakeResult) -> types.ModuleType:
    mod = types.ModuleType("fake_cuda_driver")
    mod.CUresult = FakeResult
    mod.cuInit = lambda flags: (init_result,)
    mod.cuGetErrorName = lambda err: (FakeResult.CUDA_SUCCESS, FakeResult(err).name.encode())
    mod.cuGetErrorString = lambda err: (FakeResult.CUDA_SUCCESS, b"no CUDA-capable device is detected")
    return mod


# --- no CUDA ----------------------------------------------------------------
def test_missing_package_says_how_to_install(fresh_driver):
    fresh_driver.setattr(cd, "BINDINGS", ("tilec_no_such_pkg.driver", "tilec_no_such_pkg.cuda"))
    with pytest.raises(cd.CudaUnavailable, match=r"install tilec\[cuda\]") as info:
        cd.driver()
    assert isinstance(info.value, TilecError)


def test_cuinit_failure_names_the_error(fresh_driver):
    fresh_driver.setitem(sys.modules, "fake_cuda_driver", fake_bindings(FakeResult.CUDA_ERROR_NO_DEVICE))
    fresh_driver.setattr(cd, "BINDINGS", ("fake_cuda_driver",))
    with pytest.raises(cd.CudaUnavailable, match="no CUDA driver: CUDA_ERROR_NO_DEVICE") as info:
        cd.driver()
    assert "no CUDA-capable device" in str(info.value)
    assert cd._driver is None  # not cached: a later call tries again


def test_driver_initializes_once(fresh_driver):
    calls = []
    mod = fake_bindings(FakeResult.CUDA_SUCCESS)
    mod.cuInit = lambda flags: calls.append(flags) or (FakeResult.CUDA_SUCCESS,)
    fresh_driver.setitem(sys.modules, "fake_cuda_driver", mod)
    fresh_driver.setattr(cd, "BINDINGS", ("tilec_no_such_pkg.driver", "fake_cuda_driver"))
    assert cd.driver() is mod and cd.driver() is mod
    assert calls == [0]


# --- check ------------------------------------------------------------------
def test_check_unwraps_values():
    ok = FakeResult.CUDA_SUCCESS
    assert cd.check((ok,), "x") is None
    assert cd.check((ok, 7), "x") == 7
    assert cd.check((ok, 7, 8), "x") == (7, 8)


def test_check_formats_errors_with_the_driver(fresh_driver):
    fresh_driver.setattr(cd, "_driver", fake_bindings(FakeResult.CUDA_SUCCESS))
    with pytest.raises(cd.CudaError) as info:
        cd.check((FakeResult.CUDA_ERROR_NO_DEVICE, None), "kernel `add`: cuModuleGetFunction")
    e = info.value
    assert (e.code, e.name, e.what) == (100, "CUDA_ERROR_NO_DEVICE", "kernel `add`: cuModuleGetFunction")
    assert str(e) == "kernel `add`: cuModuleGetFunction: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
    assert isinstance(e, TilecError)


def test_check_formats_errors_without_a_driver(fresh_driver):
    with pytest.raises(cd.CudaError, match=r"^loading: CUDA_ERROR_NOT_FOUND$"):
        cd.check((FakeResult.CUDA_ERROR_NOT_FOUND,), "loading")
    with pytest.raises(cd.CudaError, match=r"^loading: CUresult 999$"):
        cd.check((999,), "loading")


# --- on a GPU ---------------------------------------------------------------
ADD_IR = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()

define ptx_kernel void @add(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %out, i32 %n) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %cta = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %cta, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %body, label %exit
body:
  %idx = sext i32 %i to i64
  %pa = getelementptr float, ptr addrspace(1) %a, i64 %idx
  %pb = getelementptr float, ptr addrspace(1) %b, i64 %idx
  %po = getelementptr float, ptr addrspace(1) %out, i64 %idx
  %va = load float, ptr addrspace(1) %pa, align 4
  %vb = load float, ptr addrspace(1) %pb, align 4
  %s = fadd float %va, %vb
  store float %s, ptr addrspace(1) %po, align 4
  br label %exit
exit:
  ret void
}

define ptx_kernel void @empty(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, i32 %n) {
  ret void
}
"""


def test_add_ir_emits_ptx():
    pytest.importorskip("llvmlite")
    from tilec.backends.nvidia.target import emit_ptx

    ptx = emit_ptx(ADD_IR, "sm_90")
    assert ".entry add(" in ptx and ".entry empty(" in ptx


@pytest.fixture(scope="module")
def gpu_module():
    torch = pytest.importorskip("torch")
    from tilec.backends.nvidia.target import emit_ptx

    arch = cd.compute_capability(0)
    ptx = emit_ptx(ADD_IR, arch if arch in ("sm_80", "sm_86", "sm_89", "sm_90") else "sm_80")
    torch.zeros(1, device="cuda")  # let torch set up its context first; ours is the same primary one
    return torch, cd.load_ptx(ptx, 0), ptx


@pytest.mark.gpu
def test_device_queries(gpu_module):
    torch, _, _ = gpu_module
    major, minor = torch.cuda.get_device_capability(0)
    assert cd.compute_capability(0) == f"sm_{major}{minor}"
    assert cd.device_name(0) == torch.cuda.get_device_name(0)
    assert cd.device_count() == torch.cuda.device_count()
    assert cd.primary_context(0) is cd.primary_context(0)
    print(f"\n[cuda_driver] {cd.device_name(0)} ({cd.compute_capability(0)})")


@pytest.mark.gpu
def test_modules_are_cached(gpu_module):
    _, module, ptx = gpu_module
    assert cd.load_ptx(ptx, 0) is module
    assert cd.get_function(module, "add") is cd.get_function(module, "add")


@pytest.mark.gpu
def test_vector_add_matches_torch(gpu_module):
    torch, module, _ = gpu_module
    add = cd.get_function(module, "add")
    frame = libcuda.LaunchFrame(["ptr", "ptr", "ptr", "i32"])
    stream = torch.cuda.current_stream().cuda_stream
    for n in (1, 1000, 4096, 100_003):
        a = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        out = torch.full((n + 1,), -7.0, device="cuda")  # one spare element the guard must not touch
        block = 128
        frame.pack(((n + block - 1) // block, 1, 1), (block, 1, 1), 0, stream, [a, b, out, n])
        libcuda.launch(add, frame)
        torch.cuda.synchronize()
        assert torch.equal(out[:n], a + b)
        assert out[n].item() == -7.0


@pytest.mark.gpu
def test_large_dynamic_shared_memory(gpu_module):
    torch, module, _ = gpu_module
    add = cd.get_function(module, "add")
    a = torch.ones(256, device="cuda")
    out = torch.empty(256, device="cuda")
    frame = libcuda.LaunchFrame(["ptr", "ptr", "ptr", "i32"])
    stream = torch.cuda.current_stream().cuda_stream
    nbytes = 96 * 1024
    frame.pack((2, 1, 1), (128, 1, 1), nbytes, stream, [a, a, out, 256])
    with pytest.raises(cd.CudaError, match=r"kernel `add`: launching grid \(2, 1, 1\) .* 98304 bytes"):
        libcuda.launch(add, frame)
    cd.set_max_dynamic_shared(add, nbytes)
    libcuda.launch(add, frame)
    torch.cuda.synchronize()
    assert torch.equal(out, a + a)


@pytest.mark.gpu
def test_missing_kernel_is_a_cuda_error(gpu_module):
    _, module, _ = gpu_module
    with pytest.raises(cd.CudaError, match="kernel `nope`: cuModuleGetFunction: CUDA_ERROR_NOT_FOUND"):
        cd.get_function(module, "nope")


@pytest.mark.gpu
def test_bad_ptx_is_a_cuda_error(gpu_module):
    with pytest.raises(cd.CudaError, match="cuModuleLoadData"):
        cd.load_ptx(".version 8.5\n.target sm_90\n.address_size 64\nthis is not ptx\n", 0)


@pytest.mark.gpu
def test_launch_cost_of_an_empty_kernel(gpu_module):
    """The driver's own cost: a bare ``cuLaunchKernelEx`` of a packed frame through
    ctypes, and through cuda-python's ``cuLaunchKernel`` for comparison."""
    torch, module, _ = gpu_module
    empty = cd.get_function(module, "empty")
    x = torch.empty(16, device="cuda")
    frame = libcuda.LaunchFrame(["ptr", "ptr", "ptr", "i32"])
    stream = torch.cuda.current_stream().cuda_stream
    frame.pack((1, 1, 1), (128, 1, 1), 0, stream, [x.data_ptr()] * 3 + [16])
    drv, lib = cd.driver(), libcuda.functions()
    cu_stream, handle, address = drv.CUstream(stream), empty.handle, empty.address
    ways = {
        "ctypes cuLaunchKernelEx": lambda: lib.launch_kernel_ex(frame.config_address, address, frame.params_address,
                                                                None),
        "cuda-python cuLaunchKernel": lambda: drv.cuLaunchKernel(handle, 1, 1, 1, 128, 1, 1, 0, cu_stream,
                                                                 frame.params_address, 0),
    }
    timings = {}
    for label, way in ways.items():
        for _ in range(200):
            way()
        torch.cuda.synchronize()
        samples = []
        for _ in range(2000):
            t0 = time.perf_counter_ns()
            way()
            samples.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
        timings[label] = statistics.median(samples) / 1000
    print("\n[cuda_driver] empty 4-arg kernel, median host wall clock over 2000 launches: "
          + ", ".join(f"{label} {us:.2f} us" for label, us in timings.items()))
    assert timings["ctypes cuLaunchKernelEx"] < 100  # a sanity bound, not a benchmark gate
