"""Every function of ``tl.extra.libdevice`` as a test case: its operands, the
dtypes tested, the inputs drawn, a float64 reference, and libdevice's
documented error bound (CUDA Math API, "Mathematical Functions" appendix of
the CUDA C++ Programming Guide), in ulps for float32 and float64.

The references are numpy's or Python's ``math`` functions wherever one
exists (independent of the interpreter's own definitions in
``tilec/ir/math_functions.py``), else that definition itself, which the
inverse-function tests check on their own.  One kernel, ``apply_kernel``,
runs every case (the function is a constexpr argument); ``draw_operands``,
``launch`` and ``expected`` are what the interpreter and GPU tests share.
"""
from __future__ import annotations

import functools
import importlib.util
import inspect
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from tilec.ir.math_functions import FUNCTIONS
from tilec.language.extra import libdevice

from helpers import to_host, values

BLOCK = 16


@tilec.jit
def apply_kernel(a_ptr, b_ptr, c_ptr, d_ptr, out_ptr, FN: tl.constexpr, ARITY: tl.constexpr, BLOCK: tl.constexpr):
    """``out = FN(a, b, c, d)`` over the first ``ARITY`` operands."""
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    if ARITY == 1:
        r = FN(a)
    elif ARITY == 2:
        r = FN(a, tl.load(b_ptr + offs))
    elif ARITY == 3:
        r = FN(a, tl.load(b_ptr + offs), tl.load(c_ptr + offs))
    else:
        r = FN(a, tl.load(b_ptr + offs), tl.load(c_ptr + offs), tl.load(d_ptr + offs))
    tl.store(out_ptr + offs, r)


def _vectorized(fn: Callable, at_error: Callable = lambda *args: math.nan) -> Callable:
    """A Python ``math`` function on arrays; ``at_error(*args)`` where it raises (C's value there)."""
    def apply(*xs):
        def one(*args):
            try:
                return fn(*args)
            except (ValueError, OverflowError):
                return at_error(*args)
        return np.vectorize(one, otypes=[np.float64])(*xs)
    return apply


def _gamma_limit(x: float) -> float:
    """C's tgamma where Python's raises: NaN at the negative integers, else (at +-0,
    past overflow) the infinity of x's sign."""
    return math.nan if x < 0 and x == math.floor(x) else math.copysign(math.inf, x)


FLOAT = ("float32", "float64")
NARROW = ("float16", "bfloat16")


@dataclass(frozen=True)
class Case:
    """How ``libdevice.<name>`` is tested.

    ``params``: a letter an operand, ``x`` a value of the tested dtype, ``n``
    an int32; ``result``: None for the tested dtype, else a dtype name;
    ``lo``/``hi``/``finite``: the value inputs drawn; ``n_range``: the int32
    operands drawn; ``ulps``: libdevice's bound (float32, float64), None
    where the bound is absolute or unstated (``atol`` then applies on the GPU);
    ``in_dtype``: the reference computes in the tested dtype, not float64."""

    name: str
    params: str
    reference: Callable
    dtypes: tuple = FLOAT
    result: Optional[str] = None
    lo: Optional[float] = None
    hi: Optional[float] = None
    finite: bool = False
    n_range: tuple = (-20, 20)
    ulps: tuple = (0, 0)
    atol: float = 0.0
    narrow: bool = True
    in_dtype: bool = False
    notes: str = field(default="", compare=False)


def _table(name: str) -> Callable:
    return FUNCTIONS[name].reference


def _byte_perm_reference(x, y, s):
    """Byte by byte, in Python ints: byte i of the result is byte (s >> 4i) & 7 of y:x."""
    def one(a, b, sel):
        wide = (int(b) & 0xFFFFFFFF) << 32 | (int(a) & 0xFFFFFFFF)
        out = sum(((wide >> (8 * ((int(sel) >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))
        return out - (1 << 32) if out >= 1 << 31 else out
    return np.array([one(*v) for v in zip(x, y, s)], np.int32)


_INT_DTYPES = ("int32", "int64", "uint32", "uint64")
_I32 = ("int32", "uint32")

CASES = [
    Case("acos", "x", np.arccos, ulps=(2, 2)), Case("acosh", "x", np.arccosh, ulps=(4, 3)),
    Case("asin", "x", np.arcsin, ulps=(2, 2)), Case("asinh", "x", np.arcsinh, ulps=(3, 3)),
    Case("atan", "x", np.arctan, ulps=(2, 2)), Case("atanh", "x", np.arctanh, ulps=(3, 2)),
    Case("atan2", "xx", np.arctan2, ulps=(3, 2)), Case("cbrt", "x", np.cbrt, ulps=(1, 1)),
    Case("rcbrt", "x", lambda x: 1 / np.cbrt(x), ulps=(1, 1)), Case("cosh", "x", np.cosh, ulps=(2, 2)),
    Case("sinh", "x", np.sinh, ulps=(3, 2)), Case("tanh", "x", _vectorized(math.tanh), ulps=(2, 2)),
    Case("tan", "x", np.tan, ulps=(4, 2), lo=-1e4, hi=1e4), Case("sinpi", "x", _table("sinpi"), ulps=(1, 2)),
    Case("cospi", "x", _table("cospi"), ulps=(1, 2)), Case("erfc", "x", _vectorized(math.erfc), ulps=(4, 5)),
    Case("erfcx", "x", _table("erfcx"), ulps=(4, 4)), Case("erfinv", "x", _table("erfinv"), ulps=(2, 5)),
    Case("erfcinv", "x", _table("erfcinv"), ulps=(4, 6)),
    Case("normcdf", "x", lambda x: _vectorized(math.erfc)(-x / math.sqrt(2)) / 2, ulps=(5, 5)),
    Case("normcdfinv", "x", _table("normcdfinv"), ulps=(5, 8)),
    Case("exp10", "x", lambda x: np.power(10.0, x), ulps=(2, 1)), Case("expm1", "x", np.expm1, ulps=(1, 1)),
    Case("log10", "x", np.log10, ulps=(2, 1)), Case("log1p", "x", np.log1p, ulps=(1, 1)),
    Case("logb", "x", _table("logb")), Case("ilogb", "x", _table("ilogb"), result="int32"),
    Case("lgamma", "x", _vectorized(math.lgamma, lambda x: math.inf), ulps=(6, 4), lo=-2.0, hi=1e30,
         notes="libdevice's bound holds outside (-10.001, -2.264) (f32), (-23.0001, -2.2637) (f64)"),
    Case("tgamma", "x", _vectorized(math.gamma, _gamma_limit), ulps=(5, 10), lo=-30.0, hi=40.0),
    Case("j0", "x", _table("j0"), ulps=(None, None), atol=2.2e-6, lo=-1e3, hi=1e3),
    Case("j1", "x", _table("j1"), ulps=(None, None), atol=2.2e-6, lo=-1e3, hi=1e3),
    Case("y0", "x", _table("y0"), ulps=(None, None), atol=2.2e-6, lo=1e-3, hi=1e3),
    Case("y1", "x", _table("y1"), ulps=(None, None), atol=2.2e-6, lo=1e-3, hi=1e3),
    Case("jn", "nx", _table("jn"), ulps=(None, None), atol=2e-5, lo=-100.0, hi=100.0, n_range=(0, 5)),
    Case("yn", "nx", _table("yn"), ulps=(None, None), atol=2e-5, lo=0.5, hi=100.0, n_range=(0, 5)),
    Case("cyl_bessel_i0", "x", np.i0, ulps=(6, 6), lo=-80.0, hi=80.0),
    Case("cyl_bessel_i1", "x", _table("cyl_bessel_i1"), ulps=(6, 6), lo=-80.0, hi=80.0),
    Case("trunc", "x", np.trunc), Case("rint", "x", np.rint), Case("nearbyint", "x", np.rint),
    Case("round", "x", _vectorized(lambda v: math.copysign(math.floor(abs(v) + 0.5) if abs(v) < 2**52 else abs(v), v))),
    Case("llrint", "x", lambda x: np.rint(x).astype(np.int64), result="int64", lo=-2.0**62, hi=2.0**62),
    Case("llround", "x", _table("llround"), result="int64", lo=-2.0**62, hi=2.0**62),
    Case("saturatef", "x", lambda x: np.where(np.isnan(x), 0.0, np.clip(x, 0, 1)), dtypes=("float32",)),
    Case("copysign", "xx", np.copysign), Case("fdim", "xx", _table("fdim")), Case("fmod", "xx", np.fmod),
    Case("remainder", "xx", _vectorized(math.remainder)), Case("hypot", "xx", np.hypot, ulps=(3, 2)),
    Case("rhypot", "xx", lambda x, y: 1 / np.hypot(x, y), ulps=(2, 1)),
    Case("pow", "xx", np.power, ulps=(4, 2)), Case("pow", "xn", lambda x, n: np.power(x, n.astype(np.float64)), ulps=(4, 2)),
    Case("nextafter", "xx", np.nextafter, narrow=False, in_dtype=True),
    Case("norm3d", "xxx", lambda x, y, z: _vectorized(math.hypot)(x, y, z), ulps=(3, 2)),
    Case("rnorm3d", "xxx", lambda x, y, z: 1 / _vectorized(math.hypot)(x, y, z), ulps=(2, 1)),
    Case("norm4d", "xxxx", lambda *xs: _vectorized(math.hypot)(*xs), ulps=(3, 2)),
    Case("rnorm4d", "xxxx", lambda *xs: 1 / _vectorized(math.hypot)(*xs), ulps=(2, 1)),
    Case("ldexp", "xn", np.ldexp, n_range=(-300, 300)), Case("scalbn", "xn", np.ldexp, n_range=(-300, 300)),
    Case("isnan", "x", np.isnan, result="int1"), Case("isinf", "x", np.isinf, result="int1"),
    Case("signbit", "x", lambda x: np.signbit(x).astype(np.int32), result="int32"),
    Case("finitef", "x", lambda x: np.isfinite(x).astype(np.int32), dtypes=("float32",), result="int32"),
    Case("isfinited", "x", lambda x: np.isfinite(x).astype(np.int32), dtypes=("float64",), result="int32"),
    *(Case(f"fast_{n}f", "x", ref, dtypes=("float32",), ulps=(None, None), narrow=False, lo=lo, hi=hi)
      for n, ref, lo, hi in [("sin", np.sin, -100.0, 100.0), ("cos", np.cos, -100.0, 100.0),
                             ("tan", np.tan, -1.5, 1.5), ("exp", np.exp, -80.0, 80.0),
                             ("exp10", lambda x: np.power(10.0, x), -30.0, 30.0), ("log", np.log, 1e-30, 1e30),
                             ("log2", np.log2, 1e-30, 1e30), ("log10", np.log10, 1e-30, 1e30)]),
    Case("fast_powf", "xx", np.power, dtypes=("float32",), ulps=(None, None), narrow=False, lo=0.01, hi=10.0),
    Case("fast_dividef", "xx", np.true_divide, dtypes=("float32",), ulps=(None, None), narrow=False,
         lo=-1e30, hi=1e30, notes="2 ulps for |y| in [2^-126, 2^126]; beyond, the hardware's approximation gives 0"),
    Case("byte_perm", "xxx", _byte_perm_reference, dtypes=("int32",), narrow=False),
    Case("clz", "x", _table("clz"), dtypes=_INT_DTYPES, result="int32", narrow=False),
    Case("popc", "x", _table("popc"), dtypes=_INT_DTYPES, result="int32", narrow=False),
    Case("ffs", "x", _table("ffs"), dtypes=_INT_DTYPES, result="int32", narrow=False),
    Case("brev", "x", _table("brev"), dtypes=_INT_DTYPES, narrow=False),
    Case("mulhi", "xx", _table("mulhi"), dtypes=_INT_DTYPES, narrow=False),
    Case("mul24", "xx", _table("mul24"), dtypes=_I32, narrow=False),
    Case("hadd", "xx", _table("hadd"), dtypes=_I32, narrow=False),
    Case("rhadd", "xx", _table("rhadd"), dtypes=_I32, narrow=False),
    # The libdevice names tl.math already had (their own tests cover them in depth).
    Case("abs", "x", np.abs), Case("floor", "x", np.floor), Case("ceil", "x", np.ceil),
    Case("sqrt", "x", np.sqrt), Case("sqrt_rn", "x", np.sqrt), Case("rsqrt", "x", lambda x: 1 / np.sqrt(x), ulps=(2, 1)),
    Case("exp", "x", np.exp, ulps=(2, 1)), Case("exp2", "x", np.exp2, ulps=(2, 1)),
    Case("log", "x", np.log, ulps=(1, 1)), Case("log2", "x", np.log2, ulps=(1, 1)),
    Case("sin", "x", np.sin, ulps=(2, 2), lo=-1e4, hi=1e4), Case("cos", "x", np.cos, ulps=(2, 2), lo=-1e4, hi=1e4),
    Case("erf", "x", _vectorized(math.erf), ulps=(2, 2)),
    Case("fma", "xxx", lambda a, b, c: a * b + c, finite=True, lo=-1e15, hi=1e15),
    Case("fma_rn", "xxx", lambda a, b, c: a * b + c, finite=True, lo=-1e15, hi=1e15),
    Case("div_rn", "xx", np.true_divide), Case("add_rn", "xx", np.add), Case("sub_rn", "xx", np.subtract),
    Case("mul_rn", "xx", np.multiply), Case("rcp_rn", "x", lambda x: 1 / x),
]


_ROUND_TO_INTEGRAL = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
_INT_RESULTS = {"int": ("int32", "int32"), "uint": ("uint32", "int32"), "ll": ("int64", "int64"), "ull": ("uint64", "int64")}


def _float_to_int(mode: str, to: str, result: str) -> Callable:
    """Rounded by ``mode``, saturated to ``to``'s range (NaN gives 0), its bits as ``result``."""
    info = np.iinfo(to)

    def ref(x):
        r = _ROUND_TO_INTEGRAL[mode](x)
        ints = [0 if math.isnan(v) else int(min(max(v, info.min), info.max)) for v in r.ravel()]
        return np.array(ints, to).view(result).reshape(r.shape)
    return ref


def _toward_zero_f32(x):
    """float64 -> float32 rounded toward zero (past the largest finite: the largest finite)."""
    y = x.astype(np.float32)
    over = np.abs(y.astype(np.float64)) > np.abs(x)
    return np.where(over, np.nextafter(y, np.float32(0)), y)


def _conversion_cases() -> list:
    cases = []
    for src, dtype in (("float", "float32"), ("double", "float64")):
        for dst, (to, result) in _INT_RESULTS.items():
            cases += [Case(f"{src}2{dst}_{mode}", "x", _float_to_int(mode, to, result), dtypes=(dtype,),
                           result=result, narrow=False) for mode in _ROUND_TO_INTEGRAL]
        for i, (to, _) in _INT_RESULTS.items():
            cases.append(Case(f"{i}2{src}_rn", "x", lambda x, d=dtype: x.astype(d), dtypes=(to,), result=dtype,
                              narrow=False))
    cases += [
        Case("double2float_rn", "x", lambda x: x.astype(np.float32), dtypes=("float64",), result="float32", narrow=False),
        Case("double2float_rz", "x", _toward_zero_f32, dtypes=("float64",), result="float32", narrow=False),
        Case("double2loint", "x", lambda x: (x.view(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32),
             dtypes=("float64",), result="int32", in_dtype=True, narrow=False),
        Case("double2hiint", "x", lambda x: (x.view(np.int64) >> 32).astype(np.int32), dtypes=("float64",),
             result="int32", in_dtype=True, narrow=False),
        Case("hiloint2double", "xx", lambda hi, lo: ((hi.astype(np.int64) << 32)
                                                     | lo.view(np.uint32).astype(np.int64)).view(np.float64),
             dtypes=("int32",), result="float64"),
    ]
    for name, src, to in [("int_as_float", "int32", "float32"), ("float_as_int", "float32", "int32"),
                          ("uint_as_float", "uint32", "float32"), ("float_as_uint", "float32", "int32"),
                          ("longlong_as_double", "int64", "float64"), ("double_as_longlong", "float64", "int64")]:
        cases.append(Case(name, "x", lambda x, t=to: x.view(t), dtypes=(src,), result=to, in_dtype=True,
                          narrow=False))
    return cases


CASES += _conversion_cases()


def case_dtypes(with_narrow: bool = True):
    """(case, dtype) for every case and each dtype it is tested in."""
    for case in CASES:
        narrow = NARROW if with_narrow and case.narrow and case.dtypes[0].startswith("float") else ()
        for dtype in case.dtypes + narrow:
            yield pytest.param(case, dtype, id=f"{case_id(case)}-{dtype}")


def draw_operands(data, case, dtype: str) -> list[np.ndarray]:
    """The case's operands: values of ``dtype`` (as numpy, bf16 as float32) and int32s."""
    out = []
    for letter in case.params:
        if letter == "n":
            out.append(data.draw(hnp.arrays(np.int32, BLOCK, elements=st.integers(*case.n_range))))
        else:
            out.append(data.draw(values(dtype, BLOCK, finite=case.finite, lo=case.lo, hi=case.hi)))
    return out


def launch(case, dtype: str, operands: list[np.ndarray], place=to_host):
    """``libdevice.<name>(*operands)`` through ``apply_kernel``; the output array.
    ``place(values, dtype)`` makes each array the kernel gets (the host's by default)."""
    result = case.result or dtype
    args = [place(x, "int32" if letter == "n" else dtype) for letter, x in zip(case.params, operands)]
    args += [args[0]] * (4 - len(args))
    out = place(np.zeros(BLOCK), result)
    apply_kernel[(1,)](*args, out, FN=getattr(libdevice, case.name), ARITY=arity(case), BLOCK=BLOCK)
    return out


def expected(case, dtype: str, operands: list[np.ndarray]) -> np.ndarray:
    """The reference on float64 inputs (ints on their own arrays)."""
    if (dtype.startswith("float") or dtype == "bfloat16") and not case.in_dtype:
        operands = [x.astype(np.int64) if letter == "n" else x.astype(np.float64)
                    for letter, x in zip(case.params, operands)]
    with np.errstate(all="ignore"):
        return np.asarray(case.reference(*operands))


def case_id(case: Case) -> str:
    return case.name + ("_int" if case.params == "xn" and case.name == "pow" else "")


def arity(case: Case) -> int:
    return len(inspect.signature(getattr(libdevice, case.name)).parameters)


@functools.cache
def triton_apply_kernel(name: str, n_args: int):
    """Triton's kernel applying its ``libdevice.<name>`` to ``n_args`` loaded
    operands (of ``a_ptr``...), ``BLOCK`` per program: ``apply_kernel``'s twin
    for the GPU comparisons.  Written to a file, since Triton reads its source;
    needs ``triton`` installed."""
    args = "abcd"[:n_args]
    loads = "".join(f"    {v} = tl.load({v}_ptr + offs)\n" for v in args)
    source = ("import triton\nimport triton.language as tl\n"
              "from triton.language.extra.cuda import libdevice\n\n\n@triton.jit\n"
              "def apply(a_ptr, b_ptr, c_ptr, d_ptr, out_ptr, BLOCK: tl.constexpr):\n"
              "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n" + loads +
              f"    tl.store(out_ptr + offs, libdevice.{name}({', '.join(args)}))\n")
    path = Path(tempfile.mkdtemp()) / f"triton_{name}_{n_args}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.apply
