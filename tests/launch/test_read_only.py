"""Read-only host memory: a launch that would write a read-only array is refused
before anything runs, naming the argument (the interpreter writes through
addresses, so numpy's flag alone would not stop it, and a read-only mmap would
crash the process); a read-only array the kernel only reads keeps working."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.tools.tensor_descriptor import TensorDescriptor

E2E = settings(max_examples=15, deadline=None)


@tilec.jit
def axpy(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 16):
    """out = 2 * x + y"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tilec.jit
def count(x_ptr, total_ptr, n, BLOCK: tl.constexpr = 16):
    """total += sum(x), with an atomic."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0), axis=0))


@tilec.jit
def store_through_loaded_address(addr_ptr, x_ptr, out_ptr):
    """Writes where an integer in memory says (``out``, here): tilec cannot tell which array."""
    tl.store(tl.load(addr_ptr).to(tl.pointer_type(tl.float32)), tl.load(x_ptr))


@tilec.jit
def descriptor_copy(src, dst):
    """dst's first 16x16 block = src's, through host tensor descriptors."""
    dst.store([0, 0], src.load([0, 0]))


def read_only(values, dtype=np.float32):
    a = np.array(values, dtype)
    a.setflags(write=False)
    return a


def launch_axpy(x, y, out):
    axpy[(tilec.cdiv(out.size, 16),)](x, y, out, out.size)


def test_setflags_read_only_output_is_refused():
    x, y, out = np.arange(20, dtype=np.float32), np.ones(20, np.float32), read_only(np.full(20, 7))
    message = r"kernel `axpy` stores through `out_ptr` \(store at .*test_read_only.py:\d+\), but the array passed"
    with pytest.raises(ValueError, match=message + " as `out_ptr` is read-only"):
        launch_axpy(x, y, out)
    assert (out == 7).all()


def test_frombuffer_over_bytes_is_refused_and_the_bytes_kept():
    data = bytes(64)
    out = np.frombuffer(data, np.float32)
    with pytest.raises(ValueError, match="the array passed as `out_ptr` is read-only"):
        launch_axpy(np.ones(16, np.float32), np.ones(16, np.float32), out)
    assert data == bytes(64)


@pytest.mark.parametrize("open_read_only", [
    "np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.float32)",
    "np.memmap(f, np.float32, mode='r')",
])
def test_read_only_mmap_is_refused_not_a_crash(tmp_path, open_read_only):
    """In a child process: before the fix this write was a segfault."""
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(64))
    child = textwrap.dedent(f"""
        import mmap, sys
        import numpy as np
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_read_only import launch_axpy
        with open({str(path)!r}, "rb") as f:
            out = {open_read_only}
            try:
                launch_axpy(np.ones(16, np.float32), np.ones(16, np.float32), out)
            except ValueError as e:
                print(e)
    """)
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "the array passed as `out_ptr` is read-only" in run.stdout
    assert path.read_bytes() == bytes(64)


def test_read_only_inputs_keep_working(tmp_path):
    """What users do all the time: np.frombuffer and read-only memmaps as inputs."""
    path = tmp_path / "x.bin"
    path.write_bytes(np.arange(20, dtype=np.float32).tobytes())
    x = np.memmap(path, np.float32, mode="r")
    y = np.frombuffer(np.full(20, 3, np.float32).tobytes(), np.float32)
    out = np.zeros(20, np.float32)
    launch_axpy(x, y, out)
    np.testing.assert_array_equal(out, 2 * np.arange(20) + 3)


def test_atomic_on_a_read_only_array_is_refused():
    x, total = np.ones(16, np.float32), read_only([0])
    with pytest.raises(ValueError, match=r"stores through `total_ptr` \(atomic_rmw at "):
        count[(1,)](x, total, 16)
    assert total[0] == 0
    count[(1,)](read_only(np.ones(16)), np.zeros(1, np.float32), 16)  # a read-only input is fine


@pytest.mark.host_only  # the data holds a host address: a mirror's copies would not be there
def test_untraced_store_refuses_any_read_only_array():
    """Conservative, and says why: the kernel could write any array it was given."""
    out = np.zeros(1, np.float32)
    addr = np.array([out.ctypes.data], np.int64)
    with pytest.raises(ValueError, match=r"cannot trace to one argument .* so it may write any array, `x_ptr` too"):
        store_through_loaded_address[(1,)](addr, read_only([5]), out)
    assert out[0] == 0
    store_through_loaded_address[(1,)](addr, np.array([5], np.float32), out)  # all writable: runs
    assert out[0] == 5


@E2E
@given(st.lists(st.booleans(), min_size=3, max_size=3), st.integers(1, 40))
def test_only_written_arguments_must_be_writable(read_only_args, n):
    rng = np.random.default_rng(n)
    arrays = [rng.integers(-50, 50, n).astype(np.float32) for _ in range(3)]
    before = [a.copy() for a in arrays]
    for a, ro in zip(arrays, read_only_args):
        a.setflags(write=not ro)
    if read_only_args[2]:
        with pytest.raises(ValueError, match="`out_ptr` is read-only"):
            launch_axpy(*arrays)
        np.testing.assert_array_equal(arrays[2], before[2])
    else:
        launch_axpy(*arrays)
        np.testing.assert_array_equal(arrays[2], 2 * before[0] + before[1])
    np.testing.assert_array_equal(arrays[0], before[0])
    np.testing.assert_array_equal(arrays[1], before[1])


def test_a_read_only_array_behind_a_tensor_descriptor_is_refused():
    """The array a host tensor descriptor holds is checked like an array passed alone."""
    src = np.arange(256, dtype=np.float32).reshape(16, 16)
    dst = read_only(np.zeros((16, 16)))
    with pytest.raises(ValueError, match="`dst` is read-only"):
        descriptor_copy[(1,)](TensorDescriptor.from_tensor(src, [16, 16]), TensorDescriptor.from_tensor(dst, [16, 16]))
    assert not dst.any()
    writable = np.zeros((16, 16), np.float32)
    descriptor_copy[(1,)](TensorDescriptor.from_tensor(read_only(src), [16, 16]), TensorDescriptor.from_tensor(writable, [16, 16]))
    np.testing.assert_array_equal(writable, src)
