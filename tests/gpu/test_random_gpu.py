"""tilec's random numbers are Triton's: one kernel body, run under
``triton.jit`` and under ``tilec.jit`` with the same seeds and offsets, must
write the same bits (skipped without torch and Triton).

The body is compiled twice from one code object: ``with_language`` gives it
globals where ``tl`` is ``triton.language`` or ``tilec.language``, so both
compilers read the same source.

The integer streams (``randint``, ``randint4x``) and the uniform ones
(``rand``, ``rand4x``) are bit for bit Triton's.  The normal ones are
within 4 ulps but not yet bit-equal: Triton's ``tl.sqrt`` on NVIDIA is
``sqrt.approx.ftz.f32`` and its libdevice runs flush-to-zero, while tilec's
``tl.sqrt`` is the correctly rounded ``sqrt.rn.f32`` (``tl.sqrt_rn`` shares
its IR op); ``test_normal_streams_are_tritons_bits`` is an ``xfail`` until
the NVIDIA lowering gives ``tl.sqrt`` Triton's approximation.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import tilec
import tilec.language as tl

pytestmark = pytest.mark.gpu

BLOCK = 1024
PROGRAMS = 4
N = PROGRAMS * BLOCK - 77  # ragged: the last program's tail is masked
SEEDS = [0, -7, 123, 2**40 + 5, 2**64 - 1]
INT_ROWS, FLOAT_ROWS = 5, 10
# sqrt.approx.f32's relative error (2**-23) is up to 2 ulps of the radius; with the
# products' roundings, a few ulps of a normal.
NORMAL_ULPS = 4


def streams(int_ptr, float_ptr, seed, n, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """``int_ptr`` rows: randint, randint4x (4); ``float_ptr`` rows: rand,
    rand4x (4), randn, randn4x (4); at offsets ``i`` (int32) or, when ``WIDE``,
    ``i * 65537 + 3 * 2**32`` (int64: both counter words move)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    off = i
    if WIDE:
        off = i.to(tl.int64) * 65537 + 12884901888
    ints = (tl.randint(seed, off),) + tl.randint4x(seed, off)
    floats = (tl.rand(seed, off),) + tl.rand4x(seed, off) + (tl.randn(seed, off),) + tl.randn4x(seed, off)
    for row in tl.static_range(5):
        tl.store(int_ptr + row * n + i, ints[row].to(tl.int32, bitcast=True), mask=mask)
    for row in tl.static_range(10):
        tl.store(float_ptr + row * n + i, floats[row], mask=mask)


def with_language(fn, language):
    """``fn`` with ``tl`` bound to ``language`` in its globals (same code, same
    source, the same annotations: they say which parameters are constexprs)."""
    copy = types.FunctionType(fn.__code__, {**fn.__globals__, "tl": language}, fn.__name__)
    copy.__annotations__ = dict(fn.__annotations__)
    return copy


@pytest.fixture(scope="module")
def triton(torch):
    return pytest.importorskip("triton")


@pytest.fixture(scope="module")
def kernels(triton):
    return {"triton": triton.jit(with_language(streams, triton.language)), "tilec": tilec.jit(streams)}


def run(torch, kernel, seed: int, wide: bool):
    ints = torch.zeros(INT_ROWS * N, dtype=torch.int32, device="cuda")
    floats = torch.full((FLOAT_ROWS * N,), float("nan"), dtype=torch.float32, device="cuda")
    kernel[(PROGRAMS,)](ints, floats, seed, N, BLOCK=BLOCK, WIDE=wide)
    torch.cuda.synchronize()
    return ints.cpu().numpy().reshape(INT_ROWS, N), floats.cpu().numpy().reshape(FLOAT_ROWS, N)


@pytest.fixture(scope="module")
def results(torch, kernels):
    """(seed, wide) -> {"triton": (ints, floats), "tilec": (ints, floats)}."""
    return {(seed, wide): {name: run(torch, k, seed, wide) for name, k in kernels.items()}
            for seed in SEEDS for wide in (False, True)}


CASES = [(seed, wide) for seed in SEEDS for wide in (False, True)]


@pytest.mark.parametrize("seed, wide", CASES)
def test_integer_and_uniform_streams_are_tritons_bits(results, seed, wide):
    ours, theirs = results[seed, wide]["tilec"], results[seed, wide]["triton"]
    np.testing.assert_array_equal(ours[0], theirs[0], err_msg="randint, randint4x")
    np.testing.assert_array_equal(ours[1][:5].view(np.uint32), theirs[1][:5].view(np.uint32),
                                  err_msg="rand, rand4x")


@pytest.mark.parametrize("seed, wide", CASES)
def test_normal_streams_are_within_4_ulps_of_tritons(results, seed, wide):
    ours, theirs = results[seed, wide]["tilec"][1][5:], results[seed, wide]["triton"][1][5:]
    assert np.isfinite(ours).all()
    spacing = np.spacing(np.abs(theirs)).astype(np.float64)
    worst = (np.abs(ours.astype(np.float64) - theirs) / spacing).max()
    assert worst <= NORMAL_ULPS, f"randn, randn4x differ from Triton's by up to {worst} ulps"


@pytest.mark.xfail(reason="tilec's tl.sqrt is sqrt.rn.f32 on NVIDIA, Triton's sqrt.approx.ftz.f32", strict=False)
@pytest.mark.parametrize("seed, wide", CASES)
def test_normal_streams_are_tritons_bits(results, seed, wide):
    ours, theirs = results[seed, wide]["tilec"][1][5:], results[seed, wide]["triton"][1][5:]
    np.testing.assert_array_equal(ours.view(np.uint32), theirs.view(np.uint32), err_msg="randn, randn4x")
