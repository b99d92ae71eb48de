"""The layer-norm tutorial kernels on a GPU through torch tensors, at sizes the
host interpreter cannot afford: M of 1 to 4096 rows and N of 1 to 16384
columns (ragged ones included), float16 and float32, the backward with
Triton's lock-group count for N and with 4 groups (up to 1024 rows contending
for each lock and adding into its partial row).

y, mean and rstd of the forward pass and dx, dw, db of the backward pass are
checked elementwise against float64 torch (autograd for the gradients), within
a tolerance relative to |reference| and to the reference's largest element
(dw and db are sums over the M rows and grow with M).  The backward's outputs
start as NaN: an element left unwritten fails.  A configuration that does not
fit the device is skipped with tilec's reason."""
from __future__ import annotations

import zlib

import pytest

import tilec
from kernels.layer_norm import layer_norm_backward, layer_norm_forward, torch_layer_norm_grads

pytestmark = pytest.mark.gpu

EPS = 1e-5
# (M, N): one row and one column, ragged sizes, whole-row blocks up to 16384
# (each N compiles its own kernels: a few pairs keep the test to minutes)
SHAPES = [(1, 1), (37, 100), (1151, 1000), (4096, 4097), (1151, 8192), (4096, 16384)]
GROUPS = [None, 4]  # None: backward_group_size(N), Triton's heuristic
# By the result's dtype.  float16: float32 arithmetic, then one rounding to float16 (half an ulp,
# 2**-11 of |reference|): two half ulps.  float32: x - mean cancels about tenfold (mean -2.3, spread 0.5),
# sums run over up to 16384 terms, sqrt is approximate on the GPU: 1e-4, some 1700 float32 ulps.
TOLERANCE = {"float16": 2.0 ** -10, "float32": 1e-4}


def inputs(torch, M: int, N: int, dtype: str) -> tuple:
    """x = -2.3 + 0.5 * normal (a mean far from 0, as in Triton's tutorial); w, b and dy normal."""
    like = {"device": "cuda", "dtype": getattr(torch, dtype)}
    x = -2.3 + 0.5 * torch.randn(M, N, **like)
    return x, torch.randn(N, **like), torch.randn(N, **like), torch.randn(M, N, **like)


def statistics(torch, x) -> tuple:
    """Each row's mean and 1 / sqrt(variance + EPS), float64."""
    var, mean = torch.var_mean(x.double(), dim=1, correction=0)
    return mean, torch.rsqrt(var + EPS)


def assert_near(torch, name: str, got, want, scale: float = 0.0) -> None:
    """``got`` is ``want`` (float64) within its dtype's tolerance of |want| and of
    max |want|, plus 16 float32 ulps of ``scale``: the size of terms that cancel into ``want``."""
    tol = TOLERANCE[str(got.dtype).removeprefix("torch.")]
    atol = tol * want.abs().max().item() + 2.0 ** -20 * scale
    torch.testing.assert_close(got.double(), want, rtol=tol, atol=atol, msg=lambda message: f"{name}: {message}")


def dx_scale(torch, w, dy, rstd) -> float:
    """dx is rstd * (w dy - mean(w dy) - ...): with one column those cancel to 0 exactly,
    and a fused multiply-add (on by default, as in Triton) leaves the product's
    rounding, about an ulp of |w dy| times rstd."""
    return (rstd.max() * (w.double() * dy.double()).abs().max()).item()


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: f"groups{g or 'default'}")
@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("M,N", SHAPES, ids=lambda v: str(v))
def test_layer_norm_on_the_gpu(torch, request, M, N, dtype, group):
    torch.manual_seed(zlib.crc32(request.node.callspec.id.encode()))
    x, w, b, dy = inputs(torch, M, N, dtype)
    out = tuple(torch.full_like(like, float("nan")) for like in (dy, w, w))
    try:
        y, mean, rstd = layer_norm_forward(x, w, b, EPS)
        dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd, group_size_m=group, out=out)
    except tilec.OutOfResources as e:
        pytest.skip(f"does not fit this GPU: {e}")
    torch.cuda.synchronize()

    want = torch_layer_norm_grads(dy, x, w, b, EPS)
    want["mean"], want["rstd"] = statistics(torch, x)
    scale = {"dx": dx_scale(torch, w, dy, want["rstd"])}
    for name, got in {"y": y, "mean": mean, "rstd": rstd, "dx": dx, "dw": dw, "db": db}.items():
        assert_near(torch, name, got, want[name], scale.get(name, 0.0))
