"""The front end's AST visitor: kernels -> IR structure, locations, errors, and
end-to-end runs through the reference interpreter against numpy.

Kernels are plain functions built with ``build_ir`` and hand-made ``ArgSpec``s
(``build(kernel, x=P_F32, n=ir.i32, BLOCK=64)``); every built function is
verified and must survive the text round trip.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec import ir
from tilec.frontend import semantic
from tilec.frontend.control import assigned_names, normalize_returns
from tilec.ast_parse import ArgSpec, build_ir
from tilec.errors import CompilationError
from tilec.ir.interpret import interpret
from tilec.ir.printer import print_function
from tilec.ir.verify import check_roundtrip, verify_function

SOME = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

P_F32 = ir.PointerType(ir.f32)
P_I32 = ir.PointerType(ir.i32)
P_I64 = ir.PointerType(ir.i64)
IR_OF = {np.float32: ir.f32, np.float64: ir.f64, np.int32: ir.i32, np.int64: ir.i64, np.int16: ir.i16}


def build(kernel, **given_specs) -> ir.Function:
    """Build ``kernel``: an ``ir`` type makes a runtime argument, anything else a constexpr."""
    specs = []
    for name in inspect.signature(kernel).parameters:
        v = given_specs[name]
        is_type = isinstance(v, (ir.ScalarType, ir.PointerType, ir.TileType))
        specs.append(ArgSpec(name, v, None) if is_type else ArgSpec(name, None, v))
    fn = build_ir(kernel, specs)
    verify_function(fn)
    check_roundtrip(fn)
    return fn


def ops(fn: ir.Function, name: str) -> list[ir.Op]:
    return [op for op in ir.walk(fn.body) if op.NAME == name]


def line_of(pyfn, marker: str) -> int:
    """The file line of ``pyfn``'s first source line containing ``marker``."""
    lines, first = inspect.getsourcelines(pyfn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


# --------------------------------------------------------------------------- #
# Structure
# --------------------------------------------------------------------------- #

def two_carried(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    count = 0
    for i in range(0, n, BLOCK):
        acc += tl.load(x_ptr + i + offs)
        count += 1
    tl.store(x_ptr + offs, acc + count)


def test_runtime_for_carries_the_names_assigned_in_its_body():
    fn = build(two_carried, x_ptr=P_F32, n=ir.i32, BLOCK=16)
    (loop,) = ops(fn, "for")
    assert [str(r.type) for r in loop.results] == ["tile<16xf32>", "i32"]
    assert [a.name for a in loop.body.args] == ["i", "acc", "count"]
    assert loop.body.terminator.values[0].owner.NAME == "add"
    # offs is read but not assigned in the body: not carried
    assert fn.arg_names == ["x_ptr", "n"]


def pick_branch(x_ptr, FLAG: tl.constexpr):
    if FLAG and 1 < 2:
        tl.store(x_ptr, 1.0)
    else:
        tl.store(x_ptr, 2.0)


@pytest.mark.parametrize("flag, stored", [(True, 1.0), (False, 2.0)])
def test_constexpr_if_picks_a_branch_without_ir(flag, stored):
    fn = build(pick_branch, x_ptr=P_F32, FLAG=flag)
    assert not ops(fn, "if")
    (store,) = ops(fn, "store")
    assert store.value.owner.value == stored


def unrolled(x_ptr):
    v = tl.load(x_ptr)
    for k in tl.static_range(1, 9, 2):
        v = v * k
    tl.store(x_ptr, v)


def test_static_range_unrolls_with_a_constexpr_variable():
    fn = build(unrolled, x_ptr=P_F32)
    muls = ops(fn, "mul")
    assert len(muls) == 4 and not ops(fn, "for")
    assert [m.rhs.owner.value for m in muls] == [1.0, 3.0, 5.0, 7.0]


def located(x_ptr):
    v = tl.load(x_ptr)
    w = v + 1.0
    tl.store(x_ptr, w)


def test_every_op_points_at_the_users_line_and_column():
    fn = build(located, x_ptr=P_F32)
    (add,), (store,), (load,) = ops(fn, "add"), ops(fn, "store"), ops(fn, "load")
    assert add.loc.file == __file__
    assert add.loc.line == line_of(located, "w = v + 1.0")
    assert load.loc.line == line_of(located, "v = tl.load")
    assert store.loc.line == line_of(located, "tl.store(x_ptr, w)")
    assert add.loc.col == 8  # `v + 1.0` starts after four spaces of indent and `w = `
    assert fn.loc.line == line_of(located, "def located")


def test_arg_specs_give_arg_names_attrs_and_fold_constexprs():
    def kernel(a_ptr, n, SCALE: tl.constexpr, m):
        tl.store(a_ptr, (n + m) * SCALE)
    specs = [ArgSpec("a_ptr", P_I32, attrs=(("divisibility", 16),)), ArgSpec("n", ir.i32),
             ArgSpec("SCALE", None, tl.constexpr(3)), ArgSpec("m", ir.i32, attrs=(("divisibility", 16),))]
    fn = build_ir(kernel, specs)
    verify_function(fn)
    assert fn.arg_names == ["a_ptr", "n", "m"]
    assert fn.arg_attrs == [{"divisibility": 16}, {}, {"divisibility": 16}]
    assert [a.type for a in fn.args] == [P_I32, ir.i32, ir.i32]
    assert ops(fn, "mul")[0].rhs.owner.value == 3


@tilec.jit
def first_positive(a, b):
    if a > 0:
        return a
    if b > 0:
        return b
    return a * 0


def early_return(x_ptr):
    tl.store(x_ptr, first_positive(tl.load(x_ptr), tl.load(x_ptr + 1)))


def test_early_returns_become_nested_ifs_yielding_the_value():
    fn = build(early_return, x_ptr=P_F32)
    outer, inner = ops(fn, "if")
    assert [str(r.type) for r in outer.results] == ["f32"] == [str(r.type) for r in inner.results]
    assert inner in outer.else_body.ops  # the second `if` runs only when the first did not return
    (store,) = ops(fn, "store")
    assert store.value is outer.result


def test_normalize_returns_moves_the_rest_into_both_branches():
    import ast
    body = ast.parse("a = 1\nif c:\n    return x\nb = 2\nreturn b\nunreachable()").body
    a, branch = normalize_returns(body)
    assert ast.unparse(branch) == "if c:\n    return x\nelse:\n    b = 2\n    return b"
    assert assigned_names(body) == ["a", "b"]


def runtime_ternary(x_ptr):
    v = tl.load(x_ptr)
    tl.store(x_ptr, v if v > 0 else -v)


def test_runtime_conditional_expression_is_an_if_with_one_result():
    fn = build(runtime_ternary, x_ptr=P_F32)
    (branch,) = ops(fn, "if")
    assert len(branch.results) == 1 and branch.result.type == ir.f32
    assert ops(fn, "neg")[0] in branch.else_body.ops


def tuples(x_ptr, SHAPE: tl.constexpr):
    pair = tl.load(x_ptr + tl.arange(0, 8)[:, None] * 2 + tl.arange(0, 2)[None, :])
    lo, hi = tl.split(pair)
    (m, n), k = SHAPE, len(SHAPE)
    tl.store(x_ptr + tl.arange(0, 8), lo * SHAPE[0] + hi * (m + n + k))


def test_tuples_unpack_index_and_len_at_compile_time():
    fn = build(tuples, x_ptr=P_F32, SHAPE=(3, 4))
    assert len(ops(fn, "split")) == 1
    assert sorted(op.value for op in ops(fn, "constant") if op.value in (3.0, 9.0)) == [3.0, 9.0]


def chained(x_ptr, n, LO: tl.constexpr, HI: tl.constexpr):
    i = tl.arange(0, 16)
    folded = LO < 5 <= HI
    tl.store(x_ptr + i, 1.0, mask=(LO <= i < n) if folded else i < n)


@pytest.mark.parametrize("lo, hi, compares", [(0, 9, 2), (7, 9, 1), (0, 3, 1)])
def test_chained_comparisons_fold_on_constexprs_and_combine_on_tensors(lo, hi, compares):
    fn = build(chained, x_ptr=P_F32, n=ir.i32, LO=lo, HI=hi)
    assert len(ops(fn, "cmp")) == compares
    assert len(ops(fn, "and")) == compares - 1


def mixed_bounds(x_ptr, start, stop):
    acc = 0
    for i in tl.range(start, stop, 3, num_stages=2, loop_unroll_factor=4):
        acc += 1
    tl.store(x_ptr, acc)


def test_loop_bounds_of_mixed_widths_become_i64():
    fn = build(mixed_bounds, x_ptr=P_I32, start=ir.i32, stop=ir.i64)
    (loop,) = ops(fn, "for")
    assert loop.lower.type == loop.upper.type == loop.step.type == ir.i64
    assert loop.body.args[0].type == ir.i64
    assert [c.to for c in ops(fn, "cast")][:2] == [ir.i64, ir.i64]  # start and the step constant


N_GLOBAL = tl.constexpr(5)
SCALE_GLOBAL = 2.5


@tilec.jit
def scaled(x, factor: tl.constexpr = SCALE_GLOBAL, *, shift=N_GLOBAL):
    return x * factor + shift


def globals_and_defaults(x_ptr):
    offset = 7
    y = scaled(tl.load(x_ptr), shift=offset)
    tl.store(x_ptr, scaled(y, 4.0))


def test_globals_closures_and_jit_defaults_are_constexprs():
    fn = build(globals_and_defaults, x_ptr=P_F32)
    assert [op.value for op in ops(fn, "constant")] == [2.5, 7.0, 4.0, 5.0]


def test_closure_variables_are_read():
    factor = 3

    def kernel(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) * factor)
    assert [op.value for op in ops(build(kernel, x_ptr=P_F32), "constant")] == [3.0]


def python_min_max(x_ptr, LO: tl.constexpr, HI: tl.constexpr):
    v = tl.load(x_ptr)
    tl.store(x_ptr, max(min(v, HI, 2 * HI), abs(LO)) + min(LO, HI) + abs(-LO))


def test_python_min_max_abs_fold_on_constexprs_and_become_tl_calls_on_tensors():
    fn = build(python_min_max, x_ptr=P_F32, LO=-3, HI=5)
    assert len(ops(fn, "minimum")) == 2 and len(ops(fn, "maximum")) == 1
    assert sorted(op.value for op in ops(fn, "constant")) == [-3.0, 3.0, 3.0, 5.0, 10.0]


def tuple_loop(x_ptr, NAMES: tl.constexpr, SKIP: tl.constexpr):
    v = tl.load(x_ptr)
    for scale in (2.0, 3.0):
        v = v * scale
    while SKIP:
        v = v + 1.0
    tl.static_assert(len(NAMES) == 2, f"got {len(NAMES)!r} names: {NAMES}")
    tl.static_print("compile-time", len(NAMES))
    tl.store(x_ptr, getattr(v, "to")(tl.float32))


def test_tuple_loops_unroll_and_compile_time_messages_format(capsys):
    fn = build(tuple_loop, x_ptr=P_F32, NAMES=("a", "b"), SKIP=False)
    assert [m.rhs.owner.value for m in ops(fn, "mul")] == [2.0, 3.0] and not ops(fn, "while")
    assert "compile-time 2" in capsys.readouterr().out
    with pytest.raises(CompilationError, match=r"got 3 names: \('a', 'b', 'c'\)") as info:
        build(tuple_loop, x_ptr=P_F32, NAMES=("a", "b", "c"), SKIP=False)
    assert info.value.line == line_of(tuple_loop, "tl.static_assert")


def while_counter(x_ptr, n):
    k = 0
    total = 0
    while k < n:
        total += k
        k += 1
    tl.store(x_ptr, total)


def test_while_carries_through_before_and_after_regions():
    fn = build(while_counter, x_ptr=P_I32, n=ir.i32)
    (loop,) = ops(fn, "while")
    assert [a.name for a in loop.before.args] == ["total", "k"]
    assert loop.before.terminator.NAME == "condition"
    assert [r.type for r in loop.results] == [ir.i32, ir.i32]


def test_printed_ir_names_values_after_variables():
    text = print_function(build(while_counter, x_ptr=P_I32, n=ir.i32))
    assert "%total, %k = while" in text and "store %x_ptr, %total" in text


# --------------------------------------------------------------------------- #
# Compile-time evaluation matches Python
# --------------------------------------------------------------------------- #

FOLDED_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
              "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "and": lambda a, b: a & b,
              "xor": lambda a, b: a ^ b, "min": min, "lt": lambda a, b: a < b}


def fold_kernel(out_ptr, A: tl.constexpr, B: tl.constexpr, OP: tl.constexpr):
    if OP == "add":
        r = A + B
    elif OP == "sub":
        r = A - B
    elif OP == "mul":
        r = A * B
    elif OP == "floordiv":
        r = A // B
    elif OP == "mod":
        r = A % B
    elif OP == "and":
        r = A & B
    elif OP == "xor":
        r = A ^ B
    elif OP == "min":
        r = min(A, B)
    else:
        r = A < B
    tl.store(out_ptr, int(r))


@SOME
@given(a=st.integers(-2**31, 2**31) | st.sampled_from([0, -1, 2**31 - 1, -2**31]),
       b=st.integers(-2**31, 2**31).filter(bool) | st.sampled_from([1, -1, 2**31 - 1]),
       op=st.sampled_from(sorted(FOLDED_OPS)))
def test_constexpr_expressions_fold_with_python_semantics(a, b, op):
    fn = build(fold_kernel, out_ptr=P_I64, A=a, B=b, OP=op)
    expected = int(FOLDED_OPS[op](a, b))
    assert not ops(fn, "if") and not ops(fn, "add")
    assert [c.value for c in ops(fn, "constant")] == [expected]


# --------------------------------------------------------------------------- #
# End to end through the interpreter
# --------------------------------------------------------------------------- #

def block_sums(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=x_ptr.dtype.element_ty)
    for start in range(0, n, BLOCK):
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0)
    tl.store(out_ptr + offs, acc)


@SOME
@given(n=st.integers(1, 300), block=st.sampled_from([8, 32]), dtype=st.sampled_from(sorted(IR_OF, key=str)),
       data=st.data())
def test_runtime_loop_sums_blocks_like_numpy(n, block, dtype, data):
    bound = 2**14 if np.issubdtype(dtype, np.integer) else 10**6
    x = np.array(data.draw(st.lists(st.integers(-bound, bound), min_size=n, max_size=n)), dtype)
    out = np.zeros(block, dtype)
    fn = build(block_sums, x_ptr=ir.PointerType(IR_OF[dtype]), out_ptr=ir.PointerType(IR_OF[dtype]), n=ir.i32,
               BLOCK=block)
    interpret(fn, (1,), [x, out, n])
    padded = np.concatenate([x, np.zeros(-n % block, dtype)]).reshape(-1, block)
    np.testing.assert_array_equal(out, np.add.reduce(padded, axis=0, dtype=dtype))


def triangle(n_ptr, out_ptr):
    pid = tl.program_id(0)
    n = tl.load(n_ptr + pid)
    k = 0
    total = 0
    while k < n:
        total += k
        k += 1
    if total > 100:
        total = total - 100
    tl.store(out_ptr + pid, total)


@SOME
@given(ns=st.lists(st.integers(-5, 40), min_size=1, max_size=12))
def test_while_and_if_per_program_match_python(ns):
    n = np.array(ns, np.int32)
    out = np.full(len(ns), -1, np.int32)
    interpret(build(triangle, n_ptr=P_I32, out_ptr=P_I32), (len(ns),), [n, out])
    tri = [max(v, 0) * (max(v, 0) - 1) // 2 for v in ns]
    assert out.tolist() == [t - 100 if t > 100 else t for t in tri]


def even_odd_sums(x_ptr, out_ptr, n):
    even = 0
    odd = 0
    for i in range(n):
        v = tl.load(x_ptr + i)
        if i % 2 == 0:
            even += v
        else:
            odd = odd + v
    tl.store(out_ptr, even)
    tl.store(out_ptr + 1, odd)


@SOME
@given(x=st.lists(st.integers(-2**20, 2**20), max_size=40))
def test_if_inside_a_loop_updates_carried_values(x):
    arr, out = np.array(x + [0], np.int32), np.zeros(2, np.int32)
    fn = build(even_odd_sums, x_ptr=P_I32, out_ptr=P_I32, n=ir.i32)
    assert len(ops(fn, "if")) == 1 and len(ops(fn, "for")[0].results) == 2
    interpret(fn, (1,), [arr, out, len(x)])
    assert out.tolist() == [sum(x[0::2]), sum(x[1::2])]


@tilec.jit
def clamp_low(x, lo):
    if x < lo:
        return lo + x * 0
    return x


def clamp_kernel(x_ptr, LO: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(x_ptr + pid, clamp_low(tl.load(x_ptr + pid), LO * 1.0))


@SOME
@given(x=st.lists(st.floats(-1e6, 1e6, width=32), min_size=1, max_size=20), lo=st.integers(-3, 3))
def test_inlined_function_with_early_return_matches_python(x, lo):
    arr = np.array(x, np.float32)
    interpret(build(clamp_kernel, x_ptr=P_F32, LO=lo), (len(x),), [arr])
    np.testing.assert_array_equal(arr, np.maximum(np.array(x, np.float32), lo))


# --------------------------------------------------------------------------- #
# Errors: each names the file and line, quotes it with a caret, and says what to do
# --------------------------------------------------------------------------- #

MUTABLE_GLOBAL = [1, 2, 3]


def not_jit(x):
    return x


@tilec.jit
def recursive(x):
    return recursive(x)  # MARK


@tilec.jit
def value_on_some_paths(v):
    if v > 0:  # MARK
        return
    return v


def err_break(x_ptr, n):
    for i in range(n):
        break  # MARK


def err_continue(x_ptr, n):
    for i in range(n):
        continue  # MARK


def err_lambda(x_ptr):
    f = lambda v: v  # MARK  # noqa: E731


def err_comprehension(x_ptr):
    t = [i for i in (1, 2)]  # MARK


def err_try(x_ptr):
    try:  # MARK
        pass
    except Exception:
        pass


def err_with(x_ptr):
    with x_ptr:  # MARK
        pass


def err_global(x_ptr):
    global MUTABLE_GLOBAL  # MARK


def err_assert(x_ptr):
    assert x_ptr  # MARK


def err_nested_def(x_ptr):
    def helper():  # MARK
        pass


def err_class(x_ptr):
    class K:  # MARK
        pass


def err_starred(x_ptr):
    a, *b = (1, 2, 3)  # MARK


def err_slice(x_ptr):
    v = tl.load(x_ptr + tl.arange(0, 8))[2:4]  # MARK


def err_is_tensor(x_ptr):
    v = tl.load(x_ptr)
    t = v is v  # MARK


def err_return_in_loop(x_ptr, n):
    for i in range(n):
        return  # MARK


def err_carried_type(x_ptr, n):
    acc = 0
    for i in range(n):  # MARK
        acc += tl.load(x_ptr)


def err_branch_types(x_ptr):
    v = tl.load(x_ptr)
    if v > 0:  # MARK
        w = 1
    else:
        w = v


def err_mutable_global(x_ptr):
    t = MUTABLE_GLOBAL  # MARK


def err_undefined(x_ptr):
    t = undefined_name  # MARK  # noqa: F821


def err_unsupported_builtin(x_ptr):
    t = sum((1, 2))  # MARK


def err_plain_function(x_ptr):
    t = not_jit(x_ptr)  # MARK


def err_recursion(x_ptr):
    recursive(x_ptr)  # MARK


def err_while_true(x_ptr):
    while True:  # MARK
        pass


def err_for_else(x_ptr, n):
    for i in range(n):
        pass
    else:
        pass  # MARK


def err_matmul(x_ptr):
    v = tl.load(x_ptr) @ tl.load(x_ptr)  # MARK


def err_tensor_int(x_ptr):
    v = int(tl.load(x_ptr))  # MARK


def err_unpack(x_ptr):
    a, b = (1, 2, 3)  # MARK


def err_tile_condition(x_ptr):
    if tl.load(x_ptr + tl.arange(0, 4)) > 0:  # MARK
        pass


def err_store_subscript(x_ptr):
    v = tl.load(x_ptr + tl.arange(0, 4))
    v[0] = 1  # MARK


def err_kernel_returns(x_ptr):
    return 1  # MARK


def err_some_paths(x_ptr):
    value_on_some_paths(tl.load(x_ptr))


def err_iterable(x_ptr):
    for i in 3:  # MARK
        pass


def err_zero_step(x_ptr, n):
    for i in range(0, n, 0):  # MARK
        pass


def err_div_zero(x_ptr):
    t = 1 // 0  # MARK


def err_fstring_tensor(x_ptr):
    tl.static_print(f"{tl.load(x_ptr)}")  # MARK


ERRORS = [
    (err_break, "`break` is not supported in a kernel; end the loop through its condition"),
    (err_continue, "`continue` is not supported in a kernel; put the rest of the loop body under"),
    (err_lambda, "lambda is not supported"),
    (err_comprehension, "comprehensions are not supported"),
    (err_try, "try/except is not supported"),
    (err_with, "`with` is not supported"),
    (err_global, "`global` is not supported"),
    (err_assert, "use tl.static_assert(cond, msg) for compile-time checks or tl.device_assert"),
    (err_nested_def, "nested function definitions are not supported"),
    (err_class, "class definitions are not supported"),
    (err_starred, "starred assignment is not supported; index the tuple instead"),
    (err_slice, "a tensor can only be indexed with `:` and `None`"),
    (err_is_tensor, "`is` / `in` cannot test tensors"),
    (err_return_in_loop, "`return` inside a loop is not supported"),
    (err_carried_type, "loop-carried variable `acc` has type i32 before the loop but f32 after one iteration"),
    (err_branch_types, "`w` has type i32 in the then-branch but f32 in the else-branch"),
    (err_mutable_global, "global `MUTABLE_GLOBAL` is a list, which may change after compilation"),
    (err_undefined, "name `undefined_name` is not defined"),
    (err_unsupported_builtin, "Python builtin `sum` is not supported in a kernel"),
    (err_plain_function, "`not_jit` is a plain Python function; define it with `def` and decorate it"),
    (err_recursion, "recursive call of `recursive` is not supported", recursive),
    (err_while_true, "this while loop never ends"),
    (err_for_else, "`else` on a loop is not supported"),
    (err_matmul, "use tl.dot(a, b)"),
    (err_tensor_int, "`int()` runs at compile time and cannot take a tensor; use x.to(tl.int32)"),
    (err_unpack, "cannot unpack 3 values into 2 names"),
    (err_tile_condition, "tl.where"),
    (err_store_subscript, "cannot assign to this target"),
    (err_kernel_returns, "a kernel cannot return a value"),
    (err_some_paths, "returns a value on some paths but not on others", value_on_some_paths),
    (err_iterable, "a for loop must iterate over range(...)"),
    (err_zero_step, "the step of a loop cannot be zero"),
    (err_div_zero, "compile-time evaluation failed: ZeroDivisionError"),
    (err_fstring_tensor, "an f-string can only format compile-time values"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[case[0].__name__ for case in ERRORS])
def test_unsupported_constructs_report_the_users_line(case):
    kernel, message, where = (*case, case[0])[:3]  # where: the function holding the `# MARK` line
    specs = {name: ir.i32 if name == "n" else P_F32 for name in inspect.signature(kernel).parameters}
    with pytest.raises(CompilationError) as info:
        build(kernel, **specs)
    e, text = info.value, str(info.value)
    assert message in e.message
    assert (e.file, e.line) == (__file__, line_of(where, "MARK"))
    assert text.startswith(f"{__file__}:{e.line}: ") and f"(in kernel `{kernel.__name__}`)" in text
    assert "# MARK" in text and text.rstrip().endswith("^")


def test_internal_failures_are_wrapped_at_the_users_line(monkeypatch):
    def broken(ctx, *args, **kwargs):
        raise KeyError("oops")
    monkeypatch.setattr(semantic, "unary", broken)
    with pytest.raises(CompilationError) as info:
        build(runtime_ternary, x_ptr=P_F32)
    assert info.value.line == line_of(runtime_ternary, "v if v > 0 else -v")
    assert "internal error" in info.value.message and isinstance(info.value.__cause__, KeyError)


def test_constexpr_parameter_of_an_inlined_function_rejects_tensors():
    @tilec.jit
    def needs_constant(x, K: "tl.constexpr"):
        return x * K

    def kernel(x_ptr):
        tl.store(x_ptr, needs_constant(1.0, tl.load(x_ptr)))  # MARK
    with pytest.raises(CompilationError, match="argument `K` of `needs_constant` is tl.constexpr") as info:
        build(kernel, x_ptr=P_F32)
    assert info.value.line == line_of(kernel, "MARK")


def test_specs_must_match_the_parameters():
    with pytest.raises(TypeError, match="has parameters"):
        build_ir(located, [ArgSpec("y", P_F32)])
    with pytest.raises(TypeError, match="is tl.constexpr but has a runtime spec"):
        build_ir(pick_branch, [ArgSpec("x_ptr", P_F32), ArgSpec("FLAG", ir.i1)])


# --- the package and its source reader ----------------------------------------
def test_no_front_end_module_is_named_like_a_standard_library_one():
    import pkgutil
    import sys

    import tilec.frontend

    names = {m.name for m in pkgutil.iter_modules(tilec.frontend.__path__)}
    assert names and names.isdisjoint(sys.stdlib_module_names)


def test_a_function_is_read_once_for_the_front_end_the_cache_and_src():
    from tilec.frontend.source import closure_values, read_source
    from tilec.launch import cache

    scale = 3.0

    @tilec.jit
    def nested(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) * scale)  # MARK

    source = read_source(nested.fn)
    assert source is read_source(nested.fn) and source.file == __file__
    assert source.text.lstrip().startswith("@tilec.jit") and nested.src.startswith("def nested(x_ptr):\n")
    store = source.function_def.body[0]
    assert (source.loc(store).line, source.loc(store).col) == (line_of(nested.fn, "MARK"), source.indent + 4)
    assert closure_values(nested.fn) == {"scale": 3.0}
    refs = {(r.name, r.attrs, r.in_closure) for r in cache.outside_references(nested.fn)}
    assert refs == {("tl", ("store",), False), ("tl", ("load",), False), ("scale", (), True)}
