"""Fused softmax, float32, M = 4096 rows, N = 256 ... 16384 columns: tilec vs Triton vs torch, in GB/s.

Both compilers run the same kernel (tests/kernels/softmax.py, Triton's
tutorial): one row a program, the whole row in one block of
next_power_of_2(N), warps 4 / 8 from a 2048 block / 16 from 4096 (the
tutorial's heuristic; ``kernels.softmax_config``).  torch runs
``torch.softmax(x, -1)``.  Bandwidth counts 2 x 4 bytes an element (x read,
y written).  Ragged N (1000, 3000, 10000) exercise the masked tail.
Target: tilec >= 0.95x Triton at N = 1024, 4096, 16384.

    PYTHONPATH=. python benchmarks/softmax.py [--sizes 1024 4096] [--out PATH]

Writes ``benchmarks/results/softmax.json`` (or ``--out``) and a PNG beside it.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common, kernels  # noqa: E402

ROWS = 4096
SIZES = [256, 512, 1000, 1024, 2048, 3000, 4096, 8192, 10000, 16384]
TOLERANCE = 1e-5  # float32 exp and sum: errors of a few ulps, well under


def softmax_with(language: str, x, out) -> dict:
    kernels.launch_softmax(kernels.kernel_for("softmax", language), x, out)
    return {"y": out}


def make_case(n_cols: int) -> common.Case:
    """Fresh normal inputs of shape (4096, n_cols); one output buffer a compiler."""
    import torch

    x = torch.randn(ROWS, n_cols, device=common.DEVICE)
    outs = {language: torch.empty_like(x) for language in common.languages()}
    runs = {language: functools.partial(softmax_with, language, x, outs[language]) for language in outs}
    runs["torch"] = lambda: {"y": torch.softmax(x, dim=-1)}
    return common.Case(size=n_cols, nbytes=2 * 4 * x.numel(), runs=runs,
                       refs={"y": torch.softmax(x.double(), dim=-1)}, tol=TOLERANCE,
                       poison={language: [out] for language, out in outs.items()})


SWEEP = common.Sweep(
    name="softmax", title=f"softmax, float32, M={ROWS}", size_label="N", make_case=make_case,
    target=common.Target(0.95, lambda n: n in (1024, 4096, 16384), "tilec/triton >= 0.95 at N = 1024, 4096, 16384"),
    config={"dtype": "float32", "rows": ROWS, "block": "next_power_of_2(N)",
            "num_warps": "4; 8 for block >= 2048; 16 for block >= 4096", "bytes": "2 * 4 * M * N"},
)

if __name__ == "__main__":
    common.run_sweep(SWEEP, common.sweep_options(SWEEP.name, __doc__, SIZES))
