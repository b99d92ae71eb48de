"""Errors a user can trigger: each must be a clear tilec error naming the
kernel's file and line (compile errors also quote the line with a caret),
never a traceback from deep inside the compiler."""
from __future__ import annotations

import inspect
import re
import traceback

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.errors import CompilationError, InterpreterError

THIS_FILE = "test_language_errors.py"


def line_of(kernel, marker: str) -> int:
    """The file line number of the first line of ``kernel``'s source that starts with ``marker``."""
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, text in enumerate(lines) if text.strip().startswith(marker))


def assert_points_at(error: Exception, kernel, marker: str, quoted: bool = True) -> None:
    """``error`` names this file and the line holding ``marker`` (and quotes it, with a caret)."""
    message = str(error)
    assert f"{THIS_FILE}:{line_of(kernel, marker)}" in message, message
    if quoted:
        assert marker in message and "^" in message, message


def compile_error(kernel, *args, **kwargs) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    return info.value


X = np.arange(16, dtype=np.float32)


# --------------------------------------------------------------------------- #
# Launch-time argument errors
# --------------------------------------------------------------------------- #

@tilec.jit
def copy_kernel(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def test_missing_argument_is_a_type_error_naming_the_parameter():
    with pytest.raises(TypeError, match="copy_kernel") as info:
        copy_kernel[(1,)](X, X.copy(), BLOCK=16)
    assert "n" in str(info.value)


def test_too_many_arguments_is_a_type_error():
    with pytest.raises(TypeError, match="copy_kernel"):
        copy_kernel[(1,)](X, X.copy(), 16, 16, 5)


def test_a_list_where_a_pointer_is_expected():
    with pytest.raises(TypeError, match="x_ptr"):
        copy_kernel[(1,)]([1.0, 2.0], X.copy(), 2, BLOCK=16)


# --------------------------------------------------------------------------- #
# Compile errors
# --------------------------------------------------------------------------- #

@tilec.jit
def float_shape_kernel(z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs, offs)


def test_a_float_constexpr_used_as_a_shape():
    err = compile_error(float_shape_kernel, X, BLOCK=16.0)
    assert_points_at(err, float_shape_kernel, "offs = tl.arange(0, BLOCK)")


@tilec.jit
def runtime_shape_kernel(z_ptr, n):
    offs = tl.arange(0, n)
    tl.store(z_ptr + offs, offs)


def test_a_runtime_value_where_a_constexpr_is_needed():
    err = compile_error(runtime_shape_kernel, X, 16)
    assert_points_at(err, runtime_shape_kernel, "offs = tl.arange(0, n)")
    assert "constexpr" in str(err)


def test_arange_of_a_non_power_of_two():
    err = compile_error(float_shape_kernel, X, BLOCK=12)
    assert_points_at(err, float_shape_kernel, "offs = tl.arange(0, BLOCK)")
    assert re.search(r"power of (2|two)", str(err)), str(err)


@tilec.jit
def broadcast_mismatch_kernel(z_ptr):
    a = tl.arange(0, 8)
    b = tl.arange(0, 4)
    tl.store(z_ptr + a, a + b)


def test_shapes_that_do_not_broadcast():
    err = compile_error(broadcast_mismatch_kernel, X)
    assert_points_at(err, broadcast_mismatch_kernel, "tl.store(z_ptr + a, a + b)")
    assert "8" in str(err) and "4" in str(err)


@tilec.jit
def dot_mismatch_kernel(a_ptr, b_ptr, c_ptr):
    r16 = tl.arange(0, 16)
    r32 = tl.arange(0, 32)
    a = tl.load(a_ptr + r16[:, None] * 16 + r16[None, :])
    b = tl.load(b_ptr + r32[:, None] * 16 + r16[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r16[:, None] * 16 + r16[None, :], c)


def test_dot_with_mismatched_inner_dimensions():
    a, b, c = np.zeros((16, 16), np.float32), np.zeros((32, 16), np.float32), np.zeros((16, 16), np.float32)
    err = compile_error(dot_mismatch_kernel, a, b, c)
    assert_points_at(err, dot_mismatch_kernel, "c = tl.dot(a, b)")


@tilec.jit
def tile_into_scalar_pointer_kernel(z_ptr):
    offs = tl.arange(0, 16)
    tl.store(z_ptr, offs * 2)


def test_storing_a_tile_through_a_scalar_pointer():
    err = compile_error(tile_into_scalar_pointer_kernel, X)
    assert_points_at(err, tile_into_scalar_pointer_kernel, "tl.store(z_ptr, offs * 2)")


@tilec.jit
def load_from_int_kernel(z_ptr, n):
    offs = tl.arange(0, 16)
    x = tl.load(n + offs)
    tl.store(z_ptr + offs, x)


def test_load_of_something_that_is_not_a_pointer():
    err = compile_error(load_from_int_kernel, X, 5)
    assert_points_at(err, load_from_int_kernel, "x = tl.load(n + offs)")
    assert "pointer" in str(err)


@tilec.jit
def float_into_int_pointer_kernel(z_ptr):
    offs = tl.arange(0, 4)
    tl.store(z_ptr + offs, offs.to(tl.float32) * 1.75)


def test_float_stored_into_an_int_pointer_converts_as_triton_does():
    """Not an error in Triton: ``store`` casts the value to the pointee type (truncating)."""
    z = np.full(4, -1, np.int32)
    float_into_int_pointer_kernel[(1,)](z)
    np.testing.assert_array_equal(z, [0, 1, 3, 5])


@tilec.jit
def static_assert_kernel(z_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK >= 32, "BLOCK too small for this kernel")
    tl.store(z_ptr + tl.arange(0, BLOCK), 0.0)


def test_failing_static_assert():
    err = compile_error(static_assert_kernel, X, BLOCK=16)
    assert_points_at(err, static_assert_kernel, 'tl.static_assert(BLOCK >= 32, "BLOCK too small for this kernel")')
    assert "BLOCK too small for this kernel" in str(err)


@tilec.jit
def undefined_name_kernel(z_ptr):
    tl.store(z_ptr, not_defined_anywhere)  # noqa: F821


def test_undefined_name():
    err = compile_error(undefined_name_kernel, X)
    assert_points_at(err, undefined_name_kernel, "tl.store(z_ptr, not_defined_anywhere)")
    assert "not_defined_anywhere" in str(err)


@tilec.jit
def try_kernel(z_ptr):
    try:
        tl.store(z_ptr, 1.0)
    except Exception:
        pass


@tilec.jit
def with_kernel(z_ptr):
    with open("x"):
        tl.store(z_ptr, 1.0)


@tilec.jit
def lambda_kernel(z_ptr):
    f = lambda v: v + 1  # noqa: E731
    tl.store(z_ptr, f(1.0))


@tilec.jit
def break_kernel(z_ptr, n):
    for i in range(n):
        if i == 3:
            break
        tl.store(z_ptr + i, 1.0)


@pytest.mark.parametrize("kernel,marker,args", [
    (try_kernel, "try:", (X,)),
    (with_kernel, 'with open("x"):', (X,)),
    (lambda_kernel, "f = lambda v: v + 1", (X,)),
    (break_kernel, "break", (X, 8)),
])
def test_unsupported_python_constructs(kernel, marker, args):
    err = compile_error(kernel, *args)
    assert_points_at(err, kernel, marker)


def test_calling_a_language_function_outside_a_kernel():
    with pytest.raises(Exception, match="kernel"):
        tl.arange(0, 16)


# --------------------------------------------------------------------------- #
# Run-time errors in the interpreter
# --------------------------------------------------------------------------- #

@tilec.jit
def unmasked_load_kernel(x_ptr, z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, x)


def test_out_of_bounds_load_names_the_argument_and_offset():
    x, z = np.arange(10, dtype=np.float32), np.zeros(16, np.float32)
    with pytest.raises(InterpreterError) as info:
        unmasked_load_kernel[(1,)](x, z, BLOCK=16)
    assert_points_at(info.value, unmasked_load_kernel, "x = tl.load(x_ptr + offs)", quoted=False)
    message = str(info.value)
    assert "x_ptr" in message, message
    assert re.search(r"\b1[0-5]\b", message), message


@tilec.jit
def out_of_bounds_store_kernel(z_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(z_ptr + offs - 3, offs)


def test_out_of_bounds_store_below_the_start():
    z = np.zeros(16, np.int32)
    with pytest.raises(InterpreterError) as info:
        out_of_bounds_store_kernel[(1,)](z, BLOCK=16)
    assert_points_at(info.value, out_of_bounds_store_kernel, "tl.store(z_ptr + offs - 3, offs)", quoted=False)
    assert "z_ptr" in str(info.value)


@tilec.jit
def _read_past_the_end(x_ptr, o_ptr, B: tl.constexpr):
    offs = tl.arange(0, B)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs))  # OOB


def test_a_runtime_error_prints_the_users_line_without_the_interpreters_frames():
    """An out-of-bounds access on the host names and quotes the kernel's line; the
    interpreter's own frames (a dozen, deep in numpy) are left out, once, unchained."""
    x, o = np.zeros(10, np.float32), np.zeros(16, np.float32)
    with pytest.raises(InterpreterError) as info:
        _read_past_the_end[(1,)](x, o, B=16)
    text = "".join(traceback.format_exception(info.value))
    assert text.count("load out of bounds: `x_ptr` + 10") == 1
    assert "# OOB" in text and "During handling" not in text
    assert "tilec/ir/" not in text.replace("\\", "/"), text
