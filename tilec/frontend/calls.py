"""Calls inside a kernel: ``tl.*`` builtins and tensor methods, inlined
``@jit`` functions, and the Python builtins and ``math`` functions a kernel
may run at compile time.  ``CallsMixin`` is part of ``ast_parse.CodeGenerator``;
the IR of each ``tl.*`` function is ``tl_ops.call_builtin``'s.
"""
from __future__ import annotations

import ast
import builtins as py
import functools
import inspect
import itertools
from typing import Any, NoReturn, Optional

import tilec.language as tl
from tilec.frontend import semantic, tl_ops
from tilec.frontend.common import bind_arguments, is_compile_time, is_constexpr_annotation, is_tensor, unwrap, walkable_source
from tilec.frontend.tuples import is_named_tuple_class
from tilec.language.core import ConstexprFunction

# Python builtins a kernel may call on compile-time values, with the advice
# given when one is called on a tensor.
_PY_FUNCS = {
    py.int: "use x.to(tl.int32)", py.float: "use x.to(tl.float32)", py.bool: "use x != 0",
    py.len: "use x.shape", py.min: "", py.max: "", py.abs: "", py.isinstance: "", py.tuple: "",
    py.round: "", py.divmod: "", py.hasattr: "", py.str: "", py.repr: "",
}
PY_NAMES = {f.__name__: f for f in _PY_FUNCS} | {"range": py.range, "print": py.print, "getattr": py.getattr}
# On tensors these builtins mean a tl function (as in Triton): min(a, b, c) is
# tl.minimum(tl.minimum(a, b), c).
_TENSOR_FORMS = {py.min: tl.minimum, py.max: tl.maximum, py.abs: tl.abs}
# Compile-time callables that may hold a tensor argument (a `while` test for tl.condition).
_TAKE_TENSORS = (py.isinstance, tl.condition)
# Builtins with their own handling: the CodeGenerator method for each.
_SPECIAL_CALLS = {py.range: "call_range", py.print: "call_print", py.getattr: "call_getattr",
                  py.min: "call_min_max_abs", py.max: "call_min_max_abs", py.abs: "call_min_max_abs"}


def tl_equivalent(fn: Any) -> Optional[str]:
    """What to write instead of another library's ``fn`` (numpy, math) on a tensor: ``tl.exp``
    for an ``exp`` when ``tl`` has a function of that name, ``x.to(tl.float32)`` for a
    ``float32`` type; else None."""
    name = getattr(fn, "__name__", None)
    same = getattr(tl, name, None) if isinstance(name, str) else None
    if isinstance(same, tl.dtype):
        return f"x.to(tl.{name})"
    return f"tl.{name}" if getattr(same, "__tilec_builtin__", False) and same is not fn else None


class CallsMixin:
    """The call handling of ``CodeGenerator``."""

    def inline_jit(self, fn, args: list, kwargs: Optional[dict] = None) -> Any:
        """Inline a @jit function (or a plain Python function) at the insertion point."""
        pyfn = fn.fn if getattr(fn, "is_tilec_jit", False) else fn
        if not inspect.isfunction(pyfn):
            self.error(f"cannot inline {pyfn!r}: it is not a Python function")
        if pyfn in self.inlining:
            self.error(f"recursive call of `{pyfn.__name__}` is not supported; rewrite it as a loop")
        scope = self.bind_params(pyfn, args, kwargs or {})
        self.inlining.append(pyfn)
        try:
            return self.walk_function(pyfn, walkable_source(pyfn), scope)
        finally:
            self.inlining.pop()

    def bind_params(self, pyfn, args: list, kwargs: dict) -> dict[str, Any]:
        """The inlined function's initial scope: arguments bound with defaults applied."""
        sig = inspect.signature(pyfn)
        scope = {name: unwrap(v) for name, v in bind_arguments(self, sig, pyfn.__name__, args, kwargs).items()}
        for name, value in scope.items():
            param = sig.parameters[name]
            if param.kind is param.VAR_KEYWORD:
                self.error(f"`**{name}` parameters are not supported in @jit functions")
            if is_constexpr_annotation(param.annotation) and is_tensor(value):
                self.error(f"argument `{name}` of `{pyfn.__name__}` is tl.constexpr, but got a tensor")
        return scope

    # --- calls ---------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> Any:
        fn = self.visit(node.func)
        args, kwargs = self.call_arguments(node)
        return self.call(fn, args, kwargs)

    def call_arguments(self, node: ast.Call) -> tuple[list, dict]:
        """Evaluated positional (``*t`` expands a tuple) and keyword arguments of a call."""
        args = []
        for a in node.args:
            if not isinstance(a, ast.Starred):
                args.append(self.visit(a))
                continue
            value = self.visit(a.value)
            if not isinstance(value, tuple):
                self.error(f"only a tuple can be expanded with `*`, got {self.describe(value)}", a)
            args.extend(value)
        if any(kw.arg is None for kw in node.keywords):
            self.error("`**kwargs` in calls is not supported in a kernel; pass keywords one by one")
        return args, {kw.arg: self.visit(kw.value) for kw in node.keywords}

    def call(self, fn: Any, args: list, kwargs: dict) -> Any:
        """Call ``fn``: a tl builtin or tensor method, a @jit function, or a Python builtin/math function."""
        if is_tensor(fn):
            self.error("a tensor is not callable")
        if isinstance(fn, semantic.BoundMethod):  # x.sum(...): the stub with x first
            return unwrap(fn.call(self, args, kwargs))
        if getattr(fn, "__tilec_builtin__", False):
            return unwrap(tl_ops.call_builtin(self, fn, args, kwargs))
        if getattr(fn, "is_tilec_jit", False):
            return self.inline_jit(fn, args, kwargs)
        if isinstance(fn, ConstexprFunction):
            return self.call_constexpr_function(fn, args, kwargs)
        if is_named_tuple_class(fn):  # `Point(x=a, y=b)`: a tuple of any values, as `(a, b)` is
            return self.fold(fn, *args, **kwargs)
        if self.is_python_callable(fn):
            return unwrap(self.call_python(fn, args, kwargs))
        self.error(self.cannot_call(fn))

    def call_constexpr_function(self, fn: ConstexprFunction, args: list, kwargs: dict) -> Any:
        """A ``@tl.constexpr_function``, run now on the host; its result must be a
        compile-time value (it becomes a constexpr of the kernel)."""
        result = unwrap(self.fold(fn.fn, *args, **kwargs))
        if is_tensor(result) or not is_compile_time(result):
            self.error(f"constexpr_function `{fn.__name__}` returned {self.describe(result)}; it runs at compile "
                       "time and must return a compile-time value (a number, string, dtype or tuple of them)")
        return result

    @staticmethod
    def cannot_call(fn: Any) -> str:
        """Why ``fn`` cannot be called in a kernel, naming the ``tl`` function to use when
        there is one of the same name (``np.exp`` -> ``tl.exp``)."""
        name = getattr(fn, "__name__", type(fn).__name__)
        library = (getattr(fn, "__module__", None) or type(fn).__module__).split(".")[0]
        instead = tl_equivalent(fn)
        if instead:
            return f"`{library}.{name}`: {library} functions do not run inside kernels; use `{instead}`"
        if inspect.isfunction(fn):
            return (f"`{name}` is a plain Python function; define it with `def` and decorate it with @tilec.jit "
                    "to call it from a kernel")
        return (f"cannot call `{name}` in a kernel; a kernel may call tl.* functions, @tilec.jit functions, "
                f"and math.*, tl types and the Python builtins {', '.join(PY_NAMES)} on compile-time values")

    @staticmethod
    def is_python_callable(fn: Any) -> bool:
        """Python builtins we allow, ``math.*``, ``tl`` classes (``tl.constexpr(4)``,
        ``tl.pointer_type(dt)``) and the methods of their instances (``x.dtype.is_int()``)."""
        module = getattr(fn, "__module__", None) or ""
        language_class = isinstance(fn, type) and module.startswith("tilec.language")
        language_method = inspect.ismethod(fn) and type(fn.__self__).__module__.startswith("tilec.language")
        return any(fn is f for f in PY_NAMES.values()) or module == "math" or language_class or language_method

    def call_python(self, fn: Any, args: list, kwargs: dict) -> Any:
        """A Python builtin or ``math`` function, run at compile time on constexprs."""
        special = _SPECIAL_CALLS.get(fn)
        if special is not None:
            return getattr(self, special)(fn, args, kwargs)
        if fn not in _TAKE_TENSORS and any(is_tensor(a) for a in [*args, *kwargs.values()]):
            instead = tl_equivalent(fn)
            hint = _PY_FUNCS.get(fn) or (f"use {instead}" if instead else "it needs compile-time arguments")
            self.error(f"`{fn.__name__}()` runs at compile time and cannot take a tensor; {hint}")
        return self.fold(fn, *args, **kwargs)

    def call_range(self, fn, args: list, kwargs: dict) -> NoReturn:
        self.error("range() can only be the iterable of a for loop")

    def call_print(self, fn, args: list, kwargs: dict) -> Any:
        """``print(...)`` in a kernel is ``tl.device_print`` (as in Triton): it prints on every
        launch.  Leading strings make the prefix; the values after it are printed."""
        options = {n for n, p in inspect.signature(tl.device_print).parameters.items() if p.kind is p.KEYWORD_ONLY}
        unknown = [k for k in kwargs if k not in options]
        if unknown:
            self.error(f"print() in a kernel is tl.device_print, which takes no `{unknown[0]}=`; "
                       "use tl.static_print(...) to print at compile time")
        texts = list(itertools.takewhile(lambda a: isinstance(a, str), args))
        values = args[len(texts):]
        for value in values:
            self.check_printable(value)
        return self.call(tl.device_print, [" ".join(texts), *values], kwargs)

    def check_printable(self, value: Any) -> None:
        """A value ``print`` shows at run time is a tensor or a number; text, tuples (a shape)
        and dtypes are known at compile time and belong in the leading text."""
        if not (is_tensor(value) or isinstance(value, (bool, int, float))):
            self.error(f"print() in a kernel is tl.device_print: leading text, then tensors and numbers; "
                       f"{self.describe(value)} is neither: write it into the text, "
                       "e.g. print(f\"shape {x.shape}\", x)")

    def call_getattr(self, fn, args: list, kwargs: dict) -> Any:
        if len(args) != 2 or kwargs:
            self.error("getattr(obj, name) takes exactly two arguments")
        return self.get_attribute(*args)

    def call_min_max_abs(self, fn, args: list, kwargs: dict) -> Any:
        """Python's ``min``/``max``/``abs``: folded on constexprs, tl.minimum/maximum/abs on tensors."""
        if not any(is_tensor(a) for a in args) or kwargs:
            return self.fold(fn, *args, **kwargs)
        tl_fn = _TENSOR_FORMS[fn]
        if fn is py.abs or len(args) < 2:
            return self.call(tl_fn, args, {})
        return functools.reduce(lambda a, b: self.call(tl_fn, [a, b], {}), args)
