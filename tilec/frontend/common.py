"""What the front end's files share: a function's parsed source, and how
front-end values are told apart (tensors, constexpr wrappers, compile-time
globals, ``tl.constexpr`` annotations)."""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
from dataclasses import dataclass
from typing import Any, Optional

import tilec.language as tl
from tilec import ir
from tilec.frontend import semantic
from tilec.errors import NEEDS_DEF, CompilationError, require_function

# --------------------------------------------------------------------------- #
# Source
# --------------------------------------------------------------------------- #

@dataclass(frozen=True)
class FunctionSource:
    """A function's AST and where its text lives, so locations name the user's real line."""

    tree: ast.FunctionDef
    file: str
    line_offset: int  # add to an AST line number to get the file's line
    col_offset: int  # the indentation ``dedent`` removed

    def loc(self, node: ast.AST) -> ir.Loc:
        return ir.Loc(self.file, node.lineno + self.line_offset, node.col_offset + self.col_offset)


@functools.lru_cache(maxsize=None)
def parse_function(pyfn) -> FunctionSource:
    """Parse ``pyfn``'s source (dedented), remembering its file and offsets."""
    require_function(pyfn)
    file = inspect.getsourcefile(pyfn) or pyfn.__code__.co_filename
    refusal = not_compilable(pyfn)
    if refusal:
        raise CompilationError(file, pyfn.__code__.co_firstlineno, 0, f"{refusal}; {NEEDS_DEF}")
    try:
        lines, first = inspect.getsourcelines(pyfn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError) as e:
        raise CompilationError(file, pyfn.__code__.co_firstlineno, 0,
                               f"cannot read the source of `{pyfn.__name__}` ({e}); {NEEDS_DEF}") from None
    indent = len(lines[0]) - len(lines[0].lstrip())
    fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return FunctionSource(fdef, file, first - 1, indent)


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
    if isinstance(ann, str):
        return ann.strip().strip("'\"").strip().rsplit(".", 1)[-1] == "constexpr"
    return ann is tl.constexpr


def closure_vars(pyfn) -> dict[str, Any]:
    cells = pyfn.__closure__ or ()
    out = {}
    for name, cell in zip(pyfn.__code__.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # a cell not yet assigned
            pass
    return out

