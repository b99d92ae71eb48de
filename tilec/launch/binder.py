"""Functions generated from a kernel's signature (as Triton does): binding a
launch's arguments costs a plain Python call instead of ``inspect``'s walk.

* ``make_binder``: the arguments by name, defaults applied (the general path);
* ``make_specializer``: every argument's dispatch key and launch value, through
  ``args.SPECS`` (the fast path, see ``jit.py``).

Either is None for a signature it cannot mirror (positional-only or variadic
parameters, names starting with ``RESERVED_PREFIX``); ``inspect`` binds those.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable, Optional

from tilec.launch.args import SPECS

# The generated code's own names; no parameter may start with it.
RESERVED_PREFIX = "_tilec_"


def make_binder(signature: inspect.Signature) -> Optional[Callable[..., dict[str, Any]]]:
    """A function taking the kernel's parameters and returning them by name,
    defaults applied: ``signature.bind`` + ``apply_defaults`` at a twentieth of
    the cost."""
    params = _parameter_list(signature)
    if params is None:
        return None
    returned = ", ".join(f"{n!r}: {n}" for n in signature.parameters)
    return _generate(signature, "bind", f"def bind({params}):\n    return {{{returned}}}\n")


def make_specializer(signature: inspect.Signature, constexprs: frozenset[str],
                     spec_tables: Optional[dict[str, dict]] = None) -> Optional[Callable[..., tuple]]:
    """A function taking the kernel's parameters and returning three tuples in
    signature order: their dispatch keys, their launch values, and the values
    as given (what a grid callable sees).  A constexpr's key is ``(None, type,
    value)`` as in ``KernelArg.key``; any other parameter goes through the spec
    of its exact type (in ``args.SPECS``, or the table ``spec_tables`` gives
    its name), which may raise ``NotFast``."""
    params = _parameter_list(signature)
    if params is None:
        return None
    r, tables = RESERVED_PREFIX, spec_tables or {}
    lines, keys, values = [f"def specialize({params}):"], [], []
    for i, name in enumerate(signature.parameters):
        if name in constexprs:
            keys.append(f"(None, {r}type({name}), {name})")
            values.append(name)
        else:
            specs = f"{r}specs_{i}" if name in tables else f"{r}specs"
            lines.append(f"    {r}k{i}, {r}v{i} = {specs}[{r}type({name})]({name})")
            keys.append(f"{r}k{i}")
            values.append(f"{r}v{i}")
    lines.append(f"    return {_tuple(keys)}, {_tuple(values)}, {_tuple(signature.parameters)}")
    named = {f"{r}specs_{i}": tables[n] for i, n in enumerate(signature.parameters) if n in tables}
    return _generate(signature, "specialize", "\n".join(lines) + "\n", named)


def _parameter_list(signature: inspect.Signature) -> Optional[str]:
    """The signature as Python source, defaults read from the generated code's
    namespace; None where it cannot be mirrored."""
    params = list(signature.parameters.values())
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) or p.name.startswith(RESERVED_PREFIX)
           for p in params):
        return None
    listed = []
    for p in params:
        if p.kind is p.KEYWORD_ONLY and "*" not in listed:
            listed.append("*")
        listed.append(p.name if p.default is p.empty else f"{p.name}={RESERVED_PREFIX}defaults[{p.name!r}]")
    return ", ".join(listed)


def _generate(signature: inspect.Signature, name: str, source: str, names: Optional[dict] = None) -> Callable:
    """The function ``name`` that ``source`` defines, with the defaults, the
    specs, ``type`` (a parameter may shadow the builtin) and ``names`` in reach."""
    r = RESERVED_PREFIX
    namespace = {f"{r}defaults": {n: p.default for n, p in signature.parameters.items()},
                 f"{r}specs": SPECS, f"{r}type": type, **(names or {})}
    exec(source, namespace)
    return namespace[name]


def _tuple(items: Iterable[str]) -> str:
    """Python source for a tuple of ``items`` (source snippets)."""
    items = list(items)
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"
