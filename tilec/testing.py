"""Timing GPU work the way ``triton.testing.do_bench`` does, for tilec's benchmarks.

    from tilec.testing import do_bench
    ms = do_bench(lambda: kernel[grid](x, y, out, n, BLOCK=1024))   # median, in ms

Why each step (Triton's recipe, and METHOD's advice):

* device work is asynchronous, so runs are timed with CUDA events on the
  stream, not a host clock;
* the first call and a short warm-up keep compilation, module loading and
  clock ramp-up out of the numbers;
* a 256 MB buffer is written before every timed run, so that no run finds
  its inputs in the L2 cache left by the previous one (H100's L2 is 50 MB);
  the write also keeps the GPU busy while the host enqueues the next launch,
  so host launch overhead does not leak into a kernel's time;
* the number of runs follows from the time budgets (``warmup``, ``rep``, in
  ms) and a first estimate, and the median of many runs resists outliers.

CUDA work goes through torch (imported on first use: ``import tilec.testing``
stays cheap); ``device="host"`` times host work (the interpreter) with the host
clock, which is how the autotuner tunes on machines without a GPU.  The loop itself (``measure_times``) takes any object with
``event() / synchronize() / flush_l2()``, which is how it is tested without a GPU.
"""
from __future__ import annotations

import functools
import math
import time
from numbers import Real
from typing import Any, Callable, Optional, Protocol, Sequence

import numpy as np

RETURN_MODES = ("min", "max", "mean", "median", "all")
L2_FLUSH_BYTES = 256 * 1024 * 1024
ESTIMATE_RUNS = 5


class Event(Protocol):
    def record(self) -> None: ...
    def elapsed_time(self, end: "Event") -> float: ...


class Timer(Protocol):
    """What ``measure_times`` needs of a device: timing events, a barrier, a cache flush."""

    def event(self) -> Event: ...
    def synchronize(self) -> None: ...
    def flush_l2(self) -> None: ...


#: Where ``do_bench`` can time work, named as the launcher names where arrays live (``launch/args.py``).
DEVICES = ("cuda", "host")
DEFAULT_DEVICE = "cuda"


def do_bench(fn: Callable[[], Any], warmup: float = 25, rep: float = 100,
             quantiles: Optional[Sequence[float]] = None, return_mode: str = "median",
             device: str = DEFAULT_DEVICE):
    """Milliseconds one call of ``fn`` takes on the current CUDA device, or on
    the host with ``device="host"`` (kernels on host arrays: the interpreter).

    ``warmup`` and ``rep`` are time budgets in ms for the untimed and the timed
    runs.  Returns the ``return_mode`` statistic of the runs (``"all"``: the
    list of times), or, when ``quantiles`` is given, those quantiles (a single
    float for one quantile), as Triton does.  Triton's default is the mean;
    ours is the median, which one slow run cannot move.  On the host, runs are
    timed with ``time.perf_counter`` and nothing is flushed.
    """
    check_bench_args(fn, warmup, rep, quantiles, return_mode)
    if device not in DEVICES:
        raise ValueError(f"do_bench: `device` must be one of {', '.join(DEVICES)}, got {device!r}")
    timer = HostTimer() if device == "host" else torch_cuda_timer()
    times = measure_times(fn, timer, warmup, rep)
    return summarize_times(times, quantiles, return_mode)


def check_bench_args(fn, warmup, rep, quantiles, return_mode) -> None:
    """Raise on arguments ``do_bench`` cannot honour, before any device work."""
    if not callable(fn):
        raise TypeError(f"do_bench needs a callable, got {type(fn).__name__}")
    for name, budget in (("warmup", warmup), ("rep", rep)):
        if isinstance(budget, bool) or not isinstance(budget, Real) or not budget > 0 or math.isinf(budget):
            raise ValueError(f"do_bench: `{name}` is a time budget in ms and must be a positive number, got {budget!r}")
    if return_mode not in RETURN_MODES:
        raise ValueError(f"do_bench: `return_mode` must be one of {', '.join(RETURN_MODES)}, got {return_mode!r}")
    if quantiles is not None:
        if len(quantiles) == 0 or not all(isinstance(q, Real) and 0 <= q <= 1 for q in quantiles):
            raise ValueError(f"do_bench: `quantiles` must be numbers in [0, 1], got {quantiles!r}")


def measure_times(fn: Callable[[], Any], timer: Timer, warmup: float, rep: float) -> list[float]:
    """The times in ms of the timed runs of ``fn``, each after an L2 flush."""
    fn()
    timer.synchronize()
    n_warmup, n_repeat = run_counts(estimate_ms(fn, timer), warmup, rep)
    for _ in range(n_warmup):
        fn()
    events = [(timer.event(), timer.event()) for _ in range(n_repeat)]
    for start, end in events:
        timer.flush_l2()
        start.record()
        fn()
        end.record()
    timer.synchronize()
    return [start.elapsed_time(end) for start, end in events]


def estimate_ms(fn: Callable[[], Any], timer: Timer) -> float:
    """A first estimate of one run (flush included), to size the warm-up and timed loops."""
    start, end = timer.event(), timer.event()
    start.record()
    for _ in range(ESTIMATE_RUNS):
        timer.flush_l2()
        fn()
    end.record()
    timer.synchronize()
    return start.elapsed_time(end) / ESTIMATE_RUNS


def run_counts(estimate: float, warmup: float, rep: float) -> tuple[int, int]:
    """How many warm-up and timed runs fit the budgets: at least one of each."""
    per_run = max(estimate, 1e-6)  # an event pair can read 0 ms on a very short run
    return max(1, int(warmup / per_run)), max(1, int(rep / per_run))


def summarize_times(times: Sequence[float], quantiles: Optional[Sequence[float]] = None,
                    return_mode: str = "median"):
    """Triton's summary of run times: quantiles (linear interpolation, as
    ``torch.quantile``) when asked for, else the ``return_mode`` statistic."""
    if len(times) == 0:
        raise ValueError("no run times to summarize")
    if quantiles is not None:
        values = [float(v) for v in np.quantile(np.asarray(times, dtype=np.float64), quantiles)]
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return list(times)
    statistic = {"min": np.min, "max": np.max, "mean": np.mean, "median": np.median}[return_mode]
    return float(statistic(np.asarray(times, dtype=np.float64)))


class HostEvent:
    """An ``Event`` of the host clock: work on the host is synchronous, so the clock is the truth."""

    def __init__(self):
        self.time: Optional[float] = None

    def record(self) -> None:
        self.time = time.perf_counter()

    def elapsed_time(self, end: "HostEvent") -> float:
        return (end.time - self.time) * 1e3


class HostTimer:
    """``Timer`` for host work: wall-clock events, nothing to wait for, no cache to flush
    (a host cache flush would time the flush, not the kernel, at the interpreter's speed)."""

    def event(self) -> HostEvent:
        return HostEvent()

    def synchronize(self) -> None:
        pass

    def flush_l2(self) -> None:
        pass


class TorchCudaTimer:
    """``Timer`` on the current CUDA device through torch, with its own flush buffer."""

    def __init__(self, device: int):
        import torch

        self.torch = torch
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=f"cuda:{device}")

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def flush_l2(self) -> None:
        self.flush_buffer.zero_()


def torch_cuda_timer() -> TorchCudaTimer:
    """The timer of the current device (one 256 MB buffer per device, kept for the process)."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("do_bench needs a CUDA device visible to torch; none is")
    return _timer_for_device(torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _timer_for_device(device: int) -> TorchCudaTimer:
    return TorchCudaTimer(device)
