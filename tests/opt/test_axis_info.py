"""Axis analysis: exact AxisInfo of named values of small IR texts, then a
hypothesis soundness check: on random integer expressions, every claimed
contiguity, divisibility and constancy holds on the interpreter's values."""
from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tilec import ir
from tilec.ir import Builder, Function
from tilec.ir.interp_ops import evaluate_pure
from tilec.ir.parser import parse_function
from tilec.ir.printer import value_names
from tilec.opt.axis_info import MAX_DIVISIBILITY, AxisInfo, analyze_axes


def infos(text: str) -> dict[str, AxisInfo]:
    """The AxisInfo of every value of the function ``text``, by printed name (no ``%``)."""
    fn = parse_function(text)
    got = analyze_axes(fn)
    return {name.lstrip("%"): got[v] for v, name in value_names(fn).items()}


def A(cont, div, const) -> AxisInfo:
    return AxisInfo(tuple(cont), tuple(div), tuple(const))


VECTOR_ADD = """\
func @add(%x: ptr<f32> {{divisibility = 16}}, %y: ptr<f32>, %n: i32{n_attr}) {{
  %pid = program_id {{axis = 0}} : i32
  %block = constant {{value = 1024, type = i32}} : i32
  %base = mul %pid, %block : i32
  %base_t = splat %base {{shape = (1024,)}} : tile<1024xi32>
  %range = arange {{start = 0, end = 1024}} : tile<1024xi32>
  %offs = add %base_t, %range : tile<1024xi32>
  %n_t = splat %n {{shape = (1024,)}} : tile<1024xi32>
  %mask = cmp %offs, %n_t {{pred = "lt"}} : tile<1024xi1>
  %xs = splat %x {{shape = (1024,)}} : tile<1024xptr<f32>>
  %px = addptr %xs, %offs : tile<1024xptr<f32>>
  %ys = splat %y {{shape = (1024,)}} : tile<1024xptr<f32>>
  %py = addptr %ys, %offs : tile<1024xptr<f32>>
  %v = load %px, %mask, _ : tile<1024xf32>
  store %py, %v, %mask
}}
"""


def test_vector_add_divisible_n():
    got = infos(VECTOR_ADD.format(n_attr=" {divisibility = 16}"))
    assert got["x"] == A([1], [16], [1])
    assert got["y"] == A([1], [4], [1])          # unhinted pointer: element aligned
    assert got["pid"] == A([1], [1], [1])
    assert got["base"] == A([1], [1024], [1])
    assert got["base_t"] == A([1], [1024], [1024])
    assert got["range"] == A([1024], [MAX_DIVISIBILITY], [1])
    assert got["offs"] == A([1024], [1024], [1])
    assert got["mask"] == A([1], [1], [16])
    assert got["px"] == A([1024], [16], [1])
    assert got["py"] == A([1024], [4], [1])
    assert got["v"] == A([1], [1], [1])          # loaded data: nothing known
    assert got["px"].vector_width(0, 4, 16) == 4
    assert got["py"].vector_width(0, 4, 16) == 1
    assert got["px"].vector_width(0, 2, 16) == 8
    assert got["mask"].constancy[0] == 16


def test_vector_add_unaligned_n_breaks_mask_vectors():
    got = infos(VECTOR_ADD.format(n_attr=""))
    assert got["n"] == A([1], [1], [1])
    assert got["mask"] == A([1], [1], [1])
    assert got["mask"].constancy[0] == 1


def test_2d_row_major_tile():
    got = infos("""\
func @tile(%p: ptr<f16> {divisibility = 16}, %stride: i32 {divisibility = 16}) {
  %row = arange {start = 0, end = 32} : tile<32xi32>
  %col = arange {start = 0, end = 64} : tile<64xi32>
  %r2 = expand_dims %row {axis = 1} : tile<32x1xi32>
  %s = splat %stride {shape = (32, 1)} : tile<32x1xi32>
  %rs = mul %r2, %s : tile<32x1xi32>
  %rb = broadcast %rs {shape = (32, 64)} : tile<32x64xi32>
  %c2 = expand_dims %col {axis = 0} : tile<1x64xi32>
  %cb = broadcast %c2 {shape = (32, 64)} : tile<32x64xi32>
  %offs = add %rb, %cb : tile<32x64xi32>
  %ps = splat %p {shape = (32, 64)} : tile<32x64xptr<f16>>
  %ptrs = addptr %ps, %offs : tile<32x64xptr<f16>>
}
""")
    assert got["r2"] == A([32, 1], [MAX_DIVISIBILITY, 1], [1, 1])
    assert got["rs"] == A([1, 1], [16, 16], [1, 1])
    assert got["rb"] == A([1, 1], [16, 16], [1, 64])
    assert got["cb"] == A([1, 64], [1, MAX_DIVISIBILITY], [32, 1])
    assert got["offs"] == A([1, 64], [1, 16], [1, 1])
    assert got["ptrs"] == A([1, 64], [2, 16], [1, 1])
    assert got["ptrs"].vector_width(1, 2, 16) == 8
    assert got["ptrs"].vector_width(0, 2, 16) == 1


def test_hints_raise_what_is_known():
    got = infos("""\
func @h(%i: i32, %p: ptr<f32>, %t: tile<128xi32>) {
  %d = assume %i {kind = "multiple_of", values = (16,)} : i32
  %st = splat %d {shape = (128,)} : tile<128xi32>
  %c = assume %t {kind = "max_contiguous", values = (128,)} : tile<128xi32>
  %cd = assume %c {kind = "multiple_of", values = (128,)} : tile<128xi32>
  %k = assume %t {kind = "max_constancy", values = (32,)} : tile<128xi32>
  %ps = splat %p {shape = (128,)} : tile<128xptr<f32>>
  %q = addptr %ps, %cd : tile<128xptr<f32>>
}
""")
    assert got["i"] == A([1], [1], [1])
    assert got["d"] == A([1], [16], [1])
    assert got["st"] == A([1], [16], [128])
    assert got["c"] == A([128], [1], [1])
    assert got["cd"] == A([128], [128], [1])
    assert got["k"] == A([1], [1], [32])
    assert got["q"] == A([128], [4], [1])
    assert got["q"].vector_width(0, 4, 16) == 1


def test_constants():
    got = infos("""\
func @c() {
  %a = constant {value = 48, type = i32} : i32
  %z = constant {value = 0, type = i64} : i64
  %n = constant {value = -8, type = tile<4x16xi32>} : tile<4x16xi32>
  %odd = constant {value = 3, type = tile<8xi32>} : tile<8xi32>
  %f = constant {value = 2.0, type = tile<8xf32>} : tile<8xf32>
  %big = constant {value = 4294967296, type = i64} : i64
}
""")
    assert got["a"] == A([1], [16], [1])
    assert got["z"] == A([1], [MAX_DIVISIBILITY], [1])
    assert got["n"] == A([1, 1], [8, 8], [4, 16])
    assert got["odd"] == A([1], [1], [8])
    assert got["f"] == A([1], [1], [8])
    assert got["big"] == A([1], [MAX_DIVISIBILITY], [1])


def test_div_rem_by_powers_of_two():
    got = infos("""\
func @d(%i: i32) {
  %r = arange {start = 0, end = 64} : tile<64xi32>
  %four = constant {value = 4, type = tile<64xi32>} : tile<64xi32>
  %hundred = constant {value = 128, type = tile<64xi32>} : tile<64xi32>
  %three = constant {value = 3, type = tile<64xi32>} : tile<64xi32>
  %q = div %r, %four : tile<64xi32>
  %m = rem %r, %four : tile<64xi32>
  %q2 = div %r, %hundred : tile<64xi32>
  %m2 = rem %r, %hundred : tile<64xi32>
  %q3 = div %r, %three : tile<64xi32>
  %it = splat %i {shape = (64,)} : tile<64xi32>
  %s = add %it, %r : tile<64xi32>
  %qs = div %s, %four : tile<64xi32>
  %ms = rem %s, %four : tile<64xi32>
}
""")
    assert got["q"] == A([1], [1], [4])
    assert got["m"] == A([4], [MAX_DIVISIBILITY], [1])
    assert got["q2"] == A([1], [MAX_DIVISIBILITY // 128], [64])  # all zeros
    assert got["m2"] == A([64], [MAX_DIVISIBILITY], [1])
    assert got["q3"] == A([1], [1], [1])
    # %i may be negative and unaligned: nothing beyond the trivial.
    assert got["s"] == A([64], [1], [1])
    assert got["qs"] == A([1], [1], [1])
    assert got["ms"] == A([1], [1], [1])


def test_masks_select_and_casts():
    got = infos("""\
func @m(%n: i32 {divisibility = 16}, %k: i32 {divisibility = 4}) {
  %r = arange {start = 64, end = 128} : tile<64xi32>
  %nt = splat %n {shape = (64,)} : tile<64xi32>
  %kt = splat %k {shape = (64,)} : tile<64xi32>
  %lt = cmp %r, %nt {pred = "lt"} : tile<64xi1>
  %lk = cmp %r, %kt {pred = "lt"} : tile<64xi1>
  %gt = cmp %nt, %r {pred = "gt"} : tile<64xi1>
  %le = cmp %r, %nt {pred = "le"} : tile<64xi1>
  %both = and %lt, %lk : tile<64xi1>
  %r2 = add %r, %nt : tile<64xi32>
  %sel = select %lt, %r, %r2 : tile<64xi32>
  %sel1 = select %lt, %r, %nt : tile<64xi32>
  %wide = cast %r {to = i64} : tile<64xi64>
  %f = cast %r {to = f32} : tile<64xf32>
}
""")
    assert got["r"] == A([64], [64], [1])
    assert got["lt"] == A([1], [1], [16])
    assert got["lk"] == A([1], [1], [4])
    assert got["gt"] == A([1], [1], [16])
    assert got["le"] == A([1], [1], [1])         # r <= n flips inside a run
    assert got["both"] == A([1], [1], [4])
    assert got["r2"] == A([64], [16], [1])
    assert got["sel"] == A([16], [16], [1])       # runs as long as the condition's
    assert got["sel1"] == A([1], [1], [1])
    assert got["wide"] == A([64], [64], [1])
    assert got["f"] == A([1], [1], [1])


def test_for_loop_iv_and_carried_pointer():
    got = infos("""\
func @loop(%p: ptr<f32> {divisibility = 16}, %n: i32) {
  %lo = constant {value = 0, type = i32} : i32
  %step = constant {value = 32, type = i32} : i32
  %r = arange {start = 0, end = 32} : tile<32xi32>
  %ps = splat %p {shape = (32,)} : tile<32xptr<f32>>
  %p0 = addptr %ps, %r : tile<32xptr<f32>>
  %inc = constant {value = 32, type = tile<32xi32>} : tile<32xi32>
  %out = for %lo, %n, %step, [%p0] : tile<32xptr<f32>> {
  ^(%iv: i32, %cur: tile<32xptr<f32>>):
    %next = addptr %cur, %inc : tile<32xptr<f32>>
    yield [%next]
  }
}
""")
    assert got["iv"] == A([1], [32], [1])
    assert got["cur"] == A([32], [16], [1])
    assert got["out"] == A([32], [16], [1])


def test_loop_carried_values_meet_init_and_yield():
    got = infos("""\
func @loop(%n: i32, %one: i32) {
  %lo = constant {value = 0, type = i32} : i32
  %step = constant {value = 1, type = i32} : i32
  %r = arange {start = 0, end = 32} : tile<32xi32>
  %c = constant {value = 1, type = tile<32xi32>} : tile<32xi32>
  %k = constant {value = 64, type = tile<32xi32>} : tile<32xi32>
  %a, %b = for %lo, %n, %step, [%r, %r] : tile<32xi32>, tile<32xi32> {
  ^(%iv: i32, %x: tile<32xi32>, %y: tile<32xi32>):
    %x1 = add %x, %c : tile<32xi32>
    %y1 = add %y, %k : tile<32xi32>
    yield [%x1, %y1]
  }
}
""")
    assert got["iv"] == A([1], [1], [1])
    assert got["x"] == A([32], [1], [1])        # r, r+1, r+2, ...: runs, unaligned
    assert got["a"] == A([32], [1], [1])
    assert got["y"] == A([32], [64], [1])       # r + 64*i stays 64-aligned
    assert got["b"] == A([32], [64], [1])


# --------------------------------------------------------------------------- #
# Soundness on random integer expressions
# --------------------------------------------------------------------------- #

N = 16
SOUNDNESS = settings(max_examples=60, deadline=None)


def _const_tile(b: Builder, value: int, shape) -> ir.Value:
    t = ir.TileType(tuple(shape), ir.i32)
    return b.value(ir.Constant, value=value, type=t)


@st.composite
def expressions(draw):
    """A straight-line function of i32 tiles, and the values of its two arguments."""
    fn_block = ir.Block()
    i = fn_block.add_arg(ir.i32, "i")
    j = fn_block.add_arg(ir.i32, "j")
    p = fn_block.add_arg(ir.PointerType(ir.f32), "p")
    b = Builder(fn_block)
    pools: dict[tuple, list] = {(N,): [], (N, N): []}
    masks: dict[tuple, list] = {(N,): [], (N, N): []}

    def leaf():
        kind = draw(st.sampled_from(["arange", "const", "arg", "argconst"]))
        if kind == "arange":
            start = draw(st.sampled_from([0, 1, 3, 4, 16, 32, 48]))
            return b.value(ir.Arange, start=start, end=start + N)
        if kind == "const":
            return _const_tile(b, draw(st.integers(-40, 40) | st.sampled_from([1, 2, 4, 8, 16, 64])), (N,))
        src = draw(st.sampled_from([i, j]))
        return b.value(ir.Splat, src=src, shape=(N,))

    for _ in range(3):
        pools[(N,)].append(leaf())
    for _ in range(draw(st.integers(1, 8))):
        shape = draw(st.sampled_from([(N,), (N,), (N, N)])) if pools[(N, N)] else (N,)
        pool = pools[shape]
        what = draw(st.sampled_from(["add", "sub", "mulc", "divc", "remc", "cmp", "select", "andor",
                                     "to2d", "leaf", "permute", "addptr", "cast"]))
        x, y = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        if what in ("add", "sub"):
            pool.append(b.value(ir.Add if what == "add" else ir.Sub, lhs=x, rhs=y))
        elif what in ("mulc", "divc", "remc"):
            c = draw(st.sampled_from([1, 2, 4, 8, 16, 3, -2]) if what == "mulc"
                     else st.sampled_from([1, 2, 4, 8, 16, 32, 3, 6]))
            k = _const_tile(b, c, shape)
            cls = {"mulc": ir.Mul, "divc": ir.Div, "remc": ir.Rem}[what]
            lhs, rhs = (k, x) if what == "mulc" and draw(st.booleans()) else (x, k)
            pool.append(b.value(cls, lhs=lhs, rhs=rhs))
        elif what == "cmp":
            pred = draw(st.sampled_from(["lt", "le", "gt", "ge", "eq", "ne"]))
            masks[shape].append(b.value(ir.Compare, lhs=x, rhs=y, pred=pred))
        elif what == "select" and masks[shape]:
            pool.append(b.value(ir.Select, cond=draw(st.sampled_from(masks[shape])), a=x, b=y))
        elif what == "andor" and len(masks[shape]) >= 1:
            m1, m2 = draw(st.sampled_from(masks[shape])), draw(st.sampled_from(masks[shape]))
            masks[shape].append(b.value(draw(st.sampled_from([ir.And, ir.Or])), lhs=m1, rhs=m2))
        elif what == "to2d" and shape == (N,):
            e = b.value(ir.ExpandDims, src=x, axis=draw(st.sampled_from([0, 1])))
            pools[(N, N)].append(b.value(ir.Broadcast, src=e, shape=(N, N)))
        elif what == "permute" and shape == (N, N):
            pool.append(b.value(ir.Permute, src=x, order=(1, 0)))
        elif what == "leaf" and shape == (N,):
            pool.append(leaf())
        elif what == "addptr":
            b.value(ir.AddPtr, ptr=b.value(ir.Splat, src=p, shape=shape), offset=x)
        elif what == "cast":
            b.value(ir.Cast, src=x, to=draw(st.sampled_from([ir.i64, ir.u32, ir.i16, ir.u64])))
    i_div = draw(st.sampled_from([1, 16]))
    p_div = draw(st.sampled_from([4, 16]))
    fn = Function("e", fn_block, ["i", "j", "p"],
                  [{"divisibility": i_div} if i_div > 1 else {}, {}, {"divisibility": p_div} if p_div > 4 else {}])
    iv = draw(st.integers(-64, 64)) * i_div
    jv = draw(st.integers(-1000, 1000))
    pv = draw(st.integers(2**20, 2**21)) * p_div
    return fn, {i: np.int32(iv), j: np.int32(jv), p: np.int64(pv)}


def _evaluate(fn: Function, args: dict) -> dict:
    env = dict(args)
    for op in fn.body.ops:
        outs = evaluate_pure(op, [env[v] for v in op.operands])
        env.update(zip(op.results, outs))
    return env


def _check_sound(name: str, x: np.ndarray, info: AxisInfo, step: int = 1) -> None:
    """``info`` holds of ``x``; a run steps by ``step`` (a pointer's element size)."""
    x = np.asarray(x).astype(np.int64)
    if x.ndim == 0:
        x = x.reshape(1)
    for d in range(x.ndim):
        c, v, s = info.contiguity[d], info.divisibility[d], info.constancy[d]
        xs = np.moveaxis(x, d, -1)
        n = xs.shape[-1]
        runs = xs.reshape(xs.shape[:-1] + (n // c, c))
        assert ((np.diff(runs, axis=-1) % 2**32) == step).all(), f"{name}: contiguity {c} on dim {d}: {xs}"
        assert (runs[..., 0] % v == 0).all(), f"{name}: divisibility {v} on dim {d}: {xs}"
        blocks = xs.reshape(xs.shape[:-1] + (n // s, s))
        assert (blocks == blocks[..., :1]).all(), f"{name}: constancy {s} on dim {d}: {xs}"


@SOUNDNESS
@given(expressions())
def test_analysis_is_sound(case):
    fn, args = case
    env = _evaluate(fn, args)
    assume(all(np.abs(np.asarray(env[v]).astype(np.int64)).max() < 2**24
               for v in env if not ir.is_pointer(v.type)))
    got = analyze_axes(fn)
    for v, val in env.items():
        step = ir.elem_type(v.type).elem.bytes if ir.is_pointer(v.type) else 1
        _check_sound(repr(v), val, got[v], step)


def test_soundness_checker_catches_a_wrong_claim():
    with np.testing.assert_raises(AssertionError):
        _check_sound("x", np.arange(1, 9), A([8], [2], [1]))
    with np.testing.assert_raises(AssertionError):
        _check_sound("x", np.array([0, 0, 1, 1]), A([1], [1], [4]))


WRAPPED = """\
func @wrap(%n: i32{n_attr}) {{
  %pid = program_id {{axis = 0}} : i32
  %block = constant {{value = 128, type = i32}} : i32
  %base = mul %pid, %block : i32
  %base_t = splat %base {{shape = (128,)}} : tile<128xi32>
  %range = arange {{start = 0, end = 128}} : tile<128xi32>
  %offs = add %base_t, %range : tile<128xi32>
  %n_t = splat %n {{shape = (128,)}} : tile<128xi32>
  %wrapped = rem %offs, %n_t : tile<128xi32>
}}
"""


def test_rem_by_an_argument_keeps_runs_its_divisibility_allows():
    """``(pid*128 + arange) % N`` (the matmul tutorial's wrap-around rows):
    no multiple of N falls inside an aligned run of N's power-of-two divisor."""
    assert infos(WRAPPED.format(n_attr=" {divisibility = 16}"))["wrapped"] == A([16], [16], [1])
    assert infos(WRAPPED.format(n_attr=""))["wrapped"] == A([1], [1], [1])


def test_pointer_int_casts_keep_alignment_and_runs_of_equal_values_not_contiguity():
    """Consecutive int addresses are one byte apart, consecutive pointers one element."""
    got = infos("""\
func @c(%x: ptr<i32> {divisibility = 16}, %a: i64 {divisibility = 16}) {
  %r = arange {start = 0, end = 64} : tile<64xi32>
  %xs = splat %x {shape = (64,)} : tile<64xptr<i32>>
  %p = addptr %xs, %r : tile<64xptr<i32>>
  %i = cast %p {to = i64} : tile<64xi64>
  %bytes = cast %i {to = ptr<i8>} : tile<64xptr<i8>>
  %same = cast %p {to = ptr<f32>} : tile<64xptr<f32>>
  %narrow = cast %p {to = ptr<i8>} : tile<64xptr<i8>>
  %as = splat %a {shape = (64,)} : tile<64xi64>
  %r64 = cast %r {to = i64} : tile<64xi64>
  %ai = add %as, %r64 : tile<64xi64>
  %from_int = cast %ai {to = ptr<f32>} : tile<64xptr<f32>>
  %uniform = cast %as {to = ptr<f32>} : tile<64xptr<f32>>
}
""")
    assert got["p"] == A([64], [16], [1])
    assert got["i"] == A([1], [1], [1])
    assert got["bytes"] == A([1], [1], [1])
    assert got["same"] == got["p"]
    assert got["narrow"] == A([1], [1], [1])
    assert got["from_int"] == A([1], [1], [1])
    assert got["uniform"] == A([1], [16], [64])
