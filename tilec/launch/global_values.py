"""The module globals a kernel reads are compiled in (``x * SCALE`` folds
``SCALE``), so a kernel must not run on after one changes: its variants would
keep the old value in this process while a new process used the new one.

When a kernel first compiles, ``read_globals`` records the value of every
global its source reads -- and the sources of the ``@jit`` functions and
plain functions it calls, as far as they go -- found as the disk cache's
``source_fingerprint`` finds them (``cache.outside_references``: the same
names, the same ``module.attr`` chains, the same locals shadowing).  Each
launch then calls ``check_globals``: a compare per recorded global, usually
none (``tl.*`` and tilec's own functions are never recorded), and an error
naming the global, its old and new value and what to do instead, as Triton
does.

Closure variables are not recorded: nothing outside the function can rebind
them.  Values a kernel cannot read (arrays, objects) are not either: the
front end refuses them.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

from tilec.frontend.common import is_compile_time
from tilec.errors import TilecError
from tilec.launch.cache import Uncacheable, outside_references

_MISSING = object()  # a global deleted since


class GlobalChangedError(TilecError, RuntimeError):
    """A global compiled into a kernel changed: a ``TilecError``, and the
    ``RuntimeError`` Triton raises for the same, so code written for either catches it."""


@dataclass(frozen=True)
class GlobalRead:
    """``name`` (then ``attrs``, through modules) looked up in ``scope`` (the
    namespace of ``reader``, a function of the kernel's) gave ``value`` when
    the kernel compiled."""

    reader: str
    scope: dict = field(repr=False)
    name: str
    attrs: tuple[str, ...]
    value: Any

    def current(self) -> Any:
        """What the same lookup gives now (``_MISSING`` when it fails)."""
        value = self.scope.get(self.name, _MISSING)
        for attr in self.attrs:
            value = getattr(value, attr, _MISSING)
        return value

    @property
    def dotted(self) -> str:
        return ".".join((self.name, *self.attrs))


def read_globals(pyfn: types.FunctionType) -> tuple[GlobalRead, ...]:
    """The globals ``pyfn`` and the functions it calls read, with their values now."""
    reads: dict[tuple, GlobalRead] = {}
    _collect(pyfn, reads, set())
    return tuple(reads.values())


def check_globals(reads: tuple[GlobalRead, ...], kernel: str) -> None:
    """A ``GlobalChangedError`` when a global recorded by ``read_globals`` has changed."""
    for read in reads:
        now = read.current()
        if now is not read.value and not _same(now, read.value):
            raise GlobalChangedError(_changed_message(kernel, read, now))


def _collect(pyfn: types.FunctionType, reads: dict, seen: set) -> None:
    if pyfn in seen:
        return
    seen.add(pyfn)
    try:
        refs = outside_references(pyfn)
    except Uncacheable:  # no source: the front end says so when it compiles
        return
    for ref in refs:
        if not ref.in_closure and _kernel_may_read(pyfn.__globals__[ref.name], ref.value):
            read = GlobalRead(pyfn.__name__, pyfn.__globals__, ref.name, ref.attrs[:ref.followed], ref.value)
            reads.setdefault((id(read.scope), read.dotted), read)
        _follow(ref.value, reads, seen)


def _kernel_may_read(base: Any, value: Any) -> bool:
    """Whether a global (``base``, then ``value`` at the end of its chain) is
    worth watching: not tilec's own (``tl.float32``, ``tl.load``), and
    something a kernel can read (not a module, an array, an object)."""
    if isinstance(base, types.ModuleType) and _is_tilec(base.__name__):
        return False
    return not (_is_tilec_code(value) or isinstance(value, types.ModuleType)) and is_compile_time(value)


def _follow(value: Any, reads: dict, seen: set) -> None:
    """Into the source of a ``@jit`` or plain function the kernel calls."""
    target = value.fn if getattr(value, "is_tilec_jit", False) else value
    if isinstance(target, types.FunctionType) and not _is_tilec_code(target):
        _collect(target, reads, seen)


def _is_tilec_code(value: Any) -> bool:
    """A function or class of tilec's (covered by its source hash, never rebound by users)."""
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type)) and _is_tilec(value.__module__)


def _is_tilec(module_name: Any) -> bool:
    return isinstance(module_name, str) and module_name.split(".")[0] == "tilec"


def _same(a: Any, b: Any) -> bool:
    """Equal and of one type (``1``, ``1.0`` and ``True`` compile differently)."""
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # a comparison that fails is a change
        return False


def _changed_message(kernel: str, read: GlobalRead, now: Any) -> str:
    new = "deleted" if now is _MISSING else f"now {now!r}"
    if repr(now) == repr(read.value):
        new += ", another object (redefined)"
    where = "" if read.reader == kernel else f" (in `{read.reader}`)"
    return (f"kernel `{kernel}` read the global `{read.dotted}`{where} when it compiled, as {read.value!r}, and it is "
            f"{new}. Globals are compiled into a kernel (a new process would compile the new value, this one "
            f"would keep running the old): pass `{read.dotted}` as an argument or a tl.constexpr parameter, "
            "or make a new kernel after changing it (tilec.jit(kernel.fn), or kernel.cache.clear())")
