"""What the GPU benchmark scripts share: the device and versions, the copy
bandwidth ceiling, the check-then-time loop over sizes, the table, the JSON
and the plot.

A sweep script describes one size as a ``Case`` (what each provider runs,
the float64 references its outputs must match) and hands ``run_sweep`` a
``Sweep``.  For every size, every provider is checked before anything is
timed: its preallocated outputs are set to NaN first, so an element it does
not write fails the check; after timing it is checked again, since an error
that moves between runs is a race.  A provider that fails a check or raises
is reported in its row and not timed; the others go on, and the script
exits 1 at the end.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PROVIDERS = ("tilec", "triton", "torch")
COPY_ELEMENTS = 1 << 28  # 1 GiB of float32: 20x H100's L2, so the copy streams from HBM
DEVICE = "cuda"  # where the scripts allocate; one name, so a dry run can point it elsewhere


class CheckFailed(Exception):
    """A provider's output is wrong, unwritten or not finite."""


@dataclass(frozen=True)
class Target:
    """The ratio tilec/Triton must reach at the sizes where ``applies``."""

    ratio: float
    applies: Callable[[int], bool]
    text: str


@dataclass
class Case:
    """One size of a sweep.

    ``runs`` maps a provider to a launch that returns its outputs by name;
    ``refs`` holds a float64 reference for each output name; ``poison`` the
    outputs each provider writes into (not allocates), set to NaN before
    every check; ``nbytes`` the fewest bytes the operation must move.
    """

    size: int
    nbytes: int
    runs: dict[str, Callable[[], dict]]
    refs: dict[str, Any]
    tol: float
    poison: dict[str, list] = field(default_factory=dict)


@dataclass(frozen=True)
class Sweep:
    """A benchmark over sizes: how to build each size's ``Case`` and how to report it."""

    name: str
    title: str
    size_label: str
    make_case: Callable[[int], Case]
    target: Target
    config: dict
    format_size: Callable[[int], str] = str


# --- command line -----------------------------------------------------------
def parse_size(text: str) -> int:
    """A positive size written as ``4096``, ``2^12`` or ``2**12``."""
    match = re.fullmatch(r"\s*(\d+)\s*(?:(?:\^|\*\*)\s*(\d+))?\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (write 4096, 2^12 or 2**12)")
    base, power = int(match[1]), match[2]
    size = base ** int(power) if power is not None else base
    if size < 1:
        raise argparse.ArgumentTypeError(f"a size must be positive, got {text!r}")
    return size


def base_parser(name: str, doc: str) -> argparse.ArgumentParser:
    """The options every script has: ``--out`` (the JSON; a PNG goes beside it)."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS / f"{name}.json",
                        help=f"where to write the JSON result (default benchmarks/results/{name}.json)")
    return parser


def add_timing_options(parser: argparse.ArgumentParser) -> None:
    """``--warmup`` and ``--rep``: ``do_bench``'s budgets per measurement."""
    parser.add_argument("--warmup", type=float, default=25, help="warm-up budget per measurement, ms")
    parser.add_argument("--rep", type=float, default=100, help="timed budget per measurement, ms")


def fill_defaults(opts: argparse.Namespace, defaults: dict) -> argparse.Namespace:
    """``opts`` with every option left unset (None) taken from ``defaults``."""
    for name, value in defaults.items():
        if getattr(opts, name) is None:
            setattr(opts, name, value)
    return opts


def config_type(config_class: type, fields: str) -> Callable[[str], Any]:
    """An argparse type that reads ``config_class`` from comma-separated ints
    (``fields`` names them in the error message)."""
    def parse(text: str):
        try:
            return config_class(*(int(part) for part in text.split(",")))
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"not a configuration: {text!r} (write {fields})")
    return parse


def sweep_options(name: str, doc: str, default_sizes: list[int]) -> argparse.Namespace:
    """Parse a sweep script's command line: ``--sizes``, ``--warmup``, ``--rep``, ``--out``."""
    parser = base_parser(name, doc)
    parser.add_argument("--sizes", type=parse_size, nargs="+", default=default_sizes,
                        help="sizes to run (default: %(default)s)")
    add_timing_options(parser)
    opts = parser.parse_args()
    opts.sizes = sorted(set(opts.sizes))  # the table and the plot read left to right
    return opts


def pow2_text(n: int) -> str:
    """``2^k`` for a power of two, else the number."""
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)


# --- the device -----------------------------------------------------------------
def require_cuda():
    """torch, once a GPU is known to be there: an NVIDIA one, or an AMD one
    under a ROCm build of torch (which calls it ``"cuda"`` too); else exit with why."""
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("this benchmark needs a GPU visible to torch (CUDA, or ROCm's under a ROCm torch); none is")
    return torch


def device_arch() -> str:
    """The arch tilec compiles for on torch's current GPU: ``sm_<major><minor>``
    on NVIDIA, the ``gfx`` name on AMD (``torch.version.hip`` says which)."""
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if torch.version.hip:
        return props.gcnArchName.split(":")[0]
    return f"sm_{props.major}{props.minor}"


def languages() -> list[str]:
    """The compilers that run the kernels here: tilec, and Triton where it is installed."""
    return ["tilec"] + (["triton"] if importlib.util.find_spec("triton") else [])


def device_info() -> dict:
    """The GPU, the software versions and the date, for the JSON."""
    import torch
    import tilec

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "gpu": props.name, "sm_count": props.multi_processor_count,
        "capability": device_arch(), "memory_gib": round(props.total_memory / 2**30, 1),
        "torch": torch.__version__, "cuda": torch.version.cuda, "hip": torch.version.hip, "triton": triton_version(),
        "tilec": tilec.__version__, "tilec_commit": git_commit(), "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def triton_version() -> Optional[str]:
    if importlib.util.find_spec("triton") is None:
        return None
    import triton

    return triton.__version__


def git_commit() -> Optional[str]:
    """The measured tree's commit: ``$TILEC_COMMIT`` when set (a copy of a
    checkout whose ``.git`` lags its files, as on a lent device machine), else
    the checkout's, with ``-dirty`` when tracked files differ from it; None
    where the tree is not a git checkout."""
    if os.environ.get("TILEC_COMMIT"):
        return os.environ["TILEC_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        clean = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=ROOT, capture_output=True)
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("" if clean.returncode == 0 else "-dirty")


def copy_gbps(warmup: float, rep: float) -> float:
    """The device-to-device copy rate of 1 GiB, counting bytes read plus written:
    the practical ceiling that memory-bound kernels are held against."""
    torch = require_cuda()
    from tilec.testing import do_bench

    src = torch.randn(COPY_ELEMENTS, device=DEVICE)
    dst = torch.empty_like(src)
    dst.copy_(src)
    if not torch.equal(dst, src):
        raise CheckFailed("the reference copy did not copy")
    ms = do_bench(lambda: dst.copy_(src), warmup=warmup, rep=rep)
    return 2 * src.numel() * src.element_size() / ms / 1e6


def gbps(nbytes: int, ms: float) -> float:
    return nbytes / ms / 1e6


# --- checking and timing one size --------------------------------------------------
def relative_error(out, ref) -> float:
    """``||out - ref|| / ||ref||`` in float64 (NaN when ``out`` has a NaN)."""
    return ((out.double() - ref).norm() / ref.norm()).item()


def check_provider(case: Case, provider: str) -> tuple[float, dict]:
    """Run ``provider`` once on NaN-poisoned outputs; its worst relative error
    and its outputs, or ``CheckFailed``."""
    import torch

    for tensor in case.poison.get(provider, []):
        tensor.fill_(float("nan"))
    outputs = case.runs[provider]()
    torch.cuda.synchronize()
    errors = {name: relative_error(out, case.refs[name]) for name, out in outputs.items()}
    wrong = {name: err for name, err in errors.items() if not err <= case.tol}  # NaN is wrong
    if wrong:
        detail = ", ".join(f"`{name}` relative error {err:.3g}" for name, err in wrong.items())
        raise CheckFailed(f"{detail} (tolerance {case.tol:g}; NaN means unwritten or non-finite elements)")
    return max(errors.values()), outputs


def attempt(failed: dict, provider: str, action: Callable[[], Any], where: str = "") -> Any:
    """``action()``, or None with the failure recorded in ``failed[provider]``
    and told on stderr (with the traceback, unless it is a failed check)."""
    try:
        return action()
    except Exception as e:  # noqa: BLE001 - one provider failing must not hide the others' numbers
        failed[provider] = f"{type(e).__name__}: {e}"
        print(f"[{provider}{where}] {failed[provider]}", file=sys.stderr)
        if not isinstance(e, CheckFailed):
            traceback.print_exc(file=sys.stderr)
        return None


def measure_case(case: Case, warmup: float, rep: float) -> dict:
    """Check every provider, then time the ones that passed and check them again."""
    from tilec.testing import do_bench

    row: dict = {"size": case.size, "bytes": case.nbytes, "error": {}, "ms": {}, "gbps": {}, "failed": {}}
    outputs, failed, where = {}, row["failed"], f" at {case.size}"
    for provider in case.runs:
        checked = attempt(failed, provider, lambda: check_provider(case, provider), where)
        if checked is not None:
            row["error"][provider], outputs[provider] = checked
    if "tilec" in outputs and "triton" in outputs:
        row["error"]["tilec_vs_triton"] = max(relative_error(out, outputs["triton"][name].double())
                                              for name, out in outputs["tilec"].items())
    for provider in outputs:
        ms = attempt(failed, provider, lambda: do_bench(case.runs[provider], warmup=warmup, rep=rep), where)
        if ms is not None and attempt(failed, provider, lambda: check_provider(case, provider), where) is not None:
            row["ms"][provider], row["gbps"][provider] = ms, gbps(case.nbytes, ms)
    return row


def add_ratios(row: dict, copy: float, target: Target) -> None:
    """tilec/Triton, tilec/torch, tilec/copy and the target verdict, into ``row``."""
    rates = row["gbps"]
    tilec = rates.get("tilec")
    for other in ("triton", "torch"):
        row[f"tilec/{other}"] = tilec / rates[other] if tilec and rates.get(other) else None
    row["tilec/copy"] = tilec / copy if tilec else None
    if not target.applies(row["size"]):
        row["target"] = ""
    else:
        ratio = row["tilec/triton"]
        row["target"] = "PASS" if ratio is not None and ratio >= target.ratio else "MISS"


# --- the whole sweep --------------------------------------------------------------
def run_sweep(sweep: Sweep, opts: argparse.Namespace) -> None:
    """Measure every size, write the JSON and the plot, print the table; exit 1 on any failure."""
    torch = require_cuda()
    info = device_info()
    copy = copy_gbps(opts.warmup, opts.rep)
    print(f"{sweep.title} on {info['gpu']}; copy {copy:.0f} GB/s; providers: {', '.join(languages() + ['torch'])}",
          flush=True)
    rows = []
    for size in opts.sizes:
        torch.manual_seed(size)  # fresh inputs for every size, reproducible from run to run
        case = sweep.make_case(size)
        row = measure_case(case, opts.warmup, opts.rep)
        del case
        add_ratios(row, copy, sweep.target)
        rows.append(row)
        print(f"  {sweep.size_label}={sweep.format_size(size)} done", flush=True)
    result = {"benchmark": sweep.title, "config": sweep.config, "target": sweep.target.text,
              **info, "copy_gbps": copy, "rows": rows}
    write_json(opts.out, result)
    plot = plot_sweep(opts.out.with_suffix(".png"), sweep, rows, info["gpu"], copy)
    print()
    print(format_table(*sweep_table(sweep, rows)))
    finish(sweep, rows, copy, opts.out, plot)


def finish(sweep: Sweep, rows: list[dict], copy: float, out: Path, plot: Optional[Path]) -> None:
    """The summary lines under the table, and the exit status."""
    verdicts = [row["target"] for row in rows if row["target"]]
    print(f"\ncopy bandwidth {copy:.0f} GB/s ({COPY_ELEMENTS * 4 / 2**30:g} GiB fp32 device-to-device, "
          "bytes read + written)")
    print(f"target {sweep.target.text}: {verdicts.count('PASS')} PASS, {verdicts.count('MISS')} MISS")
    print(f"wrote {out}" + (f" and {plot}" if plot else ""))
    failures = [(row["size"], p, why) for row in rows for p, why in row["failed"].items()]
    for size, provider, why in failures:
        print(f"FAILED {provider} at {sweep.size_label}={sweep.format_size(size)}: {why}")
    if failures:
        sys.exit(1)


def sweep_table(sweep: Sweep, rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells: GB/s of each provider, the ratios, the target verdict."""
    headers = [sweep.size_label, "tilec GB/s", "triton GB/s", "torch GB/s",
               "tilec/triton", "tilec/torch", "tilec/copy", "target"]
    cells = []
    for row in rows:
        rates = [rate_text(row, p) for p in PROVIDERS]
        ratios = [ratio_text(row[key]) for key in ("tilec/triton", "tilec/torch", "tilec/copy")]
        cells.append([sweep.format_size(row["size"]), *rates, *ratios, row["target"]])
    return headers, cells


def rate_text(row: dict, provider: str) -> str:
    if provider in row["failed"]:
        return "FAIL"
    rate = row["gbps"].get(provider)
    return f"{rate:.0f}" if rate is not None else "-"


def ratio_text(ratio: Optional[float]) -> str:
    return f"{ratio:.3f}" if ratio is not None else "-"


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """A right-aligned text table."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = [headers, ["-" * w for w in widths], *rows]
    return "\n".join("  ".join(str(cell).rjust(w) for cell, w in zip(line, widths)) for line in lines)


# --- files -------------------------------------------------------------------------
def write_json(path: Path, result: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")


def plot_sweep(path: Path, sweep: Sweep, rows: list[dict], gpu: str, copy: float) -> Optional[Path]:
    """GB/s over sizes, a line per provider and the copy ceiling dashed, like
    Triton's ``perf_report``; None (and a note) where matplotlib is missing."""
    plt = pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for provider in PROVIDERS:
        points = [(row["size"], row["gbps"][provider]) for row in rows if provider in row["gbps"]]
        if points:
            ax.plot(*zip(*points), marker="o", label=provider)
    ax.axhline(copy, linestyle="--", color="gray", label=f"copy {copy:.0f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(sweep.size_label)
    ax.set_ylabel("GB/s")
    ax.set_title(f"{sweep.title} ({gpu})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- #
# Sweeps over configurations (matmul, attention): each compiler's best per row
# --------------------------------------------------------------------------- #

def first_launch_error(run) -> Optional[str]:
    """None when ``run`` launches (compiling its kernel), else why not, in one line.
    A wrong result is not judged here: the checks that follow do that."""
    try:
        run()
    except Exception as e:  # noqa: BLE001 - any compiler's refusal of a configuration
        lines = str(e).strip().splitlines() or [""]
        return f"{type(e).__name__}: {lines[0]}"
    return None


def add_config_run(runs: dict, poison: dict, skipped: list[str], name: str, run, outputs: list, where: str) -> None:
    """A configuration's run joins ``runs`` (its ``outputs`` poisoned before each
    check) when it launches; else ``skipped`` gets one line saying why."""
    why = first_launch_error(run)
    if why is None:
        runs[name], poison[name] = run, outputs
    else:
        skipped.append(f"{name} at {where}: {why}")
        print(f"  skipped {skipped[-1]}", flush=True)


def best_runs(measured: dict, languages: list[str]) -> dict:
    """Per provider (the languages and ``torch``), its fastest run:
    ``{provider: (ms, config text or None)}``; a run is named ``provider`` or
    ``provider <config>``."""
    best = {}
    for provider in languages + ["torch"]:
        times = {name: ms for name, ms in measured.items() if name == provider or name.startswith(provider + " ")}
        if times:
            name = min(times, key=times.get)
            best[provider] = (times[name], name[len(provider) + 1:] or None)
    return best


def best_of_configs(measured: dict, tflops: Callable[[float], float]) -> dict:
    """A configuration sweep's row fields from ``measure_case``'s row: each
    provider's best time, its TFLOP/s (``tflops(ms)``) and configuration,
    every run's time, the error and the failures (a compiler none of whose
    configurations ran has failed)."""
    best = best_runs(measured["ms"], languages())
    row = {"tflops": {provider: tflops(ms) for provider, (ms, _) in best.items()},
           "ms": {provider: ms for provider, (ms, _) in best.items()},
           "best_config": {provider: config for provider, (_, config) in best.items() if config},
           "runs_ms": measured["ms"], "error": measured["error"], "failed": dict(measured["failed"])}
    for language in languages():
        if language not in best and not any(name.startswith(language + " ") for name in row["failed"]):
            row["failed"][language] = "no configuration launched (see skipped)"
    return row


def report_configs(name: str, out: Path, head: dict, rows: list[dict], skipped: list[str],
                   plot: Callable[[Path, list, str], Optional[Path]], table: Callable[[list], str],
                   describe: Callable[[dict], str]) -> None:
    """A configuration sweep's ending: the JSON (``head`` -- config, target,
    device -- then the rows and skips), the plot beside it, the table, which
    configuration won for tilec, the target's verdicts, the skips and the
    failures (each row named by ``describe``); exit 1 on a failure."""
    write_json(out, {"benchmark": name, **head, "rows": rows, "skipped": skipped})
    png = plot(out.with_suffix(".png"), rows, head["gpu"])
    print()
    print(table(rows))
    target = head["target"]
    wins = [row["best_config"]["tilec"] for row in rows if "tilec" in row["best_config"]]
    if wins:
        counts = {config: wins.count(config) for config in dict.fromkeys(wins)}
        print("\ntilec's winning configurations: " + ", ".join(f"{c} ({n}x)" for c, n in counts.items()))
    verdicts = [row["target"] for row in rows if row["target"]]
    print(f"target {target}: {', '.join(verdicts) or 'not measured'}")
    print(f"{len(skipped)} configuration(s) skipped" + "".join(f"\n  {line}" for line in skipped))
    print(f"wrote {out}" + (f" and {png}" if png else ""))
    failures = [(row, provider, why) for row in rows for provider, why in row["failed"].items()]
    for row, provider, why in failures:
        print(f"FAILED {provider} at {describe(row)}: {why}")
    if failures:
        sys.exit(1)


def rate_cell(row: dict, provider: str) -> str:
    """A provider's TFLOP/s in a configuration sweep's table: FAIL when a run of it failed, - when absent."""
    if provider in row["tflops"]:
        return f"{row['tflops'][provider]:.1f}"
    return "FAIL" if any(name.split(" ")[0] == provider for name in row["failed"]) else "-"


def pyplot():
    """matplotlib's pyplot on a file backend, or None (said once) when it is not installed."""
    if importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: no plot")
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
