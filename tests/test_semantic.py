"""The typing rules of ``tilec.frontend.semantic`` and the IR ``tilec.frontend.tl_ops`` builds.

* The promotion table for ``+`` on every pair of dtypes, written out by hand
  from Triton's rules, and the weak typing of Python numbers.
* Broadcasting against numpy's ``broadcast_shapes`` on random shapes.
* User errors: each names what is wrong.
* End to end (visitor + interpreter, through ``kernel[grid](...)``): the
  trickiest builtins -- argmax ties, ``tl.reduce`` with a custom combiner,
  split/join, ``dot`` ``out_dtype``, C division, stores that convert.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec import ir
from tilec.frontend import semantic
from tilec.errors import CompilationError

SETTINGS = settings(max_examples=30, deadline=None)

# --------------------------------------------------------------------------- #
# A context without the visitor: a builder and an error that raises.
# --------------------------------------------------------------------------- #


class FakeCtx:
    """What semantic/builtins need from the visitor, minus source locations."""

    def __init__(self):
        self.builder = ir.Builder()

    def error(self, msg):
        raise CompilationError("<test>", 0, 0, msg)

    def arg(self, t) -> semantic.Tensor:
        return semantic.Tensor(self.builder.block.add_arg(t))


def tile(ctx, elem, shape=(4,)):
    return ctx.arg(ir.with_shape(elem, shape))


# --------------------------------------------------------------------------- #
# Promotion: every dtype pair of ``+``, hand-written from Triton's rules
# --------------------------------------------------------------------------- #

ORDER = "i1 i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64".split()

# Row = lhs, column = rhs (same order as ORDER).  Ints follow C's usual
# conversions; f16 beats bf16 (Triton checks f16 first); bf16 with anything
# but bf16/f16 computes in f32.
ADD_TABLE = """
i1   i1   i8   i16  i32  i64  u8   u16  u32  u64  f16  f32  f32  f64
i8   i8   i8   i16  i32  i64  u8   u16  u32  u64  f16  f32  f32  f64
i16  i16  i16  i16  i32  i64  i16  u16  u32  u64  f16  f32  f32  f64
i32  i32  i32  i32  i32  i64  i32  i32  u32  u64  f16  f32  f32  f64
i64  i64  i64  i64  i64  i64  i64  i64  i64  u64  f16  f32  f32  f64
u8   u8   u8   i16  i32  i64  u8   u16  u32  u64  f16  f32  f32  f64
u16  u16  u16  u16  i32  i64  u16  u16  u32  u64  f16  f32  f32  f64
u32  u32  u32  u32  u32  i64  u32  u32  u32  u64  f16  f32  f32  f64
u64  u64  u64  u64  u64  u64  u64  u64  u64  u64  f16  f32  f32  f64
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f64
bf16 f32  f32  f32  f32  f32  f32  f32  f32  f32  f16  bf16 f32  f64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
"""


def add_table() -> dict:
    rows = [line.split() for line in ADD_TABLE.strip().splitlines()]
    return {(row[0], rhs): result for row in rows for rhs, result in zip(ORDER, row[1:])}


@pytest.mark.parametrize("lhs,rhs,expected", [(a, b, r) for (a, b), r in add_table().items()])
def test_add_promotes_every_pair(lhs, rhs, expected):
    ctx = FakeCtx()
    got = semantic.binary(ctx, "add", tile(ctx, ir.SCALAR_TYPES[lhs]), tile(ctx, ir.SCALAR_TYPES[rhs]))
    assert got.type == ir.TileType((4,), ir.SCALAR_TYPES[expected])


def test_table_is_symmetric():
    table = add_table()
    assert all(table[a, b] == table[b, a] for a in ORDER for b in ORDER)


# (tensor dtype, op, Python number, result dtype): numbers are weak.
WEAK_CASES = [
    ("i8", "add", 1, "i8"), ("i8", "mul", -128, "i8"), ("u8", "add", 255, "u8"), ("i16", "sub", 7, "i16"),
    ("i64", "add", 2 ** 40, "i64"), ("u32", "add", 2 ** 31 + 5, "u32"), ("u64", "add", 2 ** 63, "u64"),
    ("i8", "add", 1.0, "f32"), ("i64", "mul", 0.5, "f32"), ("i1", "add", 1, "i32"), ("i1", "and", True, "i1"),
    ("f16", "mul", 2.0, "f16"), ("bf16", "add", 2.0, "bf16"), ("f16", "add", 1, "f16"),
    ("f32", "add", 1e300, "f32"), ("f64", "add", 1, "f64"),
    ("f16", "truediv", 2.0, "f32"), ("bf16", "mod", 2.0, "f32"), ("i32", "truediv", 2, "f32"),
    ("i8", "floordiv", 3, "i8"), ("u16", "mod", 3, "u16"), ("i8", "lshift", 3, "i8"), ("u8", "xor", 255, "u8"),
]


@pytest.mark.parametrize("dtype,op,number,expected", WEAK_CASES)
def test_python_numbers_are_weak(dtype, op, number, expected):
    for swapped in (False, True):
        ctx = FakeCtx()
        x = tile(ctx, ir.SCALAR_TYPES[dtype])
        got = semantic.binary(ctx, op, number, x) if swapped else semantic.binary(ctx, op, x, number)
        assert got.elem == ir.SCALAR_TYPES[expected], (op, swapped)


@pytest.mark.parametrize("value,expected", [
    (True, "i1"), (0, "i32"), (-2 ** 31, "i32"), (2 ** 31 - 1, "i32"), (2 ** 31, "u32"), (2 ** 32 - 1, "u32"),
    (2 ** 32, "i64"), (-2 ** 31 - 1, "i64"), (2 ** 64 - 1, "u64"), (1.5, "f32"), (1e300, "f64"), (1e-300, "f64"),
    (float("inf"), "f32"), (float("nan"), "f32"), (0.0, "f32"),
])
def test_literal_types(value, expected):
    assert semantic.literal_type(value) == ir.SCALAR_TYPES[expected]


@pytest.mark.parametrize("dtype,op,number,message", [
    ("i8", "add", 1000, "1000 is out of range for int8"),
    ("i32", "add", 2 ** 31, "out of range for int32"),
    ("u8", "add", -1, "negative number -1"),
    ("u32", "mod", -3, "negative number -3"),
    ("f32", "floordiv", 2.0, "`//` is defined on integers only"),
    ("f32", "and", 1, "needs integer or boolean operands"),
    ("i32", "pow", 2, r"`\*\*` is not supported"),
])
def test_weak_operand_errors(dtype, op, number, message):
    ctx = FakeCtx()
    with pytest.raises(CompilationError, match=message):
        semantic.binary(ctx, op, tile(ctx, ir.SCALAR_TYPES[dtype]), number)


@pytest.mark.parametrize("op", ["truediv", "floordiv", "mod"])
def test_division_refuses_mixed_signedness(op):
    ctx = FakeCtx()
    with pytest.raises(CompilationError, match="signedness differs"):
        semantic.binary(ctx, op, tile(ctx, ir.i32), tile(ctx, ir.u32))


def test_pointer_arithmetic():
    ctx = FakeCtx()
    p = ctx.arg(ir.PointerType(ir.f16))
    offs = tile(ctx, ir.i32, (8,))
    moved = semantic.binary(ctx, "add", offs, p)
    assert moved.type == ir.TileType((8,), ir.PointerType(ir.f16))
    assert isinstance(moved.handle.owner, ir.AddPtr)
    back = semantic.binary(ctx, "sub", moved, 3)
    assert back.type == moved.type and isinstance(back.handle.owner.offset.owner, ir.Neg)
    unsigned = semantic.binary(ctx, "add", p, tile(ctx, ir.u32, (8,)))
    assert unsigned.handle.owner.offset.type == ir.TileType((8,), ir.i64)  # zero-extended
    for op, rhs, message in [("add", p, "cannot add two pointers"), ("add", 1.5, "pointer and a float"),
                             ("mul", 2, "not defined on pointers"), ("sub", p, "cannot subtract a pointer")]:
        with pytest.raises(CompilationError, match=message):
            semantic.binary(ctx, op, p, rhs)


def test_comparisons_and_unary():
    ctx = FakeCtx()
    x = tile(ctx, ir.u8)
    assert semantic.compare(ctx, "lt", x, 3).type == ir.TileType((4,), ir.i1)
    assert semantic.compare(ctx, "ge", x, 3.5).handle.owner.lhs.type == ir.TileType((4,), ir.f32)
    assert semantic.unary(ctx, "neg", x).type == x.type
    assert semantic.unary(ctx, "not", x).type == ir.TileType((4,), ir.i1)
    with pytest.raises(CompilationError, match="`~` needs an integer"):
        semantic.unary(ctx, "invert", tile(ctx, ir.f32))


# --------------------------------------------------------------------------- #
# Broadcasting
# --------------------------------------------------------------------------- #

shapes = st.lists(st.sampled_from([1, 2, 3, 5]), min_size=0, max_size=4).map(tuple)


@SETTINGS
@given(shapes, shapes)
def test_broadcast_shapes_match_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(semantic.TypingError, match=rf"shapes {a!r} and {b!r}".replace("(", r"\(")
                           .replace(")", r"\)")):
            semantic.broadcast_shapes(a, b)
        return
    assert semantic.broadcast_shapes(a, b) == expected


@SETTINGS
@given(shapes.filter(bool), shapes.filter(bool))
def test_binary_result_shape_is_broadcast(a, b):
    ctx = FakeCtx()
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(CompilationError, match="cannot be broadcast together"):
            semantic.binary(ctx, "add", tile(ctx, ir.f32, a), tile(ctx, ir.i16, b))
        return
    assert semantic.binary(ctx, "add", tile(ctx, ir.f32, a), tile(ctx, ir.i16, b)).shape == expected


def test_subscript_adds_dims():
    ctx = FakeCtx()
    x = tile(ctx, ir.i32, (8,))
    assert semantic.subscript(ctx, x, (None, slice(None))).shape == (1, 8)
    assert semantic.subscript(ctx, x, (slice(None), None)).shape == (8, 1)
    assert semantic.subscript(ctx, x, None).shape == (1, 8)
    with pytest.raises(CompilationError, match="only be indexed with None"):
        semantic.subscript(ctx, x, 3)


def test_attributes():
    ctx = FakeCtx()
    x = tile(ctx, ir.f16, (4, 8))
    assert semantic.attribute(ctx, x, "dtype") == tl.float16
    assert semantic.attribute(ctx, x, "shape") == (4, 8)
    assert semantic.attribute(ctx, x, "T").shape == (8, 4)
    p = ctx.arg(ir.PointerType(ir.bf16))
    assert semantic.attribute(ctx, p, "dtype").element_ty == tl.bfloat16
    method = semantic.attribute(ctx, x, "to")
    assert method.call(ctx, [tl.float32], {}).type == ir.TileType((4, 8), ir.f32)
    with pytest.raises(CompilationError, match="no attribute 'foo'"):
        semantic.attribute(ctx, x, "foo")


def test_casts_follow_triton():
    ctx = FakeCtx()
    x = tile(ctx, ir.f32)
    assert isinstance(semantic.cast_to(ctx, x, ir.i1).handle.owner, ir.Compare)  # != 0
    assert semantic.cast_to(ctx, x, ir.f16, "rtz").handle.owner.rounding == "rtz"
    # Helpers raise TypingError; call_builtin and the operator entry points report it at the user's line.
    with pytest.raises(semantic.TypingError, match="only to float narrowing"):
        semantic.cast_to(ctx, x, ir.f64, "rtz")
    with pytest.raises(semantic.TypingError, match="widths must match"):
        semantic.bitcast_to(ctx, x, ir.i16)
    with pytest.raises(semantic.TypingError, match="pointers convert only"):
        semantic.cast_to(ctx, ctx.arg(ir.PointerType(ir.f32)), ir.i32)


# --------------------------------------------------------------------------- #
# Builtin argument errors (through call_builtin)
# --------------------------------------------------------------------------- #

def call(ctx, fn, *args, **kwargs):
    from tilec.frontend.tl_ops import call_builtin
    return call_builtin(ctx, fn, list(args), kwargs)


@pytest.mark.parametrize("make,message", [
    (lambda c: call(c, tl.arange, 0, 10), "length 10 must be a power of two"),
    (lambda c: call(c, tl.arange, 4, 4), "end must be greater than start"),
    (lambda c: call(c, tl.arange, 0, tile(c, ir.i32, ())), "must be a constexpr int"),
    (lambda c: call(c, tl.load, tile(c, ir.i32, ())), "`tl.load` needs a pointer, got int32"),
    (lambda c: call(c, tl.load, c.arg(ir.PointerType(ir.f32)), boundary_check=(0,)), "are for block pointers"),
    (lambda c: call(c, tl.load, tile(c, ir.PointerType(ir.f32), (4,)), mask=tile(c, ir.i1, (8,))),
     r"mask of shape \(8,\) does not fit the pointer's shape \(4,\)"),
    (lambda c: call(c, tl.load, tile(c, ir.PointerType(ir.f32), (4,)), mask=tile(c, ir.i32, (4,))),
     "must be a boolean"),
    (lambda c: call(c, tl.store, c.arg(ir.PointerType(ir.f32)), tile(c, ir.f32, (4,))), "does not fit"),
    (lambda c: call(c, tl.dot, tile(c, ir.f16, (16, 32)), tile(c, ir.f16, (16, 16))), "inner dimensions differ"),
    (lambda c: call(c, tl.dot, tile(c, ir.f16, (16,)), tile(c, ir.f16, (16, 16))), "2-D"),
    (lambda c: call(c, tl.dot, tile(c, ir.f16, (8, 16)), tile(c, ir.f16, (16, 16))), "M=8"),
    (lambda c: call(c, tl.dot, tile(c, ir.f16, (16, 16)), tile(c, ir.f32, (16, 16))), "share a dtype"),
    (lambda c: call(c, tl.sum, tile(c, ir.f32, (4, 4)), axis=tile(c, ir.i32, ())), "constexpr int"),
    (lambda c: call(c, tl.sum, tile(c, ir.f32, (4, 4)), axis=2), "out of range"),
    (lambda c: call(c, tl.exp, tile(c, ir.i32)), r"takes floating-point values, got tile<4xint32>"),
    (lambda c: call(c, tl.reshape, tile(c, ir.f32, (4, 4)), 8, 4), "16 elements"),
    (lambda c: call(c, tl.full, (3,), 0, tl.float32), "power of two"),
    (lambda c: call(c, tl.split, tile(c, ir.f32, (4, 3))), "last dimension is 2"),
    (lambda c: call(c, tl.permute, tile(c, ir.f32, (4, 2)), 0, 0), "not a permutation"),
    (lambda c: call(c, tl.atomic_add, tile(c, ir.PointerType(ir.i8), (4,)), 1), "does not support int8"),
    (lambda c: call(c, tl.atomic_and, tile(c, ir.PointerType(ir.f32), (4,)), 1), "integer pointer"),
    (lambda c: call(c, tl.static_assert, 1 == 2, "sizes"), "static_assert failed: sizes"),
    (lambda c: call(c, tl.program_id, 3), "must be one of 0, 1, 2"),
    (lambda c: call(c, tl.program_id, 0, 1), "bad call of `tl.program_id`"),
])
def test_builtin_errors(make, message):
    with pytest.raises(CompilationError, match=message):
        make(FakeCtx())


def test_tiles_up_to_two_to_the_twenty_elements_are_made_and_no_larger():
    """Triton's TRITON_MAX_TENSOR_NUMEL, kept wherever a tile is made."""
    c = FakeCtx()
    assert call(c, tl.arange, 0, 2**20).shape == (2**20,)
    r = call(c, tl.arange, 0, 1024)
    square = semantic.binary(c, "add", semantic.subscript(c, r, (None, slice(None))),
                             semantic.subscript(c, r, (slice(None), None)))
    assert square.shape == (1024, 1024)
    cube = semantic.subscript(c, square, (slice(None), slice(None), None))
    for make in (lambda: call(c, tl.arange, 0, 2**21), lambda: call(c, tl.zeros, (2, 2**20), tl.int8),
                 lambda: semantic.binary(c, "add", cube, tile(c, ir.i32, (1, 1, 2)))):
        with pytest.raises(CompilationError, match="more than the limit of 1048576"):
            make()


shapes = st.lists(st.sampled_from([1, 2, 4]), min_size=0, max_size=3).map(tuple)


@SETTINGS
@given(ptr_shape=shapes.filter(bool), value_shape=shapes, mask_shape=shapes)
def test_memory_operands_fit_the_pointer_only_at_its_rank(ptr_shape, value_shape, mask_shape):
    """A scalar splats; a tile must have the pointer's rank, and its dims equal the
    pointer's or be 1 (Triton's rule; numpy's would also add leading dims)."""
    def fits(shape):
        return not shape or (len(shape) == len(ptr_shape) and all(d in (1, p) for d, p in zip(shape, ptr_shape)))

    c = FakeCtx()
    ptr = tile(c, ir.PointerType(ir.f32), ptr_shape)
    args = {"value": tile(c, ir.f32, value_shape), "mask": tile(c, ir.i1, mask_shape)}
    if fits(value_shape) and fits(mask_shape):
        call(c, tl.store, ptr, **args)
        call(c, tl.atomic_add, ptr, args["value"], mask=args["mask"])
    else:
        for make in (lambda: call(c, tl.store, ptr, **args),
                     lambda: call(c, tl.load, ptr, mask=args["mask"], other=args["value"]),
                     lambda: call(c, tl.atomic_add, ptr, args["value"], mask=args["mask"])):
            with pytest.raises(CompilationError, match="does not fit the pointer's shape"):
                make()


def test_builtin_result_types():
    c = FakeCtx()
    assert call(c, tl.sum, tile(c, ir.i8, (4, 8)), 1).type == ir.TileType((4,), ir.i32)
    assert call(c, tl.sum, tile(c, ir.u16, (4, 8))).type == ir.u32
    assert call(c, tl.sum, tile(c, ir.f16, (4, 8)), 0, keep_dims=True).type == ir.TileType((1, 8), ir.f32)
    assert call(c, tl.max, tile(c, ir.bf16, (4, 8)), 0).type == ir.TileType((8,), ir.f32)
    assert call(c, tl.argmin, tile(c, ir.f64, (4, 8)), 1).type == ir.TileType((4,), ir.i32)
    assert call(c, tl.dot, tile(c, ir.i8, (16, 32)), tile(c, ir.i8, (32, 16))).type == ir.TileType((16, 16), ir.i32)
    d = call(c, tl.dot, tile(c, ir.f32, (16, 32)), tile(c, ir.f32, (32, 16)))
    assert d.handle.owner.input_precision == "tf32"
    d = call(c, tl.dot, tile(c, ir.f32, (16, 32)), tile(c, ir.f32, (32, 16)), allow_tf32=False)
    assert d.handle.owner.input_precision == "ieee"
    assert call(c, tl.reshape, tile(c, ir.f32, (4, 8)), (8, 4)).shape == (8, 4)
    assert call(c, tl.expand_dims, tile(c, ir.f32, (4,)), (0, -1)).shape == (1, 4, 1)
    assert [t.shape for t in call(c, tl.split, tile(c, ir.f32, (4, 2)))] == [(4,), (4,)]
    assert call(c, tl.interleave, tile(c, ir.f32, (4, 8)), tile(c, ir.f32, (4, 8))).shape == (4, 16)
    assert call(c, tl.cdiv, 10, 4) == 3 and call(c, tl.next_power_of_2, 17) == 32


# --------------------------------------------------------------------------- #
# End to end through the visitor and the interpreter
# --------------------------------------------------------------------------- #

@tilec.jit
def argmax_kernel(x_ptr, out_ptr, LEFT: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr, tl.argmax(tl.load(x_ptr + i), 0, tie_break_left=LEFT))
    tl.store(out_ptr + 1, tl.argmin(tl.load(x_ptr + i), 0))


@SETTINGS
@given(st.lists(st.integers(-3, 3), min_size=16, max_size=16))
def test_argmax_ties_pick_the_first(values):
    x = np.array(values, np.int32)
    out = np.zeros(2, np.int32)
    argmax_kernel[(1,)](x, out, True, 16)
    assert out.tolist() == [int(np.argmax(x)), int(np.argmin(x))]


@tilec.jit
def pick_larger_abs(a, ia, b, ib):
    keep = tl.abs(a) >= tl.abs(b)
    return tl.where(keep, a, b), tl.where(keep, ia, ib)


@tilec.jit
def custom_reduce_kernel(x_ptr, val_ptr, idx_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    idx = tl.broadcast_to(cols, (M, N))
    v, i = tl.reduce((x, idx), 1, pick_larger_abs)
    tl.store(val_ptr + tl.arange(0, M), v)
    tl.store(idx_ptr + tl.arange(0, M), i)


@SETTINGS
@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=32, max_size=32))
def test_reduce_with_tuple_combiner(values):
    x = np.array(values, np.float32).reshape(4, 8)
    x = x + np.arange(32, dtype=np.float32).reshape(4, 8) * 1e-3  # distinct magnitudes: one answer
    vals, idxs = np.zeros(4, np.float32), np.zeros(4, np.int32)
    custom_reduce_kernel[(1,)](x, vals, idxs, 4, 8)
    expected = np.abs(x).argmax(axis=1)
    np.testing.assert_array_equal(np.abs(vals), np.abs(x)[np.arange(4), expected])


@tilec.jit
def join_split_kernel(a_ptr, b_ptr, out_ptr, sum_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    a, b = tl.load(a_ptr + i), tl.load(b_ptr + i)
    tl.store(out_ptr + tl.arange(0, 2 * N), tl.interleave(a, b))
    lo, hi = tl.split(tl.join(a, b))
    tl.store(sum_ptr + i, lo * 10 + hi)


def test_join_split_interleave():
    a, b = np.arange(8, dtype=np.int16), -np.arange(8, dtype=np.int16) - 1
    out, s = np.zeros(16, np.int16), np.zeros(8, np.int16)
    join_split_kernel[(1,)](a, b, out, s, 8)
    np.testing.assert_array_equal(out, np.stack([a, b], axis=1).ravel())
    np.testing.assert_array_equal(s, a * 10 + b)


@tilec.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, OUT: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, out_dtype=OUT)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("out,np_out", [(tl.float32, np.float32), (tl.float16, np.float16)])
def test_dot_out_dtype(out, np_out):
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 4, (16, 32)).astype(np.float16)
    b = rng.integers(-4, 4, (32, 16)).astype(np.float16)
    c = np.zeros((16, 16), np_out)
    dot_kernel[(1,)](a, b, c, out, 16, 16, 32)
    np.testing.assert_array_equal(c, (a.astype(np.float32) @ b.astype(np.float32)).astype(np_out))


@tilec.jit
def division_kernel(x_ptr, y_ptr, q_ptr, r_ptr, f_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x, y = tl.load(x_ptr + i), tl.load(y_ptr + i)
    tl.store(q_ptr + i, x // y)
    tl.store(r_ptr + i, x % y)
    tl.store(f_ptr + i, x / y)


@SETTINGS
@given(st.lists(st.tuples(st.integers(-2 ** 31, 2 ** 31 - 1), st.integers(-2 ** 31, 2 ** 31 - 1)
                          .filter(lambda v: v != 0)), min_size=8, max_size=8))
def test_integer_division_is_c_like(pairs):
    x = np.array([p[0] for p in pairs], np.int32)
    y = np.array([p[1] for p in pairs], np.int32)
    q, r, f = np.zeros(8, np.int32), np.zeros(8, np.int32), np.zeros(8, np.float32)
    division_kernel[(1,)](x, y, q, r, f, 8)
    # Wrap only where C itself overflows (INT_MIN / -1).
    expected_q = [int(a / b) if abs(a) < 2 ** 24 else abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
                  for a, b in zip(x.tolist(), y.tolist())]
    np.testing.assert_array_equal(q, np.array(expected_q, np.int64).astype(np.int32))
    np.testing.assert_array_equal(r, (x.astype(np.int64) - np.array(expected_q) * y).astype(np.int32))
    np.testing.assert_allclose(f, x.astype(np.float32) / y.astype(np.float32), rtol=1e-6)


@tilec.jit
def store_converts_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i) * 1.5)


def test_store_converts_float_to_int_pointee():
    x = np.array([-3, -1, 0, 1, 2, 3, 5, 7], np.int32)
    out = np.zeros(8, np.int16)
    store_converts_kernel[(1,)](x, out, 8)
    np.testing.assert_array_equal(out, np.trunc(x * 1.5).astype(np.int16))


@tilec.jit
def weak_kernel(x_ptr, out_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    tl.store(out_ptr + i, tl.load(x_ptr + i) + 100)


def test_weak_scalar_keeps_int8_and_wraps():
    x = np.array([-128, -1, 0, 27, 28, 100, 120, 127], np.int8)
    out = np.zeros(8, np.int8)
    weak_kernel[(1,)](x, out, 8)
    np.testing.assert_array_equal(out, (x.astype(np.int64) + 100).astype(np.int8))


@tilec.jit
def bad_arange_kernel(x_ptr, N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, N), 0)


def test_compile_error_names_the_kernel_line():
    with pytest.raises(CompilationError) as info:
        bad_arange_kernel[(1,)](np.zeros(8, np.int32), 6)
    text = str(info.value)
    assert "length 6 must be a power of two" in text
    assert "test_semantic.py" in text and "tl.arange(0, N)" in text


@tilec.jit
def running_max(a, b):
    return tl.maximum(a, b)


@tilec.jit
def widening_kernel(x_ptr, sum_ptr, scan_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(sum_ptr, tl.sum(x, 0))  # int8 sums in int32: no wrap at 127
    tl.store(scan_ptr + i, tl.associative_scan(x, 0, running_max, reverse=True))


@SETTINGS
@given(st.lists(st.integers(-128, 127), min_size=16, max_size=16))
def test_sum_widens_int8_and_scan_with_a_combiner(values):
    x = np.array(values, np.int8)
    total, scan = np.zeros(1, np.int32), np.zeros(16, np.int8)
    widening_kernel[(1,)](x, total, scan, 16)
    assert total[0] == int(x.astype(np.int64).sum())
    np.testing.assert_array_equal(scan, np.maximum.accumulate(x[::-1])[::-1])


@tilec.jit
def assorted_kernel(x_ptr, b_ptr, o_ptr, i_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    m = tl.load(b_ptr + i)
    tl.store(o_ptr + i, tl.softmax(x))
    tl.store(o_ptr + N + i, tl.sigmoid(x))
    tl.store(o_ptr + 2 * N + i, tl.clamp(x, -0.5, 0.5))
    tl.store(o_ptr + 3 * N + i, tl.where(m, x, -x))
    tl.store(o_ptr + 4 * N + i, tl.fma(x, 2.0, 1))
    tl.store(o_ptr + 5 * N + i, tl.cumprod(x * 0 + 2.0, 0))
    y = tl.reshape(x, (2, N // 2))
    v, j = tl.min(y, 1, return_indices=True, keep_dims=True)
    tl.store(o_ptr + 6 * N + tl.arange(0, 2)[:, None], v)
    tl.store(i_ptr + tl.arange(0, 2)[:, None], j)
    tl.store(i_ptr + 2, tl.xor_sum(i, 0))
    z = tl.zeros_like(x) + tl.full((N,), tl.program_id(0) + 3, tl.float32)
    tl.store(o_ptr + 7 * N + i, tl.ravel(tl.trans(tl.view(z, (N // 2, 2)))))
    tl.store(i_ptr + 3 + i, x.to(tl.int32, bitcast=True))
    tl.store(b_ptr + i, ~m)
    old = tl.atomic_cas(i_ptr + 3 + N, 0, 42)
    tl.device_assert(x == x, "nan!", mask=m)
    tl.store(i_ptr + 4 + N, tl.umulhi(tl.program_id(0) - 1, 7))
    e = tl.expand_dims(x, (0, 2))
    tl.static_assert(e.shape == (1, N, 1))
    p = tl.permute(tl.broadcast_to(e, (2, N, 4)), 2, 0, 1)
    tl.static_assert(p.shape == (4, 2, N))


def test_assorted_builtins_end_to_end():
    """softmax, sigmoid, clamp, where, fma, cumprod, min with indices and keep_dims, xor_sum,
    full/zeros_like/view/trans/ravel, bitcast, bool pointers, atomic_cas, umulhi, expand/permute shapes."""
    N = 8
    x = np.linspace(-1, 1, N).astype(np.float32)
    b = np.array([1, 0, 1, 1, 0, 0, 1, 0], bool)
    o = np.zeros(8 * N, np.float32); ii = np.zeros(5 + 2 * N, np.int32)
    assorted_kernel[(1,)](x, b, o, ii, N)
    e = np.exp(x - x.max())
    np.testing.assert_allclose(o[:N], e / e.sum(), rtol=1e-6)
    np.testing.assert_allclose(o[N:2*N], 1 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(o[2*N:3*N], np.clip(x, -0.5, 0.5))
    np.testing.assert_allclose(o[3*N:4*N], np.where([1,0,1,1,0,0,1,0], x, -x))
    np.testing.assert_allclose(o[4*N:5*N], x * 2 + 1, rtol=1e-6)
    np.testing.assert_allclose(o[5*N:6*N], 2.0 ** np.arange(1, N + 1))
    y = x.reshape(2, 4)
    np.testing.assert_allclose(o[6*N:6*N+2], y.min(1)); assert ii[:2].tolist() == y.argmin(1).tolist()
    assert ii[2] == np.bitwise_xor.reduce(np.arange(N))
    np.testing.assert_allclose(o[7*N:8*N], 3.0)
    np.testing.assert_array_equal(ii[3:3+N], x.view(np.int32))
    assert b.tolist() == [False, True, False, False, True, True, False, True], b
    assert ii[3 + N] == 42
    assert ii[4 + N] == 6  # high half of 0xFFFFFFFF * 7


@tilec.jit
def assert_kernel(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.device_assert(x > 0, "x must be positive", mask=x != -7)


def test_device_assert_respects_its_mask():
    assert_kernel[(1,)](np.array([1, 2, -7, 3], np.int32), 4)  # the only failure is masked off
    with pytest.raises(tilec.InterpreterError, match="x must be positive"):
        assert_kernel[(1,)](np.array([1, 2, -6, 3], np.int32), 4)
