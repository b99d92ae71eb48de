"""``dot`` compiled for the host CPU (``tilec/backends/host/rules_dot.py``):
the register-blocked product gives the interpreter's answer for every input
type (integers bit for bit, floats within their summation's rounding), with
ragged masked edges, a transposed operand, a chained accumulator and tiles
narrower than a vector; the block fits each CPU level's registers."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.backends.host.rules_dot import REGISTERS, VectorRegisters, blocking
from tilec.ir.interp_reduce import round_tf32


@tilec.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, IN: tl.constexpr, OUT: tl.constexpr, PRECISION: tl.constexpr,
           TRANS_B: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = a @ b (b given as its transpose when TRANS_B), a BM x BN tile a program,
    K in steps of BK into one accumulator, inputs cast to IN in the kernel."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=OUT)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
        if TRANS_B:
            bt = tl.load(b_ptr + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0)
            b = tl.trans(bt)
        else:
            b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a.to(IN), b.to(IN), acc, input_precision=PRECISION, out_dtype=OUT)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


#: (input type, accumulator type, numpy type the arrays hold)
TYPES = {"f32": (tl.float32, tl.float32, np.float32), "f16": (tl.float16, tl.float32, np.float16),
         "bf16": (tl.bfloat16, tl.float32, np.float32), "i8": (tl.int8, tl.int32, np.int8),
         "f16 into f16": (tl.float16, tl.float16, np.float16)}


def launch(a, b, m, n, k, kind, precision="ieee", trans_b=False, block=(32, 32, 16), interpret=False):
    """``matmul`` on ``a`` and ``b``, compiled for the cpu target or interpreted."""
    t_in, t_out, _ = TYPES[kind]
    c = np.zeros((m, n), np.int32 if t_out == tl.int32 else np.float16 if t_out == tl.float16 else np.float32)
    bm, bn, bk = block
    kernel = tilec.jit(matmul.fn, interpret=True) if interpret else matmul
    kernel[(tilec.cdiv(m, bm), tilec.cdiv(n, bn))](a, b, c, m, n, k, IN=t_in, OUT=t_out, PRECISION=precision,
                                                   TRANS_B=trans_b, BM=bm, BN=bn, BK=bk)
    return c


def operands(seed, m, n, k, kind, trans_b):
    rng = np.random.default_rng(seed)
    dtype = TYPES[kind][2]
    if dtype == np.int8:
        a, b = rng.integers(-128, 128, (m, k), dtype=np.int8), rng.integers(-128, 128, (k, n), dtype=np.int8)
    else:
        a, b = (rng.standard_normal(s).astype(dtype) for s in ((m, k), (k, n)))
    return a, np.ascontiguousarray(b.T) if trans_b else b


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(sorted(TYPES)), m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 40),
       trans_b=st.booleans(), block=st.sampled_from([(32, 32, 16), (16, 64, 32), (64, 16, 16), (16, 16, 16)]),
       seed=st.integers(0, 2 ** 16))
def test_dot_gives_the_interpreters_answer(kind, m, n, k, trans_b, block, seed):
    a, b = operands(seed, m, n, k, kind, trans_b)
    got = launch(a, b, m, n, k, kind, trans_b=trans_b, block=block)
    want = launch(a, b, m, n, k, kind, trans_b=trans_b, block=block, interpret=True)
    if kind == "i8":  # exact products, sums wrapping in int32: the same bits
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, (a.astype(np.int64) @ (b.T if trans_b else b)).astype(np.int32))
    else:  # the same products, summed in another order
        tol = 1e-2 if kind == "f16 into f16" else 1e-5 * np.sqrt(k)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol * 4)


def test_tf32_inputs_are_rounded_before_the_products():
    """tf32 differs from ieee by far more than the summation order does."""
    m = n = k = 64
    a, b = operands(7, m, n, k, "f32", False)
    tf32 = launch(a, b, m, n, k, "f32", precision="tf32")
    ieee = launch(a, b, m, n, k, "f32", precision="ieee")
    exact_tf32 = round_tf32(a).astype(np.float64) @ round_tf32(b).astype(np.float64)
    np.testing.assert_allclose(tf32, exact_tf32, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(ieee, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)
    assert np.abs(tf32 - ieee).max() > 1e-3


def test_a_chained_accumulator_adds_every_step():
    """K of 100 in steps of 16: seven dots into one accumulator, the last one ragged."""
    m, n, k = 48, 40, 100
    a, b = operands(3, m, n, k, "f32", False)
    np.testing.assert_allclose(launch(a, b, m, n, k, "f32"), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("level, regs", sorted(REGISTERS.items()))
def test_the_block_fits_the_levels_registers(level, regs):
    blk = blocking(regs, 32, 64, 64)
    assert blk.lanes == regs.width // 4
    assert blk.rows * blk.vectors + blk.vectors + 1 <= regs.count  # sums, b's vectors, a's broadcast
    assert blk.rows * blk.vectors >= 8  # enough independent sums to hide a multiply-add's latency


def test_a_tile_narrower_than_a_vector_has_no_block():
    regs = VectorRegisters(32, 32)
    assert blocking(regs, 32, 64, 4) is None
    assert blocking(regs, 32, 2, 8) == blocking(regs, 32, 2, 8).__class__(rows=2, vectors=1, lanes=8)
