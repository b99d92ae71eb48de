"""What the benchmark kernels compile to: PTX instruction counts, global
accesses by vector width, registers and spills (``ptxas -v``), one line per
kernel and configuration, for comparing two versions of the compiler.  No GPU
needed: the kernels are compiled ahead of time for ``--target``.

    PYTHONPATH=. python benchmarks/ptx_diff.py [--target sm_90] --out new.json
    PYTHONPATH=. python benchmarks/ptx_diff.py --compare old.json new.json

``--ptx-dir DIR`` also writes each kernel's whole ``.asm["ptx"]`` there (one
file a case), for a plain ``diff -r`` of two versions.

Run the first form in a checkout of each version (an older tree unpacked with
``git archive``), then compare: every count that changed is printed.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# A PTX instruction: an opcode (with optional guard) ending in ``;``, at the
# start of a line or after another one's ``;`` (inline PTX puts several on a line).
INSTRUCTION = re.compile(r"(?:^\s+|(?<=;)\s*)(?:@!?%p\d+\s+)?([a-z][\w.]*)[^;\n]*;", re.M)
GLOBAL_ACCESS = re.compile(r"^(ld|st)\.global(?:\.\w+)*?(?:\.(v\d))?\.([busf]\d+)$")


def cases() -> dict:
    """Name -> (kernel, arguments, options): the benchmarks' configurations
    (benchmarks/*.py), fp16 where they are fp16."""
    import numpy as np

    from benchmarks import kernels

    load = kernels.load_tutorial
    f32, f16 = np.zeros(1 << 20, np.float32), np.zeros(1 << 20, np.float16)
    i32 = np.zeros(1 << 10, np.int32)
    attn = load("attention")._attn_fwd
    matmul = load("matmul").matmul_kernel

    def attention(d, bm, bn, warps, stages):
        strides = (4 * 1024 * d, 1024 * d, d) * 4
        return (attn, (f16, f16, f16, 0.125, f16, f32, 4, 1024, *strides),
                dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=False, num_warps=warps, num_stages=stages))

    def mm(bm, bn, bk, warps, stages):
        return (matmul, (f16, f16, f16, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1),
                dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8, ACTIVATION="",
                     num_warps=warps, num_stages=stages))
    return {
        "vector_add 1024 w4": (load("vector_add").add_kernel, (f32, f32, f32, 98432),
                               dict(BLOCK_SIZE=1024, num_warps=4)),
        "vector_add 1024 w4 ragged": (load("vector_add").add_kernel, (f32, f32, f32, 98431),
                                      dict(BLOCK_SIZE=1024, num_warps=4)),
        "softmax 1024 w4": (load("softmax").softmax_kernel, (f32, f32, 1000, 1000, 1000),
                            dict(BLOCK_SIZE=1024, num_warps=4)),
        "softmax 4096 w16": (load("softmax").softmax_kernel, (f32, f32, 4096, 4096, 4096),
                             dict(BLOCK_SIZE=4096, num_warps=16)),
        "layer_norm 8192 w8 fp16": (load("layer_norm")._layer_norm_fwd_fused,
                                    (f16, f16, f16, f16, f32, f32, 8192, 8192, 1e-5),
                                    dict(BLOCK_SIZE=8192, num_warps=8)),
        "layer_norm bwd dx 8192 w8 fp16": (load("layer_norm")._layer_norm_bwd_dx_fused,
                                           (f16, f16, f32, f32, f16, f16, f32, f32, i32, 8192, 8192),
                                           dict(GROUP_SIZE_M=64, BLOCK_SIZE_N=8192, num_warps=8)),
        "layer_norm bwd dwdb 8192 w4": (load("layer_norm")._layer_norm_bwd_dwdb,
                                        (f32, f32, f16, f16, 64, 8192),
                                        dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=128, num_warps=4)),
        "matmul 128x128x64 w4 s3": mm(128, 128, 64, 4, 3),
        "matmul 128x256x64 w8 s3": mm(128, 256, 64, 8, 3),
        "attention d64 128x64 w8 s3": attention(64, 128, 64, 8, 3),
        "attention d128 128x64 w8 s3": attention(128, 128, 64, 8, 3),
    }


def ptx_stats(ptx: str) -> dict:
    """Instruction counts: total, and each global load/store form (``ld.v4.b32``...)."""
    ops = INSTRUCTION.findall(ptx)
    stats = Counter({"instructions": len(ops)})
    for op in ops:
        m = GLOBAL_ACCESS.match(op)
        if m:
            stats[f"{m[1]}.{m[2] or 'v1'}.{m[3]}"] += 1
    return dict(stats)


def measure(target: str, ptx_dir: Optional[Path] = None) -> dict:
    out = {}
    for name, (kernel, args, options) in cases().items():
        compiled = kernel.compile(*args, target=target, **options)
        if ptx_dir is not None:
            ptx_dir.mkdir(parents=True, exist_ok=True)
            (ptx_dir / (name.replace(" ", "_") + ".ptx")).write_text(compiled.asm["ptx"])
        md = compiled.metadata
        out[name] = dict(ptx_stats(compiled.asm["ptx"]), registers=md.registers, spills=md.spill_stores)
        print(name, out[name], flush=True)
    return out


def compare(old: dict, new: dict) -> None:
    """One markdown row per kernel: the changed counts as ``old -> new``."""
    print("| kernel | instructions | registers | changes |\n|---|---|---|---|")
    for name in new:
        a, b = old.get(name, {}), new[name]
        changed = [f"{k} {a.get(k, 0)} -> {b.get(k, 0)}" for k in sorted(set(a) | set(b))
                   if k not in ("instructions", "registers") and a.get(k, 0) != b.get(k, 0)]
        print(f"| {name} | {a.get('instructions')} -> {b['instructions']} | "
              f"{a.get('registers')} -> {b['registers']} | {', '.join(changed) or 'none'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sm_90")
    parser.add_argument("--out", help="write the counts here (JSON)")
    parser.add_argument("--ptx-dir", type=Path, help="write each kernel's PTX into this folder")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two --out files")
    opts = parser.parse_args()
    if opts.compare:
        compare(*(json.loads(Path(p).read_text()) for p in opts.compare))
        return
    stats = measure(opts.target, opts.ptx_dir)
    if opts.out:
        Path(opts.out).write_text(json.dumps(stats, indent=1))


if __name__ == "__main__":
    main()
