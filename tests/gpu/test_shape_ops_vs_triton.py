"""``gather``, ``flip``, ``cat``, ``sort``, ``topk``, ``histogram``,
``reduce_or``, ``swizzle2d``, ``tl.add``/``sub``/``mul`` and ``exp``/``exp2``
on the GPU: one kernel source, compiled once by Triton and once by tilec, on
the same inputs, must write the same bits (``cat``'s order is free in Triton:
compared as a multiset).  Needs a CUDA GPU, torch and Triton."""
from __future__ import annotations

import types

import pytest

import tilec
import tilec.language as tilec_tl

tl = tilec_tl  # the kernels' global `tl`; each compiler gets its own copy of them


def gather_k(x_ptr, i_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M)[:, None], tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    tl.store(z_ptr + rm * N + rn, tl.gather(x, tl.load(i_ptr + rm * N + rn), 1))


def flip_k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M)[:, None], tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    tl.store(z_ptr + rm * N + rn, tl.flip(x, 0))
    tl.store(z_ptr + M * N + rm * N + rn, tl.flip(x, 1))  # Triton 3.6's flip needs dim (None fails there)


def cat_k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M * N // 2)
    tl.store(z_ptr + tl.arange(0, M * N), tl.cat(tl.load(x_ptr + offs), tl.load(x_ptr + M * N // 2 + offs),
                                                 can_reorder=True))


def sort_k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M)[:, None], tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    tl.store(z_ptr + rm * N + rn, tl.sort(x))
    tl.store(z_ptr + M * N + rm * N + rn, tl.sort(x, descending=True))
    rk = tl.arange(0, 4)[None, :]
    tl.store(z_ptr + 2 * M * N + rm * 4 + rk, tl.topk(x, 4))


def histogram_k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M * N)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + tl.arange(0, N), tl.histogram(x, N, mask=offs < M * N - 5))


def reduce_or_k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    rm, rn = tl.arange(0, M)[:, None], tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    tl.store(z_ptr + tl.arange(0, N), tl.reduce_or(x, 0))
    tl.store(z_ptr + N + tl.arange(0, M), tl.reduce_or(x, 1))


def swizzle2d_k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    i, j = tl.arange(0, M)[:, None], tl.arange(0, N)[None, :]
    a, b = tl.swizzle2d(i, j, M, N, 3)
    tl.store(z_ptr + i * N + j, a * N + b)


def operators_k(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M * N)
    x = tl.load(tl.add(x_ptr, offs))
    y = tl.load(x_ptr + M * N - 1 - offs)
    tl.store(z_ptr + offs, tl.sub(tl.mul(x, 2), tl.add(x, y)))  # x * 2 is exact: fused or not, one answer


def _compiled(fn, tl_module, jit):
    """``fn`` with ``tl`` bound to ``tl_module``, jitted; its annotations are
    strings (``from __future__ import annotations``), read in the new globals."""
    copy = types.FunctionType(fn.__code__, {**fn.__globals__, "tl": tl_module}, fn.__name__)
    copy.__annotations__ = dict(fn.__annotations__)
    return jit(copy)


CASES = {  # name: (kernel, dtypes, output elements per M*N, compare as a multiset)
    "gather": (gather_k, ["float32", "int16", "float16"], 1, False),
    "flip": (flip_k, ["float32", "int8", "bfloat16", "int64"], 2, False),
    "cat": (cat_k, ["float32", "int32"], 1, True),
    "sort": (sort_k, ["float32", "int32", "float16", "uint8"], 3, False),
    "histogram": (histogram_k, ["int32"], 1, False),
    "reduce_or": (reduce_or_k, ["int32", "uint16", "int64"], 1, False),
    "swizzle2d": (swizzle2d_k, ["int32"], 1, False),
    "operators": (operators_k, ["float32", "int32", "uint8"], 1, False),
}


def _inputs(torch, name: str, dtype, m: int, n: int):
    g = torch.Generator(device="cpu").manual_seed(m * 100 + n)
    numel = m * n
    if name == "gather":
        return [torch.randn(numel, generator=g).mul(50).to(dtype).cuda(),
                torch.randint(0, n, (numel,), generator=g, dtype=torch.int32).cuda()]
    if name == "histogram":
        return [torch.randint(0, n, (numel,), generator=g).to(dtype).cuda()]
    if dtype.is_floating_point:
        return [torch.randn(numel, generator=g).mul(50).to(dtype).cuda()]
    info = torch.iinfo(dtype)
    return [torch.randint(max(info.min, -1000), min(info.max, 1000), (numel,), generator=g).to(dtype).cuda()]


@pytest.mark.gpu
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("m,n", [(4, 16), (2, 64), (16, 8)])
def test_tilec_writes_what_triton_writes(torch, name, m, n):
    triton = pytest.importorskip("triton")
    fn, dtypes, out_per, multiset = CASES[name]
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        args = _inputs(torch, name, dtype, m, n)
        out_dtype = torch.int32 if name == "histogram" else dtype
        outs = []
        for module, jit in ((triton.language, triton.jit), (tilec_tl, tilec.jit)):
            z = torch.zeros(out_per * m * n, dtype=out_dtype, device="cuda")
            _compiled(fn, module, jit)[(1,)](*args, z, M=m, N=n)
            outs.append(z.cpu())
        want, got = outs
        if multiset:
            want, got = want.sort().values, got.sort().values
        assert torch.equal(want.view(torch.uint8), got.view(torch.uint8)), (name, dtype_name, want, got)


def exp_k(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + 2 * offs, tl.exp(x))
    tl.store(z_ptr + 2 * offs + 1, tl.exp2(x))


@pytest.mark.gpu
def test_exp_and_exp2_write_what_triton_writes(torch):
    """Triton's fast float32 ``exp`` (``ex2.approx`` of ``x * log2(e)``,
    subnormal results kept) and ``exp2`` (``ex2.approx.ftz``: results under
    2^-126 are 0), bit for bit, over inputs from -160 to 100 (the flushed
    range, the subnormal one, normal results, overflow) and the special
    values.  (Triton's ``exp`` takes float32 and float64 only.)"""
    triton = pytest.importorskip("triton")
    dtype = torch.float32
    block, n = 1024, 1 << 16
    x = torch.linspace(-160, 100, n - 8, dtype=torch.float64)
    x = torch.cat([x, torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40, -1e-40, -126.5],
                                   dtype=torch.float64)]).to(dtype).cuda()
    outs = []
    for module, jit in ((triton.language, triton.jit), (tilec_tl, tilec.jit)):
        z = torch.zeros(2 * n, dtype=dtype, device="cuda")
        _compiled(exp_k, module, jit)[(n // block,)](x, z, BLOCK=block)
        outs.append(z.cpu())
    want, got = outs
    same = (want.view(torch.int32) == got.view(torch.int32)) | (want.isnan() & got.isnan())
    where = (~same).nonzero().flatten()[:6]
    assert bool(same.all()), [(x[int(i) // 2].item(), "exp2" if i % 2 else "exp", want[i].item(), got[i].item())
                              for i in where]
