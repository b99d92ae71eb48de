"""A Python function's source: the text its file holds, where, and its syntax tree.

The one reader of a kernel's text.  The front end walks ``function_def`` and
puts ``loc(node)`` on every op (``common.walkable_source`` adds its checks);
the disk cache keys on ``text`` and on the names the tree reads, and the
launcher watches those globals (``launch/cache.py``, ``launch/global_values.py``);
``JITFunction.src`` is ``definition``.  ``read_source`` reads a function once
per function object, and ``closure_values`` gives what its closure variables
hold, for the same three readers.
"""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap
import types
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from tilec import ir


@dataclass(frozen=True, eq=False)
class FunctionSource:
    """A function's source lines as its file holds them (``text``, indentation
    kept; decorators included), the ``file`` and the file's line of the first
    one, so that locations name the user's real line."""

    file: str
    first_line: int
    text: str

    @functools.cached_property
    def tree(self) -> ast.Module:
        """The text, dedented, parsed; a SyntaxError when it does not parse on
        its own (a lambda's line holds more than the lambda)."""
        return ast.parse(textwrap.dedent(self.text))

    @functools.cached_property
    def function_def(self) -> ast.FunctionDef:
        """The ``def`` in ``tree`` (a SyntaxError as ``tree``)."""
        return next(n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))

    @functools.cached_property
    def indent(self) -> int:
        """The columns ``dedent`` removed: the first line's indentation."""
        first = self.text.split("\n", 1)[0]
        return len(first) - len(first.lstrip())

    @property
    def definition(self) -> str:
        """The dedented text from the ``def`` line on (decorators left out)."""
        return "".join(textwrap.dedent(self.text).splitlines(keepends=True)[self.function_def.lineno - 1:])

    def loc(self, node: ast.AST) -> ir.Loc:
        """Where ``node`` of ``tree`` stands in the file."""
        return ir.Loc(self.file, node.lineno + self.first_line - 1, node.col_offset + self.indent)


@functools.lru_cache(maxsize=None)
def read_source(pyfn: types.FunctionType) -> FunctionSource:
    """``pyfn``'s source, read once per function object; ``inspect``'s OSError
    or TypeError when there is none (a function typed at the prompt, a builtin)."""
    lines, first = inspect.getsourcelines(pyfn)
    return FunctionSource(source_file(pyfn), first, "".join(lines))


def source_file(pyfn: types.FunctionType) -> str:
    """The file ``pyfn`` was defined in (its code object's name for it when ``inspect`` finds none)."""
    return inspect.getsourcefile(pyfn) or pyfn.__code__.co_filename


def closure_values(pyfn: types.FunctionType) -> dict[str, Any]:
    """What ``pyfn``'s closure variables hold now, by name (a cell not yet assigned is left out)."""
    values = {}
    for name, cell in zip(pyfn.__code__.co_freevars, pyfn.__closure__ or ()):
        with suppress(ValueError):
            values[name] = cell.cell_contents
    return values
