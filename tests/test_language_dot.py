"""``tl.dot`` through the public API, against numpy.

Every pairing Triton offers (f16 and bf16 -> f32, f16 -> f16 through
``out_dtype``, f32 under "tf32" (the default), "tf32x3" and "ieee", int8 ->
int32); tiles of 16 to 256 along each dim on ragged, masked sizes; operands
transposed through their strides (numpy ``.T`` views) and inside the kernel
(``tl.trans``); the accumulate forms (``dot(a, b)``, ``dot(a, b, acc)``,
``acc += dot(a, b)``, two dots into one accumulator); fused epilogues (bias
broadcast along rows, leaky_relu, scaling, a cast to f16); and the matmul
tutorial kernel on hypothesis-drawn ragged M, N, K.

Tolerances follow from the precision (``dot_tolerance``), so they hold for
the interpreter and for tensor cores alike (``TILEC_TEST_DEVICE=cuda`` runs
every launch here on a GPU too).  Elements come from numpy, seeded by
hypothesis (hypothesis itself is slow at 64k-element arrays), always of both
signs; tile shapes come from short menus, so the GPU compile check
(``conftest.py``) compiles a bounded number of variants.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from helpers import INTS, PROPERTY, assert_close, empty, from_host, require, to_host
from kernels.matmul import element_strides, leaky_relu, matmul

seeds = st.integers(0, 2**32 - 1)

DOTS = [  # (input dtype, input_precision, output dtype); None is Triton's default ("tf32" for f32)
    ("float16", None, "float32"), ("bfloat16", None, "float32"), ("float16", None, "float16"),
    ("float32", None, "float32"), ("float32", "tf32", "float32"), ("float32", "tf32x3", "float32"),
    ("float32", "ieee", "float32"), ("int8", None, "int32"),
]

# (BM, BN, BK) that hypothesis draws from: cheap to compile for the GPU
# compile check (every distinct kernel costs a compile for sm_80 and sm_90).
TILES = [(16, 16, 16), (32, 16, 64), (16, 64, 32), (64, 32, 16), (32, 32, 32)]

# Tiles out to 256 along each dim, one dot each, none so large that a GPU
# runs out of registers or shared memory: (tile, dot, form).
WIDE_TILES = [((16, 256, 16), ("float16", None, "float32"), "acc"),
              ((256, 16, 32), ("bfloat16", None, "float32"), "dot"),
              ((32, 32, 256), ("float32", None, "float32"), "acc"),
              ((128, 64, 32), ("int8", None, "int32"), "acc"),
              ((64, 128, 64), ("float16", None, "float16"), "dot")]


# --------------------------------------------------------------------------- #
# Tolerances and references
# --------------------------------------------------------------------------- #

# The relative error of one product from rounding f32 inputs: tf32 keeps 10
# mantissa bits (2^-11 each if rounded to nearest, 2^-10 if truncated, as
# tensor cores may); tf32x3 splits each input into two tf32 parts and drops
# only the low x low product, leaving about 3 * 2^-20.
INPUT_ERROR = {"tf32": 2.0 ** -10, "tf32x3": 2.0 ** -19, "ieee": 0.0}


def dot_tolerance(src: str, precision, out: str, magnitude: np.ndarray, k: int) -> dict:
    """``assert_close`` arguments for a dot of ``k``-long rows: f32 accumulation
    error at the scale of |a| @ |b| + |acc| (``magnitude``; one unit of 2^-23
    per addition, allowing truncating adds), plus the inputs' rounding for f32
    under tf32 (Triton's default) or tf32x3, plus subnormal products (rounded
    on the host, flushed to zero on GPUs), plus one rounding of the result.
    Integer dots are exact.  An f16 accumulator is checked on values whose
    partial sums are all exact in f16 (``operands``), so the f32 bound holds
    for it too.  Count each fused epilogue op as one more addition in ``k``.
    """
    if src == "int8":
        return {}
    input_error = INPUT_ERROR[precision or "tf32"] if src == "float32" else 0.0
    subnormal = k * float(np.finfo(np.float32).tiny)
    return {"atol": magnitude * (k * 2.0 ** -23 + 2 * input_error) + subnormal, "ulps": 1}


def held(h, dtype: str) -> np.ndarray:
    """A host array's values for references: int64 for ints (a dot of int8 never
    overflows it), float64 for floats."""
    return from_host(h).astype(np.int64 if dtype in INTS else np.float64)


def operands(rng: np.random.Generator, src: str, out: str, k: int, *shapes) -> list[np.ndarray]:
    """Values for a dot's inputs (and accumulator) of the given shapes, both signs.

    For an f16 accumulator, small integers: every partial sum of ``k``
    products and the accumulator stays an integer under 2048, exact in f16,
    so a GPU that accumulates in f16 in any order must give the exact result.
    """
    if src == "int8":
        return [rng.integers(-128, 128, shape) for shape in shapes]
    if out == "float16":
        r = max(1, int(np.sqrt((2048 - 16) / k)))
        return [rng.integers(-r, r + 1, shape).astype(np.float64) for shape in shapes]
    return [rng.standard_normal(shape) for shape in shapes]


def poisoned(shape, dtype: str):
    """An output array filled with what no kernel computes here (NaN for floats),
    so an element left unwritten fails the check."""
    return empty(shape, dtype, fill=0x5A5A5A5A if dtype in INTS else np.nan)


def host_operand(values: np.ndarray, dtype: str, transposed: bool):
    """The host array of ``values``; with ``transposed``, a ``.T`` view of the
    transpose's storage (the same values, strides swapped)."""
    return to_host(values.T, dtype).T if transposed else to_host(values, dtype)


def check_dot(c, a, b, acc, src: str, precision, out: str, extra_ops: int = 0) -> None:
    """``c`` (a host array) is ``a @ b + acc`` (host arrays; ``acc`` may be None)
    within ``dot_tolerance``."""
    xa, xb = held(a, src), held(b, src)
    xacc = held(acc, out) if acc is not None else 0
    want = xa @ xb + xacc
    magnitude = np.abs(xa) @ np.abs(xb) + np.abs(xacc)
    assert_close(c, want, out, **dot_tolerance(src, precision, out, magnitude, xa.shape[1] + extra_ops))


# --------------------------------------------------------------------------- #
# One tile: dtypes, shapes, transposes, accumulate forms
# --------------------------------------------------------------------------- #

@tilec.jit
def load_tile(ptr, rows, cols, stride_r, stride_c, n_rows, n_cols, TRANS: tl.constexpr):
    """Element (r, c) at ``ptr + r * stride_r + c * stride_c`` for r in ``rows``,
    c in ``cols``, 0 past (n_rows, n_cols).  With TRANS the tile is loaded
    as its transpose and turned back by ``tl.trans``: the same values."""
    if TRANS:
        t = tl.load(ptr + cols[:, None] * stride_c + rows[None, :] * stride_r,
                    mask=(cols[:, None] < n_cols) & (rows[None, :] < n_rows), other=0)
        tile = tl.trans(t)
    else:
        tile = tl.load(ptr + rows[:, None] * stride_r + cols[None, :] * stride_c,
                       mask=(rows[:, None] < n_rows) & (cols[None, :] < n_cols), other=0)
    return tile


@tilec.jit
def dot_kernel(a_ptr, b_ptr, acc_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
               PRECISION: tl.constexpr, OUT: tl.constexpr, FORM: tl.constexpr,
               TRANS_A: tl.constexpr, TRANS_B: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c (M x N, row-major) = a (M x K) @ b (K x N), one masked tile.  FORM:
    "dot" ``dot(a, b)``; "acc" ``dot(a, b, acc)``; "iadd" ``acc += dot(a, b)``;
    "split" two dots into one accumulator, over K in [0, BK) then [BK, 2 BK)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = load_tile(a_ptr, rm, rk, stride_am, stride_ak, M, K, TRANS_A)
    b = load_tile(b_ptr, rk, rn, stride_bk, stride_bn, K, N, TRANS_B)
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    if FORM == "dot":
        c = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    else:
        acc = tl.load(acc_ptr + rm[:, None] * N + rn[None, :], mask=c_mask, other=0)
        if FORM == "acc":
            c = tl.dot(a, b, acc, input_precision=PRECISION)
        elif FORM == "iadd":
            c = acc
            c += tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
        else:
            c = tl.dot(a, b, acc, input_precision=PRECISION)
            a = load_tile(a_ptr + BK * stride_ak, rm, rk, stride_am, stride_ak, M, K - BK, TRANS_A)
            b = load_tile(b_ptr + BK * stride_bk, rk, rn, stride_bk, stride_bn, K - BK, N, TRANS_B)
            c = tl.dot(a, b, c, input_precision=PRECISION)
    tl.static_assert(c.dtype == OUT)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=c_mask)


def run_dot(seed: int, dot: tuple, tile: tuple, sizes: tuple, form: str = "dot",
            trans: tuple = (False, False), strides_swapped: tuple = (False, False)) -> None:
    """Launch ``dot_kernel`` on fresh values and check it."""
    src, precision, out = dot
    require(src)
    (m, n, k), (bm, bn, bk) = sizes, tile
    xa, xb, xacc = operands(np.random.default_rng(seed), src, out, k, (m, k), (k, n), (m, n))
    a, b = host_operand(xa, src, strides_swapped[0]), host_operand(xb, src, strides_swapped[1])
    acc, c = to_host(xacc, out), poisoned((m, n), out)
    (sam, sak), (sbk, sbn) = element_strides(a), element_strides(b)
    dot_kernel[(1,)](a, b, acc, c, m, n, k, sam, sak, sbk, sbn,
                     PRECISION=precision, OUT=getattr(tl, out), FORM=form, TRANS_A=trans[0], TRANS_B=trans[1],
                     BM=bm, BN=bn, BK=bk)
    check_dot(c, a, b, None if form == "dot" else acc, src, precision, out)


def dot_id(dot: tuple) -> str:
    src, precision, out = dot
    return f"{src}-{precision or 'default'}-{out}"


def ragged_sizes(tile: tuple, k_tiles: int = 1):
    """(m, n, k) up to the tile (k up to ``k_tiles`` of it), mostly not its multiples."""
    bm, bn, bk = tile
    return st.tuples(st.integers(1, bm), st.integers(1, bn), st.integers(1, k_tiles * bk))


@st.composite
def tile_and_sizes(draw, k_tiles: int = 1):
    tile = draw(st.sampled_from(TILES))
    return tile, draw(ragged_sizes(tile, k_tiles))


@pytest.mark.parametrize("dot", DOTS, ids=dot_id)
@settings(PROPERTY, max_examples=3)
@given(seed=seeds, shape=tile_and_sizes(), form=st.sampled_from(["dot", "acc"]))
def test_dot_over_dtypes_and_tile_shapes(dot, seed, shape, form):
    run_dot(seed, dot, *shape, form=form)


@pytest.mark.parametrize("tile,dot,form", [pytest.param(*case, id=f"{'x'.join(map(str, case[0]))}-{dot_id(case[1])}-{case[2]}")
                                            for case in WIDE_TILES])
@settings(PROPERTY, max_examples=1)
@given(seed=seeds, data=st.data())
def test_dot_of_wide_tiles(tile, dot, form, seed, data):
    run_dot(seed, dot, tile, data.draw(ragged_sizes(tile)), form=form)


TRANSPOSED_DOTS = [("float16", None, "float32"), ("float32", "ieee", "float32"), ("int8", None, "int32")]


@pytest.mark.parametrize("dot", TRANSPOSED_DOTS, ids=dot_id)
@settings(PROPERTY, max_examples=4)
@given(seed=seeds, shape=tile_and_sizes(), trans=st.tuples(st.booleans(), st.booleans()),
       strides_swapped=st.tuples(st.booleans(), st.booleans()))
def test_dot_of_operands_transposed_by_strides_and_by_tl_trans(dot, seed, shape, trans, strides_swapped):
    run_dot(seed, dot, *shape, trans=trans, strides_swapped=strides_swapped)


FORM_DOTS = [("float16", None, "float32"), ("bfloat16", None, "float32"), ("float16", None, "float16"),
             ("int8", None, "int32")]


@pytest.mark.parametrize("dot", FORM_DOTS, ids=dot_id)
@settings(PROPERTY, max_examples=3)
@given(seed=seeds, form=st.sampled_from(["acc", "iadd", "split"]), data=st.data())
def test_dot_accumulate_forms(dot, seed, form, data):
    tile, sizes = data.draw(tile_and_sizes(k_tiles=2 if form == "split" else 1))
    run_dot(seed, dot, tile, sizes, form=form)


# --------------------------------------------------------------------------- #
# Fused epilogues
# --------------------------------------------------------------------------- #

@tilec.jit
def dot_epilogue_kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, alpha,
                        BIAS: tl.constexpr, ACTIVATION: tl.constexpr, SCALE: tl.constexpr, OUT: tl.constexpr,
                        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = (leaky_relu?(a @ b + bias?) * alpha?).to(OUT); bias (N,) is broadcast along rows."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = load_tile(a_ptr, rm, rk, K, 1, M, K, False)
    b = load_tile(b_ptr, rk, rn, N, 1, K, N, False)
    c = tl.dot(a, b)
    if BIAS:
        c += tl.load(bias_ptr + rn, mask=rn < N, other=0)[None, :]
    if ACTIVATION == "leaky_relu":
        c = leaky_relu(c)
    if SCALE:
        c = c * alpha
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c.to(OUT), mask=(rm[:, None] < M) & (rn[None, :] < N))


def leaky_relu_reference(x):
    return np.where(x >= 0, x, 0.01 * x)


@settings(PROPERTY, max_examples=6)
@given(seed=seeds, shape=tile_and_sizes(), src=st.sampled_from(["float16", "bfloat16"]),
       out=st.sampled_from(["float32", "float16"]), bias=st.booleans(),
       activation=st.sampled_from(["", "leaky_relu"]), alpha=st.sampled_from([None, -0.75, 3.0]))
def test_dot_fused_epilogue(seed, shape, src, out, bias, activation, alpha):
    require(src)
    (bm, bn, bk), (m, n, k) = shape
    rng = np.random.default_rng(seed)
    a, b = to_host(rng.standard_normal((m, k)), src), to_host(rng.standard_normal((k, n)), src)
    bias_values = rng.standard_normal(n).astype(np.float32)
    c = poisoned((m, n), out)
    dot_epilogue_kernel[(1,)](a, b, bias_values, c, m, n, k, 1.0 if alpha is None else alpha,
                              BIAS=bias, ACTIVATION=activation, SCALE=alpha is not None, OUT=getattr(tl, out),
                              BM=bm, BN=bn, BK=bk)
    xa, xb, scale = held(a, src), held(b, src), 1.0 if alpha is None else alpha
    want, magnitude = xa @ xb + bias * bias_values, np.abs(xa) @ np.abs(xb) + bias * np.abs(bias_values)
    if activation:
        want = leaky_relu_reference(want)
    # the bias add, leaky_relu's product and the scaling each round once in f32
    assert_close(c, want * scale, out, **dot_tolerance(src, None, out, magnitude * abs(scale), k + 3))


# --------------------------------------------------------------------------- #
# The matmul tutorial kernel: grouped ordering, a K loop, masks on ragged M, N, K
# --------------------------------------------------------------------------- #

# (block_m, block_n, block_k, group_size_m, num_warps, num_stages)
MATMUL_CONFIGS = [(16, 16, 16, 1, 4, 1), (32, 16, 32, 2, 4, 2), (16, 64, 16, 4, 4, 3), (64, 32, 64, 8, 8, 4),
                  (64, 64, 32, 8, 4, 3)]


def matmul_config(config: tuple) -> dict:
    bm, bn, bk, group, warps, stages = config
    return {"block_m": bm, "block_n": bn, "block_k": bk, "group_size_m": group,
            "num_warps": warps, "num_stages": stages}


def check_matmul(seed: int, sizes: tuple, src: str, activation: str, config: dict,
                 transposed: tuple = (False, False)) -> None:
    """The tutorial's ``matmul`` on fresh values of ``sizes`` (M, N, K) against numpy."""
    require(src)
    m, n, k = sizes
    rng = np.random.default_rng(seed)
    a = host_operand(rng.standard_normal((m, k)), src, transposed[0])
    b = host_operand(rng.standard_normal((k, n)), src, transposed[1])
    c = matmul(a, b, activation, **config)
    xa, xb = held(a, src), held(b, src)
    want, magnitude = xa @ xb, np.abs(xa) @ np.abs(xb)
    if activation:
        want = leaky_relu_reference(want)
    assert_close(c, want, "float16", **dot_tolerance(src, None, "float16", magnitude, k + 1))


@settings(PROPERTY, max_examples=6)
@given(seed=seeds, sizes=st.tuples(st.integers(1, 300), st.integers(1, 300), st.integers(1, 300)),
       src=st.sampled_from(["float16", "bfloat16"]), activation=st.sampled_from(["", "leaky_relu"]),
       config=st.sampled_from(MATMUL_CONFIGS), transposed=st.tuples(st.booleans(), st.booleans()))
def test_tutorial_matmul_on_ragged_sizes(seed, sizes, src, activation, config, transposed):
    check_matmul(seed, sizes, src, activation, matmul_config(config), transposed)


# --------------------------------------------------------------------------- #
# The checks can fail: what a wrong dot computes is outside the tolerance
# --------------------------------------------------------------------------- #

def wrong_results(a: np.ndarray, b: np.ndarray) -> dict:
    """Results of plausible codegen bugs, for a (M x K) and b (K x N) float32 values."""
    shifted = a @ b
    shifted[:, 1:] = shifted[:, :-1]
    return {
        "an operand transposed": a.T @ b,
        "a column written to its neighbour": shifted,
        "the last k step dropped": a[:, :-16] @ b[:-16],
        "tf32 inputs under tf32x3": round_tf32(a) @ round_tf32(b),
    }


def round_tf32(x: np.ndarray) -> np.ndarray:
    """f32 values truncated to tf32's 10 mantissa bits (what a tf32 tensor core sees)."""
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("bug", ["an operand transposed", "a column written to its neighbour",
                                 "the last k step dropped", "tf32 inputs under tf32x3"])
def test_the_tolerance_rejects_what_a_wrong_dot_computes(bug):
    rng = np.random.default_rng(0)
    a, b = (to_host(rng.standard_normal((64, 64)), "float32") for _ in range(2))
    got = to_host(wrong_results(a.astype(np.float64), b.astype(np.float64))[bug], "float32")
    with pytest.raises(AssertionError, match="elements differ"):
        check_dot(got, a, b, None, "float32", "tf32x3", "float32")
    check_dot(to_host(a.astype(np.float64) @ b, "float32"), a, b, None, "float32", "tf32x3", "float32")
