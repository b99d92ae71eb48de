"""Error kinds as Triton's (issue 17, part 4): where Triton refuses a kernel,
tilec raises ``CompilationError`` at the kernel's line, and its message keeps
tilec's advice while holding the words Triton's own tests look for.  Code
written for Triton reads the reason from ``err.__cause__`` (Triton chains its
compile error to the front end's exception): a check's error is its own
cause.  Launch errors are of Triton's types too (``AssertionError`` for
``num_warps=3``, ``OverflowError`` for an integer past 64 bits), still the
``ValueError`` tilec raised before."""
from __future__ import annotations

import inspect
import re
import traceback

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.errors import CompilationError

X = np.zeros(16, np.float32)


@tilec.jit
def bitwise_and_of_floats(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    y = x.to(tl.int8) & x  # MARK
    tl.store(x_ptr + tl.arange(0, 16), y)


@tilec.jit
def division_of_mixed_signedness(x_ptr):
    offs = tl.arange(0, 16)
    q = offs.to(tl.int8) // offs.to(tl.uint8)  # MARK
    tl.store(x_ptr + offs, q)


@tilec.jit
def slice_of_a_tensor(x_ptr):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs[2:], 1.0)  # MARK


@tilec.jit
def slice_of_a_pointer_argument(x_ptr):
    x_ptr[10:]  # MARK


@tilec.jit
def expand_dims_past_the_rank(x_ptr, AXIS: tl.constexpr):
    t = tl.expand_dims(tl.arange(0, 16), AXIS)  # MARK
    tl.store(x_ptr + t, 1.0)


@tilec.jit
def expand_dims_twice_at_one_axis(x_ptr):
    t = tl.expand_dims(tl.arange(0, 16), (0, -3))  # MARK
    tl.store(x_ptr + t, 1.0)


@tilec.jit
def program_id_of_axis_20(x_ptr):
    pid = tl.program_id(20)  # MARK
    tl.store(x_ptr, pid)


@tilec.jit
def num_programs_of_axis_3(x_ptr):
    n = tl.num_programs(3)  # MARK
    tl.store(x_ptr, n)


ERRORS = [
    (bitwise_and_of_floats, {}, "invalid operands of type tile<16xint8> and tile<16xfp32> for `&`"),
    (bitwise_and_of_floats, {}, "it needs integer or boolean operands"),
    (division_of_mixed_signedness, {}, "Cannot use /, // or % with int8 and uint8 because they have different "
                                       "signedness"),
    (slice_of_a_tensor, {}, "unsupported tensor index slice(2, None, None)"),
    (slice_of_a_pointer_argument, {}, "unsupported tensor index slice(10, None, None)"),
    (expand_dims_past_the_rank, {"AXIS": -3}, "invalid axis -3, expected -2 <= axis < 2"),
    (expand_dims_past_the_rank, {"AXIS": 2}, "invalid axis 2"),
    (expand_dims_twice_at_one_axis, {}, "duplicate axes, normalized axes = [0, 0]"),
    (program_id_of_axis_20, {}, "program_id axis must be 0, 1, or 2 but got 20"),
    (num_programs_of_axis_3, {}, "num_programs axis must be 0, 1, or 2 but got 3"),
]


def line_of(kernel) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, text in enumerate(lines) if "# MARK" in text)


@pytest.mark.parametrize("kernel,meta,phrase", ERRORS, ids=[f"{k.__name__}-{p[:24]}" for k, _, p in ERRORS])
def test_a_refused_kernel_says_where_and_holds_tritons_words(kernel, meta, phrase):
    with pytest.raises(CompilationError) as info:
        kernel[(1,)](X, **meta)
    err = info.value
    assert (err.file, err.line) == (__file__, line_of(kernel))
    assert phrase in err.message and phrase in str(err) and "# MARK" in str(err)
    # Triton's tests read the reason from the cause (``str(exc.value.__cause__)``) or ``error_message``.
    assert phrase in str(err.__cause__) and err.error_message == err.message
    text = "".join(traceback.format_exception(err))
    assert text.count(err.message) == 1 and "During handling" not in text and "direct cause" not in text


def test_tritons_patterns_match():
    """The exact patterns of Triton's test_core.py (pytest.raises(match=...) is re.search)."""
    messages = {}
    for kernel, meta, _ in ERRORS:
        with pytest.raises(CompilationError) as info:
            kernel[(1,)](X, **meta)
        messages[kernel.__name__] = str(info.value.__cause__)
    assert re.search("invalid operands of type", messages["bitwise_and_of_floats"])
    assert re.search("Cannot use .* because they have different signedness", messages["division_of_mixed_signedness"])
    assert re.search("unsupported tensor index", messages["slice_of_a_pointer_argument"])
    assert re.search(r"duplicate axes, normalized axes = \[0, 0\]", messages["expand_dims_twice_at_one_axis"])
    assert re.search("program_id axis must be 0, 1, or 2 but got 20", messages["program_id_of_axis_20"])


@tilec.jit
def empty_kernel(x_ptr):
    pass


def test_num_warps_not_a_power_of_2_is_an_assertion_error_as_in_triton_and_a_value_error():
    for kind in (AssertionError, ValueError, tilec.TilecError):
        with pytest.raises(kind, match="num_warps must be a power of 2"):
            empty_kernel[(1,)](X, num_warps=3)
    for warps in (1, 2, 4):
        empty_kernel[(1,)](X, num_warps=warps)


@tilec.jit
def store_value(x_ptr, VALUE):
    tl.store(x_ptr, VALUE)


@pytest.mark.parametrize("value", [2**64, -2**63 - 1, 2**80])
def test_an_integer_past_64_bits_is_an_overflow_error_as_in_triton_and_a_value_error(value):
    for kind in (OverflowError, ValueError):
        with pytest.raises(kind, match=f"argument `VALUE` of kernel `store_value`: integer {value} does not fit "
                                       "in 64 bits"):
            store_value[(1,)](np.zeros(1, np.float64), value)


@pytest.mark.parametrize("value", [2**64 - 1, -2**63])
def test_the_ends_of_64_bits_pass(value):
    out = np.zeros(1, np.float64)
    store_value[(1,)](out, value)
    assert out[0] == float(value)


@tilec.jit
def store_in_either_branch(cond_ptr, a_ptr, b_ptr, out_ptr):
    c = tl.load(cond_ptr + tl.program_id(0))
    tl.store(out_ptr + tl.program_id(0), tl.load(a_ptr)) if c != 0 else tl.store(out_ptr + tl.program_id(0),
                                                                                   tl.load(b_ptr))


def test_a_runtime_conditional_expression_of_two_calls_returning_none_runs_one_of_them():
    cond = np.array([1, 0, 0, 1], np.int32)
    a, b, out = np.array([3.5], np.float32), np.array([-1.25], np.float32), np.zeros(4, np.float32)
    store_in_either_branch[(4,)](cond, a, b, out)
    np.testing.assert_array_equal(out, np.where(cond != 0, a[0], b[0]))
    ptx = store_in_either_branch.compile(cond, a, b, out, target="sm_90").asm["ptx"]
    assert "st.global" in ptx  # LLVM may merge the two stores into one of a selected value


def test_a_compile_error_pickles_and_copies_whole():
    import copy
    import pickle

    with pytest.raises(CompilationError) as info:
        program_id_of_axis_20[(1,)](X)
    for again in (pickle.loads(pickle.dumps(info.value)), copy.copy(info.value)):
        assert type(again) is CompilationError and str(again) == str(info.value)
        assert (again.file, again.line, again.kernel) == (info.value.file, info.value.line, "program_id_of_axis_20")
        assert again.__cause__ is again
