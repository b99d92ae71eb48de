"""Fused attention forward, fp16 (or bf16): tilec vs Triton vs torch SDPA (flash backend), in TFLOP/s.

Both compilers run the same kernel (docs/tutorials/05_fused_attention.py,
re-exported by tests/kernels/attention.py: Triton's tutorial 06 forward with
two key bands, unmasked blocks then the causal diagonal or the ragged tail)
under each configuration of the arch's list (BLOCK_M, BLOCK_N, num_warps,
num_stages: ``CONFIGS``, ``RDNA_CONFIGS`` on AMD's RDNA) and keep their
fastest per shape.  A configuration whose first launch raises (out of
shared memory or registers, say) is skipped with a one-line reason.  torch
runs ``scaled_dot_product_attention`` under
``sdpa_kernel(SDPBackend.FLASH_ATTENTION)``.  Shapes: batch 4, 32 heads,
sequence 1024 ... 16384, head dim 64 and 128, causal and not.  TFLOP/s counts
4 B H N^2 D (the two matmuls), halved when causal.
Target: tilec >= 0.5x SDPA at seq 4096, head dim 128, fp16 (mma.sync path).

    PYTHONPATH=. python benchmarks/attention.py [--quick] [--seqs 4096 8192] [--head-dims 128]
        [--causal both|yes|no] [--dtypes float16 bfloat16] [--configs 128,64,8,3] [--out PATH] [--dry-run]

``--quick``: seq 4096, head dim 128, fp16, causal and not, the first two
configurations.  ``--descriptors``: q, k and v read through tensor
descriptors (each compiler's own ``TensorDescriptor``; the tensor memory
accelerator on an H100), the same kernel with ``DESCRIPTORS=True``.
``--dry-run`` needs no GPU: it prints the cases and, for
tilec, what each configuration compiles to for ``--target`` (registers,
spills, shared memory).  Writes ``benchmarks/results/attention.json`` (or
``--out``) and a PNG beside it.
"""
from __future__ import annotations

import argparse
import functools
import math
import sys
import zlib
from pathlib import Path
from typing import NamedTuple, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import common, kernels  # noqa: E402


class Config(NamedTuple):
    """One launch configuration of the tutorial kernel."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int

    def __str__(self) -> str:
        return f"{self.block_m}x{self.block_n} w{self.num_warps} s{self.num_stages}"


class Shape(NamedTuple):
    seq: int
    head_dim: int
    causal: bool
    dtype: str

    def __str__(self) -> str:
        return f"N={self.seq} D={self.head_dim} {'causal' if self.causal else 'full'} {self.dtype}"


BATCH, HEADS = 4, 32
# Three tiles keep a sweep inside one device call; 128x32 (w4 s3) and 64x32
# (w4 s2) were dropped: at head dim 128 tilec's builds of them spill (``--dry-run``).
CONFIGS = [Config(128, 64, 8, 3), Config(64, 64, 4, 3), Config(128, 64, 4, 3)]
# RDNA's waves are 32 lanes of 256 VGPRs (CDNA's: 64 lanes of 512): 32 rows a
# wave (128x64 on 4 waves) of the f32 output and scores spill there, so RDNA
# runs at most 16 rows a wave, as ROCm's Triton attention keeps an RDNA list.
RDNA_CONFIGS = [Config(128, 64, 8, 3), Config(64, 64, 4, 3), Config(64, 32, 4, 3)]
SEQS = [1024, 2048, 4096, 8192, 16384]
HEAD_DIMS = [64, 128]
DTYPES = ["float16", "bfloat16"]
QUICK = {"seqs": [4096], "head_dims": [128], "dtypes": ["float16"]}
QUICK_CONFIGS = 2  # the first two of the arch's list
# ||out - ref|| / ||ref|| against float64: p and the output round to 16 bits.
TOLERANCE = {"float16": 2e-3, "bfloat16": 1e-2}
TARGET = {"seq": 4096, "head_dim": 128, "dtype": "float16", "ratio": 0.5,
          "text": "tilec/SDPA >= 0.5 at seq 4096, head dim 128, fp16"}
SDPA = "torch"  # the provider name common.py gives torch's runs
REFERENCE_BYTES = 1 << 30  # float64 scores computed at a time for the reference


# --- command line -------------------------------------------------------------------
def options(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = common.base_parser("attention", __doc__)
    parser.add_argument("--quick", action="store_true",
                        help="seq 4096, head dim 128, fp16, causal and not, two configurations (a fast device run)")
    parser.add_argument("--descriptors", action="store_true",
                        help="q, k and v through tensor descriptors (the kernel's DESCRIPTORS=True)")
    parser.add_argument("--seqs", type=common.parse_size, nargs="+", help="sequence lengths (default: all)")
    parser.add_argument("--head-dims", type=int, choices=HEAD_DIMS, nargs="+", help="head dims (default: both)")
    parser.add_argument("--causal", choices=["both", "yes", "no"], default="both", help="causal masking")
    parser.add_argument("--dtypes", choices=DTYPES, nargs="+", help="input dtypes (default: float16)")
    parser.add_argument("--configs", type=common.config_type(Config, "BLOCK_M,BLOCK_N,warps,stages"), nargs="+",
                        help="configurations BLOCK_M,BLOCK_N,warps,stages (default: all of the arch's)")
    common.add_timing_options(parser)
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: list the cases and compile tilec's configurations for --target")
    parser.add_argument("--target", default="sm_90", help="the arch --dry-run compiles for (default: %(default)s)")
    opts = parser.parse_args(argv)
    defaults = QUICK if opts.quick else {"seqs": SEQS, "head_dims": HEAD_DIMS, "dtypes": ["float16"]}
    return common.fill_defaults(opts, defaults)


def configs_for(arch: str) -> list[Config]:
    """The configurations timed on ``arch``: ``RDNA_CONFIGS`` on AMD's RDNA, else ``CONFIGS``."""
    from tilec.backends.amd.target import ARCH_FACTS

    facts = ARCH_FACTS.get(arch)
    return RDNA_CONFIGS if facts is not None and facts.family == "rdna" else CONFIGS


def with_configs(opts: argparse.Namespace, arch: str) -> argparse.Namespace:
    """``opts`` with ``--configs`` defaulted to ``arch``'s (the first ``QUICK_CONFIGS`` with ``--quick``)."""
    if opts.configs is None:
        opts.configs = configs_for(arch)[:QUICK_CONFIGS if opts.quick else None]
    return opts


def shapes(opts: argparse.Namespace) -> list[Shape]:
    causal = {"both": [False, True], "yes": [True], "no": [False]}[opts.causal]
    return [Shape(seq, d, c, dtype) for dtype in opts.dtypes for d in opts.head_dims for c in causal
            for seq in sorted(opts.seqs)]


def usable(config: Config, shape: Shape) -> bool:
    """Causal attention needs BLOCK_N to divide BLOCK_M (the kernel's bands meet on a block)."""
    return not shape.causal or config.block_m % config.block_n == 0


# --- one shape ----------------------------------------------------------------------
def tutorial():
    return kernels.load_tutorial("attention")


@functools.lru_cache(maxsize=None)
def kernel_for(language: str):
    """The attention kernel compiled by ``language`` (tilec's own, or its Triton twin)."""
    kernel = tutorial()._attn_fwd
    return kernel if language == "tilec" else kernels.for_triton(kernel)


def attention_with(kernel, descriptor, q, k, v, out, lse, causal: bool, config: Config) -> dict:
    tutorial().launch_attention(kernel, q, k, v, out, lse, causal, 1.0 / math.sqrt(q.shape[-1]), **config._asdict(),
                                descriptor=descriptor)
    return {"out": out}


def reference(q, k, v, causal: bool):
    """softmax(q kᵀ / sqrt(D)) v in float64 on the GPU, a block of query rows at a time."""
    import torch

    Z, H, N, D = q.shape
    rows = max(1, REFERENCE_BYTES // (Z * H * N * 8))
    k64, v64 = k.double(), v.double()
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    for start in range(0, N, rows):
        s = (q[:, :, start:start + rows].double() @ k64.transpose(-1, -2)) / math.sqrt(D)
        if causal:
            keys = torch.arange(N, device=q.device)
            s.masked_fill_(keys[None, :] > torch.arange(start, start + s.shape[2], device=q.device)[:, None],
                           float("-inf"))
        out[:, :, start:start + rows] = torch.softmax(s, dim=-1) @ v64
        del s
    return out


def sdpa_run(q, k, v, causal: bool):
    """torch SDPA on its flash backend (it allocates its output)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def run() -> dict:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return {"out": torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)}
    return run


def make_case(shape: Shape, configs: list[Config], skipped: list[str], descriptors: bool = False) -> common.Case:
    """Normal inputs; one run per compiler and configuration that launches
    (the others go to ``skipped``) and SDPA's; a float64 reference."""
    import torch

    dtype = getattr(torch, shape.dtype)
    size = (BATCH, HEADS, shape.seq, shape.head_dim)
    q, k, v = (torch.randn(size, device=common.DEVICE, dtype=dtype) for _ in range(3))
    runs, poison = {}, {}
    for language in common.languages():
        out = torch.empty(size, device=common.DEVICE, dtype=dtype)  # runs are checked one at a time
        lse = torch.empty((BATCH * HEADS, shape.seq), device=common.DEVICE, dtype=torch.float32)
        for config in (c for c in configs if usable(c, shape)):
            descriptor = kernels.tensor_descriptor_class(language) if descriptors else None
            name, run = f"{language} {config}", functools.partial(
                attention_with, kernel_for(language), descriptor, q, k, v, out, lse, shape.causal, config)
            common.add_config_run(runs, poison, skipped, name, run, [out], str(shape))
    runs[SDPA] = sdpa_run(q, k, v, shape.causal)
    nbytes = 4 * q.numel() * q.element_size()  # q, k, v read once, out written once
    return common.Case(size=shape.seq, nbytes=nbytes, runs=runs, refs={"out": reference(q, k, v, shape.causal)},
                       tol=TOLERANCE[shape.dtype], poison=poison)


def flops(shape: Shape) -> float:
    full = 4 * BATCH * HEADS * shape.seq ** 2 * shape.head_dim
    return full / 2 if shape.causal else full


def summarize(shape: Shape, measured: dict) -> dict:
    """One row of the report from ``common.measure_case``'s row for this shape."""
    row = {**shape._asdict(), **common.best_of_configs(measured, lambda ms: flops(shape) / ms / 1e9)}
    rates = row["tflops"]
    tilec = rates.get("tilec")
    row["tilec/sdpa"] = tilec / rates[SDPA] if tilec and rates.get(SDPA) else None
    row["tilec/triton"] = tilec / rates["triton"] if tilec and rates.get("triton") else None
    applies = (shape.seq, shape.head_dim, shape.dtype) == (TARGET["seq"], TARGET["head_dim"], TARGET["dtype"])
    ratio = row["tilec/sdpa"]
    row["target"] = ("PASS" if ratio is not None and ratio >= TARGET["ratio"] else "MISS") if applies else ""
    return row


# --- report -------------------------------------------------------------------------
def table(rows: list[dict]) -> str:
    headers = ["seq", "D", "causal", "dtype", "tilec TFLOP/s", "triton TFLOP/s", "SDPA TFLOP/s",
               "tilec/SDPA", "tilec/triton", "tilec best config", "target"]
    cells = [[row["seq"], row["head_dim"], "yes" if row["causal"] else "no", row["dtype"],
              *(common.rate_cell(row, provider) for provider in ("tilec", "triton", SDPA)),
              common.ratio_text(row["tilec/sdpa"]), common.ratio_text(row["tilec/triton"]),
              row["best_config"].get("tilec", "-"), row["target"]] for row in rows]
    return common.format_table(headers, cells)


def plot(path: Path, rows: list[dict], gpu: str) -> Optional[Path]:
    """TFLOP/s over the sequence length, one panel per (dtype, head dim, causal),
    one line a provider; None without matplotlib."""
    plt = common.pyplot()
    if plt is None:
        return None
    panels = list(dict.fromkeys((row["dtype"], row["head_dim"], row["causal"]) for row in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.5), squeeze=False)
    for ax, (dtype, head_dim, causal) in zip(axes[0], panels):
        mine = [row for row in rows if (row["dtype"], row["head_dim"], row["causal"]) == (dtype, head_dim, causal)]
        for provider, label in (("tilec", "tilec"), ("triton", "Triton"), (SDPA, "torch SDPA (flash)")):
            ax.plot([row["seq"] for row in mine], [row["tflops"].get(provider, float("nan")) for row in mine],
                    marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dtype}, D={head_dim}, {'causal' if causal else 'full'}")
        ax.set_xlabel("sequence length")
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"fused attention forward, batch {BATCH}, {HEADS} heads ({gpu})")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def dry_run(opts: argparse.Namespace) -> None:
    """What a run would measure, and tilec's configurations compiled for ``opts.target`` (no GPU)."""
    import numpy as np

    cases = shapes(opts)
    print(f"{len(cases)} shapes x {len(opts.configs)} configurations, batch {BATCH}, {HEADS} heads; "
          f"providers: tilec, triton (if installed), torch SDPA")
    for shape in cases:
        print(f"  {shape}: {flops(shape) / 1e12:.2f} TFLOP, "
              f"configs {', '.join(str(c) for c in opts.configs if usable(c, shape))}")
    kernel = tutorial()._attn_fwd
    for dtype, head_dim, causal in dict.fromkeys((s.dtype, s.head_dim, s.causal) for s in cases):
        x = np.empty(16, np.float16 if dtype == "float16" else ml_dtypes_bfloat16())  # only the type matters
        n = max(opts.seqs)
        strides = (HEADS * n * head_dim, n * head_dim, head_dim) * 4
        for config in (c for c in opts.configs if usable(c, Shape(n, head_dim, causal, dtype))):
            md = kernel.compile(x, x, x, 1.0 / math.sqrt(head_dim), x, np.empty(16, np.float32), HEADS, n, *strides,
                                HEAD_DIM=head_dim, BLOCK_M=config.block_m, BLOCK_N=config.block_n, CAUSAL=causal,
                                num_warps=config.num_warps, num_stages=config.num_stages,
                                target=opts.target).metadata
            print(f"  tilec {opts.target} {dtype} D={head_dim} {'causal' if causal else 'full'} {config}: "
                  f"{md.registers} registers, spills {md.spill_stores}/{md.spill_loads} B, {md.shared} B shared",
                  flush=True)


def ml_dtypes_bfloat16():
    import ml_dtypes

    return ml_dtypes.bfloat16


def main(opts: argparse.Namespace) -> None:
    if opts.dry_run:
        dry_run(with_configs(opts, opts.target))
        return
    torch = common.require_cuda()
    with_configs(opts, common.device_arch())
    info = common.device_info()
    print(f"attention on {info['gpu']}; providers: {', '.join(common.languages() + ['torch SDPA (flash)'])}; "
          f"{len(opts.configs)} configurations", flush=True)
    rows, skipped = [], []
    for shape in shapes(opts):
        torch.manual_seed(zlib.crc32(str(shape).encode()))  # fresh inputs per shape, reproducible
        case = make_case(shape, opts.configs, skipped, opts.descriptors)
        rows.append(summarize(shape, common.measure_case(case, opts.warmup, opts.rep)))
        del case
        torch.cuda.empty_cache()
        print(f"  {shape} done", flush=True)
    config = {"batch": BATCH, "heads": HEADS, "configs": [c._asdict() for c in opts.configs],
              "tflops": "4 * B * H * N^2 * D, halved when causal", "tolerance": TOLERANCE,
              "kernel": "docs/tutorials/05_fused_attention.py (tutorial 06 forward)", "sdpa_backend": "FLASH_ATTENTION"}
    common.report_configs("attention", opts.out, {"config": config, "target": TARGET["text"], **info}, rows, skipped,
                          plot, table,
                          lambda row: f"N={row['seq']} D={row['head_dim']} causal={row['causal']} {row['dtype']}")


if __name__ == "__main__":
    main(options())
