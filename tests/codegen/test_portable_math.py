"""``portable_math``: every function, compiled through ``scalar_math`` with
``PORTABLE_MATH`` and JIT-run on this host (``portable_math_cases``), is
within its bound in ulps of the reference, C's at every special value,
``fmod`` exact; the functions are inlinable, call nothing but LLVM
intrinsics, and a loop calling one vectorizes at O3."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from llvmlite import ir as llir

from codegen.portable_math_cases import CASES, DTYPES, TYPES, compiled, reference, sample, ulp_errors
from codegen.scalar_cases import build_host_loop
from helpers import PROPERTY

from tilec.codegen_llvm.portable_math import PORTABLE_MATH, PortableMath, TRIG_BOUNDS, function_name
from tilec.codegen_llvm.portable_math.constants import two_over_pi_words
from tilec.codegen_llvm.portable_math.emitter import BODIES, FORMATS
from tilec.codegen_llvm.scalar_base import C_MATH, ScalarContext
from tilec.ir import ops as ir
from tilec.ir.core import Value
from tilec.ir.types import f32

KINDS = ("f32", "f64")
PAIRS = [(name, kind) for name in CASES for kind in KINDS]

#: The largest error allowed, in ulps: the library's 2 (docs/internals.md,
#: "Portable math", has what is measured); erfc's 3; f64 erf and erfc
#: against Python's ``math``, itself an ulp or two off.
BOUND = {"erfc": {"f32": 3.0, "f64": 5.0}, "erf": {"f32": 2.0, "f64": 3.0}, "fmod": {"f32": 0.0, "f64": 0.0}}


def bound(name: str, kind: str) -> float:
    return BOUND.get(name, {}).get(kind, 2.0)


def check(name: str, kind: str, *xs: np.ndarray) -> None:
    got = compiled(name, kind)(*xs)
    errors = ulp_errors(got, reference(name, kind, *xs), kind)
    worst = int(np.argmax(errors))
    assert errors[worst] <= bound(name, kind), (
        f"{name} {kind}: {errors[worst]} ulps at {[x[worst] for x in xs]}: got {got[worst]!r}, "
        f"reference {reference(name, kind, *(x[worst:worst + 1] for x in xs))[0]!r}")


@pytest.mark.parametrize("name,kind", PAIRS)
def test_within_bound_over_a_sweep(name, kind):
    """Uniform over the interesting range, log-uniform over every magnitude, and the edges."""
    rng = np.random.default_rng(sum(map(ord, name + kind)))
    check(name, kind, *sample(name, kind, 20_000, rng))


def _floats(name: str, kind: str):
    """Any float of the type (NaN, infinities, subnormals, the largest
    included) or one in the case's range."""
    width = 32 if kind == "f32" else 64
    case = CASES[name]
    anywhere = st.floats(width=width)
    ranged = [st.floats(float(lo), float(hi), width=width) for lo, hi in case.ranges]
    return [hnp.arrays(DTYPES[kind], 64, elements=anywhere | r) for r in ranged]


@pytest.mark.parametrize("name,kind", PAIRS)
def test_within_bound_on_drawn_inputs(name, kind):
    @settings(PROPERTY, max_examples=8)
    @given(st.tuples(*_floats(name, kind)))
    def drawn(xs):
        check(name, kind, *xs)
    drawn()


SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -0.5])


@pytest.mark.parametrize("name,kind", PAIRS)
def test_special_values_are_c99s(name, kind):
    """Zeros (their signs), infinities and NaN, alone and in every pair with
    them and small numbers: exactly numpy's (C's) wherever an operand is one
    of them or the result is (``pow(-1, inf) = 1``, ``log(1) = +0``...)."""
    grids = np.meshgrid(*[SPECIALS] * CASES[name].arity)
    xs = [g.ravel().astype(DTYPES[kind]) for g in grids]
    got = compiled(name, kind)(*xs)
    ref = reference(name, kind, *xs)
    with np.errstate(all="ignore"):
        want = ref.astype(DTYPES[kind])
    special = [~np.isfinite(v) | (v == 0) for v in (*xs, want)]
    exact = np.logical_or.reduce(special)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
    assert same[exact].all(), [(tuple(x[i] for x in xs), got[i], want[i]) for i in np.flatnonzero(exact & ~same)]
    assert np.all(ulp_errors(got, ref, kind)[~exact] <= bound(name, kind))


def _gaps(kind: str):
    """Pairs far apart in exponent (the largest over the smallest subnormal) as well as near."""
    width = 32 if kind == "f32" else 64
    info = np.finfo(DTYPES[kind])
    tiny = st.floats(-float(info.tiny), float(info.tiny), width=width)
    return hnp.arrays(DTYPES[kind], 32, elements=st.floats(width=width) | tiny)


@pytest.mark.parametrize("kind", KINDS)
@settings(PROPERTY, max_examples=15)
@given(data=st.data())
def test_fmod_is_exact(kind, data):
    x, y = data.draw(_gaps(kind)), data.draw(_gaps(kind))
    got = compiled("fmod", kind)(x, y)
    with np.errstate(all="ignore"):
        want = np.fmod(x, y)
    same = (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [(x[i], y[i], got[i], want[i]) for i in np.flatnonzero(~same)]


@pytest.mark.parametrize("kind", KINDS)
def test_fmod_is_exact_across_the_widest_gaps(kind):
    """The largest numbers over the smallest subnormals: every division step is needed."""
    info, rng = np.finfo(DTYPES[kind]), np.random.default_rng(3)
    top = np.nextafter(info.max, 0, dtype=DTYPES[kind]) * (1 - rng.uniform(0, 0.5, 200)).astype(DTYPES[kind])
    units = rng.integers(1, 2 ** 20, 200).astype(DTYPES[kind]) * info.smallest_subnormal
    x, y = np.concatenate([top, [info.max]]).astype(DTYPES[kind]), np.concatenate([units, [info.smallest_subnormal * 3]]).astype(DTYPES[kind])
    got = compiled("fmod", kind)(x, y)
    assert np.array_equal(got, np.fmod(x, y)), [(a, b, g, w) for a, b, g, w in zip(x, y, got, np.fmod(x, y)) if g != w][:3]


def test_the_bits_of_2_over_pi_are_right():
    """fdlibm's table of 2/pi (``ipio2``, 24 bits an entry) begins so; the
    first 53 bits against 2/pi in floats."""
    words = two_over_pi_words(37)
    bits = "".join(f"{w:032b}" for w in words)
    fdlibm = [0xA2F983, 0x6E4E44, 0x1529FC, 0x2757D1, 0xF534DD, 0xC0DB62, 0x95993C, 0x439041, 0xFE5163]
    assert bits[:24 * len(fdlibm)] == "".join(f"{w:024b}" for w in fdlibm)
    assert abs(int(bits[:53], 2) / 2.0 ** 53 - 2 / np.pi) < 2.0 ** -52
    assert two_over_pi_words(3) == words[:3]


@pytest.mark.parametrize("name,kind", PAIRS)
def test_scaling_by_ldexp_gives_the_same_bits(name, kind):
    """``native_scale`` (``llvm.ldexp``, here the C library's on the JIT's
    baseline CPU) and the two exact halves round alike, subnormal results
    and overflow included."""
    rng = np.random.default_rng(sum(map(ord, name + kind)) + 1)
    xs = sample(name, kind, 4000, rng)
    with np.errstate(all="ignore"):
        native, halves = compiled(name, kind, PortableMath(native_scale=True))(*xs), compiled(name, kind)(*xs)
    same = (native.view(f"u{native.itemsize}") == halves.view(f"u{halves.itemsize}")) | (np.isnan(native) & np.isnan(halves))
    assert same.all(), [(tuple(x[i] for x in xs), native[i], halves[i]) for i in np.flatnonzero(~same)[:3]]


TRIG = [(name, kind) for name in ("sin", "cos", "tan") for kind in KINDS]


@pytest.mark.parametrize("name,kind", TRIG)
def test_trig_is_within_bound_past_cody_and_waite(name, kind):
    """From ``TRIG_BOUNDS`` (where Payne and Hanek's reduction takes over) to
    the largest float, both signs, and either side of the bound."""
    rng, dtype = np.random.default_rng(7), DTYPES[kind]
    big = np.exp(rng.uniform(np.log(TRIG_BOUNDS[kind]), np.log(float(np.finfo(dtype).max)), 20_000))
    bound = dtype(TRIG_BOUNDS[kind])
    near = [np.nextafter(bound, 0, dtype=dtype), bound, np.nextafter(bound, np.inf, dtype=dtype), np.finfo(dtype).max]
    x = np.concatenate([big, near]).astype(dtype)
    check(name, kind, np.concatenate([x, -x]))


#: Where reducing loses the most bits: the double nearest a multiple of
#: pi/2 (``6381956970095103 2^797``, ``cos`` = -4.687e-19: 61 bits cancel)
#: beside a few other huge ones; every 64th f32 of the binade from 2^63.
HARDEST = {"f64": [6381956970095103 * 2.0 ** 797, 5261692873635770 * 2.0 ** 499, 8010155434490683 * 2.0 ** 156,
                   2 ** 1023 * (2 - 2.0 ** -52)],
           "f32": list(np.arange(0x5F000000, 0x5F800000, 64, dtype=np.uint32).view(np.float32))}


@pytest.mark.parametrize("name,kind", TRIG)
def test_trig_keeps_its_bound_nearest_multiples_of_pi_2(name, kind):
    x = np.array(HARDEST[kind], DTYPES[kind])
    check(name, kind, np.concatenate([x, -x]))


# --------------------------------------------------------------------------- #
# What the functions are made of
# --------------------------------------------------------------------------- #

def _module_with(name: str, kind: str) -> llir.Module:
    module = llir.Module()
    build_host_loop(module, "loop", CASES[name].make(TYPES[kind]), PORTABLE_MATH)
    return module


@pytest.mark.parametrize("name,kind", PAIRS)
def test_functions_are_internal_inlinable_and_call_only_intrinsics(name, kind):
    parsed = llvm.parse_assembly(str(_module_with(name, kind)))
    parsed.verify()
    defined = [f for f in parsed.functions if f.name.startswith("tilec.math.")]
    assert defined, "no portable function was defined"
    for fn in defined:
        assert fn.linkage == llvm.Linkage.internal
        assert "alwaysinline" in str(fn).split("{")[0]
        callees = set(re.findall(r"call [^@]*@\"?([\w.]+)", str(fn)))
        assert all(c.startswith(("llvm.", "tilec.math.")) for c in callees), callees


def test_functions_are_defined_once_per_module():
    module = llir.Module()
    first = PORTABLE_MATH.define(module, "exp", FORMATS["float"])
    assert PORTABLE_MATH.define(module, "exp", FORMATS["float"]) is first
    assert first.name == function_name("exp", FORMATS["float"]) == "tilec.math.exp.f32"


def _callee_name(library, name: str, signature: llir.FunctionType) -> str:
    module = llir.Module()
    ctx = ScalarContext(llir.IRBuilder(), module, library)
    return library.callee(ctx, name, signature.args[0], signature).name


def test_functions_it_lacks_stay_the_c_librarys():
    unary = llir.FunctionType(llir.FloatType(), [llir.FloatType()])
    assert "lgamma" not in BODIES
    assert _callee_name(PORTABLE_MATH, "lgamma", unary) == "lgammaf"
    assert _callee_name(PORTABLE_MATH, "exp", unary) == "tilec.math.exp.f32"
    # ldexp(float, i32) has a signature of its own: never a portable body, even by name
    assert _callee_name(PORTABLE_MATH, "ldexp", llir.FunctionType(llir.FloatType(), [llir.FloatType(), llir.IntType(32)])) == "ldexpf"
    assert _callee_name(C_MATH, "exp", unary) == "expf"

    class Prefixed(PortableMath):
        def symbol(self, name, t):
            return "vendor_" + super().symbol(name, t)
    assert _callee_name(Prefixed(), "lgamma", unary) == "vendor_lgammaf"


def test_exp_and_exp2_are_its_own_not_llvm_exp2():
    module = llir.Module()
    build_host_loop(module, "loop", ir.Exp2(src=Value(f32)).make_results(), PORTABLE_MATH)
    assert "llvm.exp2" not in str(module) and "tilec.math.exp2.f32" in str(module)


VECTORIZED = [("exp", "f32"), ("sin", "f32"), ("tan", "f64"), ("erf", "f32"), ("log", "f64"), ("pow", "f64"),
              ("fmod", "f32")]


@pytest.mark.parametrize("name,kind", VECTORIZED)
def test_a_loop_calling_it_vectorizes(name, kind):
    """At O3 for x86-64-v3 (AVX2 and FMA) the loop runs on 256-bit vectors and calls nothing."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_triple("x86_64-unknown-linux-gnu").create_target_machine(cpu="x86-64-v3", opt=3)
    module = _module_with(name, kind)
    module.triple, module.data_layout = "x86_64-unknown-linux-gnu", str(machine.target_data)
    parsed = llvm.parse_assembly(str(module))
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3))
    builder.getModulePassManager().run(parsed, builder)
    text = str(parsed)
    vector = "<8 x float>" if kind == "f32" else "<4 x double>"
    assert re.search(rf"= (fmul|call) [^\n]*{re.escape(vector)}", text), f"no {vector} arithmetic"
    assert not [c for c in re.findall(r"call [^@]*@\"?([\w.]+)", text) if not c.startswith("llvm.")]
