"""Errors users see.  Each names the kernel's file and line and quotes it with a caret."""
from __future__ import annotations

import linecache
import types
from typing import Optional


def quote_source(file: str, line: int, col: int = 0) -> str:
    """The source line at ``file:line`` with a caret under column ``col`` ('' if unknown)."""
    text = linecache.getline(file, line).rstrip("\n") if line > 0 else ""
    if not text.strip():
        return ""
    indent = len(text) - len(text.lstrip())
    caret = " " * (max(col, indent) - indent)
    return f"    {text.strip()}\n    {caret}^"


class TilecError(Exception):
    """Base of every error tilec raises on purpose."""


class LocatedError(TilecError):
    """An error about a line of a kernel: ``file:line: message`` then the quoted line."""

    def __init__(self, file: str, line: int, col: int, message: str, kernel: Optional[str] = None):
        self.file, self.line, self.col, self.message, self.kernel = file, line, col, message, kernel
        in_kernel = f" (in kernel `{kernel}`)" if kernel else ""
        quote = quote_source(file, line, col)
        super().__init__(f"{file}:{line}: {message}{in_kernel}" + (f"\n{quote}" if quote else ""))

    def __reduce__(self):
        """Rebuilt from its fields (``args`` holds the formatted text only): it
        crosses processes (a pool's compile) and ``copy`` whole."""
        return type(self), (self.file, self.line, self.col, self.message, self.kernel)


class CompilationError(LocatedError):
    """A kernel that cannot be compiled: what is wrong, where, and what to write instead.

    Where no other exception caused it (a check of the kernel failed), the error
    is its own ``__cause__``: code written for Triton reads the reason from
    ``err.__cause__`` (Triton chains its compile error to the front end's
    ``ValueError``), and a traceback printer, which skips an exception it has
    printed, still shows the message once.  ``raise ... from e`` replaces it
    with the genuine cause ``e``.  ``error_message`` is the message without the
    location, under Triton's name."""

    def __init__(self, file: str, line: int, col: int, message: str, kernel: Optional[str] = None):
        super().__init__(file, line, col, message, kernel)
        self.__cause__ = self  # also sets __suppress_context__: no "During handling of..." either

    @property
    def error_message(self) -> str:
        return self.message

    @property
    def error_message(self) -> str:
        """What is wrong, without the place and the quoted line (Triton's attribute)."""
        return self.message


NEEDS_DEF = "a kernel or a function it calls must be a `def` function in a source file"


def require_function(fn) -> None:
    """Refuse to make a kernel of a callable that is not a Python function (a
    ufunc, a class): it has no source to compile.  It lives here, not in the
    front end, so that ``tilec.jit`` checks at decoration without loading the
    compiler.  A lambda is refused when it is compiled (``frontend.common.walkable_source``)."""
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"{NEEDS_DEF}, got {type(fn).__name__} {fn!r}")


class InterpreterError(LocatedError):
    """A kernel that compiled but did something invalid while running on the host
    (out-of-bounds access, misaligned pointer, failed ``device_assert``)."""


class LaunchOptionError(TilecError, ValueError, AssertionError):
    """A launch or ``@jit`` option outside its domain (``num_warps=3``): a
    ``ValueError``, as tilec's option checks always raised, and an
    ``AssertionError``, what Triton's check (an ``assert``) raises, so code
    written for either catches it."""


class ArgumentOverflowError(TilecError, OverflowError, ValueError):
    """An integer kernel argument that no 64-bit type holds (``2**64``): an
    ``OverflowError``, as Triton's, and a ``ValueError``, as tilec's other
    argument errors."""


class OutOfResources(TilecError):
    """A compiled kernel needs more of a per-block resource (shared memory,
    registers) than the GPU has: ``resource``, ``needed`` and ``limit`` say
    which and by how much (Triton's name for the same error)."""

    def __init__(self, kernel: str, resource: str, needed: int, limit: int, detail: str, hint: str):
        self.kernel, self.resource, self.needed, self.limit = kernel, resource, needed, limit
        super().__init__(f"kernel `{kernel}` needs {detail}, over the limit of {limit}; {hint}")
