"""``tilec.autotune``, ``tilec.Config``, ``tilec.heuristics`` on the host
interpreter: choices checked against numpy, failing configs skipped, resets and
restores between runs, parallel compiles, and choices kept on disk."""
from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec import testing
from tilec.launch import cache
from tilec.launch.cache_entry import unpack_entry

at = importlib.import_module("tilec.launch.autotune")  # `tilec.autotune` itself is the decorator
REPO = Path(__file__).resolve().parents[1]
FAST = {"warmup": 1, "rep": 1}  # the interpreter is slow: the fewest runs do_bench allows


@pytest.fixture(autouse=True)
def tuning_cache(monkeypatch, tmp_path):
    """Every test keeps its choices (and kernels) in its own directory."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_CACHE", "1")
    return tmp_path / "cache"


@pytest.fixture
def bench_calls(monkeypatch):
    """The configs ``testing.do_bench`` was asked to time, in order."""
    calls = []
    real = testing.do_bench

    def counting(fn, **kwargs):
        calls.append(kwargs)
        return real(fn, **kwargs)

    monkeypatch.setattr(testing, "do_bench", counting)
    return calls


def scale_kernel():
    """A fresh kernel (its own variant cache): out = 2 * x, over BLOCK-sized programs."""
    @tilec.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.static_assert(BLOCK <= 128, "BLOCK too big")
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    return scale


def grid(meta):
    return (tilec.cdiv(meta["n"], meta["BLOCK"]),)


CONFIGS = [tilec.Config({"BLOCK": 32}, num_warps=1), tilec.Config({"BLOCK": 64}, num_warps=2),
           tilec.Config({"BLOCK": 128}, num_warps=4)]


def tuned(configs=CONFIGS, **options):
    return tilec.autotune(configs=configs, key=["n"], **{**FAST, **options})(scale_kernel())


def data(n: int):
    return np.random.default_rng(n).random(n, dtype=np.float32), np.zeros(n, np.float32)


# --- choosing ---------------------------------------------------------------------------
def test_every_config_is_timed_and_the_fastest_runs(bench_calls):
    kernel = tuned()
    x, out = data(300)
    kernel[grid](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert len(bench_calls) == 3 and all(c["device"] == "host" for c in bench_calls)
    assert set(kernel.configs_timings) == set(CONFIGS) and kernel.skipped == {}
    assert kernel.best_config is min(kernel.configs_timings, key=kernel.configs_timings.get)
    assert kernel.cache == {(300, "float32", "float32", "host"): kernel.best_config}  # Triton's key, the device


def test_the_same_key_is_not_tuned_again_and_a_new_key_is(bench_calls):
    kernel = tuned()
    for n in (100, 100, 200, 100):
        x, out = data(n)
        kernel[grid](x, out, n)
        np.testing.assert_array_equal(out, 2 * x)
    assert len(bench_calls) == 6 and len(kernel.cache) == 2
    x = np.zeros(100, np.float64)
    kernel[grid](x, np.zeros(100, np.float64), 100)  # the dtypes are part of the key, as in Triton
    assert len(bench_calls) == 9


def test_a_config_that_does_not_compile_is_skipped_with_its_reason(bench_calls):
    configs = [*CONFIGS, tilec.Config({"BLOCK": 256}), tilec.Config({"BLOCK": 64}, num_warps=3)]
    kernel = tuned(configs)
    x, out = data(500)
    kernel[grid](x, out, 500)
    np.testing.assert_array_equal(out, 2 * x)
    assert len(bench_calls) == 3 and kernel.best_config in CONFIGS
    reasons = {str(c): r for c, r in kernel.skipped.items()}
    assert reasons["BLOCK: 256, num_warps: 4, num_stages: 3"].startswith("CompilationError: ")
    assert "BLOCK too big" in reasons["BLOCK: 256, num_warps: 4, num_stages: 3"]
    assert (reasons["BLOCK: 64, num_warps: 3, num_stages: 3"]
            == "LaunchOptionError: num_warps must be a power of 2 (1, 2, 4, 8, ...), got 3")
    assert all("\n" not in r for r in reasons.values())


def test_a_config_over_the_gpu_limits_at_load_time_is_skipped(bench_calls):
    def too_many_registers(args):  # what a GPU launch raises when the driver reports the registers
        raise tilec.OutOfResources("scale", "registers", 300 * 256, 65536, "300 registers x 256 threads", "fewer warps")

    configs = [tilec.Config({"BLOCK": 64}, num_warps=8, pre_hook=too_many_registers), *CONFIGS[:2]]
    kernel = tuned(configs)
    x, out = data(100)
    kernel[grid](x, out, 100)
    np.testing.assert_array_equal(out, 2 * x)
    assert list(kernel.skipped.values()) == ["OutOfResources: kernel `scale` needs 300 registers x 256 threads, "
                                             "over the limit of 65536; fewer warps"]
    assert set(kernel.configs_timings) == set(CONFIGS[:2])


def test_when_every_config_fails_the_error_lists_them():
    kernel = tuned([tilec.Config({"BLOCK": 256}), tilec.Config({"BLOCK": 512}, num_warps=6)])
    x, out = data(10)
    with pytest.raises(tilec.TilecError) as e:
        kernel[grid](x, out, 10)
    message = str(e.value)
    assert message.startswith("kernel `scale`: no config ran for key (10, 'float32', 'float32') on host:")
    assert "  BLOCK: 256, num_warps: 4, num_stages: 3: CompilationError" in message
    assert "  BLOCK: 512, num_warps: 6, num_stages: 3: LaunchOptionError: num_warps must be a power of 2" in message


class ConfigRejected(Exception):
    """An exception whose message is not one string (the name goes into a note)."""

    def __init__(self, code, detail):
        super().__init__(code, detail)


def out_of_order(args):
    raise RuntimeError("the pre_hook found the buffers out of order")


@pytest.mark.parametrize("bad, error, message", [
    # fails when it runs (the error keeps its type)
    (tilec.Config({"BLOCK": 128}, num_warps=2, num_stages=1, pre_hook=out_of_order), RuntimeError, "out of order"),
    # a constexpr no variant can be keyed by
    (tilec.Config({"BLOCK": [32]}, num_warps=8), TypeError, "must be hashable"),
])
def test_a_config_that_fails_otherwise_is_named_in_the_error(bad, error, message):
    kernel = tuned([CONFIGS[0], bad])
    x, out = data(100)
    with pytest.raises(error) as e:
        kernel[grid](x, out, 100)
    assert message in str(e.value)
    assert f"while tuning kernel `scale`: config {bad} raised this" in str(e.value)
    assert str(bad).startswith("BLOCK: ") and f"num_warps: {bad.num_warps}, num_stages: {bad.num_stages}" in str(bad)
    assert kernel.cache == {}  # nothing chosen


def test_an_error_without_a_plain_message_gets_the_config_as_a_note():
    def reject(args):
        raise ConfigRejected(7, "no")

    bad = tilec.Config({"BLOCK": 64}, pre_hook=reject)
    kernel = tuned([CONFIGS[0], bad])
    x, out = data(100)
    with pytest.raises(ConfigRejected) as e:
        kernel[grid](x, out, 100)
    assert e.value.args == (7, "no")
    assert e.value.__notes__ == [f"(while tuning kernel `scale`: config {bad} raised this; only configs that do "
                                 "not compile or do not fit are skipped)"]


def test_one_config_runs_without_timing(bench_calls):
    kernel = tuned([tilec.Config({"BLOCK": 64})])
    x, out = data(100)
    kernel[grid](x, out, 100)
    np.testing.assert_array_equal(out, 2 * x)
    assert bench_calls == [] and kernel.best_config.kwargs == {"BLOCK": 64}


def test_autotuned_meta_parameters_cannot_be_passed():
    x, out = data(10)
    with pytest.raises(ValueError, match="Conflicting meta-parameters: BLOCK"):
        tuned()[grid](x, out, 10, BLOCK=32)


# --- resetting and restoring between runs ---------------------------------------------------
@tilec.jit
def sum_into(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


@pytest.mark.parametrize("reset", [True, False])
def test_reset_to_zero_zeroes_the_accumulator_before_every_run(reset, bench_calls):
    kernel = tilec.autotune(CONFIGS, key=["n"], reset_to_zero=["total_ptr"] if reset else None,
                            **FAST)(tilec.jit(sum_into.fn))
    x = np.arange(200, dtype=np.float32)
    total = np.zeros(1, np.float32)
    kernel[grid](x, total, 200)
    if reset:
        assert total[0] == x.sum()  # the launch after tuning starts from zero too
    else:  # every timed run added into it: what reset_to_zero is for
        assert total[0] > 10 * x.sum()


@tilec.jit
def maybe_sum_into(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if total_ptr is not None:
        tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0)))


def test_reset_and_restore_skip_arguments_passed_as_none(bench_calls):
    kernel = tilec.autotune(CONFIGS, key=["n"], reset_to_zero=["total_ptr"], restore_value=["total_ptr"],
                            **FAST)(tilec.jit(maybe_sum_into.fn))
    x = np.arange(200, dtype=np.float32)
    kernel[grid](x, None, 200)
    total = np.full(1, 5, np.float32)
    kernel[grid](x, total, 100)
    assert total[0] == x[:100].sum()  # zeroed before the launch that follows tuning, which adds once


@tilec.jit
def add_one_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_restore_value_gives_every_run_the_original_values(bench_calls):
    kernel = tilec.autotune(CONFIGS, key=["n"], restore_value=["x_ptr"], **FAST)(tilec.jit(add_one_in_place.fn))
    x = np.arange(100, dtype=np.float32)
    kernel[grid](x, 100)
    np.testing.assert_array_equal(x, np.arange(100) + 1)  # once: by the launch after tuning


def test_hooks_run_around_every_timed_run():
    seen = []
    config = tilec.Config({"BLOCK": 64}, pre_hook=lambda args: seen.append(("config", args["BLOCK"])))
    kernel = tilec.autotune([config, tilec.Config({"BLOCK": 32})], key=["n"],
                            pre_hook=lambda args: seen.append(("pre", args["n"])),
                            post_hook=lambda args, exception: seen.append(("post", exception)), **FAST)(scale_kernel())
    x, out = data(64)
    kernel[grid](x, out, 64)
    np.testing.assert_array_equal(out, 2 * x)
    assert seen.count(("pre", 64)) == seen.count(("post", None)) >= 2 * 8  # first run, 5 estimates, warm-up, timed
    assert ("config", 64) in seen


# --- heuristics -----------------------------------------------------------------------------
@tilec.jit
def masked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)
    else:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


def test_heuristics_compute_meta_parameters_from_the_arguments():
    seen = []

    def even(args):
        seen.append((args["n"], args["BLOCK"]))
        return args["n"] % args["BLOCK"] == 0

    kernel = tilec.heuristics({"BLOCK": lambda args: min(64, tilec.next_power_of_2(args["n"])),
                               "EVEN": even})(tilec.jit(masked_copy.fn))
    for n in (128, 100):
        x, out = data(n)
        kernel[grid](x, out, n)
        np.testing.assert_array_equal(out, x + 1)
    assert seen == [(128, 64), (100, 64)]
    assert sorted(k[0][-1][2] for k in kernel.fn.cache) == [False, True]  # EVEN, the last constexpr


def test_heuristics_under_autotune_see_each_config(bench_calls):
    kernel = tilec.autotune(CONFIGS, key=["n"], **FAST)(
        tilec.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(tilec.jit(masked_copy.fn)))
    x, out = data(96)
    kernel[grid](x, out, 96)
    np.testing.assert_array_equal(out, x + 1)
    evens = {key[0][4][2] for key in kernel.jit_function.cache}  # EVEN: (None, bool, value)
    assert evens == {True, False}  # 96 is a multiple of 32, not of 64 or 128


# --- pruning ----------------------------------------------------------------------------------
def test_prune_configs_by_perf_model_and_early_prune(bench_calls):
    estimates = []

    def perf_model(**meta):
        estimates.append(meta["BLOCK"])
        return -meta["BLOCK"]  # "bigger is faster"

    def early(configs, nargs, **kwargs):
        assert nargs["n"] == 300
        return [c for c in configs if c.kwargs["BLOCK"] != 128]

    kernel = tuned(prune_configs_by={"perf_model": perf_model, "top_k": 1, "early_config_prune": early})
    x, out = data(300)
    kernel[grid](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert sorted(estimates) == [32, 64] and len(bench_calls) == 1 and kernel.best_config.kwargs == {"BLOCK": 64}


def test_arguments_of_autotune_are_checked():
    with pytest.raises(TypeError, match=r"\['m'\] are not arguments of `scale`"):
        tilec.autotune(CONFIGS, key=["n"], reset_to_zero=["m"])(scale_kernel())
    with pytest.raises(TypeError, match="unknown prune_configs_by keys"):
        tilec.autotune(CONFIGS, key=["n"], prune_configs_by={"topk": 1})(scale_kernel())
    assert str(tilec.Config({"BLOCK": 8}, num_warps=2)) == "BLOCK: 8, num_warps: 2, num_stages: 3"


def test_autotune_key_naming_no_argument_warns_and_tunes_on_the_rest(bench_calls):
    with pytest.warns(UserWarning, match=r"key=...\): \['m'\] are not arguments of `scale`.*ignores them"):
        kernel = tilec.autotune(CONFIGS, key=["m", "n"], **FAST)(scale_kernel())
    assert kernel.keys == ["n"]
    for n in (300, 300, 200):
        x, out = data(n)
        kernel[grid](x, out, n)
        np.testing.assert_array_equal(out, 2 * x)
    assert len(bench_calls) == 2 * len(CONFIGS)


def test_tritons_positional_autotuner_and_heuristics_constructors(bench_calls):
    base = scale_kernel()
    names = ["x_ptr", "out_ptr", "n", "BLOCK"]
    kernel = tilec.Autotuner(base, names, CONFIGS, ["n"], None, None, None, None, None, 1, 1, False, None, False)
    assert (kernel.num_warmups, kernel.num_reps, kernel.cache_results, kernel.use_cuda_graph) == (1, 1, False, False)
    x, out = data(300)
    kernel[grid](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert len(bench_calls) == len(CONFIGS) and kernel.best_config in CONFIGS
    even = tilec.Heuristics(base, names, {"BLOCK": lambda args: 64})
    x, out = data(100)
    even[grid](x, out, 100)
    np.testing.assert_array_equal(out, 2 * x)
    with pytest.raises(TypeError, match=r"arg_names \['x'\] are not the parameters of `scale`"):
        tilec.Heuristics(base, ["x"], {})


def test_autotuner_defaults_are_tritons():
    kernel = tilec.Autotuner(scale_kernel(), None, CONFIGS, ["n"])
    assert (kernel.num_warmups, kernel.num_reps, kernel.cache_results, kernel.reset_to_zero, kernel.restore_value) == (
        25, 100, False, [], [])


def test_warmup_compiles_every_config_and_launches_nothing(bench_calls):
    kernel = tuned()
    x, out = data(300)
    handles = kernel.warmup(x, out, 300, grid=grid)
    assert [h.metadata.num_warps for h in handles] == [1, 2, 4] and not bench_calls and (out == 0).all()
    assert len(kernel.jit_function.cache) == 3
    configs = [tilec.Config({}, num_warps=1), tilec.Config({}, num_warps=2)]
    wrapped = tilec.autotune(configs, key=["n"])(tilec.heuristics({"BLOCK": lambda a: 64})(scale_kernel()))
    handles = wrapped.warmup(x, out, 300, grid=grid)
    assert [h.specs[3].value for h in handles] == [64, 64] and (out == 0).all()
    assert len(wrapped.run(x, out, 300, grid=grid, warmup=True)) == 2 and (out == 0).all()
    wrapped.run(x, out, 300, grid=grid, warmup=False)  # as Triton's `kernel[grid]` calls it
    np.testing.assert_array_equal(out, 2 * x)


# --- parallel compiles --------------------------------------------------------------------------
@pytest.mark.host_only  # it counts the parent's compiles, which a mirror adds to
def test_configs_compile_in_worker_processes(monkeypatch):
    jit = importlib.import_module("tilec.launch.jit")  # the module, not the decorator
    outcomes, parent_compiles = [], []
    real_workers, real_compile = at.compile_in_workers, jit.compile_variant
    monkeypatch.setattr(at, "compile_in_workers", lambda *a: outcomes.append(real_workers(*a)) or outcomes[-1])
    monkeypatch.setattr(jit, "compile_variant", lambda *a: parent_compiles.append(a) or real_compile(*a))
    monkeypatch.setattr(at, "available_cpus", lambda: 3)
    kernel = tuned()
    x, out = data(300)
    kernel[grid](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert [o[0] for o in outcomes[0]] == ["ok", "ok", "ok"] and len(kernel.jit_function.cache) == 3
    assert parent_compiles == []  # the workers compiled every config; a forked child's calls stay there


def test_a_pool_that_fails_falls_back_to_compiling_here(monkeypatch):
    import concurrent.futures

    def broken(*args, **kwargs):
        raise OSError("no processes for you")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", broken)
    monkeypatch.setattr(at, "available_cpus", lambda: 3)
    kernel = tuned([*CONFIGS, tilec.Config({"BLOCK": 256})])
    x, out = data(300)
    kernel[grid](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert len(kernel.configs_timings) == 3 and len(kernel.skipped) == 1


# --- the progress line -----------------------------------------------------------------------------
class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal_only(monkeypatch):
    monkeypatch.delenv("TILEC_QUIET", raising=False)
    screen = Terminal()
    progress = at.Progress("scale", 2, screen)
    progress.show("benchmarked", 1, CONFIGS[0], [0.25, 0.2, 0.3])
    progress.note("skipped config BLOCK: 256: CompilationError: too big")
    progress.done()
    assert screen.getvalue() == ("\rautotune `scale`: benchmarked 1/2, best 0.25 ms "
                                 "(BLOCK: 32, num_warps: 1, num_stages: 3)\x1b[K"
                                 "autotune `scale`: skipped config BLOCK: 256: CompilationError: too big\n\n")
    quiet = io.StringIO()
    at.Progress("scale", 2, quiet).show("compiled", 1)
    monkeypatch.setenv("TILEC_QUIET", "1")
    hushed = Terminal()
    at.Progress("scale", 2, hushed).show("compiled", 1)
    assert quiet.getvalue() == hushed.getvalue() == ""


# --- the choice on disk ------------------------------------------------------------------------------
def test_the_choice_is_stored_and_a_fresh_tuner_reuses_it(bench_calls, tuning_cache):
    x, out = data(300)
    first = tuned()
    first[grid](x, out, 300)
    entry, = (tuning_cache / "tuning").iterdir()
    record = unpack_entry(cache.read_entry("tuning", entry.stem), "tuning", {})[0]["record"]
    assert record["config"] == str(first.best_config) and len(record["timings_ms"]) == 3
    again = tuned()
    out[:] = 0
    again[grid](x, out, 300)
    np.testing.assert_array_equal(out, 2 * x)
    assert len(bench_calls) == 3 and str(again.best_config) == str(first.best_config)
    assert again.configs_timings is None
    other_configs = tuned(CONFIGS[:2])  # other configs: another entry
    other_configs[grid](x, out, 300)
    assert len(bench_calls) == 5


def test_a_choice_is_not_kept_when_asked_not_to(bench_calls, tuning_cache, monkeypatch):
    x, out = data(300)
    tuned(cache_results=False)[grid](x, out, 300)
    monkeypatch.setenv("TILEC_CACHE", "0")
    tuned()[grid](x, out, 300)
    assert not (tuning_cache / "tuning").exists() and len(bench_calls) == 6


TUNE_SCRIPT = """
import json, sys
import numpy as np
import tilec
import tilec.language as tl
from tilec import testing
calls = []
real = testing.do_bench
testing.do_bench = lambda fn, **kw: calls.append(1) or real(fn, **kw)

@tilec.autotune([tilec.Config({"BLOCK": 32}), tilec.Config({"BLOCK": 64}), tilec.Config({"BLOCK": 128})],
                key=["n"], warmup=1, rep=1)
@tilec.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)

x = np.arange(500, dtype=np.float32); out = np.zeros(500, np.float32)
scale[lambda m: (tilec.cdiv(500, m["BLOCK"]),)](x, out, 500)
assert (out == 3 * x).all()
print(json.dumps({"benchmarked": len(calls), "best": str(scale.best_config)}))
"""


def test_a_second_process_reuses_the_choice_without_benchmarking(tmp_path):
    script = tmp_path / "tune_me.py"
    script.write_text(TUNE_SCRIPT)
    env = {**os.environ, "TILEC_CACHE_DIR": str(tmp_path / "shared"), "TILEC_CACHE": "1",
           "PYTHONPATH": str(REPO)}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0]["benchmarked"] == 3 and runs[1] == {"benchmarked": 0, "best": runs[0]["best"]}


# --- do_bench on the host -------------------------------------------------------------------------------
def test_do_bench_times_host_work_with_the_host_clock():
    import time

    ms = testing.do_bench(lambda: time.sleep(0.002), warmup=5, rep=20, device="host")
    assert 1.5 < ms < 50
    low, high = testing.do_bench(lambda: None, warmup=1, rep=1, quantiles=[0.1, 0.9], device="host")
    assert 0 <= low <= high
    with pytest.raises(ValueError, match="`device` must be one of cuda, host"):
        testing.do_bench(lambda: None, device="tpu")


def test_the_old_module_path_still_imports_and_leaves_the_decorator_in_place():
    """``tilec.autotune`` the module (the autotuner's import path before it moved
    into ``tilec.launch``) still gives its names, and importing it does not
    replace ``tilec.autotune`` the decorator."""
    import importlib

    module = importlib.import_module("tilec.autotune")
    from tilec.launch import autotune as moved

    assert module.Autotuner is moved.Autotuner and module.Heuristics is moved.Heuristics
    assert tilec.autotune is moved.autotune and callable(tilec.autotune(configs=[tilec.Config({})], key=[]))
