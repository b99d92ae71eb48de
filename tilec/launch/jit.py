"""``tilec.jit``: the object users hold for a kernel, and how a launch flows.

``kernel[grid](*args, stream=None, **kwargs)``, launch options (``num_warps=4``,
``enable_fp_fusion=True``... ``LAUNCH_OPTIONS``) among the keywords:

1. bind the arguments to the Python signature (defaults applied);
2. classify each one (``params.classify_params``, ``args.classify_arg``):
   constexprs, specialized scalars, pointers and where their memory lives; a
   tuple flattened into its leaves (``tuple_args.py``);
3. pick the launcher for that place from the backend registry
   (``targets/registry.py``: all host -> code compiled for the host CPU, or
   the reference interpreter under ``interpret``/``TILEC_INTERPRET``; all on
   one GPU -> that GPU's backend; a mix is an error naming the arrays);
4. ask the launcher for the target (``"host"``, or the device's arch) and look
   the variant up in ``kernel.cache`` -- keyed by every argument's type,
   attributes and constexpr value, the options and the target -- then, on a
   miss, in the disk cache (``cache.py``: keyed by the same and the sources),
   compiling (and storing) on a miss there too -- never after a global the
   variants compiled in has changed (``global_values.py``);
5. normalize the grid (a callable gets every bound argument by name; CUDA's
   limits hold everywhere) and launch;
6. when the launcher offers one (``fast_launch``), remember the launch under
   the arguments' dispatch keys and the options.

That is the general path.  Every launch first tries the fast path: a function
generated from the signature (``binder.make_specializer``) gives the dispatch
keys and launch values, one lookup finds a remembered launch, and only the
grid is left to normalize and the globals to compare.  Anything else -- a
first launch, a binding error, a value only ``classify_arg`` can judge
(``NotFast``), a remembered launch that declines (raises ``NotFast`` before
it runs anything: the host's when ``TILEC_INTERPRET`` has been turned on
since) -- takes the general path, so every check and error message lives
there alone.

A launcher (``registry.Launcher``) has ``target(args, device)``,
``default_target(args, device)`` (what ``compile`` picks), ``launch(compiled,
grid, args, device, stream)``, ``fast_launch(compiled, args, device)`` (a
function of the grid, every argument's launch value and the stream, or None)
and ``device_name(args, device)``; the backend whose ``places`` hold a place
gives the launcher for it.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from tilec.launch import cache as disk_cache
from tilec.frontend.common import is_constexpr_annotation
from tilec.frontend.source import read_source
from tilec.errors import TilecError, require_function
from tilec.ir.core import walk
from tilec.ir.ops import While
from tilec.launch.args import KernelArg, NotFast
from tilec.launch.binder import make_binder, make_specializer
from tilec.launch.compiler import OPTION_DEFAULTS, CompiledKernel, Options, compile_variant
from tilec.launch.global_values import GlobalRead, check_globals, read_globals
from tilec.launch.grid import Grid, grid_dims, normalize_grid
from tilec.launch.params import classify_params, kernel_params, spec_tables
from tilec import environment
from tilec.targets.registry import HOST_PLACE, Launcher, active_driver, backend_for, backend_for_place

#: Triton's launch options that change how a kernel is launched, not its code
#: (those are ``Options``), with their defaults.  A cooperative grid (blocks
#: that may wait for each other) runs where no block can wait, refused
#: otherwise (``check_cooperative``); programmatic dependent
#: launch is a scheduling hint tilec takes and does not act on.  ``debug``
#: is an ``Options`` field (it changes the cpu target's code); a launch's
#: ``debug=None`` leaves it to ``@jit(debug=...)``.
LAUNCH_FLAG_DEFAULTS: dict[str, Optional[bool]] = {"launch_cooperative_grid": False, "launch_pdl": False}
LAUNCH_OPTIONS = frozenset(OPTION_DEFAULTS) | frozenset(LAUNCH_FLAG_DEFAULTS)


class KernelInterface:
    """What can be launched as ``kernel[grid](*args, **kwargs)`` (Triton's base
    class of kernels, autotuners and heuristics): ``__getitem__`` gives the
    launcher, which calls ``run(*args, grid=grid, warmup=False, **kwargs)``, as
    Triton's does, so a subclass written against Triton's base runs unchanged."""

    def run(self, *args: Any, grid: Grid, warmup: bool, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define run(*args, grid, warmup, **kwargs)")

    def __getitem__(self, grid: Grid) -> Callable[..., Any]:
        return functools.partial(self.run, grid=grid, warmup=False)  # looked up here: a patched ``run`` takes effect


class JITFunction(KernelInterface):
    """A kernel: launch it with ``kernel[grid](...)``, or inline it by calling it
    from another kernel.  ``cache`` maps specialization keys to ``CompiledKernel``s."""

    is_tilec_jit = True

    def __init__(self, fn: Callable, version: Any = None, do_not_specialize: Optional[Iterable] = None,
                 do_not_specialize_on_alignment: Optional[Iterable] = None, debug: Optional[bool] = None,
                 noinline: Optional[bool] = None, repr: Optional[Callable] = None,
                 launch_metadata: Optional[Callable] = None, interpret: Optional[bool] = None):
        """Triton's decorator options (see ``jit``) are kept as attributes."""
        require_function(fn)
        for name, flag in (("debug", debug), ("interpret", interpret)):
            if flag is not None and not isinstance(flag, bool):
                raise TypeError(f"@tilec.jit of `{fn.__name__}`: {name} must be True, False or None, got {flag!r}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.signature = inspect.signature(fn)
        self.constexprs = frozenset(n for n, p in self.signature.parameters.items()
                                    if is_constexpr_annotation(p.annotation))
        self.params = kernel_params(self.signature, self.constexprs, fn.__name__, do_not_specialize,
                                    do_not_specialize_on_alignment)
        self.version, self.debug, self.noinline = version, debug, noinline
        self.interpret = interpret
        self._repr, self.launch_metadata = repr, launch_metadata
        self.cache = VariantCache()
        self._launches = self.cache.launches
        self._generated_bind = make_binder(self.signature)
        self._specialize = make_specializer(self.signature, self.constexprs, spec_tables(self.params))
        # Parameters named like a launch option: a launch's keyword reaches both (Triton hands the value in).
        self._option_parameters = LAUNCH_OPTIONS & frozenset(self.signature.parameters)
        self._global_reads: Optional[tuple[GlobalRead, ...]] = None  # the globals compiled in, from the first compile

    def run(self, *args: Any, grid: Grid, stream: Any = None, warmup: bool = False, **kwargs: Any) -> CompiledKernel:
        """Launch over ``grid`` (an int, 1-3 ints, or ``lambda META: ...``) on
        ``stream`` (GPU launches only; default: torch's current stream) and
        return the variant that ran (with ``warmup``: compile it, launch
        nothing).  Launch options (``num_warps=4``, ``num_stages=3``,
        ``num_ctas=1``, ``maxnreg=None``, ``enable_fp_fusion=True``,
        ``launch_cooperative_grid=False``, ``launch_pdl=False``,
        ``debug=None``) are keywords among the kernel's arguments."""
        kwargs, options = self._take_options(kwargs)
        if warmup:
            return self.variant(self._plan(args, kwargs, options))
        keys = launch = None
        if self._specialize is not None:
            try:
                keys, values, given = self._specialize(*args, **kwargs)
                launch, compiled = self._launches.get((keys, options_key(options)), (None, None))
            except (TypeError, NotFast):
                keys = None  # a binding error, an unhashable constexpr or option, a value only the general path judges
        if launch is None:
            return self._run_general(args, kwargs, grid, options, stream, keys)
        if self._global_reads:
            check_globals(self._global_reads, self.__name__)
        if callable(grid):
            grid = grid(dict(zip(self.signature.parameters, given)))
        try:
            launch(grid_dims(grid, self.__name__), values, stream)
        except NotFast:  # the launch declined before running anything (the host's, under TILEC_INTERPRET)
            return self._run_general(args, kwargs, grid, options, stream, None)
        return compiled

    def warmup(self, *args: Any, grid: Grid = None, **kwargs: Any) -> CompiledKernel:
        """The variant a launch with these arguments runs, compiled (as Triton's
        ``warmup``: nothing is launched; ``grid`` is accepted and unused).  A
        torch dtype stands for a tensor of that dtype on the active device
        (``kernel.warmup(torch.float32, ..., grid=(1,))``, Triton's ``MockTensor``)."""
        args = tuple(mock_tensor(a) for a in args)
        kwargs = {name: mock_tensor(value) for name, value in kwargs.items()}
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    @property
    def arg_names(self) -> list[str]:
        """The parameters' names, in order."""
        return [p.name for p in self.params]

    @property
    def src(self) -> str:
        """The kernel's source from its ``def`` (decorators left out), dedented."""
        return read_source(self.fn).definition

    @property
    def cache_key(self) -> str:
        """A hash of the kernel's source, of what it reads (callees, globals)
        and of tilec's own: it changes when a compile could."""
        return disk_cache.digest(disk_cache.tilec_source_hash(), disk_cache.source_fingerprint(self.fn))

    def repr(self, specialization: Any = None) -> str:
        """The kernel's name for profilers: ``@jit(repr=...)``'s, else the function's."""
        return self.__name__ if self._repr is None else self._repr(specialization)

    def compile(self, *args: Any, target: Optional[str] = None, **kwargs: Any) -> CompiledKernel:
        """The variant these arguments select for ``target``, compiled (from the cache when it is there).

        ``target`` is any target a backend compiles for (``"host"``, the
        interpreter; a GPU arch; ``"cpu"``: ``python -m tilec info`` lists
        them all); compiling for an arch needs no GPU.  Left out, it is where a
        launch with these arguments would run: for host arrays ``"cpu"``
        (``"cpu-streaming"`` where they exceed the last-level cache; ``"host"``,
        the interpreter, under ``TILEC_INTERPRET``); for GPU arrays their
        device's arch, or the GPU backend's default arch on a machine with no
        usable GPU.  Launch options are keywords, as in a launch.
        """
        kwargs, options = self._take_options(kwargs)
        classified = self._classify(self._bind(args, kwargs))
        if target is None:
            place, device = common_place(classified, self.__name__)
            target = self._launcher(place).default_target(classified, device)
        backend_for(target)  # an unknown target is a ValueError naming the valid ones, before any compile
        return self._variant(classified, code_options(options, self.__name__, self.debug), target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TilecError(f"kernel `{self.__name__}` is launched with a grid, `{self.__name__}[grid](...)`; "
                         "calling it directly only works inside another kernel")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    # --- the steps of a launch ----------------------------------------------
    def _run_general(self, args: Sequence, kwargs: dict, grid: Grid, options: dict, stream: Any,
                     keys: Optional[tuple]) -> CompiledKernel:
        """Launch through every step (see the module doc) and return the
        variant that ran; remember the launch for the fast path under
        ``keys``, the dispatch keys the specializer gave (None: it gave none,
        and would give none next time either), and the ``options`` given."""
        plan = self._plan(args, kwargs, options)
        compiled = self.variant(plan)
        if options.get("launch_cooperative_grid"):
            check_cooperative(compiled)
        grid = normalize_grid(grid, plan.bound, self.__name__)
        plan.launcher.launch(compiled, grid, plan.args, plan.device, stream)
        # Only under keys the classification agrees with: a spec that disagreed would cost speed, not a wrong
        # variant.  The keys say the device (so it must be known; the host has one), and an empty grid loaded
        # nothing.
        known = plan.device is not None or plan.place == HOST_PLACE
        if keys is not None and known and 0 not in grid and keys == self._dispatch_keys(plan.args):
            launch = plan.launcher.fast_launch(compiled, plan.args, plan.device)
            if launch is not None:
                self._launches[(keys, options_key(options))] = (launch, compiled)
        return compiled

    def plan(self, args: Sequence, kwargs: dict) -> "LaunchPlan":
        """Steps 1-4 of a launch short of compiling: the bound and classified
        arguments, where they live, the launcher and the variant's target
        (the autotuner plans every config, then compiles them in parallel).
        ``kwargs`` may hold launch options, as in a launch."""
        return self._plan(args, *self._take_options(kwargs))

    def _plan(self, args: Sequence, kwargs: dict, options: dict) -> "LaunchPlan":
        code = code_options(options, self.__name__, self.debug)
        bound = self._bind(args, kwargs)
        classified = self._classify(bound)
        place, device = common_place(classified, self.__name__)
        launcher = self._launcher(place)
        return LaunchPlan(bound, classified, place, device, launcher, code, launcher.target(classified, device))

    def _take_options(self, kwargs: dict) -> tuple[dict, dict]:
        """``kwargs`` without the launch options, and those options.  A kernel
        parameter named like one (``num_warps``) keeps its keyword too: Triton
        hands the launch's value in."""
        if LAUNCH_OPTIONS.isdisjoint(kwargs):
            return kwargs, {}
        options = {n: v for n, v in kwargs.items() if n in LAUNCH_OPTIONS}
        kept = {n: v for n, v in kwargs.items() if n not in LAUNCH_OPTIONS or n in self._option_parameters}
        return kept, options

    def variant(self, plan: "LaunchPlan") -> CompiledKernel:
        """The compiled variant ``plan`` runs (from the caches when it is there)."""
        return self._variant(plan.args, plan.options, plan.target)

    def has_variant(self, plan: "LaunchPlan") -> bool:
        """Whether ``plan``'s variant is compiled in this process already."""
        return self._variant_key(plan.args, plan.options, plan.target) in self.cache

    def adopt(self, plan: "LaunchPlan", payload: bytes) -> CompiledKernel:
        """Take in ``plan``'s variant compiled by another process (an autotuner's
        worker), as ``cache.serialize_kernel`` bytes."""
        compiled = disk_cache.deserialize_kernel(payload, plan.args, plan.options, plan.target)
        self.cache[self._variant_key(plan.args, plan.options, plan.target)] = compiled
        return compiled

    @staticmethod
    def _dispatch_keys(args: Sequence[KernelArg]) -> tuple:
        return tuple(a.dispatch_key for a in args)

    def _bind(self, args: Sequence, kwargs: dict) -> dict[str, Any]:
        if self._generated_bind is not None:
            try:
                return self._generated_bind(*args, **kwargs)
            except TypeError:
                pass  # a binding error: inspect words it better
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"kernel `{self.__name__}`{self.signature}: {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _classify(self, bound: dict[str, Any]) -> list[KernelArg]:
        return classify_params(bound, self.params, self.__name__)

    def _launcher(self, place: str) -> Launcher:
        interpret = self.interpret if self.interpret is not None else environment.interpret()
        backend = backend_for_place(place, reference=interpret)
        if backend is None:
            raise TilecError(f"kernel `{self.__name__}`: running on {place} devices is not supported yet; "
                             "pass numpy arrays to run on the host")
        return backend.launcher()

    def _watch_globals(self) -> None:
        """With no variant in the cache (none compiled yet, a failed compile,
        a cleared cache), record the globals the next compile reads; with
        variants there, those globals must not have changed."""
        if self._global_reads is None or not self.cache:
            self._global_reads = read_globals(self.fn)
        else:
            check_globals(self._global_reads, self.__name__)

    @staticmethod
    def _variant_key(args: Sequence[KernelArg], options: Options, target: str) -> tuple:
        return (tuple(a.key for a in args), options, target)

    def _variant(self, args: Sequence[KernelArg], options: Options, target: str) -> CompiledKernel:
        """The variant from the caches, else compiled; never one compiled with
        globals that have changed since (``global_values.py``)."""
        self._watch_globals()
        key = self._variant_key(args, options, target)
        compiled = self.cache.get(key)
        if compiled is None:
            # ``compile_variant`` is looked up when called: the test suite wraps it (gpu_compile_check.py)
            compiled = self.cache[key] = disk_cache.load_or_compile(
                self.fn, args, options, target, lambda: compile_variant(self.fn, args, options, target))
        return compiled


@dataclass(frozen=True)
class LaunchPlan:
    """One launch, planned: ``bound`` arguments by name, their classification
    (``args``), where they live (``place``, ``device``), the ``launcher`` of
    that place, the ``options`` and the ``target`` the variant is compiled for."""

    bound: dict[str, Any]
    args: list[KernelArg]
    place: str
    device: Optional[int]
    launcher: Launcher
    options: Options
    target: str


class VariantCache(MutableMapping):
    """``kernel.cache``: specialization key -> ``CompiledKernel``, and the fast
    path's remembered launches, ``launches``: (dispatch keys, the launch
    options given) -> (launch, the variant it runs).  Those run variants held
    here, so taking one out or replacing it forgets them all: the next launch
    looks again, as the general path always does."""

    def __init__(self):
        self._variants: dict[tuple, CompiledKernel] = {}
        self.launches: dict[tuple, Callable[..., None]] = {}

    def __getitem__(self, key: tuple) -> CompiledKernel:
        return self._variants[key]

    def get(self, key: tuple, default: Any = None) -> Any:
        return self._variants.get(key, default)  # MutableMapping's goes through a KeyError

    def __setitem__(self, key: tuple, compiled: CompiledKernel) -> None:
        if key in self._variants:
            self.launches.clear()
        self._variants[key] = compiled

    def __delitem__(self, key: tuple) -> None:
        del self._variants[key]
        self.launches.clear()

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._variants)

    def __len__(self) -> int:
        return len(self._variants)

    def __repr__(self) -> str:
        return f"VariantCache({self._variants!r})"


_NO_OPTIONS: frozenset = frozenset()


def options_key(options: dict) -> frozenset:
    """The launch options given, as part of a fast-path key: with their types,
    since True == 1 and 1 == 1.0 but only some of them are valid options."""
    return frozenset((n, type(v), v) for n, v in options.items()) if options else _NO_OPTIONS


def code_options(options: dict, kernel: str, debug: Optional[bool] = None) -> Options:
    """The ``Options`` a launch's ``options`` compile for, after checking the
    launch-only flags (``LAUNCH_FLAG_DEFAULTS``); ``debug`` is the kernel's
    ``@jit(debug=...)``, which a launch's ``debug=None`` (or none) keeps."""
    for name, default in LAUNCH_FLAG_DEFAULTS.items():
        value = options.get(name, default)
        if not (isinstance(value, bool) or value is default):
            raise ValueError(f"kernel `{kernel}`: {name} must be True or False, got {value!r}")
    code = {n: v for n, v in options.items() if n in OPTION_DEFAULTS}
    if code.get("debug") is None:
        code["debug"] = bool(debug)
    return Options(**code)


def mock_tensor(value: Any) -> Any:
    """``value``, or for a torch dtype an empty tensor of it on the active
    device (``tilec.runtime.driver.active``): it classifies as a pointer of
    that dtype at address 0, aligned, as Triton's ``MockTensor`` does."""
    if type(value).__name__ != "dtype" or type(value).__module__ != "torch":
        return value
    import torch

    return torch.empty(0, dtype=value, device=active_driver().get_active_torch_device())


def check_cooperative(compiled: CompiledKernel) -> None:
    """Refuse ``launch_cooperative_grid=True`` for a kernel that may wait for
    another block.  The flag promises that the grid's blocks run at once, so
    that they may wait for each other; a kernel without a runtime ``while``
    loop cannot wait (each block ends whatever the others do), so any launch
    keeps that promise, the interpreter's one block after another included.
    A kernel with one needs a cooperative launch, which no launcher makes yet."""
    if any(isinstance(op, While) for op in walk(compiled.fn.body)):
        raise TilecError(f"kernel `{compiled.name}`: launch_cooperative_grid=True for a kernel with a runtime "
                         "`while` loop (its blocks may wait for each other, which needs them all resident at "
                         "once) is not supported yet; launch without it")


def jit(fn: Optional[Callable] = None, *, version: Any = None, do_not_specialize: Optional[Iterable] = None,
        do_not_specialize_on_alignment: Optional[Iterable] = None, debug: Optional[bool] = None,
        noinline: Optional[bool] = None, repr: Optional[Callable] = None,
        launch_metadata: Optional[Callable] = None, interpret: Optional[bool] = None):
    """Decorator making ``fn`` a tilec kernel (``@tilec.jit`` or ``@tilec.jit(...)``),
    with Triton's options and meanings:

    * ``interpret`` (tilec's): True runs launches on host arrays through the
      reference interpreter instead of compiled host code, False never,
      None (the default) as ``TILEC_INTERPRET`` says;

    * ``do_not_specialize`` / ``do_not_specialize_on_alignment``: parameters
      (names or positions) kept from specializing (``params.py``);
    * ``debug``: Triton's debug mode (a launch's ``debug=`` overrides it):
      code compiled for the host CPU checks every load, store and atomic
      against the arrays passed and raises ``InterpreterError`` naming the
      line, the argument and the offset; the interpreter checks them and
      every ``device_assert`` either way, and so does GPU code (whose code
      it does not change);
    * ``noinline``: tilec inlines every call (its only call model), with the
      same results as a call;
    * ``version``, ``repr``, ``launch_metadata``: kept as attributes; tilec
      has no profiler hooks that read them.

    Any other option is a TypeError, as for any Python function.
    """
    options = dict(version=version, do_not_specialize=do_not_specialize,
                   do_not_specialize_on_alignment=do_not_specialize_on_alignment, debug=debug,
                   noinline=noinline, repr=repr, launch_metadata=launch_metadata, interpret=interpret)
    return functools.partial(JITFunction, **options) if fn is None else JITFunction(fn, **options)


def common_place(args: Sequence[KernelArg], kernel: str) -> tuple[str, Optional[int]]:
    """Where all the array arguments live: the place (``"host"`` when there are
    none) and the device index when some array says it (None otherwise).
    Arrays in two places, or on two devices of one place, are an error naming them."""
    place = device = None
    for a in args:  # one plain loop: this runs on every launch
        if a.place is None:
            continue
        if place is None:
            place = a.place
        elif a.place != place:
            raise ValueError(f"kernel `{kernel}` got arrays on different devices ({_listing(args, _place_of)}); "
                             "pass them all on the host or all on one device")
        if device is None:
            device = a.device
        elif a.device is not None and a.device != device:
            raise ValueError(f"kernel `{kernel}` got arrays on different devices ({_listing(args, _device_of)}); "
                             "pass them all on one device")
    return place or HOST_PLACE, device


def _place_of(a: KernelArg) -> Optional[str]:
    return a.place


def _device_of(a: KernelArg) -> Optional[str]:
    return None if a.device is None else f"{a.place}:{a.device}"


def _listing(args: Sequence[KernelArg], where: Callable[[KernelArg], Optional[str]]) -> str:
    """``"cuda:0: `x`, `y`; cuda:1: `z`"``: the arrays' names grouped by ``where`` they are."""
    groups: dict[str, list[str]] = {}
    for a in args:
        w = where(a)
        if w is not None:
            groups.setdefault(w, []).append(f"`{a.name}`")
    return "; ".join(f"{w}: {', '.join(names)}" for w, names in groups.items())
