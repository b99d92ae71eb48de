"""How a compile error reads: printed once, at the kernel's line with a caret,
short, with no "During handling of the above exception" chain; and the
messages for the mistakes a new user makes say what to write instead."""
from __future__ import annotations

import inspect
import math
import traceback

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.errors import CompilationError

X = np.arange(16, dtype=np.float32)
MUTABLE = [1, 2]
# A launch's own frames (jit -> cache -> compiler -> build_ir) and the test's
# take ~30 lines, the message ~3, and a Python exception kept as the cause of a
# failed constexpr evaluation ~12 more.  The front end's walk adds three frames
# a nested node: before, `tl.arange(0, 1000)` gave 71 lines.
MAX_LINES = 50


def launch_error(kernel, *args, **kwargs) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    return info.value


def line_of(kernel, marker: str = "# MARK") -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def plain(x):
    return x


@tilec.jit
def inner(x_ptr):
    tl.store(x_ptr, 1.0)


@tilec.jit
def arange_1000(x_ptr, n):
    offs = tl.arange(0, 1000)  # MARK
    tl.store(x_ptr + offs, offs)


@tilec.jit
def arange_runtime_end(x_ptr, n):
    offs = tl.arange(0, n)  # MARK
    tl.store(x_ptr + offs, offs)


@tilec.jit
def arange_missing_argument(x_ptr, n):
    offs = tl.arange(0)  # MARK
    tl.store(x_ptr + offs, offs)


@tilec.jit
def unknown_name(x_ptr, n):
    tl.store(x_ptr, not_defined_anywhere)  # MARK  # noqa: F821


@tilec.jit
def assigned_in_one_branch(x_ptr, n):
    if n > 0:
        y = 1.0
    tl.store(x_ptr, y)  # MARK


@tilec.jit
def assigned_only_in_a_for_loop(x_ptr, n):
    for i in range(n):
        y = tl.load(x_ptr + i)
    tl.store(x_ptr, y + i)  # MARK


@tilec.jit
def assigned_only_in_a_while_loop(x_ptr, n):
    while n > 0:
        z = 2
        n -= 1
    tl.store(x_ptr, z)  # MARK


@tilec.jit
def missing_tl_function(x_ptr, n):
    r = tl.frobnicate(0, tl.arange(0, 16))  # MARK
    tl.store(x_ptr + tl.arange(0, 16), r)


@tilec.jit
def misspelled_tl_function(x_ptr, n):
    r = tl.arrange(0, 16)  # MARK
    tl.store(x_ptr + r, r)


@tilec.jit
def missing_tl_math_function(x_ptr, n):
    r = tl.math.fancy(tl.arange(0, 16))  # MARK
    tl.store(x_ptr + tl.arange(0, 16), r)


@tilec.jit
def missing_tl_spelled_in_full(x_ptr, n):
    r = tilec.language.frobnicate(0, tl.arange(0, 16))  # MARK
    tl.store(x_ptr + tl.arange(0, 16), r)


@tilec.jit
def missing_math_attribute(x_ptr, n):
    tl.store(x_ptr, math.tau2)  # MARK


@tilec.jit
def numpy_on_a_tensor(x_ptr, n):
    x = np.exp(tl.load(x_ptr + tl.arange(0, 16)))  # MARK
    tl.store(x_ptr + tl.arange(0, 16), x)


@tilec.jit
def numpy_type_on_a_tensor(x_ptr, n):
    x = np.float16(tl.load(x_ptr))  # MARK
    tl.store(x_ptr, x)


@tilec.jit
def math_on_a_tensor(x_ptr, n):
    x = math.sqrt(tl.load(x_ptr))  # MARK
    tl.store(x_ptr, x)


@tilec.jit
def builtin_sum_on_a_tensor(x_ptr, n):
    s = sum(tl.load(x_ptr + tl.arange(0, 16)))  # MARK
    tl.store(x_ptr, s)


@tilec.jit
def shape_of_a_scalar_pointer(x_ptr, n):
    rows = x_ptr.shape[0]  # MARK
    tl.store(x_ptr, rows)


@tilec.jit
def shape_index_past_the_rank(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr, x.shape[1])  # MARK


@tilec.jit
def load_of_an_int(x_ptr, n):
    x = tl.load(n + tl.arange(0, 16))  # MARK
    tl.store(x_ptr + tl.arange(0, 16), x)


@tilec.jit
def store_through_a_float(x_ptr, n):
    tl.store(1.5, tl.load(x_ptr))  # MARK


@tilec.jit
def division_by_zero_constexpr(x_ptr, n):
    tl.store(x_ptr, 1 // 0)  # MARK


@tilec.jit
def while_true_break(x_ptr, n):
    i = 0
    while True:
        i += 1
        if i > n:
            break  # MARK
    tl.store(x_ptr, i)


@tilec.jit
def for_continue(x_ptr, n):
    for i in range(n):
        if i == 2:
            continue  # MARK
        tl.store(x_ptr + i, 1.0)


@tilec.jit
def lambda_in_kernel(x_ptr, n):
    f = lambda v: v + 1  # MARK  # noqa: E731
    tl.store(x_ptr, f(1.0))


@tilec.jit
def try_in_kernel(x_ptr, n):
    try:  # MARK
        tl.store(x_ptr, 1.0)
    except ValueError:
        pass


@tilec.jit
def launch_in_kernel(x_ptr, n):
    inner[(1,)](x_ptr)  # MARK


@tilec.jit
def assign_to_an_element(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16))
    x[0] = 1.0  # MARK


@tilec.jit
def index_a_tensor(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr, x[3])  # MARK


@tilec.jit
def failing_static_assert(x_ptr, n):
    tl.static_assert(1 > 2, "one is not more than two")  # MARK


@tilec.jit
def kernel_returns_a_value(x_ptr, n):
    return tl.load(x_ptr)  # MARK


@tilec.jit
def dict_in_kernel(x_ptr, n):
    d = {"a": 1}  # MARK
    tl.store(x_ptr, d["a"])


@tilec.jit
def matmul_operator(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr, x @ x)  # MARK


@tilec.jit
def unpack_mismatch(x_ptr, n):
    a, b = (1, 2, 3)  # MARK
    tl.store(x_ptr, a + b)


@tilec.jit
def getattr_of_a_missing_name(x_ptr, n):
    f = getattr(tl, "nope")  # MARK
    tl.store(x_ptr, f)


@tilec.jit
def fstring_of_a_tensor(x_ptr, n):
    tl.static_print(f"{tl.load(x_ptr)}")  # MARK


@tilec.jit
def print_with_sep(x_ptr, n):
    print("x", tl.load(x_ptr), sep=",")  # MARK


@tilec.jit
def print_text_after_a_value(x_ptr, n):
    print("x", tl.load(x_ptr), "units")  # MARK


@tilec.jit
def print_a_shape(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16))
    print(x.shape, x)  # MARK


@tilec.jit
def plain_function_call(x_ptr, n):
    tl.store(x_ptr, plain(1.0))  # MARK


@tilec.jit
def mutable_global(x_ptr, n):
    tl.store(x_ptr, MUTABLE[0])  # MARK


@tilec.jit
def reduce_axis_out_of_range(x_ptr, n):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr, tl.sum(x, axis=3))  # MARK


# (kernel, text the message must contain)
WRONG_KERNELS = [
    (arange_1000, "power of two"),
    (arange_runtime_end, "constexpr"),
    (arange_missing_argument, "bad call of `tl.arange`"),
    (unknown_name, "`not_defined_anywhere` is not defined"),
    (assigned_in_one_branch, "`y` is assigned in only one branch of the runtime `if` at line "),
    (assigned_only_in_a_for_loop, "`y` is assigned only inside the runtime loop at line "),
    (assigned_only_in_a_while_loop, "; assign it before the loop (it may run zero times)"),
    (missing_tl_function, "`tl.frobnicate` is not supported yet (docs/language.md"),
    (misspelled_tl_function, "`tl.arrange` is not supported yet (docs/language.md lists what tilec has); "
                             "did you mean `tl.arange`?"),
    (missing_tl_math_function, "`tl.math.fancy` is not supported yet"),
    (missing_tl_spelled_in_full, "`tilec.language.frobnicate` is not supported yet"),
    (missing_math_attribute, "module `math` has no attribute `tau2`; did you mean `math.tau`?"),
    (numpy_on_a_tensor, "`numpy.exp`: numpy functions do not run inside kernels; use `tl.exp`"),
    (numpy_type_on_a_tensor, "`numpy.float16`: numpy functions do not run inside kernels; use `x.to(tl.float16)`"),
    (math_on_a_tensor, "cannot take a tensor; use tl.sqrt"),
    (builtin_sum_on_a_tensor, "Python builtin `sum` is not supported in a kernel; use `tl.sum`"),
    (shape_of_a_scalar_pointer, "index 0 is out of range: `x_ptr.shape` is (): a scalar has no dimensions"),
    (shape_index_past_the_rank, "index 1 is out of range: `x.shape` is (16,), of length 1"),
    (load_of_an_int, "pointer"),
    (store_through_a_float, "pointer"),
    (division_by_zero_constexpr, "ZeroDivisionError"),
    (while_true_break, "`break` is not supported in a kernel; end the loop through its condition"),
    (for_continue, "`continue` is not supported in a kernel; put the rest of the loop body under"),
    (lambda_in_kernel, "lambda is not supported"),
    (try_in_kernel, "try/except is not supported"),
    (launch_in_kernel, "launching a kernel from inside a kernel is not supported; call the @jit function "
                       "directly (`inner(...)`)"),
    (assign_to_an_element, "cannot assign to this target"),
    (index_a_tensor, "a tensor can only be indexed with"),
    (failing_static_assert, "one is not more than two"),
    (kernel_returns_a_value, "a kernel cannot return a value"),
    (dict_in_kernel, "dicts are not supported"),
    (matmul_operator, "use tl.dot"),
    (unpack_mismatch, "cannot unpack 3 values into 2 names"),
    (getattr_of_a_missing_name, "`tilec.language.nope` is not supported yet"),
    (fstring_of_a_tensor, "an f-string can only format compile-time values"),
    (print_with_sep, "print() in a kernel is tl.device_print, which takes no `sep=`"),
    (print_text_after_a_value, "print() in a kernel is tl.device_print: leading text, then tensors and numbers; "
                               "str 'units' is neither"),
    (print_a_shape, "tuple (16,) is neither: write it into the text"),
    (plain_function_call, "`plain` is a plain Python function; define it with `def` and decorate it with @tilec.jit"),
    (mutable_global, "global `MUTABLE` is a list"),
    (reduce_axis_out_of_range, "out of range"),
]


@pytest.mark.parametrize("kernel,expected", WRONG_KERNELS, ids=[k.__name__ for k, _ in WRONG_KERNELS])
def test_a_compile_error_is_printed_once_at_the_users_line(kernel, expected):
    err = launch_error(kernel, X, 16)
    text = "".join(traceback.format_exception(err))
    assert expected in err.message, err.message
    assert text.count(str(err)) == 1 and text.count(err.message) == 1, text
    assert "During handling of the above exception" not in text, text
    assert f"{__file__}:{line_of(kernel)}: " in text and "# MARK" in text and str(err).rstrip().endswith("^")
    assert len(text.splitlines()) <= MAX_LINES, text
    assert "/site-packages/" not in err.message and "<module " not in err.message


def test_a_python_exception_of_a_constexpr_is_kept_as_the_cause():
    """The user's own exception is a genuine, different cause: chained with "direct cause"."""
    err = launch_error(division_by_zero_constexpr, X, 16)
    assert isinstance(err.__cause__, ZeroDivisionError)
    assert "The above exception was the direct cause" in "".join(traceback.format_exception(err))


def test_a_reported_typing_error_is_its_own_cause():
    """Not chained to the TypingError reported; Triton's readers of ``__cause__`` find the message."""
    err = launch_error(arange_1000, X, 16)
    assert err.__cause__ is err and err.__suppress_context__
    assert err.error_message == err.message and "power of two" in str(err.__cause__)


def test_the_break_advice_compiles_and_runs():
    """The loop the `break` message proposes instead (a condition variable) works."""
    @tilec.jit
    def count_to(z_ptr, n):
        i = 0
        go = True
        while go:
            i += 1
            go = not (i > n)
        tl.store(z_ptr, i)

    for n in (-3, 0, 5):
        z = np.zeros(1, np.int32)
        count_to[(1,)](z, n)
        assert z[0] == max(n, 0) + 1


def test_a_lambda_cannot_be_a_kernel():
    kernel = tilec.jit(lambda x_ptr: None)  # a launch says why, at the lambda's line
    err = launch_error(kernel, X)
    assert "a lambda cannot be a kernel" in err.message and "`def` function in a source file" in err.message
    assert (err.file, err.line) == (__file__, inspect.currentframe().f_lineno - 3)


def test_only_functions_can_be_kernels():
    with pytest.raises(TypeError, match="must be a `def` function"):
        tilec.jit(np.exp)


def test_a_kernel_without_source_says_it_needs_a_def_in_a_file():
    namespace = {}
    exec(compile("def generated(x_ptr):\n    pass\n", "<generated>", "exec"), namespace)
    err = launch_error(tilec.jit(namespace["generated"]), X)
    assert err.file == "<generated>" and err.line == 1 and err.__cause__ is None
    assert "cannot read the source of `generated`" in err.message and "`def` function in a source file" in err.message


TIMES_TWO = lambda v: v * 2  # noqa: E731


@tilec.jit
def call_a_lambda(x_ptr, n):
    tl.store(x_ptr, TIMES_TWO(tl.load(x_ptr)))  # MARK


def test_calling_a_lambda_says_to_define_a_jit_function():
    err = launch_error(call_a_lambda, X, 16)
    assert err.line == line_of(call_a_lambda)
    assert "define it with `def` and decorate it with @tilec.jit" in err.message


@tilec.jit
def bad_helper(x_ptr):
    return tl.arange(0, 12)  # MARK


@tilec.jit
def middle_helper(x_ptr):
    return bad_helper(x_ptr) + 1  # MARK


@tilec.jit
def calls_helpers(x_ptr, n):
    tl.store(x_ptr + tl.arange(0, 16), middle_helper(x_ptr))  # MARK


def test_an_error_in_an_inlined_function_names_the_calls_that_led_there():
    err = launch_error(calls_helpers, X, 16)
    assert (err.file, err.line) == (__file__, line_of(bad_helper))
    sites = f"{__file__}:{line_of(middle_helper)}, from {__file__}:{line_of(calls_helpers)}"
    assert err.message.endswith(f"; called from {sites}"), err.message


def test_a_name_dropped_by_runtime_control_flow_names_the_statement():
    err = launch_error(assigned_only_in_a_for_loop, X, 16)
    assert f"at line {line_of(assigned_only_in_a_for_loop, 'for i in range(n):')}, so" in err.message
    err = launch_error(assigned_in_one_branch, X, 16)
    assert f"at line {line_of(assigned_in_one_branch, 'if n > 0:')}, so" in err.message


@tilec.jit
async def async_kernel(x_ptr):
    tl.store(x_ptr, 1.0)


def test_an_async_function_cannot_be_a_kernel():
    x = X.copy()
    err = launch_error(async_kernel, x)
    assert "an `async def` cannot be a kernel" in err.message and err.line == line_of(async_kernel, "@tilec.jit")
    np.testing.assert_array_equal(x, X)
