"""Small kernels the launch tests share (``from launch.kernels import ...``);
each test that counts variants wraps one afresh with ``tilec.jit(k.fn)``."""
import tilec
import tilec.language as tl


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 1024):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tilec.jit
def scalars_kernel(out_ptr, a, b, c, flag):
    """One of each scalar kind: i32, i64, f32, i1."""
    tl.store(out_ptr, (a + b + c.to(tl.int64)) * flag.to(tl.int64))


@tilec.jit
def transpose_kernel(x_ptr, out_ptr, N: tl.constexpr):
    """An N x N f32 transpose, which goes through N * N * 4 bytes of shared memory."""
    r = tl.arange(0, N)
    tile = tl.load(x_ptr + r[:, None] * N + r[None, :])
    tl.store(out_ptr + r[:, None] * N + r[None, :], tl.trans(tile))


@tilec.jit
def empty_kernel(a, b, c, n):
    """Does nothing: what a launch costs."""
    pass


def fresh(kernel):
    """The same kernel with an empty variant cache."""
    return tilec.jit(kernel.fn)
