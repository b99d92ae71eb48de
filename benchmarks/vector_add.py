"""Vector add, float32, n = 2^12 ... 2^28: tilec vs Triton vs torch on one GPU, in GB/s.

Both compilers run the same kernel (tests/kernels/vector_add.py), 1024
elements and 4 warps a program; torch runs ``torch.add(x, y, out=)``.
Bandwidth counts 3 x 4 bytes an element (x, y read; out written).
Target: tilec >= 0.97x Triton at n >= 2^24.

    PYTHONPATH=. python benchmarks/vector_add.py [--sizes 2^20 2^24] [--out PATH]

Writes ``benchmarks/results/vector_add.json`` (or ``--out``) and a PNG beside it.
"""
from __future__ import annotations

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common, kernels  # noqa: E402

SIZES = [1 << k for k in range(12, 29)]
TOLERANCE = 1e-6  # one float32 rounding of each sum, far below


def add_with(language: str, x, y, out) -> dict:
    kernels.launch_vector_add(kernels.kernel_for("vector_add", language), x, y, out)
    return {"out": out}


def make_case(n: int) -> common.Case:
    """Fresh normal inputs of ``n`` float32; one output buffer a provider."""
    import torch

    x, y = torch.randn(n, device=common.DEVICE), torch.randn(n, device=common.DEVICE)
    outs = {p: torch.empty_like(x) for p in common.PROVIDERS}
    runs = {language: functools.partial(add_with, language, x, y, outs[language]) for language in common.languages()}
    runs["torch"] = lambda: {"out": torch.add(x, y, out=outs["torch"])}
    return common.Case(size=n, nbytes=3 * 4 * n, runs=runs, refs={"out": x.double() + y.double()},
                       tol=TOLERANCE, poison={p: [outs[p]] for p in common.PROVIDERS})


SWEEP = common.Sweep(
    name="vector_add", title="vector add, float32", size_label="n", make_case=make_case,
    target=common.Target(0.97, lambda n: n >= 1 << 24, "tilec/triton >= 0.97 at n >= 2^24"),
    config={"dtype": "float32", "block": kernels.VECTOR_ADD_BLOCK, "num_warps": kernels.VECTOR_ADD_WARPS,
            "bytes": "3 * 4 * n"},
    format_size=common.pow2_text,
)

if __name__ == "__main__":
    common.run_sweep(SWEEP, common.sweep_options(SWEEP.name, __doc__, SIZES))
