"""Generic passes over tile IR, one a file, each a function ``Function -> Function``
that builds a new function through a value map (the input is never mutated).

``optimize(fn)`` runs the default pipeline until the IR stops changing.
"""
from __future__ import annotations

from typing import Optional

from tilec.ir.core import Function
from tilec.ir.printer import print_function
from tilec.opt.canonicalize import canonicalize
from tilec.opt.cse import eliminate_common_subexpressions
from tilec.opt.dce import eliminate_dead_code
from tilec.opt.fold_constants import fold_constants
from tilec.opt.licm import hoist_loop_invariants
from tilec.environment import check_enabled
from tilec.opt.pass_manager import PassManager, check_function

__all__ = [
    "PassManager", "DEFAULT_PIPELINE", "optimize", "canonicalize", "fold_constants",
    "eliminate_common_subexpressions", "hoist_loop_invariants", "eliminate_dead_code",
]

DEFAULT_PIPELINE = (canonicalize, fold_constants, eliminate_common_subexpressions,
                    hoist_loop_invariants, eliminate_dead_code)

# Each round can expose work for the next (a fold feeds an identity, a hoist
# feeds CSE in the outer block); a few rounds reach the fixed point in practice.
MAX_ROUNDS = 4


def optimize(fn: Function, verify: Optional[bool] = None, dump: Optional[bool] = None) -> Function:
    """``fn`` after ``DEFAULT_PIPELINE``, repeated until its text stops changing.

    ``verify`` checks the IR after every pass, so a broken pass is named at
    once; left out, it does under ``TILEC_CHECK=1`` (the test suite), with the
    final text round trip too.  Otherwise the result is verified once, at the
    end: checking after each pass was 60% of ``optimize``'s time in a cold
    compile of a matmul.
    """
    every_pass = check_enabled() if verify is None else verify
    manager = PassManager(DEFAULT_PIPELINE, verify=every_pass, dump=dump)
    text = print_function(fn)
    for _ in range(MAX_ROUNDS):
        fn = manager.run(fn)
        text, before = print_function(fn), text
        if text == before:
            break
    if verify is not False:
        check_function(fn, "optimize", roundtrip=every_pass and check_enabled())
    return fn
