"""Tutorial 05: layer normalization, forward and backward.

The backward pass accumulates the partial dW/dB of the rows that share a lock
(``row % GROUP_SIZE_M``) under a spin lock made of ``atomic_cas`` and
``atomic_xchg``, then a second kernel sums the groups' partial results."""
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


def layer_norm_forward(x, weight, bias, eps, block_size=16):
    """Returns y, mean and rstd (the last two are what the backward pass needs)."""
    M, N = x.shape
    y = np.empty_like(x)
    mean, rstd = np.empty(M, np.float32), np.empty(M, np.float32)
    _layer_norm_fwd_fused[(M,)](x, y, weight, bias, mean, rstd, x.strides[0] // x.itemsize, N, eps,
                                BLOCK_SIZE=block_size)
    return y, mean, rstd


def layer_norm_backward(dy, x, weight, mean, rstd, group_size_m=4, block_m=4, block_n=16):
    """Returns dx, dw, db."""
    M, N = x.shape
    locks = np.zeros(2 * group_size_m, np.int32)
    partial_dw = np.zeros((group_size_m, N), weight.dtype)
    partial_db = np.zeros((group_size_m, N), weight.dtype)
    dx = np.empty_like(dy)
    _layer_norm_bwd_dx_fused[(M,)](dx, dy, partial_dw, partial_db, x, weight, mean, rstd, locks,
                                   x.strides[0] // x.itemsize, N,
                                   GROUP_SIZE_M=group_size_m, BLOCK_SIZE_N=tilec.next_power_of_2(N))
    dw, db = np.empty(N, weight.dtype), np.empty(N, weight.dtype)
    grid = lambda meta: (tilec.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    _layer_norm_bwd_dwdb[grid](partial_dw, partial_db, dw, db, min(group_size_m, M), N,
                               BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n)
    return dx, dw, db
