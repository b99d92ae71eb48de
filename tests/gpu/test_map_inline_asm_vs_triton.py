"""``tl.inline_asm_elementwise`` and ``tl.map_elementwise`` on the GPU: each
kernel source is compiled by Triton 3.6 and by tilec, run on the same
inputs, and both results are held to a numpy reference (bit for bit).
The asm cases are Triton's own (``test_core.py``'s ``test_inline_asm*``:
shift by a register, four bytes in a register, asm that loads and stores
through pointers, several outputs, several packed outputs) plus two halves
in a register; the map cases are bodies whose branches and loops differ per
element.  A case Triton itself cannot compile is reported as a skip of the
Triton side only.  Needs a CUDA GPU, torch and Triton.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import tilec
import tilec.language as tilec_tl

tl = tilec_tl  # the kernels' global `tl`; each compiler gets its own copy of them


# --------------------------------------------------------------------------- #
# Kernels (plain functions: each compiler jits its own copy)
# --------------------------------------------------------------------------- #

def shift_k(x_ptr, y_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x, y = tl.load(x_ptr + offs), tl.load(y_ptr + offs)
    s = tl.full([N], 17, tl.int32)
    z = tl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $2, $3;", "=r,r, r, r", [x, y, s], dtype=tl.int32,
                                  is_pure=True, pack=1)
    tl.store(z_ptr + offs, z)


def bytes_k(x_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise("and.b32 $0, $1, 0x1F1F1F1F; shl.b32 $0, $0, 3;", "=r,r",
                                  [tl.load(x_ptr + offs)], dtype=tl.int8, is_pure=True, pack=4)
    tl.store(z_ptr + offs, y)


def pointers_k(x_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.inline_asm_elementwise("ld.global.b8 $0, [$1]; shl.b32 $0, $0, 3; st.global.b8 [$2], $0;", "=r,l,l",
                              [x_ptr + offs, z_ptr + offs], dtype=tl.int8, is_pure=False, pack=1)


def outputs_k(a_ptr, b_ptr, c_ptr, d_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    c, d = tl.inline_asm_elementwise("sub.u32 $0, $2, $3;\n sub.u32 $1, $3, $2;", "=r,=r,r,r", [a, b],
                                     dtype=(tl.uint32, tl.uint32), is_pure=True, pack=1)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


def packed_outputs_k(a_ptr, b_ptr, c_ptr, d_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    c, d = tl.inline_asm_elementwise(
        """
        {
            .reg .b8 tmp<4>;
            mov.b32 {tmp0, tmp1, tmp2, tmp3}, $8;
            cvt.u32.u8 $0, tmp0;
            cvt.u32.u8 $1, tmp1;
            cvt.u32.u8 $2, tmp2;
            cvt.u32.u8 $3, tmp3;
        }
        cvt.rn.f32.s32 $4, $0;
        cvt.rn.f32.s32 $5, $1;
        cvt.rn.f32.s32 $6, $2;
        cvt.rn.f32.s32 $7, $3;
        max.f32 $4, $4, $9;
        max.f32 $5, $5, $10;
        max.f32 $6, $6, $11;
        max.f32 $7, $7, $12;
        """, "=r,=r,=r,=r,=r,=r,=r,=r,r,r,r,r,r", [a, b], dtype=(tl.int32, tl.float32), is_pure=True, pack=4)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


def halves_k(x_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    z = tl.inline_asm_elementwise("add.f16x2 $0, $1, $1;", "=r,r", [tl.load(x_ptr + offs)], dtype=tl.float16,
                                  is_pure=True, pack=2)
    tl.store(z_ptr + offs, z)


def selu_scalar(x, alpha):
    if x > 0:
        return x
    else:
        return alpha * (tl.exp(x) - 1)


def selu_k(x_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    alpha = tl.full([N], 1.5, tl.float32)  # Triton 3.6 maps tensors only
    tl.store(z_ptr + offs, tl.map_elementwise(selu_scalar, tl.load(x_ptr + offs), alpha))


def collatz_scalar(x):
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    return steps


def collatz_k(x_ptr, z_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(z_ptr + offs, tl.map_elementwise(collatz_scalar, tl.load(x_ptr + offs)))


def pair_scalar(a0, a1, b0, b1):
    return a0 + b0, a1 + b1, a0 * b0, a1 * b1


def pair_k(a_ptr, b_ptr, c_ptr, d_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    c, d = tl.map_elementwise(pair_scalar, tl.load(a_ptr + offs), tl.load(b_ptr + offs), pack=2)
    tl.store(c_ptr + offs, c)
    tl.store(d_ptr + offs, d)


def _collatz(v: int) -> int:
    steps = 0
    while v != 1:
        v, steps = (v // 2 if v % 2 == 0 else 3 * v + 1), steps + 1
    return steps


def _selu(x):
    return np.where(x > 0, x, np.float32(1.5) * (np.exp(x) - np.float32(1)))


# name: (kernel, scalar functions it maps, input maker (rng, n) -> arrays, output dtypes, reference, atol)
CASES = {
    "shift": (shift_k, [], lambda r, n: [r.integers(0, 2**32, n, dtype=np.uint32) for _ in range(2)], ["uint32"],
              lambda x, y: [(y << np.uint32(17)) | (x >> np.uint32(15))], 0),
    "bytes": (bytes_k, [], lambda r, n: [r.integers(0, 256, n, dtype=np.uint8)], ["uint8"],
              lambda x: [(x << np.uint8(3)).astype(np.uint8)], 0),
    "pointers": (pointers_k, [], lambda r, n: [r.integers(0, 256, n, dtype=np.uint8)], ["uint8"],
                 lambda x: [(x << np.uint8(3)).astype(np.uint8)], 0),
    "outputs": (outputs_k, [], lambda r, n: [r.integers(0, 2**32, n, dtype=np.uint32) for _ in range(2)],
                ["uint32", "uint32"], lambda a, b: [a - b, b - a], 0),
    "packed_outputs": (packed_outputs_k, [],
                       lambda r, n: [r.integers(0, 256, n, dtype=np.uint8), r.normal(0, 100, n).astype(np.float32)],
                       ["int32", "float32"], lambda a, b: [a.astype(np.int32), np.maximum(a.astype(np.float32), b)], 0),
    "halves": (halves_k, [], lambda r, n: [r.normal(0, 10, n).astype(np.float16)], ["float16"],
               lambda x: [x + x], 0),
    "selu": (selu_k, [selu_scalar], lambda r, n: [r.normal(0, 2, n).astype(np.float32)], ["float32"],
             lambda x: [_selu(x)], 1e-5),  # exp: a few ulps either way
    "collatz": (collatz_k, [collatz_scalar], lambda r, n: [r.integers(1, 5000, n, dtype=np.int32)], ["int32"],
                lambda x: [np.array([_collatz(int(v)) for v in x], np.int32)], 0),
    "pair": (pair_k, [pair_scalar], lambda r, n: [r.integers(-1000, 1000, n, dtype=np.int32) for _ in range(2)],
             ["int32", "int32"], lambda a, b: [a + b, a * b], 0),
}


def _compiled(fn, helpers: list, tl_module, jit):
    """``fn`` and the scalar functions it maps, each with ``tl`` bound to
    ``tl_module`` and jitted by ``jit`` (annotations are strings here)."""
    scope = {**fn.__globals__, "tl": tl_module}
    for h in helpers:
        scope[h.__name__] = jit(types.FunctionType(h.__code__, scope, h.__name__))
    copy = types.FunctionType(fn.__code__, scope, fn.__name__)
    copy.__annotations__ = dict(fn.__annotations__)
    return jit(copy)


def _run(torch, kernel, inputs: list, out_dtypes: list, n: int) -> list[np.ndarray]:
    args = [torch.from_numpy(x).cuda() for x in inputs]
    outs = [torch.zeros(n, dtype=getattr(torch, d), device="cuda") for d in out_dtypes]
    kernel[(1,)](*args, *outs, N=n)
    torch.cuda.synchronize()
    return [o.cpu().numpy() for o in outs]


def _check(got: list, want: list, atol: float) -> None:
    for g, w in zip(got, want):
        if atol:
            np.testing.assert_allclose(g, w, rtol=atol, atol=atol)
        else:
            np.testing.assert_array_equal(g.view(np.uint8), np.ascontiguousarray(w).view(np.uint8))


@pytest.mark.gpu
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("n", [128, 512, 2048])
def test_tilec_and_triton_compute_the_reference(torch, name, n):
    fn, helpers, make, out_dtypes, reference, atol = CASES[name]
    inputs = make(np.random.default_rng(n), n)
    want = reference(*inputs)
    _check(_run(torch, _compiled(fn, helpers, tilec_tl, tilec.jit), inputs, out_dtypes, n), want, atol)
    triton = pytest.importorskip("triton")
    try:
        got = _run(torch, _compiled(fn, helpers, triton.language, triton.jit), inputs, out_dtypes, n)
    except Exception as e:  # Triton's own limits are not tilec's
        pytest.skip(f"Triton 3.6 cannot run `{name}`: {type(e).__name__}: {str(e)[:200]}")
    _check(got, want, atol)
