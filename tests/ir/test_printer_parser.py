"""The text form: golden round trips covering every op, parse errors, and a
hypothesis test that prints, parses and reprints random well-typed IR."""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ir.random_ir import random_functions
from tilec import ir
from tilec.ir.layouts import LAYOUT_WORDS, Layout, int_list
from tilec.ir.ops import all_op_classes
from tilec.ir.parser import ParseError, parse_function, parse_module, tokenize
from tilec.ir.printer import print_function, print_module
from tilec.ir.verify import check_roundtrip, verify_function

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- #
# Golden texts: together they use every op; each must read back unchanged.
# --------------------------------------------------------------------------- #

MEMORY = """\
func @copy(%x_ptr: ptr<f32> {divisibility = 16}, %y_ptr: ptr<f32>, %n: i32 {divisibility = 16, note = "x"}) {
  %pid = program_id {axis = 0} : i32
  %npid = num_programs {axis = 2} : i32
  %sm = processor_id : i32
  %now = global_timer : i64
  %offs = arange {start = 0, end = 128} : tile<128xi32>
  %block = constant {value = 128, type = i32} : i32
  %base = mul %pid, %block : i32
  %base_t = splat %base {shape = (128,)} : tile<128xi32>
  %idx = add %base_t, %offs : tile<128xi32>
  %n_t = splat %n {shape = (128,)} : tile<128xi32>
  %mask = cmp %idx, %n_t {pred = "lt"} : tile<128xi1>
  %xs = splat %x_ptr {shape = (128,)} : tile<128xptr<f32>>
  %px = addptr %xs, %idx : tile<128xptr<f32>>
  %zero = constant {value = 0.0, type = tile<128xf32>} : tile<128xf32>
  %x = load %px, %mask, %zero {cache = ".ca", volatile = true} : tile<128xf32>
  %ys = splat %y_ptr {shape = (128,)} : tile<128xptr<f32>>
  %py = addptr %ys, %idx : tile<128xptr<f32>>
  %hint = assume %py {kind = "multiple_of", values = (16,)} : tile<128xptr<f32>>
  store %hint, %x, %mask {eviction = "evict_last"}
  store %py, %x, _
  %old = atomic_rmw %py, %x, _ {kind = "add"} : tile<128xf32>
  %prev = atomic_rmw %py, %x, %mask {kind = "xchg", sem = "relaxed", scope = "cta"} : tile<128xf32>
  %swapped = atomic_cas %py, %old, %prev {sem = "release", scope = "sys"} : tile<128xf32>
  %all = cmp %mask, %mask {pred = "eq"} : tile<128xi1>
  assert %all {msg = "says \\"hi\\"\\n"}
  print [%pid, %x] {prefix = "x = ", hex = true}
  print [] {prefix = ""}
  barrier
  %smem = cast %x_ptr {to = ptr<f16, 3>} : ptr<f16, 3>
  %addr = cast %x_ptr {to = i64} : i64
}
"""

MATH = """\
func @math(%a: tile<4x8xf32>, %b: tile<4x8xf32>, %i: tile<3x5xi16>, %j: tile<3x5xi16>, %u: u64) {
  %0 = neg %a : tile<4x8xf32>
  %1 = abs %0 : tile<4x8xf32>
  %2 = exp %1 : tile<4x8xf32>
  %3 = exp2 %2 : tile<4x8xf32>
  %4 = log %3 : tile<4x8xf32>
  %5 = log2 %4 : tile<4x8xf32>
  %6 = sqrt %5 : tile<4x8xf32>
  %7 = rsqrt %6 : tile<4x8xf32>
  %8 = sin %7 : tile<4x8xf32>
  %9 = cos %8 : tile<4x8xf32>
  %10 = floor %9 : tile<4x8xf32>
  %11 = ceil %10 : tile<4x8xf32>
  %12 = erf %11 : tile<4x8xf32>
  %13 = add %12, %b : tile<4x8xf32>
  %14 = sub %13, %b : tile<4x8xf32>
  %15 = mul %14, %b : tile<4x8xf32>
  %16 = div %15, %b : tile<4x8xf32>
  %17 = rem %16, %b : tile<4x8xf32>
  %18 = maximum %17, %b {propagate_nan = true} : tile<4x8xf32>
  %19 = minimum %18, %b : tile<4x8xf32>
  %20 = fma %19, %a, %b : tile<4x8xf32>
  %c = cmp %20, %a {pred = "ge"} : tile<4x8xi1>
  %21 = select %c, %20, %a : tile<4x8xf32>
  %h = cast %21 {to = f16, rounding = "rtz"} : tile<4x8xf16>
  %bits = bitcast %h {to = i16} : tile<4x8xi16>
  %k = not %i : tile<3x5xi16>
  %22 = and %k, %j : tile<3x5xi16>
  %23 = or %22, %j : tile<3x5xi16>
  %24 = xor %23, %j : tile<3x5xi16>
  %25 = shl %24, %j : tile<3x5xi16>
  %26 = shr %25, %j : tile<3x5xi16>
  %hi = umulhi %u, %u : u64
  %th = math_call [%20] {fn = "tanh"} : tile<4x8xf32>
  %pc = math_call [%hi] {fn = "popc"} : i32
  %inf = constant {value = inf, type = f32} : f32
  %ninf = constant {value = -inf, type = f64} : f64
  %nan = constant {value = nan, type = bf16} : bf16
  %tiny = constant {value = -1e-05, type = f32} : f32
  %negz = constant {value = -0.0, type = f32} : f32
  %ld = math_call [%negz, %pc] {fn = "ldexp"} : f32
  %big = constant {value = -9223372036854775808, type = i64} : i64
  %yes = constant {value = true, type = tile<2xi1>} : tile<2xi1>
}
"""

SHAPES = """\
func @shapes(%a: tile<16x32xf16>, %b: tile<32x8xf16>, %acc: tile<16x8xf32>, %v: tile<1x8xf32>, %s: tile<6xi8>, %ix: tile<2x4xi32>, %m: tile<6xi1>) {
  %d = dot %a, %b, %acc {input_precision = "tf32"} : tile<16x8xf32>
  %wide = broadcast %v {shape = (16, 8)} : tile<16x8xf32>
  %e = expand_dims %s {axis = 1} : tile<6x1xi8>
  %r = reshape %e {shape = (2, 3)} : tile<2x3xi8>
  %flat = reshape %r {shape = (6,), can_reorder = true} : tile<6xi8>
  %t = permute %r {order = (1, 0)} : tile<3x2xi8>
  %pair = join %t, %t : tile<3x2x2xi8>
  %lo, %hi = split %pair : tile<3x2xi8>, tile<3x2xi8>
  %g = gather %r, %ix {axis = 1} : tile<2x4xi8>
  %h = histogram %s, %m {num_bins = 4} : tile<4xi32>
  %all = histogram %s, _ {num_bins = 8} : tile<8xi32>
}
"""

CONTROL = """\
func @control(%n: i32, %x: tile<8x5xf32>, %idx: tile<8x5xi32>, %flag: i1) {
  %zero = constant {value = 0, type = i32} : i32
  %one = constant {value = 1, type = i32} : i32
  %s, %count = for %zero, %n, %one, [%x, %zero] : tile<8x5xf32>, i32 {
  ^(%i: i32, %acc: tile<8x5xf32>, %c: i32):
    %next = add %acc, %x : tile<8x5xf32>
    %c1 = add %c, %one : i32
    yield [%next, %c1]
  }
  %m, %am = reduce [%s, %idx] {axis = 1} : tile<8xf32>, tile<8xi32> {
  ^(%va: f32, %ia: i32, %vb: f32, %ib: i32):
    %gt = cmp %va, %vb {pred = "gt"} : i1
    %v = select %gt, %va, %vb : f32
    %iw = select %gt, %ia, %ib : i32
    yield [%v, %iw]
  }
  %total = reduce [%m] {axis = none} : f32 {
  ^(%p: f32, %q: f32):
    %pq = add %p, %q : f32
    yield [%pq]
  }
  %cs = scan [%idx] {axis = 0, reverse = true} : tile<8x5xi32> {
  ^(%p_1: i32, %q_1: i32):
    %sum = add %p_1, %q_1 : i32
    yield [%sum]
  }
  %picked = if %flag : f32 {
    %neg = neg %total : f32
    yield [%neg]
  } {
    yield [%total]
  }
  if %flag {
    barrier
    yield []
  } {
    yield []
  }
  %last = while [%zero] : i32 {
  ^(%w: i32):
    %more = cmp %w, %n {pred = "lt"} : i1
    condition %more, [%w]
  } {
  ^(%w_1: i32):
    %w2 = add %w_1, %one : i32
    yield [%w2]
  }
}
"""

LOCATED = """\
func @located(%n: i32, %x: tile<8x5xf32>) {
  %zero = constant {value = 0, type = i32} : i32 loc("kernel.py":3:4)
  %one = constant {value = 1, type = i32} : i32 loc("kernel.py":4:4)
  %s = for %zero, %n, %one, [%x] : tile<8x5xf32> {
  ^(%i: i32, %acc: tile<8x5xf32>):
    %next = add %acc, %x : tile<8x5xf32> loc("dir/k \\\"q\\\".py":6:8)
    yield [%next] loc("kernel.py":7:8)
  } loc("kernel.py":5:4)
}
"""

LAYOUTS = """\
func @layouts(%x: tile<16x8xf32, blocked<[1, 4], [16, 2], [1, 4], [1, 0]>>) {
  %s = reduce [%x] {axis = 1} : tile<16xf32, slice<1, blocked<[1, 4], [16, 2], [1, 4], [1, 0]>>> {
  ^(%a: f32, %b: f32):
    %c = add %a, %b : f32
    yield [%c]
  }
  %t = convert_layout %s {layout = blocked<[1], [32], [4], [0]>} : tile<16xf32, blocked<[1], [32], [4], [0]>>
}
"""

MMA_LAYOUTS = """\
func @mma_layouts(%a: tile<64x32xf16, dot_op<0, 2, mma<[2, 2]>>>, %b: tile<32x64xf16, dot_op<1, 2, mma<[2, 2]>>>) {
  %z = constant {value = 0.0, type = tile<64x64xf32>} : tile<64x64xf32, mma<[2, 2]>>
  %c = dot %a, %b, %z : tile<64x64xf32, mma<[2, 2]>>
  %d = convert_layout %c {layout = blocked<[1, 4], [4, 8], [4, 1], [1, 0]>} : tile<64x64xf32, blocked<[1, 4], [4, 8], [4, 1], [1, 0]>>
}
"""

GPU_OPS = """\
func @gpu_ops(%x: ptr<f16>, %slot: i32) {
  %buf = local_alloc {shape = (2, 16, 32), elem = f16, layout = shared<8, 2, 4, [2, 1, 0]>} : tile<2x16x32xf16, shared<8, 2, 4, [2, 1, 0]>>
  %p = splat %x {shape = (16, 32)} : tile<16x32xptr<f16>>
  %m = constant {value = true, type = tile<16x32xi1>} : tile<16x32xi1>
  %o = constant {value = 0.0, type = tile<16x32xf16>} : tile<16x32xf16>
  async_copy %buf, %slot, %p, %m, %o
  async_copy %buf, %slot, %p, _, _
  async_commit
  async_wait {pending = 1}
  %t = local_load %buf, %slot : tile<16x32xf16, dot_op<0, 2, mma<[1, 1]>>>
  local_store %buf, %slot, %o
  %acc = constant {value = 0.0, type = tile<16x16xf32, mma<[1, 1]>>} : tile<16x16xf32, mma<[1, 1]>>
  %done = dot_wait %acc {pending = 0} : tile<16x16xf32, mma<[1, 1]>>
  %bulk = local_alloc {shape = (2, 16, 32), elem = f16, layout = shared<8, 2, 4, [2, 1, 0]>, mbarriers = true} : tile<2x16x32xf16, shared<8, 2, 4, [2, 1, 0]>>
  %row = constant {value = 16, type = i32} : i32
  %go = constant {value = true, type = i1} : i1
  %l = load %p, %m, %o, [%row, %slot] {descriptor = "x_desc"} : tile<16x32xf16>
  tma_copy %bulk, %slot, %p, %m, %go, [%row, %slot] {descriptor = "x_desc"}
  %tbuf = local_alloc {shape = (2, 32, 16), elem = f16, layout = shared<8, 4, 2, [1, 2, 0]>} : tile<2x32x16xf16, shared<8, 4, 2, [1, 2, 0]>>
  async_copy %tbuf, %slot, %p, _, _ {transpose = true}
  tma_wait %bulk, %slot, %slot
  tma_release %bulk
  tma_store %buf, %slot, %p, %m, [%row, %slot] {descriptor = "x_desc"}
  store %p, %o, %m, [%row, %slot] {descriptor = "x_desc"}
}
"""

MAPS = """\
func @maps(%x: tile<8xi8>, %y: tile<8xf32>) {
  %a, %b = inline_asm [%x, %y] {asm = "mov.b32 $0, $2;\\n\\tmov.b32 $1, $3;", constraints = "=r,=r,r,r", dtypes = (i32, f32), pure = false, pack = 4} : tile<8xi32>, tile<8xf32>
  %lane = inline_asm [] {asm = "mov.u32 $0, %laneid;", constraints = "=r", dtypes = (i32,)} : i32
  %s, %t = map_elementwise [%y, %a] {pack = 2} : tile<8xf32>, tile<8xi32> {
  ^(%y0: f32, %y1: f32, %a0: i32, %a1: i32):
    %zero = constant {value = 0.0, type = f32} : f32
    %pos = cmp %y0, %zero {pred = "gt"} : i1
    %r = if %pos : f32 {
      yield [%y0]
    } {
      yield [%y1]
    }
    yield [%r, %y1, %a0, %a1]
  }
}
"""

GOLDEN = {"memory": MEMORY, "math": MATH, "shapes": SHAPES, "control": CONTROL, "located": LOCATED,
          "layouts": LAYOUTS, "mma_layouts": MMA_LAYOUTS, "gpu_ops": GPU_OPS, "maps": MAPS}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_text_reads_back_unchanged_and_verifies(name):
    text = GOLDEN[name]
    fn = parse_function(text)
    verify_function(fn)
    assert print_function(fn, locs="loc(" in text) == text
    check_roundtrip(fn)


def test_golden_texts_cover_every_op():
    covered = {op.NAME for text in GOLDEN.values() for op in ir.walk(parse_function(text).body)}
    assert covered == set(all_op_classes())


def test_a_layout_class_brings_its_word_to_the_parser():
    @dataclasses.dataclass(frozen=True)
    class Ring(Layout):
        """A layout no backend has: defining it adds its word to the text form."""

        WORD: ClassVar[str] = "ring_for_test"
        step: int
        order: tuple

        @property
        def rank(self) -> int:
            return len(self.order)

        def __str__(self) -> str:
            return f"{self.WORD}<{self.step}, {int_list(self.order)}>"

    text = "func @k(%x: tile<4x8xf32, ring_for_test<2, [1, 0]>>) {\n  %y = neg %x : tile<4x8xf32, ring_for_test<2, [1, 0]>>\n}\n"
    try:
        fn = parse_function(text)
        assert fn.args[0].type.layout == Ring(2, (1, 0))
        assert print_function(fn) == text
    finally:
        del LAYOUT_WORDS[Ring.WORD]


def test_module_of_several_functions_reads_back():
    text = print_module(parse_module(MEMORY + "\n" + SHAPES))
    assert text == MEMORY + "\n" + SHAPES
    assert [f.name for f in parse_module(text).functions] == ["copy", "shapes"]


def test_parsed_function_has_typed_values_and_attributes():
    fn = parse_function(MEMORY)
    assert fn.arg_names == ["x_ptr", "y_ptr", "n"]
    assert fn.arg_attrs == [{"divisibility": 16}, {}, {"divisibility": 16, "note": "x"}]
    assert fn.args[0].type == ir.PointerType(ir.f32)
    load = next(op for op in fn.body.ops if isinstance(op, ir.Load))
    assert (load.cache, load.eviction, load.volatile) == (".ca", "", True)
    assert load.result.type == ir.TileType((128,), ir.f32)
    assert load.mask.owner.pred == "lt" and load.other.owner.value == 0.0
    smem = [op for op in fn.body.ops if isinstance(op, ir.Cast)][0]
    assert smem.to == ir.PointerType(ir.f16, 3)
    assert next(op for op in fn.body.ops if isinstance(op, ir.Assert)).msg == 'says "hi"\n'


def test_parsed_constants_keep_special_floats_and_ints():
    values = {op.result.name: op.value for op in parse_function(MATH).body.ops if isinstance(op, ir.Constant)}
    assert values["inf"] == math.inf and values["ninf"] == -math.inf and math.isnan(values["nan"])
    assert values["tiny"] == -1e-05 and math.copysign(1, values["negz"]) == -1
    assert values["big"] == -2 ** 63 and values["yes"] is True


def test_parsed_locations():
    fn = parse_function(LOCATED)
    loop = fn.body.ops[-1]
    assert loop.loc == ir.Loc("kernel.py", 5, 4)
    assert [op.loc for op in loop.body.ops] == [ir.Loc('dir/k "q".py', 6, 8), ir.Loc("kernel.py", 7, 8)]


def test_parsed_regions_scope():
    fn = parse_function(CONTROL)
    loop = next(op for op in fn.body.ops if isinstance(op, ir.For))
    assert [a.name for a in loop.body.args] == ["i", "acc", "c"]
    assert loop.body.ops[0].rhs is fn.args[1]  # %x from the enclosing block
    assert [r.name for r in loop.results] == ["s", "count"]
    red = next(op for op in fn.body.ops if isinstance(op, ir.Reduce) and op.axis is None)
    assert red.result.type == ir.f32


# --------------------------------------------------------------------------- #
# Parse errors name the line and column
# --------------------------------------------------------------------------- #

HEAD = "func @k(%a: f32, %t: tile<4xi32>) {\n"

BAD_TEXTS = [
    ("  %b = add %a, %zz : f32\n}\n", 2, 16, "value %zz is not defined here"),
    ("  %b = frobnicate %a : f32\n}\n", 2, 8, "unknown op `frobnicate`"),
    ("  %b = add %a %a : f32\n}\n", 2, 15, "expected `,` (`add` takes operands lhs, rhs), found `%a`"),
    ("  %b = add %a, %a\n}\n", 2, 8, "`add` names 1 result(s) but gives 0 type(s)"),
    ("  %b = add %a, %a : f32, f32\n}\n", 2, 8, "`add` names 1 result(s) but gives 2 type(s)"),
    ("  %b = add %a, %a {pred = \"lt\"} : f32\n}\n", 2, 20, "`add` has no attribute `pred` (it has: none)"),
    ("  %b = arange {start = 0} : tile<4xi32>\n}\n", 2, 8, "`arange` needs attribute(s) end"),
    ("  %b = add %a, %a : f33\n}\n", 2, 21, "unknown type `f33`"),
    ("  %b = splat %a {shape = (4,)} : tile<0xf32>\n}\n", 2, 39, "bad tile dimensions in `0xf32`"),
    ("  %b = splat %a {shape = (4,)} : tile<4xf32, tiled>\n}\n", 2, 46, "unknown layout `tiled`"),
    ("  print [%a] {prefix = \"oops}\n}\n", 2, 24, "unterminated string"),
    ("  %b = add %a, %a : f32 $\n}\n", 2, 25, "unexpected character '$'"),
    ("  %a = neg %a : f32\n}\n", 2, 3, "value %a is defined twice"),
    ("  %b = neg %a : f32 junk\n}\n", 2, 21, "expected the end of the line, found `junk`"),
    ("  %b = constant {value = 1.2.3, type = f32} : f32\n}\n", 2, 26, "expected an attribute value, found `1.2.3`"),
    ("  %b = neg %a : f32\n", 3, 1, "missing `}`"),
    ("  barrier {\n  }\n}\n", 2, 11, "`barrier` has 0 region(s)"),
    ("  %r = if %a : f32\n}\n", 2, 19, "expected `{` (`if` has region `then_body`), found the end of the line"),
]


@pytest.mark.parametrize("body, line, col, message", BAD_TEXTS)
def test_parse_error_names_line_and_column(body, line, col, message):
    with pytest.raises(ParseError) as info:
        parse_function(HEAD + body)
    assert (info.value.message, info.value.line, info.value.col) == (message, line, col)
    assert str(info.value).startswith(f"line {line}, col {col}: {message}")


def test_value_defined_in_a_region_is_not_visible_after_it():
    text = HEAD + "  if %c {\n    %in = neg %a : f32\n    yield []\n  } {\n    yield []\n  }\n  %b = neg %in : f32\n}\n"
    text = text.replace("%a: f32,", "%a: f32, %c: i1,")
    with pytest.raises(ParseError, match=r"line 8, col 12: value %in is not defined here"):
        parse_function(text)


def test_parse_error_quotes_the_line_with_a_caret():
    with pytest.raises(ParseError) as info:
        parse_function(HEAD + "  %b = add %a, %zz : f32\n}\n")
    quoted_line, caret = str(info.value).split("\n")[1:]
    assert quoted_line == "      %b = add %a, %zz : f32"
    assert caret == " " * 4 + " " * 15 + "^"  # under the `%` of column 16


def test_parse_function_wants_exactly_one_function():
    with pytest.raises(ParseError, match="exactly one function, found 2"):
        parse_function(SHAPES + SHAPES)


def test_tokenizer_splits_words_names_strings_and_punctuation():
    toks = [(t.kind, t.text) for t in tokenize('%x_1 = cast %p {to = ptr<f32, 3>, s = "a\\"b"} : -1e-05\n')]
    assert toks == [("value", "%x_1"), ("punct", "="), ("word", "cast"), ("value", "%p"), ("punct", "{"),
                    ("word", "to"), ("punct", "="), ("word", "ptr"), ("punct", "<"), ("word", "f32"),
                    ("punct", ","), ("word", "3"), ("punct", ">"), ("punct", ","), ("word", "s"),
                    ("punct", "="), ("string", '"a\\"b"'), ("punct", "}"), ("punct", ":"),
                    ("word", "-1e-05"), ("newline", "\n"), ("eof", "")]


# --------------------------------------------------------------------------- #
# Random well-typed IR: print -> parse -> print is the identity
# --------------------------------------------------------------------------- #

@PROPERTY
@given(random_functions())
def test_random_ir_prints_parses_and_reprints_identically(fn):
    verify_function(fn)
    for locs in (False, True):
        text = print_function(fn, locs)
        again = parse_function(text)
        verify_function(again)
        assert print_function(again, locs) == text
    check_roundtrip(fn)


# --------------------------------------------------------------------------- #
# Damaged text fails with a ParseError, never with a crash
# --------------------------------------------------------------------------- #

DAMAGE_CHARS = st.sampled_from(list("%@{}()[]<>,:=^_\"x0-.\n ") + ["f32", "tile<", "loc(", "yield", "%x"])


@PROPERTY
@given(st.sampled_from(sorted(GOLDEN)), st.data())
def test_damaged_text_raises_parse_error_or_parses(name, data):
    text = GOLDEN[name]
    start = data.draw(st.integers(0, len(text) - 1))
    cut = data.draw(st.integers(0, 4))
    damaged = text[:start] + data.draw(st.lists(DAMAGE_CHARS, max_size=2).map("".join)) + text[start + cut:]
    try:
        fn = parse_function(damaged)
    except ParseError as e:
        assert 1 <= e.line <= damaged.count("\n") + 1 and e.col >= 1
        return
    assert parse_function(print_function(fn, locs=True)) is not None  # what parses prints parseably
