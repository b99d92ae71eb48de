"""The front end's entry point: a kernel's Python AST -> tile IR.

``build_ir(pyfn, specs)`` reads the kernel's source and walks it with one
``ast.NodeVisitor`` (``CodeGenerator``) that builds IR as it goes; the rest of
the front end is the package ``tilec.frontend`` (its ``__init__`` says which
module does what).  Values during the walk are either ``semantic.Tensor`` (a
wrapped ``ir.Value``) or plain Python objects: the constexprs (ints, floats,
bools, strings, None, ``tl`` dtypes, tuples, functions and modules).

* Expressions whose operands are all Python values are evaluated at compile
  time with Python's semantics (as Triton does for constexprs); operators on
  tensors go to ``frontend/semantic.py``.
* Calls (``frontend/calls.py``): nested ``@jit`` functions are inlined at the
  call with a fresh scope; ``tl.*`` stubs go to ``frontend/tl_ops.py``.
* Control flow (``frontend/control.py``) becomes structured ``for``/``if``/``while``.
* Every op gets the location of the AST node being visited, and every user
  mistake raises ``CompilationError`` at that node, quoting the line.

Unlike Triton, an assignment of a Python number keeps it a constexpr; it
becomes a tensor only when runtime control flow has to carry or merge it.
"""
from __future__ import annotations

import ast
import builtins as py
import difflib
import inspect
import operator
import types
from dataclasses import dataclass, field
from typing import Any, NoReturn, Optional

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.calls import PY_NAMES, CallsMixin, tl_equivalent
from tilec.frontend.common import is_compile_time, is_constexpr_annotation, is_tensor, unwrap, walkable_source
from tilec.frontend.source import FunctionSource, closure_values
from tilec.frontend.control import RETURN_SLOT, ControlFlowMixin, normalize_returns
from tilec.frontend.tuples import TupleLayout, unwrap_all
from tilec.frontend import tl_tensor_descriptors
from tilec.ir.kernel_params import DescriptorParam
from tilec.errors import CompilationError, TilecError

__all__ = ["ArgSpec", "CodeGenerator", "CompileTarget", "FunctionSource", "build_ir"]


@dataclass(frozen=True)
class ArgSpec:
    """One kernel parameter as specialized by the launch layer.

    ``type`` None marks a constexpr whose ``value`` is folded into the body;
    otherwise the parameter is a runtime argument of IR type ``type`` and
    ``attrs`` (e.g. ``(("divisibility", 16),)``) go to ``fn.arg_attrs``.
    """

    name: str
    type: Optional[ir.Type]
    value: Any = None
    attrs: tuple = ()


@dataclass(frozen=True)
class CompileTarget:
    """What a kernel may ask at compile time about where it will run
    (``tl.target_info``, ``tl.extra.cuda.num_warps``): Triton's ``(backend,
    arch, warp_size)`` of the target compiled for, and the launch's
    ``num_warps``.  A variant's key holds its target and options, so a
    kernel may fold these into its code.  The default, for IR built outside
    a launch, is the host interpreter's."""

    backend: str = "host"
    arch: Any = "host"
    warp_size: int = 32
    num_warps: int = 4


def build_ir(pyfn, specs: list[ArgSpec], name: Optional[str] = None,
             target: CompileTarget = CompileTarget()) -> ir.Function:
    """The tile IR of kernel ``pyfn`` specialized for ``specs`` (one per parameter),
    compiled for ``target``.

    A ``CompilationError`` leaves without the front end's own frames: it names
    and quotes the user's line already, and the walk's recursion (three frames
    a nested node) would bury it.  A tilec bug keeps its frames in ``__cause__``.
    """
    try:
        return CodeGenerator(name or pyfn.__name__, target).build_kernel(pyfn, specs)
    except CompilationError as e:
        raise e.with_traceback(None)



# Python operators: (semantic's op name, the Python function used to fold constants).
_BINARY = {
    ast.Add: ("add", operator.add), ast.Sub: ("sub", operator.sub), ast.Mult: ("mul", operator.mul),
    ast.Div: ("truediv", operator.truediv), ast.FloorDiv: ("floordiv", operator.floordiv),
    ast.Mod: ("mod", operator.mod), ast.Pow: ("pow", operator.pow), ast.BitAnd: ("and", operator.and_),
    ast.BitOr: ("or", operator.or_), ast.BitXor: ("xor", operator.xor),
    ast.LShift: ("lshift", operator.lshift), ast.RShift: ("rshift", operator.rshift),
}
_UNARY = {ast.USub: ("neg", operator.neg), ast.UAdd: ("pos", operator.pos),
          ast.Invert: ("invert", operator.invert), ast.Not: ("not", operator.not_)}
_COMPARE = {ast.Eq: ("eq", operator.eq), ast.NotEq: ("ne", operator.ne), ast.Lt: ("lt", operator.lt),
            ast.LtE: ("le", operator.le), ast.Gt: ("gt", operator.gt), ast.GtE: ("ge", operator.ge)}
_IDENTITY = {ast.Is: operator.is_, ast.IsNot: operator.is_not,
             ast.In: lambda a, b: operator.contains(b, a), ast.NotIn: lambda a, b: not operator.contains(b, a)}

# Syntax a kernel cannot use, with what to write instead.
_UNSUPPORTED = {
    ast.Lambda: "lambda is not supported in a kernel; define a @tilec.jit function at module level",
    ast.FunctionDef: "nested function definitions are not supported; define a @tilec.jit function at module level",
    ast.AsyncFunctionDef: "async functions are not supported in a kernel",
    ast.ClassDef: "class definitions are not supported in a kernel",
    ast.ListComp: "comprehensions are not supported; use a tl.static_range loop or a tuple",
    ast.SetComp: "comprehensions are not supported; use a tl.static_range loop or a tuple",
    ast.DictComp: "comprehensions are not supported; use a tl.static_range loop or a tuple",
    ast.GeneratorExp: "generator expressions are not supported; use a tl.static_range loop or a tuple",
    ast.Dict: "dicts are not supported in a kernel; use separate variables or a tuple",
    ast.Set: "sets are not supported in a kernel; use a tuple",
    ast.Try: "try/except is not supported in a kernel; check conditions with tl.static_assert or tl.device_assert",
    ast.With: "`with` is not supported in a kernel",
    ast.AsyncWith: "`async with` is not supported in a kernel",
    ast.AsyncFor: "`async for` is not supported in a kernel",
    ast.Global: "`global` is not supported in a kernel; pass the value as an argument",
    ast.Nonlocal: "`nonlocal` is not supported in a kernel; return the value instead",
    ast.Delete: "`del` is not supported in a kernel",
    ast.Import: "imports are not supported inside a kernel; import at module level",
    ast.ImportFrom: "imports are not supported inside a kernel; import at module level",
    ast.Raise: "`raise` is not supported in a kernel; use tl.static_assert or tl.device_assert",
    ast.Assert: "`assert` is not supported in a kernel; use tl.static_assert(cond, msg) for compile-time "
                "checks or tl.device_assert(cond, msg) for runtime checks",
    ast.Break: "`break` is not supported in a kernel; end the loop through its condition instead: "
               "`go = True` before it, `while go:` ... `go = not <exit condition>`",
    ast.Continue: "`continue` is not supported in a kernel; put the rest of the loop body under "
                  "`if not <skip condition>:`",
    ast.Starred: "starred expressions are not supported here; index the tuple instead",
    ast.NamedExpr: "`:=` is not supported in a kernel; assign in a separate statement",
    ast.Await: "`await` is not supported in a kernel",
    ast.Yield: "`yield` is not supported in a kernel",
    ast.YieldFrom: "`yield from` is not supported in a kernel",
    ast.Match: "`match` is not supported in a kernel; use if/elif",
    ast.Slice: "slices are only allowed inside a subscript: x[:, None]",
}


def python_slices(index: Any) -> Any:
    """A subscript's index with each ``tl.slice(start, stop, step)`` made the Python
    slice it stands for (Triton's ``tl.slice`` is how ``a:b:c`` is spelled as a value)."""
    if isinstance(index, tuple):
        return tuple(python_slices(i) for i in index)
    return slice(index.start, index.stop, index.step) if isinstance(index, tl.slice) else index


@dataclass
class _Frame:
    """The function being walked (the kernel or an inlined @jit function)."""

    pyfn: Any
    source: FunctionSource
    scope: dict[str, Any]
    caller: Optional["_Frame"] = None  # the function that inlines this one, and where
    call_site: Optional[ir.Loc] = None
    loop_depth: int = 0
    forgotten: dict[str, str] = field(default_factory=dict)  # name -> why runtime control flow dropped it


class CodeGenerator(CallsMixin, ControlFlowMixin, ast.NodeVisitor):
    """Walks a kernel's AST, building IR; also the ``ctx`` handed to ``semantic`` and the ``tl_*`` modules."""

    def __init__(self, kernel_name: str, target: CompileTarget = CompileTarget()):
        self.kernel_name = kernel_name
        self.target = target
        self.builder = ir.Builder()
        self.frame: Optional[_Frame] = None
        self.node: Optional[ast.AST] = None
        self.inlining: list = []  # the Python functions being inlined, to refuse recursion

    # --- entry points --------------------------------------------------------
    def build_kernel(self, pyfn, specs: list[ArgSpec]) -> ir.Function:
        source = walkable_source(pyfn)
        fn = ir.Function(self.kernel_name, ir.Block(), loc=source.loc(source.function_def))
        self.builder.block = fn.body
        params = inspect.signature(pyfn).parameters
        by_name = {spec.name: spec for spec in specs}
        scope = {spec.name: self.kernel_arg_value(fn, spec, is_constexpr_annotation(params[spec.name].annotation),
                                                  by_name)
                 for spec in self.checked_specs(pyfn, specs)}
        self.walk_function(pyfn, source, scope)
        return fn

    def kernel_arg_value(self, fn: ir.Function, spec: ArgSpec, constexpr: bool, specs: dict[str, ArgSpec]) -> Any:
        """What a parameter's name means in the body: a kernel argument, a constexpr's value,
        or, for an int argument equal to 1 (specialised away, as Triton does), an int32
        constant: typed as the argument is for every other value, so that its promotions,
        ``.to`` and ``.dtype`` do not change when it happens to be 1.  A tuple argument
        is rebuilt from its leaves (``specs`` by name), each one meaning the same."""
        if isinstance(spec.type, DescriptorParam):  # a host tensor descriptor: several IR arguments
            return tl_tensor_descriptors.kernel_argument(self, fn, spec.name, spec.type, spec.attrs)
        if spec.type is not None:
            return self.add_kernel_arg(fn, spec)
        if isinstance(spec.value, TupleLayout):
            return spec.value.rebuild(lambda leaf: self.kernel_arg_value(fn, specs[leaf], False, specs))
        if type(spec.value) is int and not constexpr:
            return semantic.constant(self, spec.value, ir.i32)
        return unwrap_all(spec.value)

    def checked_specs(self, pyfn, specs: list[ArgSpec]) -> list[ArgSpec]:
        """The specs of ``pyfn``'s parameters, one each; a tuple parameter's leaves
        have specs of their own, which its ``TupleLayout`` names."""
        params = inspect.signature(pyfn).parameters
        leaves = {leaf for s in specs if isinstance(s.value, TupleLayout) for leaf in s.value.leaf_names()}
        own = [s for s in specs if s.name not in leaves]
        names = [s.name for s in own]
        if sorted(names) != sorted(params):
            raise TypeError(f"kernel `{self.kernel_name}` has parameters {list(params)}, got specs for {names}")
        for s in own:
            if s.type is not None and is_constexpr_annotation(params[s.name].annotation):
                raise TypeError(f"parameter `{s.name}` of `{self.kernel_name}` is tl.constexpr but has a runtime spec")
        return own

    @staticmethod
    def add_kernel_arg(fn: ir.Function, spec: ArgSpec) -> semantic.Tensor:
        fn.arg_names.append(spec.name)
        fn.arg_attrs.append(dict(spec.attrs))
        return semantic.Tensor(fn.body.add_arg(spec.type, spec.name))

    def walk_function(self, pyfn, source: FunctionSource, scope: dict) -> Any:
        """Walk ``source``'s body in a new frame; return what it returns (None if nothing)."""
        call_site = self.builder.loc if self.frame else None
        saved, self.frame = self.frame, _Frame(pyfn, source, scope, self.frame, call_site)
        try:
            self.visit_block(normalize_returns(source.function_def.body))
            return self.frame.scope.get(RETURN_SLOT)
        finally:
            self.frame = saved

    # --- the context interface semantic and the tl_* modules use ---------------
    def error(self, msg: str, node: Optional[ast.AST] = None) -> NoReturn:
        """Raise ``CompilationError`` at ``node`` (default: the node being visited).

        Callers often report a ``TypingError`` or ``TypeError`` they caught, whose
        text is already in ``msg``: the error, its own cause (see
        ``CompilationError``), keeps Python from printing it twice as "During
        handling of the above exception...".
        """
        raise self.make_error(msg, node)

    def make_error(self, msg: str, node: Optional[ast.AST] = None) -> CompilationError:
        node = node or self.node
        source = self.frame.source
        loc = source.loc(node) if node is not None and hasattr(node, "lineno") else source.loc(source.function_def)
        return CompilationError(loc.file, loc.line, loc.col, msg + self.call_sites(), kernel=self.kernel_name)

    def call_sites(self) -> str:
        """Where the function being walked was inlined from, innermost first: an error in a
        @jit helper names the calls that led to it."""
        sites, frame = [], self.frame
        while frame.caller is not None:
            sites.append(f"{frame.call_site.file}:{frame.call_site.line}")
            frame = frame.caller
        return f"; called from {', from '.join(sites)}" if sites else ""

    # --- walking ---------------------------------------------------------------
    def visit(self, node: ast.AST) -> Any:
        """Visit ``node`` with the builder's location set to it; wrap internal failures."""
        if not hasattr(node, "lineno"):
            return super().visit(node)
        saved = self.node, self.builder.loc
        self.node, self.builder.loc = node, self.frame.source.loc(node)
        try:
            return super().visit(node)
        except TilecError:
            raise
        except Exception as e:  # a bug below us: still show the user's line
            raise self.make_error(f"internal error while compiling this line: {type(e).__name__}: {e}") from e
        finally:
            self.node, self.builder.loc = saved

    def generic_visit(self, node: ast.AST) -> NoReturn:
        self.error(_UNSUPPORTED.get(type(node), f"`{type(node).__name__}` syntax is not supported in a kernel"))

    def visit_block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.visit(stmt)

    # --- names -----------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> Any:
        return self.load_name(node.id)

    def load_name(self, name: str) -> Any:
        """A local, else a closure variable or global of the function, else an allowed builtin."""
        if name in self.frame.scope:
            return self.frame.scope[name]
        pyfn = self.frame.pyfn
        for table, kind in ((closure_values(pyfn), "closure variable"), (pyfn.__globals__, "global")):
            if name in table:
                return self.compile_time(table[name], f"{kind} `{name}`")
        if name in PY_NAMES:
            return PY_NAMES[name]
        if hasattr(py, name):
            instead = tl_equivalent(getattr(py, name))
            self.error(f"Python builtin `{name}` is not supported in a kernel; "
                       + (f"use `{instead}`" if instead else f"supported: {', '.join(PY_NAMES)}"))
        self.error(self.frame.forgotten.get(name, f"name `{name}` is not defined"))

    def compile_time(self, value: Any, what: str) -> Any:
        if not is_compile_time(value):
            self.error(f"{what} is a {type(value).__name__}, which may change after compilation; "
                       "pass it as a kernel argument or wrap it in tl.constexpr(...)")
        return unwrap(value)

    def bind(self, name: str, value: Any) -> None:
        value = unwrap(value)
        if is_tensor(value) and value.handle.name is None:
            value.handle.name = name  # a readable name in the printed IR
        self.frame.scope[name] = value

    # --- statements --------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.visit(node.value)
        for target in node.targets:
            self.assign(target, value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            self.error("a declaration without a value is not supported; assign a value")
        value = self.visit(node.value)
        if is_tensor(value) and is_constexpr_annotation(self.annotation_of(node.annotation)):
            self.error("a tl.constexpr variable needs a compile-time value, got a tensor")
        self.assign(node.target, value)

    def annotation_of(self, node: ast.expr) -> Any:
        return self.visit(node) if isinstance(node, (ast.Name, ast.Attribute)) else None

    def assign(self, target: ast.expr, value: Any) -> None:
        """Bind ``target`` (a name or a nested tuple of names) to ``value``."""
        if isinstance(target, ast.Name):
            return self.bind(target.id, value)
        if isinstance(target, ast.Subscript) and isinstance(self.visit(target.value), tuple):
            self.error("a tuple cannot be changed in place; build a new one, e.g. `t = t[:i] + (v,) + t[i + 1:]`",
                       target)
        if not isinstance(target, (ast.Tuple, ast.List)):
            self.error("cannot assign to this target: tensors are values, not memory; write memory with "
                       "tl.store and replace elements with tl.where", target)
        if is_tensor(value) or not isinstance(value, tuple):
            self.error(f"cannot unpack a {self.describe(value)} into {len(target.elts)} names", target)
        if any(isinstance(t, ast.Starred) for t in target.elts):
            self.error("starred assignment is not supported; index the tuple instead (t[0], t[1:])", target)
        if len(target.elts) != len(value):
            self.error(f"cannot unpack {len(value)} values into {len(target.elts)} names", target)
        for t, v in zip(target.elts, value):
            self.assign(t, v)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.target, ast.Name):
            self.error("only names can be updated in place (`x += y`); tensors are values: use tl.store "
                       "to write memory")
        value = self.binary_op(node.op, self.load_name(node.target.id), self.visit(node.value))
        self.bind(node.target.id, value)

    def visit_Expr(self, node: ast.Expr) -> None:
        self.visit(node.value)

    def visit_Pass(self, node: ast.Pass) -> None:
        pass

    def visit_Return(self, node: ast.Return) -> None:
        if self.frame.loop_depth:
            self.error("`return` inside a loop is not supported; set a variable and return after the loop")
        if node.value is not None and not self.inlining:
            self.error("a kernel cannot return a value; store results through a pointer with tl.store")
        self.frame.scope[RETURN_SLOT] = None if node.value is None else unwrap(self.visit(node.value))

    # --- expressions -------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def visit_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.visit(e) for e in node.elts)

    visit_List = visit_Tuple  # [M, N] shapes: lists are immutable tuples inside a kernel

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        return self.get_attribute(self.visit(node.value), node.attr, ast.unparse(node.value))

    def get_attribute(self, obj: Any, name: str, spelled: Optional[str] = None) -> Any:
        """``obj.name``; ``spelled`` is how the user wrote ``obj`` (``tl``, ``tilec.language``)."""
        if is_tensor(obj) or semantic.is_number_tensor_attribute(obj, name):
            return unwrap(semantic.attribute(self, obj, name))
        if not hasattr(obj, name):
            self.error(self.missing_attribute(obj, name, spelled))
        value = getattr(obj, name)
        if isinstance(obj, types.ModuleType):
            return self.compile_time(value, f"`{obj.__name__}.{name}`")
        return unwrap(value)

    def missing_attribute(self, obj: Any, name: str, spelled: Optional[str]) -> str:
        """Why ``obj.name`` fails: a ``tl`` name tilec lacks is "not supported yet" (the
        language docs list what it has); a close name is offered for a typo."""
        module = isinstance(obj, types.ModuleType)
        owner = spelled or (obj.__name__ if module else None)
        close = difflib.get_close_matches(name, [n for n in dir(obj) if not n.startswith("_")], n=1, cutoff=0.8)
        hint = f"; did you mean `{owner + '.' if owner else ''}{close[0]}`?" if close else ""
        if module and obj.__name__.split(".")[0] == "tilec":
            return f"`{owner}.{name}` is not supported yet (docs/language.md lists what tilec has){hint}"
        return f"{self.describe(obj)} has no attribute `{name}`{hint}"

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        return self.binary_op(node.op, self.visit(node.left), self.visit(node.right))

    def binary_op(self, op: ast.operator, lhs: Any, rhs: Any) -> Any:
        if isinstance(op, ast.MatMult):
            self.error("`@` is not supported; use tl.dot(a, b)")
        name, fold = _BINARY[type(op)]
        if is_tensor(lhs) or is_tensor(rhs):
            return semantic.binary(self, name, lhs, rhs)
        return self.fold(fold, lhs, rhs)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        name, fold = _UNARY[type(node.op)]
        x = self.visit(node.operand)
        return semantic.unary(self, name, x) if is_tensor(x) else self.fold(fold, x)

    def visit_Compare(self, node: ast.Compare) -> Any:
        """``a < b < c`` is ``a < b and b < c`` with ``b`` evaluated once."""
        lhs, result = self.visit(node.left), True
        for op, expr in zip(node.ops, node.comparators):
            rhs = self.visit(expr)
            result = self.logical("and", result, self.compare_op(op, lhs, rhs))
            if not is_tensor(result) and not result:
                return result
            lhs = rhs
        return result

    def compare_op(self, op: ast.cmpop, lhs: Any, rhs: Any) -> Any:
        if type(op) in _IDENTITY:
            if (is_tensor(lhs) or is_tensor(rhs)) and not (lhs is None or rhs is None):
                self.error("`is` / `in` cannot test tensors; use == or tl.where")
            return self.fold(_IDENTITY[type(op)], lhs, rhs)
        name, fold = _COMPARE[type(op)]
        if is_tensor(lhs) or is_tensor(rhs):
            return semantic.compare(self, name, lhs, rhs)
        return self.fold(fold, lhs, rhs)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        """``and``/``or``: Python's short circuit on constexprs, ``semantic.logical`` on tensors."""
        kind = "and" if isinstance(node.op, ast.And) else "or"
        result = self.visit(node.values[0])
        for expr in node.values[1:]:
            if not is_tensor(result) and bool(result) == (kind == "or"):
                return result
            result = self.logical(kind, result, self.visit(expr))
        return result

    def logical(self, kind: str, lhs: Any, rhs: Any) -> Any:
        """``lhs and rhs`` / ``lhs or rhs`` once ``lhs`` did not short-circuit."""
        if not is_tensor(lhs):
            return rhs
        logical = getattr(semantic, "logical", None)
        if logical is None:
            self.error(f"`{kind}` on tensors is not supported; use {'&' if kind == 'and' else '|'} on i1 tensors")
        return logical(self, kind, lhs, rhs)

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.visit(node.test)
        if is_tensor(cond):
            return self.runtime_if_expr(cond, node.body, node.orelse)
        return self.visit(node.body if cond else node.orelse)

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        value, index = self.visit(node.value), python_slices(self.visit_index(node.slice))
        if is_tensor(value):
            self.check_tensor_index(index)
            return semantic.subscript(self, value, index)
        if is_tensor(index) or isinstance(index, tuple) and any(is_tensor(i) for i in index):
            self.error("a tuple can only be indexed by a compile-time int")
        if getattr(value, "is_tilec_jit", False):
            self.error(f"launching a kernel from inside a kernel is not supported; call the @jit function "
                       f"directly (`{ast.unparse(node.value)}(...)`) to inline it")
        self.check_tuple_index(value, index, node.value)
        return self.fold(operator.getitem, value, index)

    def check_tuple_index(self, value: Any, index: Any, expr: ast.expr) -> None:
        """An int index past the end of a tuple (``ptr.shape[0]`` of a scalar, whose shape
        is ``()``) is the user's mistake: say which tuple and how long it is."""
        if not isinstance(value, tuple) or not isinstance(index, int) or -len(value) <= index < len(value):
            return
        what = "(): a scalar has no dimensions" if value == () else f"{value!r}, of length {len(value)}"
        self.error(f"index {index} is out of range: `{ast.unparse(expr)}` is {what}")

    def visit_index(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return slice(*(None if p is None else self.visit(p) for p in parts))
        if isinstance(node, ast.Tuple):
            return tuple(self.visit_index(e) for e in node.elts)
        return self.visit(node)

    def check_tensor_index(self, index: Any) -> None:
        for item in index if isinstance(index, tuple) else (index,):
            if item is not None and not (isinstance(item, slice) and item == slice(None)):
                self.error(f"unsupported tensor index {item!r}: a tensor can only be indexed with `:` and `None` "
                           "(x[:, None], x[None, :]); to pick elements use tl.where, tl.reshape/tl.split, or load "
                           "them again")

    def visit_JoinedStr(self, node: ast.JoinedStr) -> str:
        """An f-string of compile-time values (for static_print/device_print/static_assert messages)."""
        return "".join(self.visit(part) for part in node.values)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> str:
        value = self.visit(node.value)
        if is_tensor(value):
            self.error("an f-string can only format compile-time values; pass tensors to print as separate "
                       "arguments: print(\"x =\", x)")
        convert = {-1: lambda v: v, ord("s"): str, ord("r"): repr, ord("a"): ascii}[node.conversion]
        spec = "" if node.format_spec is None else self.visit(node.format_spec)
        return self.fold(format, convert(value), spec)

    def fold(self, fn, *args, **kwargs) -> Any:
        """Evaluate ``fn`` on Python values at compile time; its exceptions become user
        errors, the Python exception kept as the cause (it has its own traceback)."""
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise self.make_error(f"compile-time evaluation failed: {type(e).__name__}: {e}") from e

    @staticmethod
    def describe(value: Any) -> str:
        """A short description of a front-end value for messages."""
        if is_tensor(value):
            return f"tensor of type {value.handle.type}"
        if isinstance(value, types.ModuleType):  # not its repr: that shows a path of this machine
            return f"module `{value.__name__}`"
        return f"{type(value).__name__} {value!r}"
