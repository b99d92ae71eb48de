"""What the front end's files share: a function's source, checked for the
walk (``walkable_source``), and how front-end values are told apart (tensors, constexpr wrappers, compile-time
globals, ``tl.constexpr`` annotations)."""
from __future__ import annotations

import inspect
import types
from typing import Any, Optional

import tilec.language as tl
from tilec.errors import NEEDS_DEF, CompilationError, require_function
from tilec.frontend import semantic
from tilec.frontend.source import FunctionSource, read_source, source_file

# --------------------------------------------------------------------------- #
# Source
# --------------------------------------------------------------------------- #

def walkable_source(pyfn) -> FunctionSource:
    """``pyfn``'s source for the front end to walk (``source.read_source``); a
    ``CompilationError`` at its first line when there is none to walk: not a
    ``def`` function (``not_compilable``), no source text, or text that does
    not parse on its own."""
    require_function(pyfn)
    refusal = not_compilable(pyfn)
    if refusal:
        raise CompilationError(source_file(pyfn), pyfn.__code__.co_firstlineno, 0, f"{refusal}; {NEEDS_DEF}")
    try:
        source = read_source(pyfn)
        source.function_def  # parsed here, so that a SyntaxError is reported as one
    except (OSError, TypeError, SyntaxError) as e:
        raise CompilationError(source_file(pyfn), pyfn.__code__.co_firstlineno, 0,
                               f"cannot read the source of `{pyfn.__name__}` ({e}); {NEEDS_DEF}") from None
    return source


def bind_arguments(ctx, signature: inspect.Signature, name: str, args: list, kwargs: dict) -> dict[str, Any]:
    """``args`` and ``kwargs`` bound to ``signature`` by name, defaults applied
    (a ``tl`` function's or an inlined function's); a bad call is the user's
    error at their line (``ctx.error``), quoting the signature."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        ctx.error(f"bad call of `{name}`: {e}; the signature is {name}{signature}")
    bound.apply_defaults()
    return bound.arguments


def not_compilable(pyfn) -> Optional[str]:
    """Why a Python function cannot be walked as a kernel body, or None."""
    if pyfn.__name__ == "<lambda>":  # its source is an expression inside some other line
        return "a lambda cannot be a kernel or be called from one"
    if inspect.iscoroutinefunction(pyfn):
        return "an `async def` cannot be a kernel or be called from one"
    return None


# --------------------------------------------------------------------------- #
# Values
# --------------------------------------------------------------------------- #

def is_tensor(v: Any) -> bool:
    return isinstance(v, semantic.Tensor)


def unwrap(v: Any) -> Any:
    """``tl.constexpr(x)`` -> ``x``; anything else unchanged."""
    while isinstance(v, tl.constexpr):
        v = v.value
    return v


_CONSTANT_TYPES = (bool, int, float, str, type(None), tl.dtype, types.ModuleType)


def is_compile_time(v: Any) -> bool:
    """Whether a global/closure value may be read by a kernel (it cannot change under it)."""
    if isinstance(v, tuple):
        return all(is_compile_time(x) for x in v)
    return isinstance(v, _CONSTANT_TYPES + (tl.constexpr,)) or callable(v)


def is_constexpr_annotation(ann: Any) -> bool:
    """``x: tl.constexpr``, or its name as a string: ``"tl.constexpr"``,
    ``"constexpr"``, ``"triton.language.constexpr"``...  Under ``from __future__
    import annotations`` every annotation is its source text, so a quoted one
    arrives quoted twice (``"'tl.constexpr'"``).  The one test for the front end
    and the launcher: they must agree on which parameters are constexprs."""
    return _is_annotation(ann, tl.constexpr, "constexpr")


def is_const_annotation(ann: Any) -> bool:
    """``x: tl.const`` (a read-only pointer parameter), or its name as a string,
    as ``is_constexpr_annotation`` reads one."""
    return _is_annotation(ann, tl.const, "const")


def _is_annotation(ann: Any, marker: type, name: str) -> bool:
    """``ann`` is ``marker`` itself or a string naming it (``"tl.<name>"``, quoted or not)."""
    if isinstance(ann, str):
        return ann.strip().strip("'\"").strip().rsplit(".", 1)[-1] == name
    return ann is marker
