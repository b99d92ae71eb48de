"""The verifier: each kind of malformed IR is caught with a message that names
the op, its location and quotes it; well-formed IR passes."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ir.random_ir import random_functions
from tilec import ir
from tilec.ir.parser import parse_function
from tilec.ir.verify import VerifyError, check_roundtrip, verify_function, verify_module

PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

HEAD = "func @k(%a: f32, %i: i32, %p: ptr<f16>, %t: tile<4x8xf32>, %c: i1) {\n"


def _verify_text(body: str) -> str:
    """The verifier's message for a function whose body is ``body``."""
    fn = parse_function(HEAD + body + "}\n")
    with pytest.raises(VerifyError) as info:
        verify_function(fn)
    return str(info.value)


# (body, what the message must contain, the quoted op's first line)
BAD_BODIES = [
    ('  %b = add %a, %i : f32 loc("k.py":7:2)\n',
     "k.py:7:2: add: operand types differ: f32 and i32", "%b = add %a, %i : f32"),
    ("  %b = add %a, %a : f64\n",
     "add: result types (f64) differ from the inferred (f32)", "%b = add %a, %a : f64"),
    ("  %s, %s2 = split %t : tile<4xf32>, tile<4xf32>\n",
     "split: last dimension must be 2, got shape (4, 8)", "%s, %s2 = split %t"),
    ("  %r = arange {start = 0, end = 12} : tile<12xi32>\n",
     "arange: end - start must be a power of two, got 12", "%r = arange {start = 0, end = 12}"),
    ("  %r = arange {start = 4, end = 4} : tile<1xi32>\n",
     "arange: end - start must be a power of two, got 0", "%r = arange"),
    ("  %r = for %i, %i, %i, [%a] : f32 {\n  ^(%iv: i32, %x: f32):\n    yield [%x, %x]\n  }\n",
     "for: for body yields", "%r = for %i, %i, %i, [%a] : f32 {"),
    ("  %r = for %i, %i, %i, [%a] : f32 {\n  ^(%iv: i32):\n    yield [%a]\n  }\n",
     "for: body arguments must be (iv, *carried)", "%r = for"),
    ("  for %a, %a, %a, [] {\n  ^(%iv: f32):\n    yield []\n  }\n",
     "for: bounds must be ints, got f32", "for %a, %a, %a, [] {"),
    ("  for %i, %i, %i, [] {\n  ^(%iv: i32):\n    yield []\n    barrier\n  }\n",
     "yield: a terminator must be the last op of its block", "yield []"),
    ("  for %i, %i, %i, [] {\n  ^(%iv: i32):\n    barrier\n  }\n",
     "for: region `body` must end with `yield`, found no terminator", "for %i, %i, %i, [] {"),
    ("  for %i, %i, %i, [] {\n  ^(%iv: i32):\n    condition %c, []\n  }\n",
     "for: region `body` must end with `yield`, found `condition`", "for %i"),
    ("  yield []\n", "yield: a terminator cannot appear in the function body", "yield []"),
    ("  %b = neg %a : f32\n  yield [%b]\n  barrier\n", "yield: a terminator cannot appear in the function body",
     "yield [%b]"),
    ("  %r = if %c : f32 {\n    yield [%a]\n  } {\n    barrier\n  }\n",
     "if: region `else_body` must end with `yield`, found no terminator", "%r = if %c : f32 {"),
    ("  %r = if %c : f32 {\n    yield [%a]\n  } {\n    yield [%i]\n  }\n",
     "if: else branch yields", "%r = if %c : f32 {"),
    ("  if %i {\n    yield []\n  } {\n    yield []\n  }\n",
     "if: condition must be a scalar i1, got i32", "if %i {"),
    ("  %w = while [%i] : i32 {\n  ^(%x: i32):\n    yield [%x]\n  } {\n  ^(%y: i32):\n    yield [%y]\n  }\n",
     "while: region `before` must end with `condition`, found `yield`", "%w = while [%i] : i32 {"),
    ("  %w = while [%i] : i32 {\n  ^(%x: i32):\n    condition %c, [%x]\n  } {\n  ^(%y: i32):\n"
     "    condition %c, [%y]\n  }\n",
     "while: region `after` must end with `yield`, found `condition`", "%w = while"),
    ("  %w = while [%i] : i32 {\n  ^(%x: i32):\n    condition %x, [%x]\n  } {\n  ^(%y: i32):\n    yield [%y]\n  }\n",
     "condition: condition must be i1, got i32", "condition %x, [%x]"),
    ("  %r = reduce [%t] {axis = 1} : tile<4xf32> {\n  ^(%x: f32, %y: f32):\n    yield [%x, %y]\n  }\n",
     "reduce: combine block must yield one scalar per operand", "%r = reduce [%t] {axis = 1}"),
    ("  %r = reduce [%t] {axis = 2} : tile<4xf32> {\n  ^(%x: f32, %y: f32):\n    yield [%x]\n  }\n",
     "reduce: axis 2 out of range", "%r = reduce"),
    ("  %r = scan [%t] {axis = 0} : tile<4x8xf32> {\n  ^(%x: f32):\n    yield [%x]\n  }\n",
     "scan: combine block must take 2 scalars", "%r = scan [%t] {axis = 0}"),
    ("  %d = dot %t, %t, %t : tile<4x8xf32>\n",
     "dot: inner dimensions differ: (4, 8) @ (4, 8)", "%d = dot %t, %t, %t"),
    ("  %b = cmp %a, %a {pred = \"lte\"} : i1\n", "cmp: unknown predicate 'lte'", "%b = cmp %a, %a"),
    ("  %b = load %p, %c, _ : f16\n  %m = splat %c {shape = (2,)} : tile<2xi1>\n  %v = load %p, %m, _ : f16\n",
     "load: mask type tile<2xi1> does not match pointer shape ()", "%v = load %p, %m, _ : f16"),
    ("  store %p, %a, _\n", "store: value has type f32, expected f16", "store %p, %a, _"),
    ("  %b = exp %i : i32\n", "exp: operand of type i32 is not accepted (needs float)", "%b = exp %i"),
    ("  %b = div %a, %a {rounding = \"rz\"} : f32\n", "div: rounding must be \"\" or \"rn\", got 'rz'", "%b = div"),
    ("  %b = bitcast %a {to = f16} : f16\n", "bitcast: bitcast between f32 and f16 changes the width", "%b = bitcast"),
    ("  %b = constant {value = 1, type = ptr<f32>} : ptr<f32>\n",
     "constant: pointer constants are not allowed", "%b = constant"),
    ("  %b = program_id {axis = 3} : i32\n", "program_id: axis must be 0, 1 or 2, got 3", "%b = program_id"),
    ("  %b = broadcast %t {shape = (4, 3)} : tile<4x3xf32>\n", "broadcast: cannot broadcast (4, 8) to (4, 3)",
     "%b = broadcast %t"),
    ("  %b = assume %t {kind = \"multiple_of\", values = (16,)} : tile<4x8xf32>\n",
     "assume: one value per dimension", "%b = assume %t"),
    ("  %buf = local_alloc {shape = (2, 16, 32), elem = f16, layout = shared<8, 2, 4, [2, 1, 0]>} : "
     "tile<2x16x32xf16, shared<8, 2, 4, [2, 1, 0]>>\n  tma_release %buf\n",
     "tma_release: the buffer has no mbarriers", "tma_release %buf"),
]


@pytest.mark.parametrize("body, message, quoted", BAD_BODIES)
def test_verifier_names_the_op_and_quotes_it(body, message, quoted):
    text = _verify_text(body)
    first, quote = text.split("\n")[:2]
    assert message in first
    assert quote.strip().startswith(quoted)


def test_message_starts_with_the_location():
    text = _verify_text('  %b = add %a, %i : f32 loc("kernel.py":14:8)\n')
    assert text.startswith("kernel.py:14:8: add: ")


def test_well_formed_nested_regions_see_enclosing_values():
    body = ("  %b = neg %a : f32\n"
            "  %r = for %i, %i, %i, [%b] : f32 {\n"
            "  ^(%iv: i32, %x: f32):\n"
            "    %s = if %c : f32 {\n"
            "      %y = add %x, %b : f32\n"
            "      yield [%y]\n"
            "    } {\n"
            "      yield [%a]\n"
            "    }\n"
            "    yield [%s]\n"
            "  }\n")
    verify_function(parse_function(HEAD + body + "}\n"))


# --------------------------------------------------------------------------- #
# What the parser cannot express: broken dominance and broken back-pointers
# --------------------------------------------------------------------------- #

def _kernel(*types: ir.Type) -> tuple[ir.Function, ir.Builder]:
    b = ir.Builder(loc=ir.Loc("k.py", 3, 1))
    for t in types:
        b.block.add_arg(t)
    return ir.Function("k", b.block), b


def _message(fn: ir.Function) -> str:
    with pytest.raises(VerifyError) as info:
        verify_function(fn)
    return str(info.value)


def test_use_before_definition():
    fn, b = _kernel(ir.f32)
    x = b.value(ir.Neg, src=fn.args[0], name="x")
    b.value(ir.Exp, src=x, name="y")
    fn.body.ops.reverse()
    assert _message(fn) == ("k.py:3:1: exp: operand %x is not defined before this op in an enclosing block\n"
                            "    %y = exp %x : f32")


def test_value_of_a_region_used_after_it():
    fn, b = _kernel(ir.i1, ir.f32)
    op = ir.If(cond=fn.args[0])
    with b.at(op.then_body):
        inner = b.value(ir.Neg, src=fn.args[1], name="inner")
        b.create(ir.Yield)
    with b.at(op.else_body):
        b.create(ir.Yield)
    b.block.ops.append(op.make_results())
    b.value(ir.Exp, src=inner)
    assert "exp: operand %inner is not defined before this op" in _message(fn)


def test_loop_result_used_inside_its_own_body():
    fn, b = _kernel(ir.i32)
    n = fn.args[0]
    loop = ir.For(lower=n, upper=n, step=n, inits=[n])
    loop.body.add_arg(ir.i32)
    loop.body.add_arg(ir.i32)
    loop.make_results(["out"])
    with b.at(loop.body):
        b.create(ir.Yield, values=[loop.result])
    b.block.ops.append(loop)
    assert "yield: operand %out is not defined before this op" in _message(fn)


def test_value_of_another_function():
    other, ob = _kernel(ir.f32)
    foreign = ob.value(ir.Neg, src=other.args[0])
    fn, b = _kernel(ir.f32)
    b.value(ir.Add, lhs=fn.args[0], rhs=foreign)
    assert "add: operand %<unnamed> is not defined before this op" in _message(fn)


def test_result_that_does_not_point_back_at_its_op():
    fn, b = _kernel(ir.f32)
    x = b.value(ir.Neg, src=fn.args[0])
    x.index = 1
    assert "neg: result 0 does not point back at this op and index" in _message(fn)


def test_result_shared_by_two_ops():
    fn, b = _kernel(ir.f32)
    first = b.create(ir.Neg, src=fn.args[0])
    second = b.create(ir.Neg, src=fn.args[0])
    second.results = first.results
    assert "neg: result 0 does not point back" in _message(fn)


def test_block_argument_that_belongs_elsewhere():
    fn, _ = _kernel(ir.f32)
    fn.body.args.append(ir.Value(ir.f32, ir.Block(), 0))
    assert _message(fn) == "@k: argument 1 does not belong to its block at that index"


def test_field_holding_the_wrong_kind():
    fn, b = _kernel(ir.f32)
    b.block.ops.append(ir.Add(lhs=fn.args[0], rhs=None, loc=b.loc))
    assert "k.py:3:1: add: field `rhs` holds NoneType, not a Value" in _message(fn)


def test_op_verifier_that_crashes_is_reported_not_raised():
    fn, b = _kernel(ir.f32)
    op = ir.Bitcast(src=fn.args[0], to="i32", loc=b.loc)
    op.results = [ir.Value(ir.i32, op, 0)]
    b.block.ops.append(op)
    assert "bitcast: verifier failed: AttributeError" in _message(fn)


def test_argument_names_must_match_arguments():
    fn, _ = _kernel(ir.f32, ir.i32)
    fn.arg_names = ["only_one"]
    assert _message(fn) == "@k: 1 argument names for 2 arguments"


def test_module_with_duplicate_function_names():
    a, _ = _kernel(ir.f32)
    b, _ = _kernel(ir.i32)
    verify_module(ir.Module([a]))
    with pytest.raises(VerifyError, match="function @k is defined twice"):
        verify_module(ir.Module([a, b]))


def test_verify_module_checks_each_function():
    good, _ = _kernel(ir.f32)
    bad = parse_function(HEAD.replace("@k", "@bad") + "  %b = add %a, %i : f32\n}\n")
    with pytest.raises(VerifyError, match="add: operand types differ"):
        verify_module(ir.Module([good, bad]))


# --------------------------------------------------------------------------- #
# check_roundtrip
# --------------------------------------------------------------------------- #

def test_roundtrip_passes_on_a_located_kernel():
    fn, b = _kernel(ir.PointerType(ir.f32), ir.i32)
    offs = b.value(ir.Arange, start=0, end=64)
    with b.located(ir.Loc("dir with space/k.py", 9, 4)):
        b.value(ir.Constant, value=np.float64(0.1), type=ir.f32)  # numpy floats print as plain floats
    b.value(ir.Splat, src=fn.args[1], shape=[64])  # a list attribute prints as a tuple
    check_roundtrip(fn)
    verify_function(fn)
    assert offs.type == ir.TileType((64,), ir.i32)


def test_roundtrip_reports_text_that_does_not_parse_back():
    fn, b = _kernel(ir.i1)
    b.value(ir.Constant, value=np.bool_(True), type=ir.i1)  # prints as `True`, not `true`
    with pytest.raises(VerifyError, match=r"@k: the printed IR does not parse back: line 2, col 26: "
                                          r"expected an attribute value, found `True`"):
        check_roundtrip(fn)


# --------------------------------------------------------------------------- #
# Random IR, damaged on purpose: the verifier finds it, and never crashes
# --------------------------------------------------------------------------- #

def _blocks(block: ir.Block):
    yield block
    for op in block.ops:
        for region in op.regions:
            yield from _blocks(region)


def _placed_ops(fn: ir.Function) -> list[tuple[ir.Block, ir.Op]]:
    return [(blk, op) for blk in _blocks(fn.body) for op in blk.ops]


@PROPERTY
@given(random_functions(), st.data())
def test_changed_result_type_is_reported_at_its_op(fn, data):
    op = data.draw(st.sampled_from([op for _, op in _placed_ops(fn) if op.results]))
    r = data.draw(st.sampled_from(op.results))
    r.type = ir.f64 if r.type != ir.f64 else ir.TileType((3,), ir.i8)
    message = _message(fn)
    assert f"{op.NAME}: result types" in message.split("\n")[0]


@PROPERTY
@given(random_functions(), st.data())
def test_deleted_definition_is_reported_at_its_first_use(fn, data):
    placed = _placed_ops(fn)
    used = {v for _, op in placed for v in op.operands}
    candidates = [(blk, op) for blk, op in placed if used & set(op.results)]
    assume(candidates)
    block, op = data.draw(st.sampled_from(candidates))
    block.ops.remove(op)
    assert "is not defined before this op in an enclosing block" in _message(fn).split("\n")[0]


@PROPERTY
@given(random_functions(), st.data())
def test_reordered_ops_are_either_valid_or_reported(fn, data):
    blocks = [b for b in _blocks(fn.body) if len(b.ops) >= 2]
    assume(blocks)
    block = data.draw(st.sampled_from(blocks))
    i, j = data.draw(st.lists(st.integers(0, len(block.ops) - 1), min_size=2, max_size=2, unique=True))
    block.ops[i], block.ops[j] = block.ops[j], block.ops[i]
    try:
        verify_function(fn)
    except VerifyError as e:
        assert len(str(e).split("\n")) == 2  # the message, then the quoted op
    else:
        check_roundtrip(fn)  # valid IR always reads back
