"""Layer-norm forward, float16, M = 4096 rows, N = 1024 ... 16384: tilec vs Triton vs torch, in GB/s.

Both compilers run Triton's tutorial fused forward kernel
(``_layer_norm_fwd_fused`` in tests/kernels/layer_norm.py): one row a
program, BLOCK_SIZE = min(65536 // 2, next_power_of_2(N)), num_warps =
min(max(BLOCK_SIZE // 256, 1), 8).  It also writes each row's mean and rstd
(float32), which are checked too.  torch runs ``F.layer_norm`` in float16.
Bandwidth counts what the fused kernel must move: x read and y written
(2 bytes an element), w and b read once, mean and rstd written (8 bytes a
row); the same count for every provider, so ratios are ratios of time.
Target: tilec >= 0.95x Triton at N = 8192.

    PYTHONPATH=. python benchmarks/layernorm.py [--sizes 8192] [--out PATH]

Writes ``benchmarks/results/layernorm.json`` (or ``--out``) and a PNG beside it.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common, kernels  # noqa: E402

ROWS = 4096
SIZES = [1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
EPS = 1e-5
ELEM_SIZE = 2  # float16
TOLERANCE = 2e-3  # float16 outputs round at 2^-11 relative: a norm-wise error near 3e-4


def layer_norm_with(language: str, x, w, b, y, mean, rstd) -> dict:
    kernels.launch_layer_norm(kernels.kernel_for("layer_norm", language), x, w, b, y, mean, rstd,
                              eps=EPS, elem_size=ELEM_SIZE)
    return {"y": y, "mean": mean, "rstd": rstd}


def references(x, w, b) -> dict:
    """y, mean and rstd in float64."""
    import torch

    x64 = x.double()
    var, mean = torch.var_mean(x64, dim=1, correction=0)
    y = torch.nn.functional.layer_norm(x64, (x.shape[1],), w.double(), b.double(), EPS)
    return {"y": y, "mean": mean, "rstd": 1 / torch.sqrt(var + EPS)}


def make_case(n_cols: int) -> common.Case:
    """The tutorial's inputs (x = -2.3 + 0.5 * normal, w and b uniform), float16."""
    import torch

    x = -2.3 + 0.5 * torch.randn(ROWS, n_cols, device=common.DEVICE, dtype=torch.float16)
    w = torch.rand(n_cols, device=common.DEVICE, dtype=torch.float16)
    b = torch.rand(n_cols, device=common.DEVICE, dtype=torch.float16)
    buffers = {language: (torch.empty_like(x), torch.empty(ROWS, device=common.DEVICE),
                          torch.empty(ROWS, device=common.DEVICE)) for language in common.languages()}
    runs = {language: functools.partial(layer_norm_with, language, x, w, b, *outs) for language, outs in buffers.items()}
    runs["torch"] = lambda: {"y": torch.nn.functional.layer_norm(x, (n_cols,), w, b, EPS)}
    nbytes = ELEM_SIZE * (2 * x.numel() + 2 * n_cols) + 8 * ROWS
    return common.Case(size=n_cols, nbytes=nbytes, runs=runs, refs=references(x, w, b), tol=TOLERANCE,
                       poison={language: list(outs) for language, outs in buffers.items()})


SWEEP = common.Sweep(
    name="layernorm", title=f"layer norm forward, float16, M={ROWS}", size_label="N", make_case=make_case,
    target=common.Target(0.95, lambda n: n == 8192, "tilec/triton >= 0.95 at N = 8192"),
    config={"dtype": "float16", "rows": ROWS, "eps": EPS, "block": "min(65536 // 2, next_power_of_2(N))",
            "num_warps": "min(max(BLOCK_SIZE // 256, 1), 8)", "bytes": "2 * (2 * M * N + 2 * N) + 8 * M"},
)

if __name__ == "__main__":
    common.run_sweep(SWEEP, common.sweep_options(SWEEP.name, __doc__, SIZES))
