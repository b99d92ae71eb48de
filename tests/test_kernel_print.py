"""``print(...)`` in a kernel is ``tl.device_print`` (as in Triton): the
values are printed by every program on every launch, a cached variant's too;
``tl.static_print`` is the compile-time one."""
from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl


@tilec.jit
def print_block(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    print("block", "of x", x)


def printed_rows(out: str, prefix: str) -> dict[int, list[int]]:
    """``{program id: values}`` from the host's ``pid (p, 0, 0) prefix: [v ...]`` lines."""
    rows = {}
    for pid, values in re.findall(rf"pid \((\d+), 0, 0\) {prefix}: \[([^\]]*)\]", out):
        rows[int(pid)] = [int(v) for v in values.split()]
    return rows


def launch_output(kernel, grid, *args, **kwargs) -> str:
    """What one host launch prints (a context manager: hypothesis reuses fixtures across examples)."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        kernel[grid](*args, **kwargs)
    return out.getvalue()


@settings(deadline=None)
@given(programs=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_print_in_a_kernel_prints_every_programs_values_on_every_launch(programs, seed):
    x = np.random.default_rng(seed).integers(-2**31, 2**31, size=programs * 4, dtype=np.int32)
    for _ in range(2):  # the second launch finds the compiled variant in the cache
        rows = printed_rows(launch_output(print_block, (programs,), x, BLOCK=4), "block of x")
        assert rows == {p: x[p * 4:(p + 1) * 4].tolist() for p in range(programs)}


@tilec.jit
def print_values_only(x_ptr, SCALE: tl.constexpr):
    x = tl.load(x_ptr)
    print(x * SCALE, SCALE)


def test_print_without_text_prints_tensors_and_constexprs(capsys):
    x = np.array([21], np.int32)
    for _ in range(2):
        print_values_only[(1,)](x, SCALE=3)
        assert capsys.readouterr().out.strip() == "pid (0, 0, 0) : 63 3"


@tilec.jit
def static_print_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_print("compiling with BLOCK", BLOCK)
    tl.store(x_ptr + tl.arange(0, BLOCK), 1)


def test_static_print_prints_once_at_compile_time(capsys):
    x = np.zeros(8, np.int32)
    static_print_kernel[(1,)](x, BLOCK=8)
    assert "compiling with BLOCK 8" in capsys.readouterr().out
    static_print_kernel[(1,)](x, BLOCK=8)
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(x, 1)


@pytest.mark.gpu
def test_print_on_the_gpu_prints_on_every_launch(capfd):
    torch = pytest.importorskip("torch")
    x = torch.arange(8, dtype=torch.int32, device="cuda") - 3
    for _ in range(2):
        print_block[(2,)](x, BLOCK=4)
        torch.cuda.synchronize()
        out = capfd.readouterr().out
        for v in (-3, 0, 4):
            assert re.search(rf"pid \(\d+, 0, 0\) idx \(\d+\) block of x: {v}\b", out), out


@tilec.jit
def print_percent(x_ptr):
    print("50% of x, not %d", tl.load(x_ptr + tl.arange(0, 4)))


def test_a_percent_sign_in_the_text_is_printed_not_formatted_on_the_gpu():
    """The GPU's vprintf takes the text in its format: a `%` there would read an argument."""
    compiled = print_percent.compile(np.zeros(4, np.int32), target="sm_90")
    assert "50%% of x, not %%d: %d" in compiled.asm["llir"]
    assert "pid (0, 0, 0) 50% of x, not %d: [7 7 7 7]" in launch_output(print_percent, (1,), np.full(4, 7, np.int32))


@tilec.jit
def print_in_a_loop_as_hex(x_ptr, n):
    for i in range(n):
        if i % 2 == 0:
            print("i and x", i, tl.load(x_ptr + i), hex=True)


def test_print_takes_device_prints_hex_option_and_runs_in_runtime_control_flow():
    x = np.array([7, -1, 255, 3, 4096], np.int32)
    out = launch_output(print_in_a_loop_as_hex, (1,), x, x.size)
    expected = [f"pid (0, 0, 0) i and x: {hex(i)} {hex(x[i])}" for i in range(0, x.size, 2)]
    assert out.splitlines() == expected


@tilec.jit
def print_with_an_fstring_prefix(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    print(f"x of shape {x.shape}, BLOCK={BLOCK}", x)


def test_an_fstring_of_compile_time_values_is_the_prefix():
    x = np.array([5, -6, 7, 8], np.int32)
    out = launch_output(print_with_an_fstring_prefix, (1,), x, BLOCK=4)
    assert out == "pid (0, 0, 0) x of shape (4,), BLOCK=4: [ 5 -6  7  8]\n"
