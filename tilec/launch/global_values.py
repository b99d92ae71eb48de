"""The module globals a kernel reads are compiled in (``x * SCALE`` folds
``SCALE``), so a kernel must not run on after one changes: its variants would
keep the old value in this process while a new process used the new one.

When a kernel first compiles, ``read_globals`` records the value of every
global its source reads -- and the sources of the ``@jit`` functions and
plain functions it calls, as far as they go -- found the way the disk cache's
``source_fingerprint`` finds them (``cache.py``: the same names, the same
``module.attr`` chains, the same locals shadowing).  Each launch then calls
``check_globals``: a compare per recorded global, usually none (``tl.*`` and
tilec's own functions are tilec's and never recorded), and an error naming
the global, its old and new value and what to do instead, as Triton does.

Closure variables are not recorded: nothing outside the function can rebind
them.  Values a kernel cannot read (arrays, objects) are not either: the
front end refuses them.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

from ..ast_common import is_compile_time
from ..errors import TilecError
from .cache import Uncacheable, _closure_values, _global_references, _local_names, _parsed_source

_MISSING = object()  # a global deleted since


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
    """A TilecError when a global recorded by ``read_globals`` has changed."""
    for read in reads:
        now = read.current()
        if now is not read.value and not _same(now, read.value):
            raise TilecError(_changed_message(kernel, read, now))


def _collect(pyfn: types.FunctionType, reads: dict, seen: set) -> None:
    if pyfn in seen:
        return
    seen.add(pyfn)
    try:
        tree = _parsed_source(pyfn)[3]
    except Uncacheable:  # no source: the front end says so when it compiles
        return
    closure, local = _closure_values(pyfn), _local_names(tree)
    for name, attrs in _global_references(tree):
        if name in local:
            continue
        if name in closure:
            _follow(closure[name], reads, seen)
        elif name in pyfn.__globals__:
            _record(pyfn, name, attrs, reads, seen)


def _record(pyfn: types.FunctionType, name: str, attrs: tuple[str, ...], reads: dict, seen: set) -> None:
    """Record ``pyfn``'s global ``name.attrs`` as far as modules go, unless it
    is tilec's own (``tl.float32``, ``tl.load``) or not something a kernel can read."""
    scope = pyfn.__globals__
    value, owner, followed = scope[name], None, []
    for attr in attrs:
        if not isinstance(value, types.ModuleType) or not hasattr(value, attr):
            break
        owner, value = value, getattr(value, attr)
        followed.append(attr)
    if (owner is not None and _is_tilec(owner.__name__)) or _is_tilec_code(value) \
            or isinstance(value, types.ModuleType) or not is_compile_time(value):
        return
    reads.setdefault((id(scope), name, *followed), GlobalRead(pyfn.__name__, scope, name,
                                                                      tuple(followed), value))
    _follow(value, reads, seen)


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
    where = "" if read.reader == kernel else f" (in `{read.reader}`)"
    return (f"kernel `{kernel}` read the global `{read.dotted}`{where} when it compiled, as {read.value!r}, and it is "
            f"{new}. Globals are compiled into a kernel (a new process would compile the new value, this one "
            f"would keep running the old): pass `{read.dotted}` as an argument or a tl.constexpr parameter, "
            "or make a new kernel after changing it (tilec.jit(kernel.fn))")
