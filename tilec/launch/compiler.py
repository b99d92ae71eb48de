"""One specialized variant of a kernel: Python function + argument specs ->
tile IR (built, checked, optimized), held by a ``CompiledKernel``.

With ``TILEC_CHECK=1`` in the environment (the test suite sets it) the IR as
built is verified and must read back from its text form unchanged; the pass
manager then checks after every pass.  A front-end or pass bug fails where it
happens, not in a launcher.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..ir.core import Function
from ..ir.printer import print_function
from .args import KernelArg


@dataclass(frozen=True)
class Options:
    """Launch options a variant is compiled for (part of the cache key)."""

    num_warps: int = 4
    num_stages: int = 3

    def __post_init__(self):
        for name, value in (("num_warps", self.num_warps), ("num_stages", self.num_stages)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.num_warps & (self.num_warps - 1):
            raise ValueError(f"num_warps must be a power of two, got {self.num_warps}")


@dataclass(eq=False)
class CompiledKernel:
    """A kernel compiled for one specialization.

    ``fn`` is the optimized IR the launchers run; ``asm`` holds its text
    forms by stage: ``"tir"`` (as built, before passes) and ``"tir-opt"``.
    """

    name: str
    fn: Function
    specs: tuple
    options: Options
    asm: dict[str, str] = field(default_factory=dict)

    def runtime_args(self, args: Sequence[KernelArg]) -> list:
        """The values of ``fn``'s arguments, picked by name from the classified ``args``."""
        by_name = {a.name: a.value for a in args}
        return [by_name[n] for n in self.fn.arg_names]


def compile_variant(pyfn: Callable, args: Sequence[KernelArg], options: Options) -> CompiledKernel:
    """Build, check and optimize the IR of ``pyfn`` specialized for ``args``."""
    from ..ast_parse import build_ir  # the front end pulls in the whole language: load it on first compile

    from ..opt import optimize

    specs = tuple(_arg_spec(a) for a in args)
    built = build_ir(pyfn, list(specs))
    _check(built)
    tir = print_function(built)
    fn = optimize(built)
    return CompiledKernel(built.name, fn, specs, options, {"tir": tir, "tir-opt": print_function(fn)})


def _arg_spec(a: KernelArg):
    from ..ast_parse import ArgSpec

    return ArgSpec(a.name, a.type, a.value if a.is_constexpr else None, a.attrs)


def _check(fn: Function) -> None:
    if os.environ.get("TILEC_CHECK", "") in ("", "0"):  # the pass manager reads it the same way
        return
    from ..ir.verify import check_roundtrip, verify_function

    verify_function(fn)
    check_roundtrip(fn)
