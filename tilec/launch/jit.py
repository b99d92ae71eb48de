"""``tilec.jit``: the object users hold for a kernel, and how a launch flows.

``kernel[grid](*args, num_warps=4, num_stages=3, stream=None, **kwargs)``:

1. bind the arguments to the Python signature (defaults applied);
2. classify each one (``args.classify_arg``): constexprs, specialized scalars,
   pointers and where their memory lives;
3. pick the launcher for that place (all host -> ``host.py``, the interpreter;
   all on one CUDA device -> ``cuda.py``; a mix is an error naming the arrays);
4. ask the launcher for the target (``"host"``, or the device's arch) and look
   the variant up in ``kernel.cache`` -- keyed by every argument's type,
   attributes and constexpr value, the options and the target -- compiling on
   a miss;
5. normalize the grid (a callable gets every bound argument by name) and launch.

A launcher is a module with ``target(args, device)``, ``default_target(args,
device)`` (what ``compile`` picks) and ``launch(compiled, grid, args, device,
stream)``, registered in ``LAUNCHERS`` by place.
"""
from __future__ import annotations

import functools
import inspect
from types import ModuleType
from typing import Any, Callable, Optional, Sequence

from . import cuda, host
from ..errors import TilecError
from .args import KernelArg, classify_arg
from .compiler import CompiledKernel, Options, check_target, compile_variant
from .grid import Grid, normalize_grid

LAUNCHERS: dict[str, ModuleType] = {"host": host, "cuda": cuda}


class JITFunction:
    """A kernel: launch it with ``kernel[grid](...)``, or inline it by calling it
    from another kernel.  ``cache`` maps specialization keys to ``CompiledKernel``s."""

    is_tilec_jit = True

    def __init__(self, fn: Callable):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.signature = inspect.signature(fn)
        self._fast_bind = make_binder(self.signature)
        self.constexprs = frozenset(n for n, p in self.signature.parameters.items()
                                    if is_constexpr_annotation(p.annotation))
        self.cache: dict[tuple, CompiledKernel] = {}

    def __getitem__(self, grid: Grid) -> Callable[..., None]:
        return functools.partial(self.run, grid=grid)

    def run(self, *args: Any, grid: Grid, num_warps: int = 4, num_stages: int = 3, stream: Any = None,
            **kwargs: Any) -> None:
        """Launch over ``grid`` (an int, 1-3 ints, or ``lambda META: ...``) on
        ``stream`` (GPU launches only; default: torch's current stream)."""
        bound = self._bind(args, kwargs)
        classified = self._classify(bound)
        place, device = common_place(classified, self.__name__)
        launcher = self._launcher(place)
        compiled = self._variant(classified, Options(num_warps, num_stages), launcher.target(classified, device))
        launcher.launch(compiled, normalize_grid(grid, bound, self.__name__), classified, device, stream)

    def compile(self, *args: Any, target: Optional[str] = None, num_warps: int = 4, num_stages: int = 3,
                **kwargs: Any) -> CompiledKernel:
        """The variant these arguments select for ``target``, compiled (from the cache when it is there).

        ``target`` is ``"host"`` or an NVIDIA arch (``"sm_80"`` ... ``"sm_90a"``);
        compiling for an arch needs no GPU.  Left out, it is where a launch with
        these arguments would run: ``"host"`` for host arrays; for CUDA arrays
        their device's arch, or ``"sm_90"`` on a machine with no usable GPU.
        """
        classified = self._classify(self._bind(args, kwargs))
        if target is None:
            place, device = common_place(classified, self.__name__)
            target = self._launcher(place).default_target(classified, device)
        return self._variant(classified, Options(num_warps, num_stages), check_target(target))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TilecError(f"kernel `{self.__name__}` is launched with a grid, `{self.__name__}[grid](...)`; "
                         "calling it directly only works inside another kernel")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    # --- the steps of a launch ----------------------------------------------
    def _bind(self, args: Sequence, kwargs: dict) -> dict[str, Any]:
        if self._fast_bind is not None:
            try:
                return self._fast_bind(*args, **kwargs)
            except TypeError:
                pass  # a binding error: inspect words it better
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"kernel `{self.__name__}`{self.signature}: {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _classify(self, bound: dict[str, Any]) -> list[KernelArg]:
        return [classify_arg(n, v, n in self.constexprs, self.__name__) for n, v in bound.items()]

    def _launcher(self, place: str) -> ModuleType:
        if place not in LAUNCHERS:
            raise TilecError(f"kernel `{self.__name__}`: running on {place} devices is not supported yet; "
                             "pass numpy arrays to run on the host")
        return LAUNCHERS[place]

    def _variant(self, args: Sequence[KernelArg], options: Options, target: str) -> CompiledKernel:
        key = (tuple(a.key for a in args), options, target)
        compiled = self.cache.get(key)
        if compiled is None:
            compiled = self.cache[key] = compile_variant(self.fn, args, options, target)
        return compiled


def jit(fn: Optional[Callable] = None, **options: Any):
    """Decorator making ``fn`` a tilec kernel (``@tilec.jit`` or ``@tilec.jit()``).

    Triton's decorator options (``do_not_specialize``, ``debug``...) are not
    supported yet; passing one is an error rather than silently ignored.
    """
    if options:
        raise TypeError(f"tilec.jit takes no options yet, got {', '.join(options)}")
    return JITFunction if fn is None else JITFunction(fn)


def is_constexpr_annotation(annotation: Any) -> bool:
    """``tl.constexpr``, or its name as a string (``from __future__ import annotations``)."""
    if isinstance(annotation, str):
        return annotation.rsplit(".", 1)[-1] == "constexpr"
    from .. import language

    return annotation is language.constexpr


def make_binder(signature: inspect.Signature) -> Optional[Callable[..., dict[str, Any]]]:
    """A function taking the kernel's parameters and returning them by name,
    defaults applied: ``signature.bind`` + ``apply_defaults`` at a twentieth of
    the cost (it runs on every launch).  None for a signature with
    positional-only or variadic parameters, which ``inspect`` binds instead."""
    params = list(signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params):
        return None
    listed = []
    for p in params:
        if p.kind is p.KEYWORD_ONLY and "*" not in listed:
            listed.append("*")
        listed.append(p.name if p.default is p.empty else f"{p.name}=_defaults[{p.name!r}]")
    namespace = {"_defaults": {p.name: p.default for p in params}}
    returned = ", ".join(f"{p.name!r}: {p.name}" for p in params)
    exec(f"def bind({', '.join(listed)}):\n    return {{{returned}}}\n", namespace)
    return namespace["bind"]


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
    return place or "host", device


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
