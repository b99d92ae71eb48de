"""Host launches on the fast path (``jit.py``'s module doc, ``host/launcher.py``'s
``fast_launch``): after the first launch of a variant, numpy arrays skip
binding and classifying, and run the variant the general path picks, with its
checks (read-only arrays, ``TILEC_INTERPRET`` turned on since, ``debug``)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tilec
from launch.kernels import add_kernel, fresh, scalars_kernel
from launch.test_fast_path import general_launches  # noqa: F401 (a fixture)

DTYPES = [np.float32, np.float64, np.int32, np.int8, np.uint16]


@pytest.fixture
def compiled_host(monkeypatch):
    """Host arrays run compiled code (the suite runs the interpreter: conftest.py)."""
    monkeypatch.delenv("TILEC_INTERPRET", raising=False)


def add(k, x, y, out, block=16):
    return k[(tilec.cdiv(out.size, block),)](x, y, out, out.size, BLOCK=block)


def operands(rng, n, dtype, offset=0):
    """Three arrays of ``n`` elements starting ``offset`` elements into their
    buffers (not 16-byte aligned for most offsets), negative values among them."""
    raw = [rng.integers(-100, 100, n + offset).astype(dtype) for _ in range(3)]
    return [a[offset:] for a in raw]


@given(sizes=st.lists(st.integers(1, 300), min_size=1, max_size=6), offsets=st.lists(st.integers(0, 3), min_size=6,
       max_size=6), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**16))
def test_every_launch_gives_numpys_answer_and_the_general_paths_variant(sizes, offsets, dtype, seed):
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("TILEC_INTERPRET", raising=False)
        k, rng = fresh(add_kernel), np.random.default_rng(seed)
        for n, offset in zip(sizes * 2, offsets * 2):  # each size twice: the second may take the fast path
            x, y, out = operands(rng, n, dtype, offset)
            compiled = add(k, x, y, out)
            np.testing.assert_array_equal(out, x + y)
            plan = k.plan((x, y, out, n), {"BLOCK": 16})
            assert compiled is k.variant(plan), (n, offset)


def test_a_second_launch_takes_the_fast_path(compiled_host, general_launches):
    k, rng = fresh(add_kernel), np.random.default_rng(0)
    for _ in range(3):
        x, y, out = operands(rng, 100, np.float32)
        assert add(k, x, y, out).target == "cpu"
        np.testing.assert_array_equal(out, x + y)
    assert len(general_launches) == 1


def test_scalars_of_every_kind_arrive_on_the_fast_path(compiled_host, general_launches):
    k = fresh(scalars_kernel)
    for a, b, c, flag in [(7, 2**40, 0.5, True), (-3, -2**40, -2.5, True), (9, 2**41, 3.0, False)]:
        out = np.zeros(1, np.int64)
        k[(1,)](out, a, b, c, flag)
        assert out[0] == (a + b + int(c)) * flag
    assert len(general_launches) == 1


def test_turning_the_interpreter_on_sends_the_next_launch_there(compiled_host, monkeypatch, general_launches):
    k, rng = fresh(add_kernel), np.random.default_rng(1)
    targets = []
    for interpret in ("", "", "1", "1", "", ""):
        monkeypatch.setenv("TILEC_INTERPRET", interpret)
        x, y, out = operands(rng, 50, np.float32)
        targets.append(add(k, x, y, out).target)
        np.testing.assert_array_equal(out, x + y)
    assert targets == ["cpu", "cpu", "host", "host", "cpu", "cpu"]
    assert len(general_launches) == 3  # the first, and both interpreted ones


def test_a_read_only_output_is_refused_on_the_fast_path(compiled_host):
    k, rng = fresh(add_kernel), np.random.default_rng(2)
    x, y, out = operands(rng, 40, np.float32)
    add(k, x, y, out)
    out[:] = 7
    out.setflags(write=False)
    with pytest.raises(ValueError, match=r"stores through `out_ptr` .*read-only"):
        add(k, x, y, out)
    assert (out == 7).all()
    add(k, out, y, x)  # read-only where it is only read: fine
    np.testing.assert_array_equal(x, out + y)


def test_debug_launches_keep_the_general_paths_bounds_checks(compiled_host, general_launches):
    k, rng = fresh(add_kernel), np.random.default_rng(3)
    x, y, out = operands(rng, 40, np.float32)
    for _ in range(2):
        k[(3,)](x, y, out, 40, BLOCK=16, debug=True)
    assert len(general_launches) == 2
    with pytest.raises(tilec.errors.InterpreterError, match="out of bounds"):
        k[(3,)](x, y, out[:20], 40, BLOCK=16, debug=True)


def test_launches_that_stream_run_the_streaming_variant_and_others_the_plain_one(compiled_host, monkeypatch,
                                                                                 general_launches):
    """``launcher.target``: arrays beyond ``STREAM_BYTES`` together run the
    ``cpu-streaming`` variant; the fast path declines a launch whose
    streaming differs from its variant's, so each launch runs its own."""
    from tilec.backends.host import STREAMING_TARGET, TARGET, launcher

    k, rng = fresh(add_kernel), np.random.default_rng(4)
    x, y, out = operands(rng, 300, np.float32)
    ran = []
    for stream_bytes in (None, None, 0, 0, None):
        monkeypatch.setattr(launcher, "STREAM_BYTES", stream_bytes if stream_bytes is not None else 1 << 60)
        out[:] = 0
        ran.append(add(k, x, y, out, block=256).target)
        np.testing.assert_array_equal(out, x + y)
    assert ran == [TARGET, TARGET, STREAMING_TARGET, STREAMING_TARGET, TARGET]
    assert len(general_launches) == 3 and len(k.cache) == 2  # the first, and each change of variant
