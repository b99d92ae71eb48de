"""A kernel's parameters as Triton's ``JITFunction.params`` shows them, and
which of them ``@jit(do_not_specialize=..., do_not_specialize_on_alignment=...)``
keeps from specializing.

Specialization (``args.classify_arg``) makes an int equal to 1 a constexpr and
marks ints and pointers divisible by 16; a parameter in ``do_not_specialize``
gets neither (one variant serves every value: a loop bound that changes each
launch need not compile again), one in ``do_not_specialize_on_alignment`` only
loses the divisibility.  Both take names or positions, as Triton's.
"""
from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Union

from tilec.launch.args import UNALIGNED_SPECS, UNSPECIALIZED_SPECS, KernelArg, without_specialization


@dataclass(frozen=True)
class KernelParam:
    """One parameter: its position ``num``, ``name``, ``annotation`` and
    ``default`` (``inspect.Parameter.empty`` when it has none), whether it is
    a ``tl.constexpr`` and what specialization it is kept from (a
    ``do_not_specialize`` one is kept from alignment's too)."""

    num: int
    name: str
    annotation: Any
    default: Any
    is_constexpr: bool
    do_not_specialize: bool = False
    do_not_specialize_on_alignment: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty


def kernel_params(signature: inspect.Signature, constexprs: frozenset[str], kernel: str,
                  do_not_specialize: Optional[Iterable[Union[str, int]]] = None,
                  do_not_specialize_on_alignment: Optional[Iterable[Union[str, int]]] = None) -> list[KernelParam]:
    """The parameters of ``signature``, marked as the decorator options say."""
    names = list(signature.parameters)
    plain = _named(do_not_specialize, names, "do_not_specialize", kernel)
    unaligned = _named(do_not_specialize_on_alignment, names, "do_not_specialize_on_alignment", kernel)
    return [KernelParam(i, p.name, p.annotation, p.default, p.name in constexprs, p.name in plain,
                        p.name in plain or p.name in unaligned)
            for i, p in enumerate(signature.parameters.values())]


def _named(given: Optional[Iterable[Union[str, int]]], names: list[str], what: str, kernel: str) -> set[str]:
    """The parameter names ``given`` names or positions pick out; anything
    else is left out with a warning (it specializes nothing)."""
    if given is None:
        return set()
    given = [given] if isinstance(given, (str, int)) else list(given)
    picked = {names[g] if isinstance(g, int) and -len(names) <= g < len(names) else g for g in given}
    unknown = sorted(str(p) for p in picked if p not in names)
    if unknown:
        warnings.warn(f"tilec.jit({what}=...): {', '.join(unknown)} are not parameters of `{kernel}` "
                      f"({', '.join(names)}); left out", stacklevel=4)
    return {p for p in picked if p in names}


def unspecialize(args: list[KernelArg], params: list[KernelParam]) -> list[KernelArg]:
    """``args`` (classified, in parameter order) without the specialization
    their parameters are kept from."""
    return [without_specialization(a, keep_one=not p.do_not_specialize)
            if p.do_not_specialize_on_alignment and not p.is_constexpr else a
            for a, p in zip(args, params)]


def spec_tables(params: list[KernelParam]) -> dict[str, dict]:
    """The fast path's spec table of each parameter kept from specializing
    (``binder.make_specializer``): it gives the keys ``unspecialize`` leaves."""
    return {p.name: UNSPECIALIZED_SPECS if p.do_not_specialize else UNALIGNED_SPECS
            for p in params if p.do_not_specialize_on_alignment and not p.is_constexpr}
