"""Matrix multiplication, fp16, bf16 or fp8 in, fp32 accumulate, fp16 out: tilec vs Triton vs cuBLAS, in TFLOP/s.

Both compilers run the same kernel (tests/kernels/matmul.py, Triton's
tutorial 03: grouped program ordering, masks on ragged M/N/K,
``acc = tl.dot(a, b, acc)`` in a K loop) under each configuration of
``CONFIGS`` (BM, BN, BK, GROUP_M, num_warps, num_stages) and keep their
fastest per shape; the table says which won for tilec.  A configuration
whose first launch raises (out of shared memory, say) is skipped with a
one-line reason.  torch runs ``torch.matmul`` (cuBLAS, its own tuning);
for fp8 (``float8_e4m3fn``, ``float8_e5m2``) ``torch._scaled_mm`` with unit
scales (e4m3 only: it refuses two e5m2 operands), and ``b`` is stored along K (an (N, K) tensor transposed), as
Triton's tutorial and ``_scaled_mm`` both want it.
TFLOP/s counts 2 M N K.  Shapes: square 512 ... 8192 and (M, N, K) =
(8192, 8192, 1024), (4096, 4096, 8192), (16384, 1024, 4096).
Target: tilec >= 0.60x cuBLAS at 4096^3 fp16 (the issue's goal is 1.00x: wgmma on sm_90a now).

    PYTHONPATH=. python benchmarks/matmul.py [--quick] [--shapes 4096 8192x8192x1024]
        [--dtypes float16] [--configs 128,128,64,8,4,3] [--out PATH]

``--quick``: 4096^3 fp16 with the first two configurations only.  Without
``--configs`` fp8 inputs run ``FP8_CONFIGS`` (``CONFIGS`` with twice the
K a step: the same bytes a row).
``--descriptors``: the tutorial's ``matmul_descriptor_kernel`` instead, a and b
read through tensor descriptors (each compiler's own ``TensorDescriptor``;
on an H100 both copy blocks with the tensor memory accelerator); fp16/bf16 only.
Writes ``benchmarks/results/matmul.json`` (or ``--out``) and a PNG beside it.
"""
from __future__ import annotations

import argparse
import functools
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
    block_k: int
    group_size_m: int
    num_warps: int
    num_stages: int

    def __str__(self) -> str:
        return (f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_size_m} "
                f"w{self.num_warps} s{self.num_stages}")


CONFIGS = [Config(128, 128, 32, 8, 4, 3), Config(128, 128, 64, 8, 4, 3), Config(128, 256, 64, 8, 8, 3),
           Config(256, 128, 64, 8, 8, 3), Config(64, 128, 64, 8, 4, 4), Config(128, 64, 64, 8, 4, 4),
           Config(128, 128, 64, 8, 8, 4)]
SHAPES = [(n, n, n) for n in (512, 1024, 2048, 4096, 8192)] + [(8192, 8192, 1024), (4096, 4096, 8192),
                                                               (16384, 1024, 4096)]
DTYPES = ["float16", "bfloat16"]
FP8_DTYPES = ["float8_e4m3fn", "float8_e5m2"]
# fp8 operands take twice the K a step in the same bytes (tutorial 03's FP8_CONFIG rule)
FP8_CONFIGS = [c._replace(block_k=2 * c.block_k) for c in CONFIGS]
QUICK = {"shapes": [(4096, 4096, 4096)], "dtypes": ["float16"], "configs": CONFIGS[:2]}
# ||out - ref|| / ||ref|| against float64: fp16 outputs round at 2^-11 (a
# norm-wise error near 3e-4); cuBLAS's bf16 outputs at 2^-8 (near 1.5e-3).
# fp8 inputs and their products are exact, but the tensor cores add them in a
# float of 13 mantissa bits that truncates (Triton's and cuBLAS's fast
# accumulation alike): 2.06e-3 measured at 8192^3 for all three.
TOLERANCE = {"float16": 2e-3, "bfloat16": 1e-2, "float8_e4m3fn": 4e-3, "float8_e5m2": 4e-3}
TARGET = {"shape": (4096, 4096, 4096), "dtype": "float16", "ratio": 0.60,
          "text": "tilec/cuBLAS >= 0.60 at 4096^3 fp16"}
CUBLAS = "torch"  # the provider name common.py gives torch's runs


# --- command line -------------------------------------------------------------------
def parse_shape(text: str) -> tuple[int, int, int]:
    """``4096`` (square) or ``MxNxK`` (``8192x8192x1024``; each part as ``common.parse_size``)."""
    parts = [common.parse_size(part) for part in text.lower().split("x")]
    if len(parts) == 1:
        return parts[0], parts[0], parts[0]
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"not a shape: {text!r} (write 4096 or MxNxK, e.g. 8192x8192x1024)")
    return tuple(parts)


def options(argv: Optional[list[str]] = None) -> argparse.Namespace:
    parser = common.base_parser("matmul", __doc__)
    parser.add_argument("--descriptors", action="store_true",
                        help="the tutorial's tensor-descriptor kernel (matmul_descriptor_kernel) instead")
    parser.add_argument("--quick", action="store_true",
                        help="4096^3 fp16 with the first two configurations (a fast device run)")
    parser.add_argument("--shapes", type=parse_shape, nargs="+", help="shapes: 4096 or MxNxK (default: all)")
    parser.add_argument("--dtypes", choices=DTYPES + FP8_DTYPES, nargs="+",
                        help="input dtypes (default: float16 and bfloat16)")
    parser.add_argument("--configs", type=common.config_type(Config, "BM,BN,BK,GROUP_M,warps,stages"), nargs="+",
                        help="configurations BM,BN,BK,GROUP_M,warps,stages (default: all)")
    common.add_timing_options(parser)
    opts = parser.parse_args(argv)
    if opts.descriptors and set(opts.dtypes or ()) & set(FP8_DTYPES):
        parser.error("--descriptors takes float16 and bfloat16: fp8's b is stored along K, which no descriptor reads")
    defaults = QUICK if opts.quick else {"shapes": SHAPES, "dtypes": DTYPES}
    return common.fill_defaults(opts, defaults)


def configs_for(dtype: str, configs: Optional[list[Config]]) -> list[Config]:
    """The configurations to time for ``dtype``: ``--configs`` when given, else
    ``FP8_CONFIGS`` for fp8 inputs and ``CONFIGS`` for 16-bit ones."""
    if configs is not None:
        return configs
    return FP8_CONFIGS if dtype in FP8_DTYPES else CONFIGS


# --- one shape ----------------------------------------------------------------------
def run_name(language: str, config: Config) -> str:
    return f"{language} {config}"


def matmul_with(kernel, a, b, c, config: Config) -> dict:
    kernels.load_tutorial("matmul").launch_matmul(kernel, a, b, c, "", **config._asdict())
    return {"c": c}


def matmul_through_descriptors(kernel, descriptor, a, b, c, config: Config) -> dict:
    kernels.load_tutorial("matmul").launch_matmul_descriptors(kernel, a, b, c, descriptor, "", **config._asdict())
    return {"c": c}


def runner(language: str, descriptors: bool):
    """How ``language``'s kernel runs one configuration: ``(a, b, c, config) -> outputs``."""
    if not descriptors:
        return functools.partial(matmul_with, kernels.kernel_for("matmul", language))
    return functools.partial(matmul_through_descriptors, kernels.kernel_for("matmul_descriptors", language),
                             kernels.tensor_descriptor_class(language))


def make_case(shape: tuple, dtype: str, configs: list[Config], skipped: list[str],
              descriptors: bool = False) -> common.Case:
    """Normal inputs of ``shape``; one run per compiler and configuration that
    launches (the others go to ``skipped``) and torch's; a float64 reference."""
    import torch

    M, N, K = shape
    a = torch.randn(M, K, device=common.DEVICE).to(getattr(torch, dtype))
    if dtype in FP8_DTYPES:
        b = torch.randn(N, K, device=common.DEVICE).to(getattr(torch, dtype)).T
    else:
        b = torch.randn(K, N, device=common.DEVICE).to(getattr(torch, dtype))
    runs, poison = {}, {}
    for language in common.languages():
        c = torch.empty(M, N, device=common.DEVICE, dtype=torch.float16)  # runs are checked one at a time
        for config in configs:
            name, run = run_name(language, config), functools.partial(
                runner(language, descriptors), a, b, c, config)
            common.add_config_run(runs, poison, skipped, name, run, [c], f"{shape_text(shape)} {dtype}")
    if a.dtype != torch.float8_e5m2:  # _scaled_mm refuses e5m2 x e5m2
        runs[CUBLAS], poison[CUBLAS] = cublas_run(a, b)
    return common.Case(size=M * N * K, nbytes=a.element_size() * (M * K + K * N) + 2 * M * N, runs=runs,
                       refs={"c": a.double() @ b.double()}, tol=TOLERANCE[dtype], poison=poison)


def cublas_run(a, b) -> tuple:
    """torch's run of ``a @ b`` and the tensor it writes: ``torch.matmul``, or
    for fp8 inputs ``torch._scaled_mm`` (unit scales, fp16 out)."""
    import torch

    if a.element_size() == 1:
        one = torch.ones((), device=a.device)
        return (lambda: {"c": torch._scaled_mm(a, b, one, one, out_dtype=torch.float16)}), []
    out = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    return (lambda: {"c": torch.matmul(a, b, out=out)}), [out]


def tflops(shape: tuple, ms: float) -> float:
    M, N, K = shape
    return 2 * M * N * K / ms / 1e9


def summarize(shape: tuple, dtype: str, measured: dict) -> dict:
    """One row of the report from ``common.measure_case``'s row for this shape."""
    row = {"shape": list(shape), "dtype": dtype, **common.best_of_configs(measured, lambda ms: tflops(shape, ms))}
    rates = row["tflops"]
    tilec = rates.get("tilec")
    row["tilec/cublas"] = tilec / rates[CUBLAS] if tilec and rates.get(CUBLAS) else None
    row["tilec/triton"] = tilec / rates["triton"] if tilec and rates.get("triton") else None
    applies = tuple(shape) == TARGET["shape"] and dtype == TARGET["dtype"]
    ratio = row["tilec/cublas"]
    row["target"] = ("PASS" if ratio is not None and ratio >= TARGET["ratio"] else "MISS") if applies else ""
    return row


# --- report -------------------------------------------------------------------------
def shape_text(shape) -> str:
    M, N, K = shape
    return f"{M}^3" if M == N == K else f"{M}x{N}x{K}"


def table(rows: list[dict]) -> str:
    headers = ["shape", "dtype", "tilec TFLOP/s", "triton TFLOP/s", "cuBLAS TFLOP/s",
               "tilec/cuBLAS", "tilec/triton", "tilec best config", "target"]
    cells = [[shape_text(row["shape"]), row["dtype"],
              *(common.rate_cell(row, provider) for provider in ("tilec", "triton", CUBLAS)),
              common.ratio_text(row["tilec/cublas"]), common.ratio_text(row["tilec/triton"]),
              row["best_config"].get("tilec", "-"), row["target"]] for row in rows]
    return common.format_table(headers, cells)


def plot(path: Path, rows: list[dict], gpu: str) -> Optional[Path]:
    """TFLOP/s per shape, one panel a dtype, one line a provider; None without matplotlib."""
    plt = common.pyplot()
    if plt is None:
        return None
    dtypes = sorted({row["dtype"] for row in rows}, key=(DTYPES + FP8_DTYPES).index)
    fig, axes = plt.subplots(1, len(dtypes), figsize=(7 * len(dtypes), 5), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        mine = [row for row in rows if row["dtype"] == dtype]
        labels = [shape_text(row["shape"]) for row in mine]
        for provider, label in (("tilec", "tilec"), ("triton", "Triton"), (CUBLAS, "cuBLAS (torch)")):
            ax.plot(labels, [row["tflops"].get(provider, float("nan")) for row in mine], marker="o", label=label)
        ax.set_title(f"matmul {dtype} ({gpu})")
        ax.set_ylabel("TFLOP/s")
        ax.tick_params(axis="x", rotation=30)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def main(opts: argparse.Namespace) -> None:
    torch = common.require_cuda()
    info = common.device_info()
    print(f"matmul on {info['gpu']}; providers: {', '.join(common.languages() + ['cuBLAS'])}; "
          f"{len(configs_for(opts.dtypes[0], opts.configs))} configurations", flush=True)
    rows, skipped = [], []
    for dtype in opts.dtypes:
        for shape in opts.shapes:
            torch.manual_seed(zlib.crc32(f"{shape} {dtype}".encode()))  # fresh inputs per shape, reproducible
            case = make_case(shape, dtype, configs_for(dtype, opts.configs), skipped, opts.descriptors)
            rows.append(summarize(shape, dtype, common.measure_case(case, opts.warmup, opts.rep)))
            del case
            print(f"  {shape_text(shape)} {dtype} done", flush=True)
    config = {"configs": {dtype: [c._asdict() for c in configs_for(dtype, opts.configs)] for dtype in opts.dtypes},
              "tflops": "2 * M * N * K",
              "tolerance": TOLERANCE, "kernel": "tests/kernels/matmul.py (tutorial 03), fp16 output" + (
                  ", matmul_descriptor_kernel: a and b through tensor descriptors" if opts.descriptors else "")}
    common.report_configs("matmul", opts.out, {"config": config, "target": TARGET["text"], **info}, rows, skipped,
                          plot, table, lambda row: f"{shape_text(row['shape'])} {row['dtype']}")


if __name__ == "__main__":
    main(options())
