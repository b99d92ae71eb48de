"""``tilec.autotune``, ``tilec.Config`` and ``tilec.heuristics``: Triton's, plus what Triton lacks.

    @tilec.autotune(configs=[tilec.Config({"BLOCK": 128}, num_warps=4), tilec.Config({"BLOCK": 256}, num_warps=8)],
                    key=["n"], reset_to_zero=["out"])
    @tilec.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
    @tilec.jit
    def kernel(x, out, n, BLOCK: tl.constexpr, EVEN: tl.constexpr): ...

    kernel[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, out, n)
    kernel.best_config   # the Config the last launch ran

With Triton's meanings: the first launch for each value of the ``key``
arguments (and the dtypes of the arguments) runs every config on the real
arguments, timed by ``tilec.testing.do_bench`` (``warmup``/``rep`` ms;
the host interpreter is timed with the host clock), zeroing ``reset_to_zero``
and restoring ``restore_value`` arguments around each run, and remembers the
fastest; ``prune_configs_by`` (``early_config_prune``, ``perf_model`` +
``top_k``) narrows the configs first; a ``Config.pre_hook`` runs before each
launch of its config.  ``heuristics`` computes meta-parameters from the
arguments.  Beyond Triton:

* configs are compiled in parallel, in forked processes (compiling never
  needs the GPU), each handing its kernel back as bytes (and filling the disk
  cache); without ``fork``, or when the pool fails, they compile one by one;
* a config that does not compile or does not fit (``CompilationError``,
  ``OutOfResources``, an invalid ``num_warps``) is skipped with a one-line
  reason (``.skipped``); only when every config fails is it an error, listing them;
* on a terminal, a progress line shows configs done/total and the best so far
  (``TILEC_QUIET=1``, or stderr not a terminal: silent);
* the choice per (kernel and callee sources, heuristics, configs, key values,
  device name or ``"host"``, tilec's source hash) is stored under
  ``cache.cache_dir()/tuning``, so a new process does not tune again
  (``cache_results=False`` or ``TILEC_CACHE=0``: it does).
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from tilec import testing
from tilec.environment import cache_enabled, quiet
from tilec.errors import CompilationError, OutOfResources, TilecError
from tilec.launch import cache
from tilec.launch.cache_entry import EntryError, expect, is_int, pack_entry, unpack_entry
from tilec.launch.jit import JITFunction, KernelInterface, LaunchPlan

log = logging.getLogger("tilec.autotune")

PRUNE_KEYS = ("perf_model", "top_k", "early_config_prune")
#: What makes a config skipped rather than the tuning fail: it does not compile, or does not fit the GPU.
CONFIG_ERRORS = (CompilationError, OutOfResources)
QUANTILES = (0.5, 0.2, 0.8)  # Triton's: the median decides, the spread breaks ties
TUNING_FORMAT = 1


class Config:
    """One point of the search: meta-parameter values (``kwargs``, passed to the
    kernel as constexprs; a launch option such as ``enable_fp_fusion`` may be
    among them), the launch options ``num_warps``, ``num_stages``,
    ``num_ctas`` and ``maxnreg`` (checked at launch, as a launch's: a config
    with ``num_ctas=2`` is skipped with the reason), and an optional
    ``pre_hook(args)`` run before each launch of this config."""

    def __init__(self, kwargs: dict, num_warps: int = 4, num_stages: int = 3, num_ctas: int = 1,
                 maxnreg: Optional[int] = None, pre_hook: Optional[Callable[[dict], Any]] = None):
        self.kwargs = dict(kwargs)
        self.num_warps, self.num_stages, self.num_ctas, self.maxnreg = num_warps, num_stages, num_ctas, maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self) -> dict[str, Any]:
        """What a launch of this config passes, as Triton's: the meta-parameters
        and the options (``maxnreg`` only when set)."""
        options = {"num_warps": self.num_warps, "num_ctas": self.num_ctas, "num_stages": self.num_stages}
        if self.maxnreg is not None:
            options["maxnreg"] = self.maxnreg
        return {**self.kwargs, **options}

    def __str__(self) -> str:
        """The meta-parameters and options, leaving out ``num_ctas`` and
        ``maxnreg`` at their defaults (what progress lines and errors show)."""
        shown = {k: v for k, v in self.all_kwargs().items() if (k, v) != ("num_ctas", 1)}
        order = [*self.kwargs, "num_warps", "num_stages", "num_ctas", "maxnreg"]
        return ", ".join(f"{k}: {shown[k]}" for k in order if k in shown)

    def __repr__(self) -> str:
        return f"Config({self})"


class KernelWrapper(KernelInterface):
    """What ``autotune`` and ``heuristics`` wrap a kernel with: launched as
    ``kernel[grid](...)``, they pass the launch on to ``fn`` with more keywords.
    ``arg_names`` (Triton's constructors take them) must be the kernel's
    parameters when given: tilec reads them from its signature."""

    def __init__(self, fn: Any, arg_names: Optional[Sequence[str]] = None):
        self.fn = fn
        self.jit_function = innermost_jit(fn)
        self.arg_names = list(self.jit_function.signature.parameters)
        if arg_names is not None and list(arg_names) != self.arg_names:
            raise TypeError(f"{type(self).__name__}: arg_names {list(arg_names)} are not the parameters of "
                            f"`{self.jit_function.__name__}` ({', '.join(self.arg_names)})")
        self.__name__ = self.jit_function.__name__
        self.__doc__ = self.jit_function.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TilecError(f"kernel `{self.__name__}` is launched with a grid, `{self.__name__}[grid](...)`")

    def named_args(self, args: Sequence, kwargs: dict) -> dict[str, Any]:
        """Every argument by name: the signature's defaults, the positional ones, the keywords."""
        defaults = {n: p.default for n, p in self.jit_function.signature.parameters.items()
                    if p.default is not p.empty}
        return {**defaults, **dict(zip(self.arg_names, args)), **kwargs}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.fn!r})"


def innermost_jit(fn: Any) -> JITFunction:
    """The ``@tilec.jit`` kernel under any number of wrappers."""
    while not isinstance(fn, JITFunction):
        if not hasattr(fn, "fn"):
            raise TypeError(f"tilec.autotune/heuristics wrap a @tilec.jit kernel, got {fn!r}")
        fn = fn.fn
    return fn


# --------------------------------------------------------------------------- #
# heuristics
# --------------------------------------------------------------------------- #

class Heuristics(KernelWrapper):
    """``values``: meta-parameter name -> function of every argument by name
    (autotuned ones included) giving its value, computed in order at each launch.
    Constructed as Triton's: ``Heuristics(fn, arg_names, values)``."""

    def __init__(self, fn: Any, arg_names: Optional[Sequence[str]], values: dict[str, Callable[[dict], Any]]):
        super().__init__(fn, arg_names)
        self.values = dict(values)

    def run(self, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
        """Launch ``fn`` with the heuristics' values added (``warmup``: compile only)."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        return self.fn.run(*args, grid=grid, **self.resolve(args, kwargs))

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
        """What ``fn.warmup`` gives for these arguments, the heuristics' values added."""
        return self.fn.warmup(*args, grid=grid, **self.resolve(args, kwargs))

    def resolve(self, args: Sequence, kwargs: dict) -> dict[str, Any]:
        """``kwargs`` with every heuristic's value added."""
        kwargs = dict(kwargs)
        for name, heuristic in self.values.items():
            kwargs[name] = heuristic(self.named_args(args, kwargs))
        return kwargs


def heuristics(values: dict[str, Callable[[dict], Any]]) -> Callable[[Any], Heuristics]:
    """Decorator: compute meta-parameters from the arguments (Triton's ``triton.heuristics``)."""
    if not isinstance(values, dict) or not all(callable(f) for f in values.values()):
        raise TypeError("tilec.heuristics takes a dict of meta-parameter name -> function(args)")
    return lambda fn: Heuristics(fn, None, values)


# --------------------------------------------------------------------------- #
# autotune
# --------------------------------------------------------------------------- #

class Autotuner(KernelWrapper):
    """A kernel with configs to choose from (see the module doc).  ``cache``:
    tuning key -> chosen ``Config``; ``best_config``: the last launch's;
    ``configs_timings``: the last tuning's ``{Config: [median, p20, p80] ms}``;
    ``skipped``: the last tuning's ``{Config: reason}``.

    The constructor is Triton's, positions included; ``warmup``/``rep`` left
    None are 25 and 100 ms; ``use_cuda_graph`` is accepted and each config
    timed with ``testing.do_bench`` all the same (tilec has no CUDA-graph timer)."""

    def __init__(self, fn: Any, arg_names: Optional[Sequence[str]], configs: Sequence[Config], key: Sequence[str],
                 reset_to_zero: Optional[Sequence[str]] = None, restore_value: Optional[Sequence[str]] = None,
                 pre_hook: Optional[Callable] = None, post_hook: Optional[Callable] = None,
                 prune_configs_by: Optional[dict] = None, warmup: Optional[float] = None,
                 rep: Optional[float] = None, use_cuda_graph: bool = False, do_bench: Optional[Callable] = None,
                 cache_results: bool = False):
        super().__init__(fn, arg_names)
        self.configs = list(configs) or [Config({})]
        if not all(isinstance(c, Config) for c in self.configs):
            raise TypeError(f"tilec.launch.autotune: configs must be tilec.Config objects, got {self.configs!r}")
        self.keys = self._key_names(key)
        self.reset_to_zero = self._known_names(reset_to_zero or [], "reset_to_zero")
        self.restore_value = self._known_names(restore_value or [], "restore_value")
        self.prune_configs_by = dict(prune_configs_by or {})
        unknown = set(self.prune_configs_by) - set(PRUNE_KEYS)
        if unknown:
            raise TypeError(f"tilec.launch.autotune: unknown prune_configs_by keys {sorted(unknown)}; known: {PRUNE_KEYS}")
        self.user_pre_hook, self.user_post_hook = pre_hook, post_hook
        self.num_warmups, self.num_reps = 25 if warmup is None else warmup, 100 if rep is None else rep
        self.use_cuda_graph, self.do_bench, self.cache_results = use_cuda_graph, do_bench, cache_results
        self.cache: dict[tuple, Config] = {}  # (tuning key..., device label): the choice
        self._device_labels: dict[tuple[str, ...], str] = {}  # the arguments' devices: their label
        self.best_config: Optional[Config] = None
        self.configs_timings: Optional[dict[Config, list[float]]] = None
        self.skipped: dict[Config, str] = {}

    def _key_names(self, names: Iterable[str]) -> list[str]:
        """The ``key`` names that are arguments; any other is left out with a
        warning (Triton leaves it out silently: real code names arguments a
        kernel version no longer has)."""
        names, unknown = self._split_names(names)
        if unknown:
            warnings.warn(f"tilec.autotune(key=...): {self._not_arguments(unknown)}; tuning ignores them",
                          stacklevel=4)
        return [n for n in names if n not in unknown]

    def _known_names(self, names: Iterable[str], what: str) -> list[str]:
        """``names`` (``reset_to_zero``, ``restore_value``), every one an argument, or a TypeError."""
        names, unknown = self._split_names(names)
        if unknown:
            raise TypeError(f"tilec.autotune({what}=...): {self._not_arguments(unknown)}")
        return names

    def _split_names(self, names: Iterable[str]) -> tuple[list[str], list[str]]:
        """``names`` as a list (one string is one name), and those that are not arguments."""
        names = [names] if isinstance(names, str) else list(names)
        return names, [n for n in names if n not in self.arg_names]

    def _not_arguments(self, unknown: list[str]) -> str:
        return f"{unknown} are not arguments of `{self.__name__}` ({', '.join(self.arg_names)})"

    # --- a launch ------------------------------------------------------------------
    def run(self, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
        """Launch the config chosen for these arguments (tuning first when
        none is), or with ``warmup`` compile every config and launch nothing."""
        if warmup:
            return self.warmup(*args, grid=grid, **kwargs)
        conflicts = sorted(set(kwargs) & {k for c in self.configs for k in c.kwargs})
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(conflicts)}. Make sure that you don't "
                             f"re-define auto-tuned symbols (kernel `{self.__name__}`).")
        config = self.configs[0]
        if len(self.configs) > 1:
            named = self.named_args(args, kwargs)
            key = (*self.tuning_key(named), self._device_of(named, args, kwargs))
            if key not in self.cache:
                self.cache[key] = self._recall(key) or self._tune(key, args, kwargs, grid)
            config = self.cache[key]
        self.best_config = config
        return self._launch(config, args, kwargs, grid)

    def tuning_key(self, named: dict[str, Any]) -> tuple:
        """Triton's: the ``key`` arguments' values, then the dtype of every argument that has one."""
        return tuple([named[k] for k in self.keys] + [str(v.dtype) for v in named.values() if hasattr(v, "dtype")])

    def _device_of(self, named: dict[str, Any], args: Sequence, kwargs: dict) -> str:
        """What a choice is kept for (``device_label``): the last element of a
        ``cache`` key, so tensors on another kind of GPU are tuned for it while
        two devices of one kind share a choice.  Remembered per set of the
        arguments' ``device`` attributes, so a launch does not plan again;
        arguments that do not say their device are planned every time."""
        devices = tuple(str(v.device) for v in named.values() if hasattr(v, "device"))
        label = self._device_labels.get(devices) if devices else None
        if label is None:
            label = device_label(self._any_plan(args, kwargs))
            if devices:
                self._device_labels[devices] = label
        return label

    def warmup(self, *args: Any, grid: Any = None, **kwargs: Any) -> list[Any]:
        """Compile every config that pruning keeps for these arguments and
        launch nothing (Triton's ``warmup``): one handle per config."""
        return [self.fn.warmup(*args, grid=grid, **kwargs, **config.all_kwargs())
                for config in self.prune_configs(args, kwargs)]

    def _launch(self, config: Config, args: Sequence, kwargs: dict, grid: Any) -> Any:
        if config.pre_hook is not None:
            config.pre_hook({**self.named_args(args, kwargs), **config.all_kwargs()})
        return self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())

    # --- tuning ----------------------------------------------------------------------
    def prune_configs(self, args: Sequence, kwargs: dict) -> list[Config]:
        """Triton's pruning: ``early_config_prune(configs, nargs, **kwargs)``, then the
        ``top_k`` (a count, or a fraction <= 1 of the configs) best by ``perf_model``."""
        nargs = dict(zip(self.arg_names, args))
        configs = self.configs
        early = self.prune_configs_by.get("early_config_prune")
        if early is not None:
            configs = list(early(configs, nargs, **kwargs))
        perf_model = self.prune_configs_by.get("perf_model")
        if perf_model is not None:
            top_k = self.prune_configs_by.get("top_k", len(configs))
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = int(len(configs) * top_k)
            if not isinstance(top_k, int):
                raise TypeError(f"tilec.launch.autotune: top_k must be an int or a fraction <= 1.0, got {top_k!r}")
            if len(configs) > top_k:
                estimates = {c: perf_model(**nargs, **kwargs, **c.all_kwargs()) for c in configs}
                configs = sorted(configs, key=estimates.__getitem__)[:top_k]
        if not configs:
            raise TilecError(f"kernel `{self.__name__}`: prune_configs_by left no config to run")
        return configs

    def _tune(self, key: tuple, args: Sequence, kwargs: dict, grid: Any) -> Config:
        """Compile the configs (in parallel), time those that compiled, keep the fastest."""
        configs = self.prune_configs(args, kwargs)
        progress = Progress(self.__name__, len(configs))
        self.skipped = {}
        plans = self._plan_all(configs, args, kwargs)
        self.skipped.update(compile_plans(self.jit_function, plans, progress))
        timings = self._bench_all([c for c in configs if c not in self.skipped], args, kwargs, grid, plans,
                                  progress)
        progress.done()
        for config, reason in self.skipped.items():
            progress.note(f"skipped config {config}: {reason}")
        if not timings:
            reasons = "\n".join(f"  {c}: {r}" for c, r in self.skipped.items())
            raise TilecError(f"kernel `{self.__name__}`: no config ran for key {key[:-1]} on {key[-1]}:\n"
                             f"{reasons}")
        self.configs_timings = timings
        best = min(timings, key=timings.__getitem__)
        self._zero(self.named_args(args, kwargs))  # the launch that follows starts from zeros, as each run did
        self._remember(key, best)
        return best

    def _plan_all(self, configs: Sequence[Config], args: Sequence, kwargs: dict) -> dict[Config, LaunchPlan]:
        """Each config's launch plan (heuristics applied); a config that cannot be planned is skipped."""
        plans = {}
        for config in configs:
            with naming_config(self.__name__, config):
                try:
                    plan = self._plan(config, args, kwargs)
                except CONFIG_ERRORS + (ValueError,) as e:  # Options reject num_warps=3 with a ValueError
                    self.skipped[config] = one_line(e)
                    continue
            if plan is not None:
                plans[config] = plan
        return plans

    def _plan(self, config: Config, args: Sequence, kwargs: dict) -> Optional[LaunchPlan]:
        fn, final = self.fn, {**kwargs, **config.all_kwargs()}
        while isinstance(fn, Heuristics):
            final = fn.resolve(args, final)
            fn = fn.fn
        if not isinstance(fn, JITFunction):
            return None  # an autotuner inside an autotuner: its launches compile as they go
        return fn.plan(args, final)

    def _any_plan(self, args: Sequence, kwargs: dict) -> Optional[LaunchPlan]:
        """A plan of the first config that plans (they all run where the arrays are)."""
        for config in self.configs:
            try:
                return self._plan(config, args, kwargs)
            except CONFIG_ERRORS + (ValueError,):
                continue
        return None

    def _bench_all(self, configs: Sequence[Config], args: Sequence, kwargs: dict, grid: Any,
                   plans: dict[Config, LaunchPlan], progress: "Progress") -> dict[Config, list[float]]:
        named = self.named_args(args, kwargs)
        saved = {name: copy_array(named[name]) for name in self.restore_value if named[name] is not None}
        place = next(iter(plans.values())).place if plans else testing.DEFAULT_DEVICE
        timings = {}
        for i, config in enumerate(configs):
            with naming_config(self.__name__, config):
                try:
                    timings[config] = self._bench(config, args, kwargs, grid, named, saved, place)
                except CONFIG_ERRORS as e:  # registers over the limit show up when a GPU loads the kernel
                    self.skipped[config] = one_line(e)
            best = min(timings, key=timings.__getitem__) if timings else None
            progress.show("benchmarked", i + 1, best, timings.get(best), total=len(configs))
        return timings

    def _bench(self, config: Config, args: Sequence, kwargs: dict, grid: Any, named: dict, saved: dict,
               place: str) -> list[float]:
        full = {**named, **config.all_kwargs()}

        def kernel_call() -> None:
            if config.pre_hook is not None:
                config.pre_hook(full)
            self._zero(named)
            if self.user_pre_hook is not None:
                self.user_pre_hook(full)
            exception = None
            try:
                self.fn.run(*args, grid=grid, **kwargs, **config.all_kwargs())
            except Exception as e:
                exception = e
                raise
            finally:
                for name, value in saved.items():
                    restore_array(named[name], value)
                if self.user_post_hook is not None:
                    self.user_post_hook(full, exception)

        if self.do_bench is not None:
            timing = self.do_bench(kernel_call, quantiles=QUANTILES)
        else:
            timing = testing.do_bench(kernel_call, warmup=self.num_warmups, rep=self.num_reps, quantiles=QUANTILES,
                                      device=place)
        return list(timing) if isinstance(timing, (list, tuple)) else [timing]

    def _zero(self, named: dict) -> None:
        """Zero the ``reset_to_zero`` arrays (an optional one passed as None has nothing to zero)."""
        for name in self.reset_to_zero:
            if named[name] is not None:
                zero_array(named[name])

    # --- the choice on disk ----------------------------------------------------------------
    def _disk_key(self, key: tuple) -> Optional[str]:
        """The tuning entry's key, or None when results are not kept (or cannot be keyed)."""
        if not (self.cache_results and cache_enabled()):
            return None
        try:
            wrappers = [(type(w).__name__, getattr(w, "values", None)) for w in wrapper_chain(self.fn)]
            return cache.digest("tuning", TUNING_FORMAT, cache.tilec_source_hash(), self.jit_function, wrappers,
                                [str(c) for c in self.configs], self.keys, key,
                                [self.prune_configs_by.get(k) for k in PRUNE_KEYS])
        except (cache.Uncacheable, TilecError, ValueError) as e:
            log.debug("tilec.launch.autotune: `%s` tuning not kept: %s", self.__name__, e)
            return None

    def _recall(self, key: tuple) -> Optional[Config]:
        """The config an earlier process chose for this key, when it is still one of ours;
        an entry that is not a well-formed choice is logged, counted corrupt and tuned again."""
        disk_key = self._disk_key(key)
        payload = cache.read_entry("tuning", disk_key) if disk_key else None
        if payload is None:
            return None
        try:
            config = stored_choice(payload, self.configs)
        except EntryError as e:
            log.warning("tilec.launch.autotune: tuning entry %s of `%s` is corrupt (%s); tuning again", disk_key,
                        self.__name__, e)
            cache.STATS["corrupt"] += 1
            return None
        log.info("tilec.launch.autotune: `%s` key %s: %s (tuned by an earlier process)", self.__name__, key, config)
        return config

    def _remember(self, key: tuple, best: Config) -> None:
        log.info("tilec.launch.autotune: `%s` key %s: %s", self.__name__, key, best)
        disk_key = self._disk_key(key)
        if disk_key is None:
            return
        record = {"index": self.configs.index(best), "config": str(best),
                  "timings_ms": {str(c): t for c, t in self.configs_timings.items()},
                  "skipped": {str(c): r for c, r in self.skipped.items()}}
        cache.store_entry("tuning", disk_key, pack_entry("tuning", {"record": record}, {}))


def stored_choice(payload: bytes, configs: Sequence[Config]) -> Config:
    """The config a tuning entry chose: its index among ``configs``, which must
    still print as the entry says (raises ``EntryError``)."""
    record = unpack_entry(payload, "tuning", {})[0].get("record")
    expect(isinstance(record, dict), "no `record` object")
    index, text = record.get("index"), record.get("config")
    expect(is_int(index) and 0 <= index < len(configs), f"the index {index!r} is not one of the configs")
    expect(text == str(configs[index]), f"config {index} is not {text!r}")
    return configs[index]


def autotune(configs: Sequence[Config], key: Sequence[str], prune_configs_by: Optional[dict] = None,
             reset_to_zero: Optional[Sequence[str]] = None, restore_value: Optional[Sequence[str]] = None,
             pre_hook: Optional[Callable] = None, post_hook: Optional[Callable] = None,
             warmup: Optional[float] = None, rep: Optional[float] = None, use_cuda_graph: bool = False,
             do_bench: Optional[Callable] = None, cache_results: bool = True) -> Callable[[Any], Autotuner]:
    """Decorator: choose the fastest of ``configs`` for each value of the ``key``
    arguments (Triton's ``triton.autotune``; see the module doc for what is more)."""
    return lambda fn: Autotuner(fn, None, configs, key, reset_to_zero, restore_value, pre_hook, post_hook,
                                prune_configs_by, warmup, rep, use_cuda_graph, do_bench, cache_results)


def wrapper_chain(fn: Any) -> list[Any]:
    chain = []
    while not isinstance(fn, JITFunction):
        chain.append(fn)
        fn = fn.fn
    return chain


def device_label(plan: Optional[LaunchPlan]) -> str:
    """What a tuning result is kept for: the target and the name of the device
    the arrays live on (``"<arch> <GPU name>"``, from the launcher), or the
    target alone where there is one device (``"host"``)."""
    if plan is None:
        return "unknown"
    name = plan.launcher.device_name(plan.args, plan.device)
    return plan.target if name is None else f"{plan.target} {name}"


@contextlib.contextmanager
def naming_config(kernel: str, config: Config) -> Iterator[None]:
    """An error that is not the config's to skip propagates, saying which
    config raised it (its type stays, for callers that catch it)."""
    try:
        yield
    except Exception as e:
        add_line(e, f"(while tuning kernel `{kernel}`: config {config} raised this; only configs that do not "
                    "compile or do not fit are skipped)")
        raise


def add_line(error: BaseException, line: str) -> None:
    """``line`` at the end of ``error``'s message, or as a note (shown in the
    traceback) when its message is not one plain string."""
    if len(error.args) == 1 and isinstance(error.args[0], str) and type(error).__str__ is BaseException.__str__:
        error.args = (f"{error.args[0]}\n{line}",)
    else:
        error.add_note(line)


def one_line(error: BaseException) -> str:
    """An error as one line: its type and the first line of its message."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


# --- arrays: numpy on the host, torch (or anything with zero_/clone/copy_) on a GPU -----
def zero_array(a: Any) -> None:
    if hasattr(a, "zero_"):
        a.zero_()
    else:
        a[...] = 0


def copy_array(a: Any) -> Any:
    return a.clone() if hasattr(a, "clone") else a.copy()


def restore_array(a: Any, saved: Any) -> None:
    if hasattr(a, "copy_"):
        a.copy_(saved)
    else:
        a[...] = saved


# --------------------------------------------------------------------------- #
# Compiling the configs in parallel
# --------------------------------------------------------------------------- #

_WORK: tuple = ()  # (kernel, plans) for the forked workers: inherited, never pickled


def compile_plans(kernel: JITFunction, plans: dict[Config, LaunchPlan], progress: "Progress") -> dict[Config, str]:
    """Compile every plan's variant into ``kernel``'s cache, in worker processes when
    there are several; the configs that failed, with a one-line reason each."""
    pending = [(c, p) for c, p in plans.items() if not kernel.has_variant(p)]
    results = compile_in_workers(kernel, [p for _, p in pending]) if len(pending) > 1 else None
    failed = {}
    for i, (config, plan) in enumerate(pending):
        outcome, detail = results[i] if results else ("retry", None)
        if outcome == "ok":
            try:
                kernel.adopt(plan, detail)
            except Exception as e:  # a kernel that does not read back (a tilec bug): compile it here
                log.warning("tilec.launch.autotune: a worker's kernel did not load (%s); compiling it here", e)
                outcome = "retry"
        if outcome == "failed":
            failed[config] = detail
        elif outcome == "retry":
            with naming_config(kernel.__name__, config):
                try:
                    kernel.variant(plan)
                except CONFIG_ERRORS as e:
                    failed[config] = one_line(e)
        progress.show("compiled", i + 1, total=len(pending))
    return failed


def compile_in_workers(kernel: JITFunction, plans: list[LaunchPlan]) -> Optional[list[tuple[str, Any]]]:
    """``("ok", kernel bytes)``, ``("failed", reason)`` or ``("retry", what)`` per
    plan, compiled by forked processes; None where that cannot be done."""
    import multiprocessing  # only tuning needs processes: not loaded with tilec
    from concurrent.futures import ProcessPoolExecutor

    workers = min(len(plans), available_cpus())
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return None
    global _WORK
    _WORK = (kernel, plans)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_compile_one, range(len(plans))))
    except Exception as e:  # a broken pool, no processes allowed...: compile here instead
        log.warning("tilec.launch.autotune: compiling in worker processes failed (%s: %s); compiling one by one",
                    type(e).__name__, e)
        return None
    finally:
        _WORK = ()


def _compile_one(index: int) -> tuple[str, Any]:
    """In a worker: compile one plan; errors that are the config's come back as reasons."""
    kernel, plans = _WORK
    try:
        return "ok", cache.serialize_kernel(kernel.variant(plans[index]))
    except CONFIG_ERRORS as e:
        return "failed", one_line(e)
    except Exception as e:  # anything else is a bug: the parent compiles it again to raise it whole
        return "retry", repr(e)


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# --------------------------------------------------------------------------- #
# The progress line
# --------------------------------------------------------------------------- #

class Progress:
    """One line on a terminal, rewritten in place: ``autotune `k`: benchmarked 3/8,
    best 0.012 ms (BLOCK: 128, ...)``.  Silent when stderr is not a terminal or
    under ``TILEC_QUIET=1``."""

    def __init__(self, kernel: str, total: int, stream: Any = None):
        self.kernel, self.total = kernel, total
        self.stream = stream if stream is not None else sys.stderr
        self.on = not quiet() and _isatty(self.stream)

    def show(self, phase: str, done: int, best: Optional[Config] = None, timing: Optional[list] = None,
             total: Optional[int] = None) -> None:
        if not self.on:
            return
        line = f"autotune `{self.kernel}`: {phase} {done}/{total or self.total}"
        if best is not None:
            line += f", best {timing[0]:.4g} ms ({best})"
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()

    def note(self, line: str) -> None:
        """A line of its own (a skipped config): on the terminal when on, else in the log."""
        if self.on:
            self.stream.write(f"autotune `{self.kernel}`: {line}\n")
        else:
            log.info("tilec.launch.autotune: `%s`: %s", self.kernel, line)

    def done(self) -> None:
        if self.on:
            self.stream.write("\n")
            self.stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
