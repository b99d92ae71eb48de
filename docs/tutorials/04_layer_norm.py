"""Tutorial 04: layer normalization, forward and backward.

The forward kernel normalizes one row a program.  The backward pass computes
dx one row a program and accumulates the partial dW/dB of the rows that
share a lock (``row % GROUP_SIZE_M``) under a spin lock made of
``atomic_cas`` and ``atomic_xchg``; a second kernel sums the groups' partial
results.

Run ``python docs/tutorials/04_layer_norm.py`` (``--small``: the host interpreter only, as CI);
the prose is 04_layer_norm.md beside it.
"""
import sys
from pathlib import Path

if __name__ == "__main__":  # run from a checkout: use its tilec and benchmarks/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np

import tilec
import tilec.language as tl

@tilec.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Mean, a block at a time.
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Variance.
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    # Normalize and apply the affine transform.
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@tilec.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # Rows that share a lock accumulate into the same partial-sum row.
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # dx
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    # Partial dw, db of this row, added to the group's under the lock.
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@tilec.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N,
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


# --- launching on numpy arrays (the host) or CUDA tensors (their GPU) ------------------
def row_stride(x) -> int:
    return x.strides[0] // x.itemsize if isinstance(x, np.ndarray) else x.stride(0)


def empty_like(x):
    return np.empty_like(x) if isinstance(x, np.ndarray) else x.new_empty(x.shape)


def zeros_like_library(like, shape, dtype: str):
    """Zeros of ``shape`` and ``dtype`` from ``like``'s library (numpy, or torch on its device)."""
    if isinstance(like, np.ndarray):
        return np.zeros(shape, dtype)
    import torch

    return torch.zeros(shape, dtype=getattr(torch, dtype), device=like.device)


def forward_config(n_cols: int, elem_size: int) -> tuple[int, int]:
    """(BLOCK_SIZE, num_warps) of Triton's tutorial: the whole row in one block
    when it fits in 64 KB; one warp per 256 elements, 1 to 8."""
    block = min(65536 // elem_size, tilec.next_power_of_2(n_cols))
    return block, min(max(block // 256, 1), 8)


def layer_norm_forward(x, weight, bias, eps, block_size=None, num_warps=None):
    """y, mean and rstd (float32; what the backward pass needs) of a 2-D x.
    ``block_size``/``num_warps`` default to ``forward_config``."""
    M, N = x.shape
    elem_size = x.itemsize if isinstance(x, np.ndarray) else x.element_size()
    default_block, default_warps = forward_config(N, elem_size)
    y = empty_like(x)
    mean, rstd = zeros_like_library(x, (M,), "float32"), zeros_like_library(x, (M,), "float32")
    _layer_norm_fwd_fused[(M,)](x, y, weight, bias, mean, rstd, row_stride(x), N, eps,
                                BLOCK_SIZE=block_size or default_block, num_warps=num_warps or default_warps)
    return y, mean, rstd


def backward_group_size(n_cols: int) -> int:
    """Triton's heuristic: how many partial dW/dB rows (and locks); more for narrow rows."""
    return 64 if n_cols > 8192 else 96 if n_cols > 4096 else 128 if n_cols > 1024 else 256


def layer_norm_backward(dy, x, weight, mean, rstd, group_size_m=None, block_m=32, block_n=128,
                        kernels=None, out=None):
    """dx, dw, db of ``y = layer_norm(x) * weight + bias`` given dy.

    ``kernels``: the pair (dx kernel, dw/db kernel), by default this file's;
    the benchmark passes their Triton twins.  ``out``: (dx, dw, db) to write
    into, else new arrays.  The partial sums are float32."""
    M, N = x.shape
    dx_fused, dwdb = kernels or (_layer_norm_bwd_dx_fused, _layer_norm_bwd_dwdb)
    group = group_size_m or backward_group_size(N)
    block_n_row = tilec.next_power_of_2(N)  # the dx kernel holds a whole row
    locks = zeros_like_library(x, (2 * group,), "int32")  # group locks, then group "first writer done" flags
    partial_dw = zeros_like_library(x, (group, N), "float32")
    partial_db = zeros_like_library(x, (group, N), "float32")
    dx, dw, db = out or (empty_like(dy), empty_like(weight), empty_like(weight))
    dx_fused[(M,)](dx, dy, partial_dw, partial_db, x, weight, mean, rstd, locks, row_stride(x), N,
                   GROUP_SIZE_M=group, BLOCK_SIZE_N=block_n_row, num_warps=min(max(block_n_row // 256, 1), 8))
    grid = lambda meta: (tilec.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    dwdb[grid](partial_dw, partial_db, dw, db, min(group, M), N, BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n)
    return dx, dw, db


# --- references ----------------------------------------------------------------------
def numpy_layer_norm(x, w, b, eps):
    """y, mean, rstd in float64."""
    x = x.astype(np.float64)
    mean = x.mean(axis=1)
    rstd = 1.0 / np.sqrt(x.var(axis=1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * w + b, mean, rstd


def numpy_layer_norm_grads(dy, x, w, eps):
    """dx, dw, db in float64, from the closed form of the gradient."""
    _, mean, rstd = numpy_layer_norm(x, w, 0.0, eps)
    xhat = (x.astype(np.float64) - mean[:, None]) * rstd[:, None]
    wdy = w.astype(np.float64) * dy
    c1 = (xhat * wdy).mean(axis=1, keepdims=True)
    c2 = wdy.mean(axis=1, keepdims=True)
    return (wdy - (xhat * c1 + c2)) * rstd[:, None], (dy * xhat).sum(axis=0), dy.astype(np.float64).sum(axis=0)


def torch_layer_norm_grads(dy, x, w, b, eps) -> dict:
    """y, dx, dw, db in float64 by torch's autograd."""
    import torch

    x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, b))
    y = torch.nn.functional.layer_norm(x64, (x.shape[1],), w64, b64, eps)
    y.backward(dy.double())
    return {"y": y.detach(), "dx": x64.grad, "dw": w64.grad, "db": b64.grad}


# --- the tutorial ----------------------------------------------------------------------
EPS = 1e-5
ROWS = 4096  # the benchmark's M


def check_on_host(checks) -> None:
    """Small ragged shapes; a forward block of 16 (so the loops run several
    times) and 4 lock groups (so rows contend for the locks)."""
    rng = np.random.default_rng(0)
    for M, N, block_size, group in ((7, 37, 16, 4), (33, 100, 32, 4), (12, 50, None, None)):
        x = (rng.standard_normal((M, N)) * 3 + 1).astype(np.float32)
        w, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
        dy = rng.standard_normal((M, N)).astype(np.float32)
        y, mean, rstd = layer_norm_forward(x, w, b, EPS, block_size=block_size)
        y_ref, mean_ref, rstd_ref = numpy_layer_norm(x, w, b, EPS)
        where = f"{M}x{N}, block {block_size or 'default'}, groups {group or 'default'}"
        checks.close(f"forward y {where}", y, y_ref, rtol=1e-4, atol=1e-4)
        checks.close(f"forward mean and rstd {where}", np.stack([mean, rstd]), np.stack([mean_ref, rstd_ref]),
                     rtol=1e-4, atol=1e-5)
        grads = layer_norm_backward(dy, x, w, mean, rstd, group_size_m=group)
        for name, got, want in zip(("dx", "dw", "db"), grads, numpy_layer_norm_grads(dy, x, w, EPS)):
            checks.close(f"backward {name} {where} against numpy", got, want, rtol=1e-4, atol=1e-4)


def gpu_inputs(M: int, N: int) -> tuple:
    """Triton's tutorial inputs, float16: x = -2.3 + 0.5 * normal, w and b uniform, dy 0.1 * normal."""
    import torch

    x = -2.3 + 0.5 * torch.randn(M, N, device="cuda", dtype=torch.float16)
    w = torch.rand(N, device="cuda", dtype=torch.float16)
    b = torch.rand(N, device="cuda", dtype=torch.float16)
    return x, w, b, 0.1 * torch.randn_like(x)


def check_on_gpu(checks) -> None:
    import torch

    torch.manual_seed(0)
    for M, N in ((1151, 8192), (ROWS, 1000), (ROWS, 16384)):
        x, w, b, dy = gpu_inputs(M, N)
        ref = torch_layer_norm_grads(dy, x, w, b, EPS)
        y, mean, rstd = layer_norm_forward(x, w, b, EPS)
        checks.close(f"forward y {M}x{N} float16 against torch", y, ref["y"], rtol=1e-2, atol=1e-2)
        grads = layer_norm_backward(dy, x, w, mean, rstd)
        for name, got in zip(("dx", "dw", "db"), grads):
            checks.close(f"backward {name} {M}x{N} float16 against torch autograd", got, ref[name],
                         rtol=1e-2, atol=1e-2 * (M ** 0.5 if name != "dx" else 1))


def what_tilec_does(tut) -> None:
    """Compile what a 4096 x 8192 float16 input runs, for an H100, here."""
    M, N = ROWS, 8192
    x, w, stats = np.empty((M, N), np.float16), np.empty(N, np.float16), np.empty(M, np.float32)
    block, warps = forward_config(N, 2)
    tut.heading(f"what tilec does: _layer_norm_fwd_fused, {M}x{N} float16, BLOCK_SIZE={block}, {warps} warps, "
                f"target {tut.TARGET}")
    forward = _layer_norm_fwd_fused.compile(x, x, w, w, stats, stats, N, N, EPS, BLOCK_SIZE=block,
                                            num_warps=warps, target=tut.TARGET)
    tut.show_compiled(forward, ("load", "reduce", "store"), ("ld.global", "st.global", "shfl", "bar.sync"))
    group = backward_group_size(N)
    tut.heading(f"what tilec does: _layer_norm_bwd_dx_fused, GROUP_SIZE_M={group}, BLOCK_SIZE_N={N}, {warps} warps")
    partial, locks = np.empty((group, N), np.float32), np.empty(2 * group, np.int32)
    dx_fused = _layer_norm_bwd_dx_fused.compile(x, x, partial, partial, x, w, stats, stats, locks, N, N,
                                                GROUP_SIZE_M=group, BLOCK_SIZE_N=N, num_warps=warps,
                                                target=tut.TARGET)
    tut.show_compiled(dx_fused, ("while", "atomic_cas", "atomic_rmw", "barrier", "if"),
                      ("atom", "bar.sync", "ld.global", "st.global"))
    tut.heading("what tilec does: _layer_norm_bwd_dwdb, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128, 4 warps")
    dwdb = _layer_norm_bwd_dwdb.compile(partial, partial, w, w, group, N, BLOCK_SIZE_M=32, BLOCK_SIZE_N=128,
                                        target=tut.TARGET)
    tut.show_compiled(dwdb, ("load", "reduce", "store"), ("ld.global", "st.global", "shfl", "bar.sync"))


def backward_sweep():
    """The backward pass as a ``benchmarks/common.py`` sweep over N (M = 4096):
    tilec and Triton run ``layer_norm_backward`` with their kernels, torch its autograd."""
    from benchmarks import common, kernels

    def make_case(n_cols: int) -> common.Case:
        x, w, b, dy = gpu_inputs(ROWS, n_cols)
        _, mean, rstd = layer_norm_forward(x, w, b, EPS)
        runs, poison = {}, {}
        for language in common.languages():
            pair = (_layer_norm_bwd_dx_fused, _layer_norm_bwd_dwdb)
            pair = tuple(kernels.for_triton(k) for k in pair) if language == "triton" else pair
            out = (empty_like(dy), empty_like(w), empty_like(w))
            runs[language] = lambda pair=pair, out=out: dict(zip(
                ("dx", "dw", "db"), layer_norm_backward(dy, x, w, mean, rstd, kernels=pair, out=out)))
            poison[language] = list(out)
        runs["torch"] = torch_backward(x, w, b, dy)
        refs = {name: value for name, value in torch_layer_norm_grads(dy, x, w, b, EPS).items() if name != "y"}
        nbytes = 2 * (3 * x.numel() + 3 * n_cols) + 8 * ROWS  # x, dy read, dx written; w read; dw, db written
        return common.Case(size=n_cols, nbytes=nbytes, runs=runs, refs=refs, tol=5e-3, poison=poison)

    return common.Sweep(
        name="layer_norm_backward", title=f"layer norm backward, float16, M={ROWS}", size_label="N",
        make_case=make_case, target=common.Target(0.0, lambda n: False, "(none; reported)"),
        config={"dtype": "float16", "rows": ROWS, "group_size_m": "backward_group_size(N)",
                "partial sums": "float32", "bytes": "2 * (3 * M * N + 3 * N) + 8 * M"})


def torch_backward(x, w, b, dy):
    """torch's layer-norm backward alone (the forward graph is built once, kept)."""
    import torch

    xt, wt, bt = (t.detach().clone().requires_grad_() for t in (x, w, b))
    y = torch.nn.functional.layer_norm(xt, (x.shape[1],), wt, bt, EPS)

    def run() -> dict:
        xt.grad = wt.grad = bt.grad = None
        y.backward(dy, retain_graph=True)
        return {"dx": xt.grad, "dw": wt.grad, "db": bt.grad}
    return run


def benchmark(tut, out: Path) -> None:
    from benchmarks import layernorm

    tut.heading("benchmark: forward, tilec vs Triton vs torch (benchmarks/layernorm.py)")
    tut.run_sweep(layernorm.SWEEP, layernorm.SIZES, out)
    tut.heading("benchmark: backward, tilec vs Triton vs torch")
    tut.run_sweep(backward_sweep(), layernorm.SIZES, out)


def main() -> None:
    import tutorial_support

    tutorial_support.run(__doc__, check_on_host, check_on_gpu, what_tilec_does, benchmark)


if __name__ == "__main__":
    main()
