"""The CUDA launcher's plumbing, everywhere: a fake driver layer stands in for
``cuda_driver`` (the real compile pipeline runs), so argument order and
packing, devices, streams, caching, resource checks, the sync mode and the
no-CUDA path are checked without a GPU.  ``test_cuda_launch.py`` runs the
same launcher on a real one."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest

import tilec
from launch.fake_gpu import FakeCudaArray, arrays, gpu  # noqa: F401 (gpu: a fixture)
from launch.kernels import add_kernel, fresh, scalars_kernel, transpose_kernel
from tilec.errors import OutOfResources, TilecError
from tilec.backends.nvidia import cuda, cuda_driver as cd
from tilec.targets import registry
from tilec.backends.nvidia import ptxas


# --- launching ------------------------------------------------------------------
def test_launch_packs_parameters_in_order(gpu):
    k = fresh(add_kernel)
    x, y, out = arrays()
    k[(5,)](x, y, out, 600)
    (launch,) = gpu.launches
    assert launch["values"] == [0x7F00_0000_0000, 0x7F00_0001_0000, 0x7F00_0002_0000, 600]
    assert (launch["name"], launch["grid"], launch["block"], launch["shared"], launch["stream"]) == \
        ("add_kernel", (5, 1, 1), (128, 1, 1), 0, 0)
    assert gpu.loads == [("cubin", 0)]
    (compiled,) = k.cache.values()
    assert compiled.target == "sm_90a" and set(compiled.runtime) == {0}  # the fake sm_90 device's own variant


def test_second_launch_reuses_the_loaded_kernel_and_frame(gpu):
    k = fresh(add_kernel)
    x, y, out = arrays()
    k[(1,)](x, y, out, 100)
    k[(2,)](x, y, out, 200, num_warps=4)
    first, second = gpu.launches
    assert len(gpu.loads) == 1 and first["frame"] is second["frame"] and second["values"][3] == 200


def test_num_warps_sets_the_block_and_a_variant(gpu):
    k = fresh(add_kernel)
    k[(1,)](*arrays(), 100, num_warps=8)
    assert gpu.launches[0]["block"] == (256, 1, 1)
    assert next(iter(k.cache.values())).metadata.num_warps == 8


def test_parameters_follow_the_ir_when_the_front_end_drops_one(gpu):
    k = fresh(add_kernel)
    k[(1,)](*arrays(), 1)  # n == 1 is specialized away: the kernel takes three pointers
    assert len(gpu.launches[0]["values"]) == 3


def test_scalar_kinds(gpu):
    k = fresh(scalars_kernel)
    k[(1,)](FakeCudaArray(typestr="<i8"), 7, 2**40, 0.5, True)
    assert gpu.launches[0]["values"] == [0x7F00_0000_0000, 7, 2**40, 0.5, True]
    assert gpu.launches[0]["frame"].kinds == ("ptr", "i32", "i64", "f32", "i1")


@pytest.mark.parametrize("form", ["tuple", "lambda"])
def test_grids(gpu, form):
    grid = (3, 2) if form == "tuple" else lambda meta: (tilec.cdiv(meta["n"], meta["BLOCK"]), 2)
    add_kernel[grid](*arrays(), 3000)
    assert gpu.launches[-1]["grid"] == (3, 2, 1)


def test_empty_grid_launches_nothing(gpu):
    add_kernel[(0,)](*arrays(), 300)
    assert gpu.launches == []


# --- devices --------------------------------------------------------------------
def test_arrays_on_device_one_run_there(gpu):
    k = fresh(add_kernel)
    k[(1,)](*arrays(device=1), 100)
    assert gpu.launches[0]["device"] == 1 and gpu.loads == [("cubin", 1)]


def test_another_devices_context_is_pushed_for_the_launch_and_popped(gpu):
    k = fresh(add_kernel)
    for device in (0, 1, 0, 1):  # the first load leaves device 0's context current, as torch would
        k[(1,)](*arrays(device=device), 100)
        assert (gpu.launches[-1]["device"], gpu.launches[-1]["context"]) == (device, 1000 + device)
        assert gpu.contexts == [1000]  # the caller's current context is what it was
    assert len(gpu.launches) == 4


def test_with_no_context_current_the_kernels_becomes_current(gpu):
    k = fresh(add_kernel)
    k[(1,)](*arrays(), 100)
    gpu.contexts.clear()  # as in a new thread
    k[(1,)](*arrays(), 100)
    assert gpu.launches[-1]["context"] == 1000 and gpu.contexts == [1000]


def test_arrays_on_two_devices_are_an_error_naming_them(gpu):
    x, y, out = arrays()
    y.__dlpack_device__ = lambda: (2, 1)
    with pytest.raises(ValueError, match=r"different devices \(cuda:0: `x_ptr`, `out_ptr`; cuda:1: `y_ptr`\)"):
        add_kernel[(1,)](x, y, out, 100)
    assert gpu.launches == []


def test_device_of_interface_only_arrays_comes_from_the_driver(gpu):
    x, y, out = arrays(device=None)
    gpu.pointer_devices[x.__cuda_array_interface__["data"][0]] = 1
    fresh(add_kernel)[(1,)](x, y, out, 100)
    assert gpu.launches[0]["device"] == 1


def test_host_and_device_arrays_mixed_is_an_error_before_launch(gpu):
    x, _, out = arrays()
    with pytest.raises(ValueError) as e:
        add_kernel[(1,)](x, np.zeros(4, np.float32), out, 4)
    assert str(e.value) == ("kernel `add_kernel` got arrays on different devices (cuda: `x_ptr`, `out_ptr`; "
                            "host: `y_ptr`); pass them all on the host or all on one device")
    assert gpu.launches == []


class TorchLikeArray(FakeCudaArray):
    """A fake CUDA array that says its device as torch does (``.device``)."""

    def __init__(self, device):
        super().__init__(device=device)
        self.device = f"cuda:{device}"


@pytest.mark.parametrize("array", [FakeCudaArray, TorchLikeArray], ids=["interface-only", "torch-like"])
def test_autotuning_is_per_kind_of_device(gpu, array):
    """Two devices of one name share a choice; a device of another name is tuned for itself."""
    timed = []

    def do_bench(fn, quantiles):
        fn()
        timed.append(gpu.launches[-1]["device"])
        return [float(len(timed) % 2)] * len(quantiles)  # configs 2, 4, ... win on alternate tunings

    configs = [tilec.Config({"BLOCK": 256}), tilec.Config({"BLOCK": 512})]
    grid = lambda meta: (tilec.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    k = tilec.autotune(configs, key=["n"], do_bench=do_bench, cache_results=False)(fresh(add_kernel))
    for device in (0, 1, 0):
        k[grid](*(array(device=device) for _ in range(3)), 3000)
        assert gpu.launches[-1]["device"] == device
    assert timed == [0, 0] and list(k.cache) == [(3000, "sm_90a Fake GPU")]
    gpu.names[1] = "Other GPU"
    k = tilec.autotune(configs, key=["n"], do_bench=do_bench, cache_results=False)(fresh(add_kernel))
    for device in (1, 0, 1):
        k[grid](*(array(device=device) for _ in range(3)), 3000)
    assert timed == [0, 0, 1, 1, 0, 0] and set(k.cache) == {(3000, "sm_90a Fake GPU"), (3000, "sm_90a Other GPU")}


def test_an_arch_tilec_does_not_know_is_named(gpu):
    gpu.arch = "sm_75"
    with pytest.raises(TilecError, match=r"CUDA device 0 \(Fake GPU\) is sm_75; tilec compiles for sm_80, sm_86"):
        fresh(add_kernel)[(1,)](*arrays(), 100)


# --- streams --------------------------------------------------------------------
class TorchLikeStream:
    cuda_stream = 0x5000


class CupyLikeStream:
    ptr = 0x6000


class CudaCoreLikeStream:
    def __cuda_stream__(self):
        return (0, 0x7000)


@pytest.mark.parametrize("stream, handle", [(0x4000, 0x4000), (TorchLikeStream(), 0x5000),
                                            (CupyLikeStream(), 0x6000), (CudaCoreLikeStream(), 0x7000)])
def test_stream_argument(gpu, stream, handle):
    add_kernel[(1,)](*arrays(), 100, stream=stream)
    assert gpu.launches[-1]["stream"] == handle


def test_a_bad_stream_is_named(gpu, monkeypatch):
    monkeypatch.setattr(cd, "driver", lambda: types.SimpleNamespace(CUstream=type("CUstream", (), {})))
    with pytest.raises(TypeError, match="stream= takes an int handle, a torch or CuPy stream or a CUstream, got str"):
        add_kernel[(1,)](*arrays(), 100, stream="fast")


def test_torch_current_stream_is_the_default(monkeypatch):
    raw = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0x9000 + device)
    initialized = types.SimpleNamespace(is_initialized=lambda: False)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(_C=raw, cuda=initialized))
    assert cuda.current_stream(1) == 0  # torch imported, CUDA never used: nothing to order behind
    initialized.is_initialized = lambda: True
    assert cuda.current_stream(1) == 0x9001
    monkeypatch.setitem(sys.modules, "torch", None)  # another torch (here none): looked at afresh
    assert cuda.current_stream(1) == 0


# --- loading and resources --------------------------------------------------------
def test_cubin_the_driver_rejects_falls_back_to_ptx(gpu):
    gpu.rejected = {"cubin"}
    fresh(add_kernel)[(1,)](*arrays(), 100)
    assert gpu.loads == [("PTX", 0)] and len(gpu.launches) == 1
    gpu.rejected = {"cubin", "PTX"}
    with pytest.raises(cd.CudaError, match="loading PTX"):
        fresh(add_kernel)[(1,)](*arrays(), 100)


def test_without_ptxas_registers_are_checked_at_load(gpu, monkeypatch):
    monkeypatch.setattr(ptxas, "find_ptxas", lambda: None)
    k = fresh(add_kernel)
    compiled = k.compile(*arrays(), 100, target="sm_90", num_warps=16)
    assert "cubin" not in compiled.asm and compiled.metadata.registers is None
    gpu.registers = 255
    with pytest.raises(OutOfResources, match=r"kernel `add_kernel` needs 255 registers per thread x 512 threads "
                                             r"= 130560 registers per block, over the limit of 65536"):
        k[(1,)](*arrays(), 100, num_warps=16)
    gpu.registers = 64
    k[(1,)](*arrays(), 100, num_warps=16)
    assert gpu.loads[-1] == ("PTX", 0)


def test_dynamic_shared_memory_is_requested(gpu):
    transpose_kernel[(1,)](*arrays(2), N=128, num_warps=8)
    (launch,) = gpu.launches
    assert launch["shared"] == 65536 and gpu.shared_opt_ins == [65536]


# --- errors after launch ----------------------------------------------------------
def test_sync_mode_names_the_kernel(gpu, monkeypatch):
    monkeypatch.setenv("TILEC_SYNC", "1")

    def fault(stream, what):
        raise cd.CudaError(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered", what)

    monkeypatch.setattr(cd, "synchronize", fault)
    with pytest.raises(cd.CudaError, match=r"^kernel `add_kernel`: running it \(TILEC_SYNC=1 synchronizes after "
                                           r"every launch\): CUDA_ERROR_ILLEGAL_ADDRESS"):
        fresh(add_kernel)[(1,)](*arrays(), 100)


def test_without_sync_mode_nothing_waits(gpu):
    fresh(add_kernel)[(1,)](*arrays(), 100)
    assert gpu.syncs == []


def test_a_sticky_error_points_at_the_previous_kernel(gpu):
    fresh(scalars_kernel)[(1,)](FakeCudaArray(typestr="<i8"), 7, 2**40, 0.5, True)
    gpu.launch_result = 700
    with pytest.raises(cd.CudaError, match=r"^kernel `add_kernel`: launching grid \(3, 1, 1\) x block \(128, 1, 1\) "
                                           r"with 0 bytes of shared memory \(a sticky error: .* such as "
                                           r"`scalars_kernel`, the last one tilec launched; rerun with TILEC_SYNC=1"):
        fresh(add_kernel)[(3,)](*arrays(), 100)


def test_a_failed_launch_names_the_kernel_and_the_launch(gpu):
    gpu.launch_result = 1
    with pytest.raises(cd.CudaError, match=r"^kernel `add_kernel`: launching grid \(70000, 1, 1\) x block "
                                           r"\(256, 1, 1\) with 0 bytes of shared memory: CUDA_ERROR_INVALID_VALUE "
                                           r"\(invalid argument\)$"):
        fresh(add_kernel)[(70000,)](*arrays(), 100, num_warps=8)


# --- no CUDA --------------------------------------------------------------------
def test_no_cuda_python_is_a_clear_error_and_the_host_still_works(monkeypatch):
    for cached in (cuda.available, cuda._device_arch):
        cached.cache_clear()
    monkeypatch.setattr(cd, "_driver", None)
    monkeypatch.setattr(cd, "BINDINGS", ("tilec_no_such_pkg.driver",))
    k = fresh(add_kernel)
    with pytest.raises(cd.CudaUnavailable, match=r"needs cuda-python: install tilec\[cuda\].*run on the host"):
        k[(1,)](*arrays(), 100)
    assert not cuda.available() and not k.cache  # failed before compiling
    assert k.compile(*arrays(), 100).target == "sm_90"  # compiling needs no GPU
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    k[(1,)](x, x, out, 100)
    np.testing.assert_array_equal(out, 2 * x)
    cuda.available.cache_clear()


def test_compile_targets_the_device_of_cuda_arrays(gpu):
    gpu.arch = "sm_86"
    assert fresh(add_kernel).compile(*arrays(), 100).target == "sm_86"


def test_the_launcher_of_cuda_arrays_is_the_nvidia_backends():
    assert registry.backend_for_place("cuda").launcher() is cuda
