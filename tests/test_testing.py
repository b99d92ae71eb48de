"""tilec.testing: argument checks, statistics and the timing loop, driven by a
fake clock on the host; the real CUDA timer only where a GPU is."""
from __future__ import annotations

import numpy as np
import pytest

from tilec.testing import (
    ESTIMATE_RUNS, check_bench_args, do_bench, measure_times, run_counts, summarize_times,
)


class FakeTimer:
    """A device whose clock moves only when work runs: each call of the
    benchmarked function costs ``run_ms``, each flush ``flush_ms``."""

    def __init__(self, run_ms: float, flush_ms: float = 0.0):
        self.now, self.run_ms, self.flush_ms = 0.0, run_ms, flush_ms
        self.log: list[str] = []

    def fn(self) -> None:
        self.now += self.run_ms
        self.log.append("run")

    def flush_l2(self) -> None:
        self.now += self.flush_ms
        self.log.append("flush")

    def synchronize(self) -> None:
        self.log.append("sync")

    def event(self):
        timer = self

        class Event:
            def record(self):
                self.at = timer.now
                timer.log.append("record")

            def elapsed_time(self, end):
                return end.at - self.at

        return Event()


def test_run_counts_follow_the_budgets():
    assert run_counts(estimate=0.5, warmup=25, rep=100) == (50, 200)
    assert run_counts(estimate=1000.0, warmup=25, rep=100) == (1, 1)  # always at least one
    assert run_counts(estimate=0.0, warmup=1, rep=1) == (10**6, 10**6)  # a zero estimate does not divide by 0


def test_measure_times_runs_warmup_then_timed_runs_each_after_a_flush():
    timer = FakeTimer(run_ms=1.0)
    times = measure_times(timer.fn, timer, warmup=25, rep=100)
    assert times == [1.0] * 100
    runs = timer.log.count("run")
    assert runs == 1 + ESTIMATE_RUNS + 25 + 100
    timed = timer.log[-(4 * 100 + 1):]  # flush, record, run, record per timed run, then sync
    assert timed[:4] == ["flush", "record", "run", "record"] and timed[-1] == "sync"


def test_the_flush_is_outside_the_timed_region_but_sizes_the_loops():
    timer = FakeTimer(run_ms=1.0, flush_ms=3.0)
    times = measure_times(timer.fn, timer, warmup=8, rep=40)
    assert times == [1.0] * 10  # estimate 4 ms a run (flush included): 40 / 4 timed runs of 1 ms


def test_summaries_match_numpy():
    times = [3.0, 1.0, 2.0, 10.0]
    assert summarize_times(times) == 2.5
    assert summarize_times(times, return_mode="mean") == 4.0
    assert summarize_times(times, return_mode="min") == 1.0
    assert summarize_times(times, return_mode="max") == 10.0
    assert summarize_times(times, return_mode="all") == times


def test_quantiles_interpolate_linearly_and_one_quantile_is_a_float():
    times = list(np.arange(1.0, 11.0))
    assert summarize_times(times, quantiles=[0.5]) == 5.5
    assert summarize_times(times, quantiles=[0.0, 0.2, 1.0]) == pytest.approx([1.0, 2.8, 10.0])


def test_no_times_is_an_error():
    with pytest.raises(ValueError, match="no run times"):
        summarize_times([])


@pytest.mark.parametrize("kwargs, message", [
    (dict(fn=None), "needs a callable"),
    (dict(warmup=0), "`warmup` is a time budget"),
    (dict(rep=-1), "`rep` is a time budget"),
    (dict(rep=float("inf")), "`rep` is a time budget"),
    (dict(rep=True), "`rep` is a time budget"),
    (dict(return_mode="average"), "`return_mode` must be one of"),
    (dict(quantiles=[]), "`quantiles` must be numbers"),
    (dict(quantiles=[0.5, 1.5]), "`quantiles` must be numbers"),
])
def test_bad_arguments_are_refused_before_any_device_work(kwargs, message):
    args = dict(fn=lambda: None, warmup=25, rep=100, quantiles=None, return_mode="median") | kwargs
    with pytest.raises((TypeError, ValueError), match=message):
        check_bench_args(**args)
    with pytest.raises((TypeError, ValueError), match=message):
        do_bench(**args)  # checks before it looks for a GPU


@pytest.mark.gpu
def test_do_bench_times_a_device_copy():
    torch = pytest.importorskip("torch")
    src = torch.randn(1 << 24, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), warmup=5, rep=20)
    assert 0 < ms < 100
    assert torch.equal(dst, src)
    low, mid, high = do_bench(lambda: dst.copy_(src), warmup=5, rep=20, quantiles=[0.1, 0.5, 0.9])
    assert 0 < low <= mid <= high
