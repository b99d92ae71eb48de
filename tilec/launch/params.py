"""A kernel's parameters as Triton's ``JITFunction.params`` shows them, which
of them ``@jit(do_not_specialize=..., do_not_specialize_on_alignment=...)``
keeps from specializing, and how a launch's bound arguments are classified
parameter by parameter (``classify_params``).

Specialization (``args.classify_arg``) makes an int equal to 1 a constexpr and
marks ints and pointers divisible by 16; a parameter in ``do_not_specialize``
gets neither (one variant serves every value: a loop bound that changes each
launch need not compile again), one in ``do_not_specialize_on_alignment`` only
loses the divisibility.  Both take names or positions, as Triton's.

A parameter annotated ``tl.const`` gets its pointers as const pointers
(``ir.PointerType(..., const=True)``): part of the variant's key, and the
front end refuses a store through them.  A tuple argument is flattened into
leaf arguments (``tuple_args.py``).
"""
from __future__ import annotations

import dataclasses
import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Union

from tilec.frontend.common import is_const_annotation
from tilec.ir.types import PointerType
from tilec.launch.args import UNALIGNED_SPECS, UNSPECIALIZED_SPECS, KernelArg, classify_arg, without_specialization
from tilec.launch.tuple_args import check_distinct_names, classify_tuple


@dataclass(frozen=True)
class KernelParam:
    """One parameter: its position ``num``, ``name``, ``annotation`` and
    ``default`` (``inspect.Parameter.empty`` when it has none), whether it is
    a ``tl.constexpr``, what specialization it is kept from (a
    ``do_not_specialize`` one is kept from alignment's too) and whether it
    is ``tl.const`` (its pointers read-only)."""

    num: int
    name: str
    annotation: Any
    default: Any
    is_constexpr: bool
    do_not_specialize: bool = False
    do_not_specialize_on_alignment: bool = False
    is_const: bool = False

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
                        p.name in plain or p.name in unaligned, is_const_annotation(p.annotation))
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


def classify_params(bound: dict[str, Any], params: list[KernelParam], kernel: str) -> list[KernelArg]:
    """The arguments ``bound`` by name (in parameter order), classified
    (``args.classify_arg``): a tuple flattened into its layout and leaves, a
    ``tl.const`` parameter's pointers made const, and without the
    specialization a parameter is kept from."""
    classified, flattened = [], False
    for p, value in zip(params, bound.values()):
        if isinstance(value, tuple) and not p.is_constexpr:
            args, flattened = classify_tuple(p.name, value, kernel), True
        else:
            args = [classify_arg(p.name, value, p.is_constexpr, kernel)]
        if p.is_const:
            args = [_const_pointer(a) for a in args]
        if p.do_not_specialize_on_alignment and not p.is_constexpr:
            args = [without_specialization(a, keep_one=not p.do_not_specialize) for a in args]
        classified += args
    if flattened:
        check_distinct_names(classified, kernel)
    return classified


def _const_pointer(a: KernelArg) -> KernelArg:
    """``a`` with its pointer type made const (anything else unchanged)."""
    if not isinstance(a.type, PointerType):
        return a
    return KernelArg(a.name, dataclasses.replace(a.type, const=True), a.value, a.attrs, a.place, a.device)


def spec_tables(params: list[KernelParam]) -> dict[str, dict]:
    """The fast path's spec table of each parameter kept from specializing
    (``binder.make_specializer``): it gives the keys ``unspecialize`` leaves."""
    return {p.name: UNSPECIALIZED_SPECS if p.do_not_specialize else UNALIGNED_SPECS
            for p in params if p.do_not_specialize_on_alignment and not p.is_constexpr}
