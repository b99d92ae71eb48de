"""Runs passes in order, checking and showing the IR after each.

* ``verify`` (default on) runs ``tilec.ir.verify.verify_function`` after every
  pass, so a pass that breaks the IR is named at once rather than blamed on a
  later stage; ``roundtrip`` also checks that the text form reads back (ten
  times the cost of verifying, so ``optimize`` does it once, at the end, and
  only under ``TILEC_CHECK=1``).
* ``dump`` (default: ``ir`` in ``TILEC_DUMP``, e.g. ``TILEC_DUMP=ir,llir``)
  prints the IR after every pass to stderr, headed
  ``// -----// IR after <pass> //----- //``.
"""
from __future__ import annotations

import functools
import sys
from typing import Callable, Optional, Sequence

from tilec.environment import dump_names
from tilec.ir.core import Function, VerifyError
from tilec.ir.printer import print_function

Pass = Callable[[Function], Function]


def dump_requested() -> bool:
    """True when ``TILEC_DUMP`` names ``ir`` (``launch/dump.py`` rejects unknown names before a compile)."""
    return "ir" in dump_names()


def pass_name(p: Pass) -> str:
    """The name the dump and errors give pass ``p``: a function's own, also
    when its options are bound (``functools.partial(assign_layouts, num_warps=4)``)."""
    while isinstance(p, functools.partial):
        p = p.func
    return getattr(p, "__name__", type(p).__name__)


class PassManager:
    """``PassManager(passes).run(fn)`` applies ``passes`` to ``fn`` in order."""

    def __init__(self, passes: Sequence[Pass], verify: bool = True, dump: Optional[bool] = None,
                 roundtrip: bool = False):
        self.passes = list(passes)
        self.verify = verify
        self.dump = dump_requested() if dump is None else dump
        self.roundtrip = roundtrip

    def run(self, fn: Function) -> Function:
        for p in self.passes:
            fn = p(fn)
            self._after(pass_name(p), fn)
        return fn

    __call__ = run

    def _after(self, name: str, fn: Function) -> None:
        if self.dump:
            sys.stderr.write(f"// -----// IR after {name} //----- //\n{print_function(fn)}\n")
        if self.verify:
            self._check(name, fn)

    def _check(self, name: str, fn: Function) -> None:
        check_function(fn, name, self.roundtrip)


def check_function(fn: Function, after: str, roundtrip: bool = False) -> None:
    """Verify ``fn`` (and its text round trip), blaming pass ``after`` for a failure."""
    from tilec.ir import verify  # imported late: verify imports the parser, which passes do not need
    try:
        verify.verify_function(fn)
        if roundtrip:
            verify.check_roundtrip(fn)
    except VerifyError as e:
        raise VerifyError(f"IR is invalid after pass {after}: {e}") from e
