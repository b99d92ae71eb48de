"""A long fuzz run: ``PYTHONPATH=. python -m tests.fuzz --minutes 30 [--device host|cuda]
[--seed S] [--out DIR] [--max-ops K] [--ptx]``.  Runs hypothesis batches of random kernels until the
time is up, prints how many kernels ran and passed, and writes each failure
(shrunk) to ``DIR/failure_<n>.py``: the kernel's source, the error, and the
inputs as ``failure_<n>.npz``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback

import numpy as np
from hypothesis import HealthCheck, assume, given, seed, settings

from .generate import GPU, HOST, cases
from .run import check_case, describe

BATCH = 50  # examples per hypothesis run: one failure is shrunk per batch


class Tally:
    """Kernels run (model-defined cases) and passed; the failing case being shrunk."""

    def __init__(self):
        self.ran = self.passed = self.skipped = 0
        self.failing = None


def run_batch(batch_seed: int, device: str, max_ops: int, deadline: float, tally: Tally) -> None:
    """One hypothesis run; raises the (shrunk) failure, if any."""
    @seed(batch_seed)
    @settings(max_examples=BATCH, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=cases(GPU if device == "cuda" else HOST, max_ops))
    def batch(case):
        if time.monotonic() > deadline and tally.failing is None:  # out of time, and not shrinking a failure
            return
        try:
            defined = check_case(*case, device)
        except Exception:
            tally.failing, tally.ran = case, tally.ran + 1
            raise
        tally.skipped += not defined
        assume(defined)
        tally.ran, tally.passed = tally.ran + 1, tally.passed + 1

    batch()


def save_failure(out: str, index: int, case, error: BaseException) -> str:
    """Write the failing kernel (source + error) and its inputs under ``out``."""
    os.makedirs(out, exist_ok=True)
    program, inputs = case
    path = os.path.join(out, f"failure_{index}.py")
    message = "".join(traceback.format_exception_only(type(error), error))
    with open(path, "w") as f:
        f.write(describe(program).split("\n", 1)[1])
        f.write('\n"""\n' + f"grid={program.grid} sizes={program.sizes} s={program.s}\n{message}" + '"""\n')
    np.savez(os.path.join(out, f"failure_{index}.npz"),
             **{k: (v.view(np.uint16) if v.dtype.name == "bfloat16" else v) for k, v in inputs.items()})
    return path


def check_gpu_compiles() -> None:
    """Install the test suite's check that every kernel compiles for NVIDIA GPUs."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from gpu_compile_check import check_every_compile
    check_every_compile()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--device", choices=("host", "cuda"), default="host")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="fuzz-failures")
    parser.add_argument("--max-ops", type=int, default=12, help="ops per program, at most")
    parser.add_argument("--ptx", action="store_true",
                        help="also compile every kernel for sm_80/sm_90 with ptxas, as the test suite does")
    args = parser.parse_args(argv)
    # thousands of one-off kernels: compile them into a scratch cache, never the user's
    os.environ.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-fuzz-cache-"))
    if args.ptx:
        check_gpu_compiles()
    deadline, tally, failures = time.monotonic() + 60 * args.minutes, Tally(), 0
    batch_seed = args.seed
    while time.monotonic() < deadline:
        try:
            run_batch(batch_seed, args.device, args.max_ops, deadline, tally)
        except Exception as error:  # noqa: BLE001 - every failure is a finding to save
            failures += 1
            print(f"FAIL (seed {batch_seed}): {save_failure(args.out, failures, tally.failing, error)}")
            tally.failing = None
        batch_seed += 1
    print(f"{tally.ran} kernels ran on {args.device}, {tally.passed} passed, {failures} failures "
          f"({tally.skipped} undefined cases skipped)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
