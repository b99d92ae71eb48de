"""``tilec.jit``: the object users hold for a kernel, and how a launch flows.

``kernel[grid](*args, num_warps=4, num_stages=3, **kwargs)``:

1. bind the arguments to the Python signature (defaults applied);
2. classify each one (``args.classify_arg``): constexprs, specialized scalars,
   pointers and where their memory lives;
3. pick the launcher for that place (all host -> the interpreter, all on a
   CUDA device -> ``cuda.py``; a mix is an error);
4. look the variant up in ``kernel.cache`` -- keyed by every argument's type,
   attributes and constexpr value plus the options -- compiling on a miss;
5. normalize the grid (a callable gets every bound argument by name) and launch.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional, Sequence

from . import cuda, host
from ..errors import TilecError
from .args import KernelArg, classify_arg
from .compiler import CompiledKernel, Options, compile_variant
from .grid import Grid, normalize_grid

LAUNCHERS: dict[str, Callable] = {"host": host.run, "cuda": cuda.launch}


class JITFunction:
    """A kernel: launch it with ``kernel[grid](...)``, or inline it by calling it
    from another kernel.  ``cache`` maps specialization keys to ``CompiledKernel``s."""

    is_tilec_jit = True

    def __init__(self, fn: Callable):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.signature = inspect.signature(fn)
        self.constexprs = frozenset(n for n, p in self.signature.parameters.items()
                                    if is_constexpr_annotation(p.annotation))
        self.cache: dict[tuple, CompiledKernel] = {}

    def __getitem__(self, grid: Grid) -> Callable[..., None]:
        return functools.partial(self.run, grid=grid)

    def run(self, *args: Any, grid: Grid, num_warps: int = 4, num_stages: int = 3, **kwargs: Any) -> None:
        """Launch over ``grid`` (an int, 1-3 ints, or ``lambda META: ...``)."""
        bound = self._bind(args, kwargs)
        classified = self._classify(bound)
        launch = self._launcher(classified)
        compiled = self._variant(classified, Options(num_warps, num_stages))
        launch(compiled, normalize_grid(grid, bound, self.__name__), classified)

    def compile(self, *args: Any, num_warps: int = 4, num_stages: int = 3, **kwargs: Any) -> CompiledKernel:
        """The variant these arguments select, compiled (from the cache when it is there)."""
        return self._variant(self._classify(self._bind(args, kwargs)), Options(num_warps, num_stages))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TilecError(f"kernel `{self.__name__}` is launched with a grid, `{self.__name__}[grid](...)`; "
                         "calling it directly only works inside another kernel")

    def __repr__(self) -> str:
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    # --- the steps of a launch ----------------------------------------------
    def _bind(self, args: Sequence, kwargs: dict) -> dict[str, Any]:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"kernel `{self.__name__}`{self.signature}: {e}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _classify(self, bound: dict[str, Any]) -> list[KernelArg]:
        return [classify_arg(n, v, n in self.constexprs, self.__name__) for n, v in bound.items()]

    def _launcher(self, args: Sequence[KernelArg]) -> Callable:
        place = common_place(args, self.__name__)
        if place not in LAUNCHERS:
            raise TilecError(f"kernel `{self.__name__}`: running on {place} devices is not supported yet; "
                             "pass numpy arrays to run on the host")
        return LAUNCHERS[place]

    def _variant(self, args: Sequence[KernelArg], options: Options) -> CompiledKernel:
        key = (tuple(a.key for a in args), options)
        compiled = self.cache.get(key)
        if compiled is None:
            compiled = self.cache[key] = compile_variant(self.fn, args, options)
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


def common_place(args: Sequence[KernelArg], kernel: str) -> str:
    """Where all the array arguments live (``"host"`` when there are none)."""
    places: dict[str, list[str]] = {}
    for a in args:
        if a.place is not None:
            places.setdefault(a.place, []).append(f"`{a.name}`")
    if len(places) > 1:
        where = "; ".join(f"{place}: {', '.join(names)}" for place, names in places.items())
        raise ValueError(f"kernel `{kernel}` got arrays on different devices ({where}); "
                         "pass them all on the host or all on one device")
    return next(iter(places), "host")
