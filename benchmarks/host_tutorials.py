"""Every tutorial's host checks (``docs/tutorials/0*.py``, ``check_on_host``:
the sizes ``--small`` and a GPU-less run use), compiled for the host CPU
against the reference interpreter, and the cold compile of their kernels for
the host against the H100's (``sm_90a``: PTX and cubin).

* ``speedup``: the seconds the checks spend in kernel launches (``JITFunction.run``,
  Python's launch path included), interpreted (``TILEC_INTERPRET=1``) over
  compiled, each the median of ``--repeats`` runs after one that compiles;
  the whole check's seconds (numpy references included) beside it;
* ``compile``: a new process with an empty cache compiles every variant the
  checks launch, ``kernel.compile(..., target=T)`` with the launch's
  arguments and options, for ``cpu`` and for ``sm_90a`` (no GPU needed;
  the cubin where ptxas is installed); seconds from the first compile call
  to the last, the median of ``--repeats`` processes (imports not counted),
  and for the cpu the seconds of its own phases (``PHASES``: the host
  codegen, LLVM's O3 pipeline, LLVM's code generation), the rest being the
  front end both targets share.

    PYTHONPATH=. python benchmarks/host_tutorials.py [--repeats 5] [--out PATH]

Adds the table to ``benchmarks/results/host_cpu.json`` under ``"tutorials"``
(or writes ``--out``).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from runpy import run_path

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "docs" / "tutorials"
sys.path[:0] = [str(ROOT), str(TUTORIALS)]

RESULT = ROOT / "benchmarks" / "results" / "host_cpu.json"
from benchmarks.common import git_commit  # noqa: E402
TARGETS = ("cpu", "sm_90a")
GPU = TARGETS[1]
#: The issue's bar: compiled at least this many times faster than interpreted.
BAR = 10


def tutorial_files() -> list[Path]:
    return sorted(TUTORIALS.glob("0*.py"))


@contextlib.contextmanager
def launches_timed(seconds: list[float]):
    """Every ``JITFunction.run`` in the block adds its wall time to ``seconds[0]``."""
    from tilec.launch.jit import JITFunction

    run = JITFunction.run

    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return run(self, *args, **kwargs)
        finally:
            seconds[0] += time.perf_counter() - start
    JITFunction.run = timed
    try:
        yield
    finally:
        JITFunction.run = run


@contextlib.contextmanager
def interpreted(on: bool):
    """Host launches on the interpreter (``TILEC_INTERPRET``) while ``on``."""
    old = os.environ.pop("TILEC_INTERPRET", None)
    if on:
        os.environ["TILEC_INTERPRET"] = "1"
    try:
        yield
    finally:
        os.environ.pop("TILEC_INTERPRET", None)
        if old is not None:
            os.environ["TILEC_INTERPRET"] = old


class Quiet:
    """``tutorial_support.Checks`` without the printing (it still raises on a miss)."""

    def __init__(self, check: bool = True):
        self.check = check

    def close(self, label, got, want, rtol, atol) -> None:
        import numpy as np
        from tutorial_support import as_float64

        if self.check:
            np.testing.assert_allclose(as_float64(got), as_float64(want), rtol=rtol, atol=atol, err_msg=label)


def time_checks(check_on_host, interpret: bool, repeats: int) -> dict:
    """Median launch and total seconds of ``check_on_host`` after one untimed run."""
    launch, total = [], []
    with interpreted(interpret):
        check_on_host(Quiet())
        for _ in range(repeats):
            seconds = [0.0]
            start = time.perf_counter()
            with launches_timed(seconds):
                check_on_host(Quiet())
            total.append(time.perf_counter() - start)
            launch.append(seconds[0])
    return {"launch_s": statistics.median(launch), "total_s": statistics.median(total)}


def speedup(path: Path, repeats: int) -> dict:
    checks = run_path(str(path))["check_on_host"]
    compiled = time_checks(checks, False, repeats)
    slow = time_checks(checks, True, max(1, repeats // 2))
    return {"tutorial": path.stem, "compiled": compiled, "interpreted": slow,
            "speedup": slow["launch_s"] / compiled["launch_s"],
            "speedup_whole_check": slow["total_s"] / compiled["total_s"]}


# --- cold compile, in a child process ----------------------------------------------
#: Where a cold compile for the cpu spends its time (``host_phases``), besides
#: the front end both targets share: the host codegen (Python), LLVM's O3
#: pipeline, and LLVM's code generator with the assembler.
PHASES = ("codegen_s", "optimize_s", "codegen_llvm_s")


def compile_all(path: Path, target: str) -> dict:
    """In this (new) process: compile every variant ``path``'s host checks
    launch for ``target`` instead of launching it; the seconds it took
    (``seconds``) and, for the cpu, the ``PHASES``' shares of them."""
    from tilec.launch.jit import JITFunction

    spent = [0.0]
    phases = host_phases() if target == "cpu" else {}

    def compile_instead(self, *args, grid=None, stream=None, warmup=False, **kwargs):
        start = time.perf_counter()
        self.compile(*args, target=target, **kwargs)
        spent[0] += time.perf_counter() - start
    JITFunction.run = compile_instead
    run_path(str(path))["check_on_host"](Quiet(check=False))
    return {"seconds": spent[0], **phases}


def host_phases() -> dict:
    """``PHASES``' seconds, filled in as the host stages run (their functions timed in place)."""
    import dataclasses

    from tilec.backends.host import codegen, stages

    seconds = dict.fromkeys(PHASES, 0.0)

    def timed(fn, phase):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[phase] += time.perf_counter() - start
        return run
    codegen.lower = timed(codegen.lower, "codegen_s")
    stages.optimize = timed(stages.optimize, "optimize_s")
    stages.STAGES[1:] = [dataclasses.replace(s, run=timed(s.run, "codegen_llvm_s")) for s in stages.STAGES[1:]]
    return seconds


def cold_compile(path: Path, target: str) -> dict:
    """``compile_all`` in a new process with an empty cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TILEC_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, __file__, "--child", str(path), target], env=env,
                              capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def compile_times(path: Path, repeats: int) -> dict:
    runs = {t: [cold_compile(path, t) for _ in range(repeats)] for t in TARGETS}
    seconds = {t: statistics.median(r["seconds"] for r in rs) for t, rs in runs.items()}
    cpu_phases = {f"cpu_{k}": statistics.median(r[k] for r in runs["cpu"]) for k in PHASES}
    return {"tutorial": path.stem, **{f"{t}_s": s for t, s in seconds.items()},
            f"cpu_over_{GPU}": seconds["cpu"] / seconds[GPU], **cpu_phases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(compile_all(Path(opts.child[0]), opts.child[1])))
        return
    rows = [speedup(p, opts.repeats) for p in tutorial_files()]
    compiles = [compile_times(p, max(1, opts.repeats // 2)) for p in tutorial_files()]
    result = json.loads(opts.out.read_text()) if opts.out.exists() else {}
    result["tutorials"] = {"bar": f"compiled >= {BAR}x the interpreter; cold compile for cpu <= {GPU}",
                           "tree": git_commit(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                               timespec="seconds"), "load_average": os.getloadavg()[0],
                           "speedup": rows, "cold_compile": compiles}
    opts.out.write_text(json.dumps(result, indent=2) + "\n")
    for r in rows:
        print(f"{r['tutorial']:<26} launches: interpreter {r['interpreted']['launch_s'] * 1e3:9.1f} ms, compiled "
              f"{r['compiled']['launch_s'] * 1e3:7.1f} ms: {r['speedup']:6.1f}x (whole check {r['speedup_whole_check']:.1f}x)")
    for c in compiles:
        print(f"{c['tutorial']:<26} cold compile: cpu {c['cpu_s']:.2f} s, {GPU} {c[f'{GPU}_s']:.2f} s "
              f"({c[f'cpu_over_{GPU}']:.2f}x); cpu: host codegen {c['cpu_codegen_s']:.2f} s, LLVM O3 "
              f"{c['cpu_optimize_s']:.2f} s, LLVM code generation {c['cpu_codegen_llvm_s']:.2f} s")


if __name__ == "__main__":
    main()
