"""``libcuda.py``, everywhere: the launch frame's bytes as the driver reads them
(config, ``void**`` and every parameter kind), its errors, and the library's
loading.  ``test_cuda_launcher.py`` checks the generated launchers that fill
frames; ``test_cuda_driver.py`` launches one on a GPU."""
from __future__ import annotations

import ctypes

import pytest

from tilec.errors import TilecError
from tilec.backends.nvidia import cuda_driver as cd, libcuda
from tilec.backends.nvidia.libcuda import LaunchFrame, read_launch

KINDS = ["ptr", "i1", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "f32", "f64"]
VALUES = [0x7F12_3456_7800, True, -5, -300, -(2**31), 2**62, 255, 65535, 2**32 - 1, 2**64 - 1, 0.5, 1.5, -2.25]


class FakeTensor:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


class FakeCudaArray:
    __cuda_array_interface__ = {"data": (0x7F00_0000_1000, False)}


def launched(frame: LaunchFrame) -> dict:
    return read_launch(frame.config_address, frame.params_address, frame.kinds)


def test_frame_holds_config_and_every_kind_as_the_driver_reads_them():
    frame = LaunchFrame(KINDS)
    frame.pack((7, 2, 3), (256, 1, 1), 49152, 0xABC0, VALUES)
    assert launched(frame) == dict(grid=(7, 2, 3), block=(256, 1, 1), shared=49152, stream=0xABC0,
                                   attributes=(0, 0), values=VALUES)
    assert list(frame.unpack()) == VALUES
    params = (ctypes.c_void_p * len(KINDS)).from_address(frame.params_address)
    assert [p - params[0] for p in params] == [8 * i for i in range(len(KINDS))]  # one 8-byte slot each
    assert params[0] == frame.config_address + ctypes.sizeof(libcuda.CUlaunchConfig)


def test_frame_is_reused_and_rewritten_whole():
    frame = LaunchFrame(["ptr", "ptr", "i32", "f32"])
    frame.pack((1, 1, 1), (128, 1, 1), 0, 0, [FakeTensor(0x1000), FakeCudaArray(), 10, 0.5])
    config, params = frame.config_address, frame.params_address
    assert launched(frame)["values"] == [0x1000, 0x7F00_0000_1000, 10, 0.5]
    frame.pack((2**31, 65535, 1), (32, 1, 1), 7, 2**64 - 1, [0x2000, 0x3000, -1, 3.0])
    assert (frame.config_address, frame.params_address) == (config, params)
    assert launched(frame) == dict(grid=(2**31, 65535, 1), block=(32, 1, 1), shared=7, stream=2**64 - 1,
                                   attributes=(0, 0), values=[0x2000, 0x3000, -1, 3.0])


def test_a_kernel_without_parameters_passes_null():
    frame = LaunchFrame([])
    frame.pack((1, 1, 1), (32, 1, 1), 0, 0, [])
    assert frame.params_address == 0 and launched(frame)["values"] == []


def test_frame_errors_name_the_argument():
    frame = LaunchFrame(["ptr", "i32"])
    with pytest.raises(TilecError, match=r"argument 1 \(i32\): cannot pass 4294967296"):
        frame.pack((1, 1, 1), (32, 1, 1), 0, 0, [0x1000, 2**32])
    with pytest.raises(TilecError, match="takes 2 arguments"):
        frame.pack((1, 1, 1), (32, 1, 1), 0, 0, [0x1000])
    with pytest.raises(TilecError, match="expected a device pointer"):
        frame.pack((1, 1, 1), (32, 1, 1), 0, 0, ["nope", 1])
    with pytest.raises(TilecError, match=r"grid \(4294967296, 1, 1\) or stream 0 cannot be passed"):
        frame.pack((2**32, 1, 1), (32, 1, 1), 0, 0, [0x1000, 1])
    with pytest.raises(TilecError, match="kind 'q7'"):
        LaunchFrame(["ptr", "q7"])


def test_no_driver_library_is_cuda_unavailable(monkeypatch):
    monkeypatch.setattr(libcuda, "LIBRARY_NAMES", ("libtilec_no_such_cuda.so",))
    monkeypatch.setattr(libcuda.ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(libcuda, "_driver", [])
    with pytest.raises(cd.CudaUnavailable, match=r"no CUDA driver library \(libtilec_no_such_cuda.so\)"):
        libcuda.functions()


def test_a_driver_without_the_launch_function_is_named():
    libc = ctypes.CDLL(None)
    with pytest.raises(cd.CudaUnavailable, match="the CUDA driver has no cuLaunchKernelEx: .* CUDA 11.8 or later"):
        libcuda._declare(libc, "cuLaunchKernelEx", 4)
    strlen = libcuda._declare(libc, "strlen", 1)
    assert strlen.argtypes == [ctypes.c_void_p] and strlen(ctypes.addressof(ctypes.create_string_buffer(b"abc"))) == 3


def test_a_tensor_map_takes_128_bytes_on_a_64_byte_boundary():
    kinds = ["ptr", "i32", libcuda.TENSOR_MAP, "i64", libcuda.TENSOR_MAP]
    maps = [bytes(range(128)), bytes(range(128, 256))]
    values = [0x1000, -3, maps[0], 2**40, maps[1]]
    frame = LaunchFrame(kinds)
    frame.pack((1, 1, 1), (128, 1, 1), 0, 0, values)
    assert launched(frame)["values"] == values and list(frame.unpack()) == values
    params = list((ctypes.c_void_p * len(kinds)).from_address(frame.params_address))
    assert params[2] % 64 == 0 and params[4] % 64 == 0
    assert params[3] == params[2] + 128 and params[2] >= params[1] + 8  # no slot overlaps the next
    assert params[4] + 128 <= frame.config_address + ctypes.sizeof(frame.buffer)
