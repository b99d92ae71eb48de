"""The ceiling of ``mma.sync`` on this GPU, as tilec issues it: a loop of
``tl.dot`` on operands held in registers (no memory traffic in the loop), on
a grid that fills every multiprocessor several times.  The matmul benchmark's
TFLOP/s divided by this is how close its kernel runs to the instruction's
rate; cuBLAS on Hopper uses ``wgmma``, which this instruction family cannot
reach.

    PYTHONPATH=. python benchmarks/mma_peak.py [--iters 2000] [--out PATH]

Writes ``benchmarks/results/mma_peak.json`` (or ``--out``).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tilec  # noqa: E402
import tilec.testing  # noqa: E402
import tilec.language as tl  # noqa: E402
from benchmarks import common  # noqa: E402

# (BM, BN, BK, num_warps): the matmul benchmark's warp tile (64x64) at both sizes of its configurations
SHAPES = [(128, 256, 32, 8), (128, 128, 32, 4)]
WAVES = 8  # programs per multiprocessor


@tilec.jit
def mma_loop(a_ptr, b_ptr, c_ptr, iters, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``c[pid] = iters * (a @ b)``: the loop body is the tensor-core instructions alone."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(iters):
        acc = tl.dot(a, b, acc)
    pid = tl.program_id(0)
    tl.store(c_ptr + pid * BM * BN + rm[:, None] * BN + rn[None, :], acc)


def measure(shape: tuple, iters: int, sms: int, warmup: float, rep: float) -> dict:
    import torch

    bm, bn, bk, warps = shape
    programs = sms * WAVES
    # small integers: every product and sum is exact in f32, so the check is exact
    a = torch.randint(-2, 3, (bm, bk), device=common.DEVICE).half()
    b = torch.randint(-2, 3, (bk, bn), device=common.DEVICE).half()
    c = torch.empty(programs, bm, bn, device=common.DEVICE, dtype=torch.float32)

    def run():
        mma_loop[(programs,)](a, b, c, iters, BM=bm, BN=bn, BK=bk, num_warps=warps)
    run()
    expected = iters * (a.float() @ b.float())
    if not torch.equal(c[programs - 1], expected) or not torch.equal(c[0], expected):
        raise common.CheckFailed(f"mma_loop {shape} computed a wrong product")
    ms = tilec.testing.do_bench(run, warmup=warmup, rep=rep)
    flops = 2 * bm * bn * bk * iters * programs
    return {"BM": bm, "BN": bn, "BK": bk, "num_warps": warps, "programs": programs, "iters": iters,
            "ms": ms, "tflops": flops / ms / 1e9}


def main() -> None:
    parser = common.base_parser("mma_peak", __doc__)
    parser.add_argument("--iters", type=int, default=2000, help="dots per program")
    parser.add_argument("--warmup", type=float, default=25, help="warm-up budget, ms")
    parser.add_argument("--rep", type=float, default=200, help="timed budget, ms")
    opts = parser.parse_args()
    common.require_cuda()
    import torch

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = [measure(shape, opts.iters, sms, opts.warmup, opts.rep) for shape in SHAPES]
    print(common.format_table(["BM x BN x BK", "warps", "TFLOP/s"],
                              [[f"{r['BM']}x{r['BN']}x{r['BK']}", str(r["num_warps"]), f"{r['tflops']:.1f}"]
                               for r in rows]))
    common.write_json(opts.out, {"benchmark": "mma_peak", **common.device_info(), "rows": rows})


if __name__ == "__main__":
    main()
