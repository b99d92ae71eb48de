"""``tilec.runtime.driver``: ``driver.active`` answers Triton's device questions
(target, properties, current device and stream) for the host and for CUDA.

The CUDA driver class is checked here against a fake driver module (every
attribute value drawn by hypothesis), and on a real GPU by the ``gpu`` tests."""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest
from hypothesis import given, strategies as st

import tilec.runtime.driver as rd
from tilec.backends.interpreter.driver import HostDriver
from tilec.backends.nvidia import cuda_driver
from tilec.backends.nvidia.runtime_driver import CUDA_PROPERTIES, CudaDriver
from tilec.runtime.driver import GPUTarget, driver
from tilec.targets import registry

TRITON_KEYS = {"max_shared_mem", "max_num_regs", "multiprocessor_count", "warpSize",
               "sm_clock_rate", "mem_clock_rate", "mem_bus_width"}


@pytest.fixture
def host():
    """The host driver made active for one test, the automatic choice restored after."""
    driver.set_active(HostDriver())
    yield driver.active
    driver.reset_active()


def test_module_attribute_active_is_the_driver_configs():
    assert rd.active is driver.active


def test_the_active_driver_is_a_usable_gpus_else_the_hosts(monkeypatch):
    monkeypatch.setattr(cuda_driver, "device_count", lambda: 0)
    assert isinstance(registry.active_driver(), HostDriver)
    monkeypatch.setattr(cuda_driver, "device_count", lambda: 1)
    assert isinstance(registry.active_driver(), CudaDriver)
    with pytest.raises(AttributeError, match="no attribute 'activ'"):
        rd.activ


def test_host_target_and_device(host):
    assert host.get_current_target() == GPUTarget("host", "host", 32)
    assert host.get_current_device() == 0
    assert host.get_current_stream() == 0 and host.get_current_stream(0) == 0
    host.set_current_device(0)


def test_host_properties_have_tritons_keys(host):
    properties = host.utils.get_device_properties(0)
    assert set(properties) == TRITON_KEYS
    assert properties["warpSize"] == 32
    assert properties["multiprocessor_count"] == (os.cpu_count() or 1)
    assert properties["max_shared_mem"] == 227 * 1024 and properties["max_num_regs"] == 65536


@pytest.mark.parametrize("device", [1, -1, "0", 0.0, True, "cuda"])
def test_a_bad_device_is_refused_naming_it(host, device):
    for call in (host.utils.get_device_properties, host.set_current_device):
        with pytest.raises(ValueError, match=r"device: expected a device index in \[0, 1\)"):
            call(device)


def test_torch_objects_need_torch(host, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    for call in (host.get_active_torch_device, host.get_device_interface):
        with pytest.raises(ModuleNotFoundError, match="needs torch installed"):
            call()


def test_torch_device_on_the_host(host):
    torch = pytest.importorskip("torch")
    assert host.get_active_torch_device() == torch.device("cpu")
    assert host.get_device_interface() is torch.cpu


def test_benchmarker_is_tilecs_do_bench(host):
    from tilec.testing import do_bench
    assert host.get_benchmarker() is do_bench


# --- the CUDA driver over a fake cuda-python -------------------------------------
def fake_cuda(devices: list[dict[str, int]]) -> SimpleNamespace:
    """A cuda-python driver module whose device ``i`` has the attributes ``devices[i]``
    (keyed by the name after ``CU_DEVICE_ATTRIBUTE_``)."""
    return SimpleNamespace(
        CUdevice_attribute=SimpleNamespace(**{f"CU_DEVICE_ATTRIBUTE_{k}": k for k in devices[0]}),
        cuDeviceGetCount=lambda: (0, len(devices)),
        cuDeviceGet=lambda i: (0, i),
        cuDeviceGetAttribute=lambda attribute, i: (0, devices[i][attribute]),
    )


attribute_values = st.fixed_dictionaries(
    {**{name: st.integers(1, 2**31 - 1) for name in CUDA_PROPERTIES.values()},
     "COMPUTE_CAPABILITY_MAJOR": st.integers(7, 12), "COMPUTE_CAPABILITY_MINOR": st.integers(0, 9)})


@given(devices=st.lists(attribute_values, min_size=1, max_size=3), data=st.data())
def test_cuda_properties_and_target_come_from_the_driver(devices, data):
    original = cuda_driver.driver
    cuda_driver.driver = lambda: fake_cuda(devices)
    try:
        cuda = CudaDriver()
        index = data.draw(st.integers(0, len(devices) - 1))
        assert cuda.utils.get_device_properties(index) == {k: devices[index][v] for k, v in CUDA_PROPERTIES.items()}
        cuda.set_current_device(index)
        assert cuda.get_current_device() == index
        capability = devices[index]["COMPUTE_CAPABILITY_MAJOR"] * 10 + devices[index]["COMPUTE_CAPABILITY_MINOR"]
        assert cuda.get_current_target() == GPUTarget("cuda", capability, devices[index]["WARP_SIZE"])
        with pytest.raises(ValueError, match=rf"device: expected a device index in \[0, {len(devices)}\)"):
            cuda.set_current_device(len(devices))
        assert cuda.get_current_device() == index  # a refused device changes nothing
    finally:
        cuda_driver.driver = original


# --- on a real GPU (the lead runs these on an H100) ------------------------------
@pytest.mark.gpu
def test_gpu_driver_matches_torch():
    torch = pytest.importorskip("torch")
    driver.reset_active()
    active = driver.active
    assert isinstance(active, CudaDriver)
    torch.cuda.init()
    props = torch.cuda.get_device_properties(0)
    ours = active.utils.get_device_properties(0)
    assert ours["multiprocessor_count"] == props.multi_processor_count
    assert ours["warpSize"] == props.warp_size == 32
    assert ours["max_shared_mem"] >= 48 * 1024
    assert active.get_current_target() == GPUTarget("cuda", props.major * 10 + props.minor, 32)
    assert active.get_active_torch_device() == torch.device("cuda", torch.cuda.current_device())
    assert active.get_device_interface() is torch.cuda


@pytest.mark.gpu
def test_gpu_current_stream_is_torchs():
    torch = pytest.importorskip("torch")
    driver.reset_active()
    torch.cuda.init()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        assert driver.active.get_current_stream() == stream.cuda_stream
    assert driver.active.get_current_stream() == torch.cuda.current_stream().cuda_stream
