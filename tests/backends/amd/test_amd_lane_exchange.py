"""The AMD backend's lane exchange run on the host, every lane of a wave at
once: no AMD GPU runs here, so ``AmdLowering.shuffle_xor`` (the hook every
cross-lane reduction and butterfly uses) and codegen's ``shuffle_xor`` of any
type (split into 32-bit words) are driven through a stand-in for llvmlite's
IRBuilder whose values are numpy arrays over the lanes, and
``llvm.amdgcn.ds.bpermute`` is the instruction as AMD's ISA documents give
it: lane ``l`` reads the word of lane ``(addr[l] / 4) mod wave``.  A
butterfly over the wave's lane bits must leave every lane the whole wave's
sum, for waves of 64 (CDNA) and 32 (RDNA)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir as llir

from tilec.backends.amd.lowering import AmdLowering
from tilec.codegen_llvm.reduce import shuffle_xor

_NUMPY = {"i16": np.uint16, "i32": np.uint32, "i64": np.uint64, "half": np.float16, "float": np.float32,
          "double": np.float64}


class V:
    """A value of every lane: ``x`` an array over the lanes of numpy type ``_NUMPY[type]``."""

    def __init__(self, x, type_):
        self.x, self.type = np.asarray(x, _NUMPY[str(type_)]), type_


def _x(v, typ):
    """The lanes' values of ``v``, a lane value or a constant of LLVM type ``typ``."""
    return v.x if isinstance(v, V) else np.asarray(v.constant, _NUMPY[str(typ)])


class Lanes:
    """The IRBuilder calls the lane exchange makes, on every lane at once."""

    def _binary(op):
        return lambda self, a, b, name="": V(op(_x(a, a.type), _x(b, a.type)), a.type)

    xor = _binary(np.bitwise_xor)
    or_ = _binary(np.bitwise_or)
    shl = _binary(np.left_shift)
    lshr = _binary(np.right_shift)

    def bitcast(self, v, typ, name=""):
        return V(v.x.view(_NUMPY[str(typ)]), typ)

    def zext(self, v, typ, name=""):
        return V(v.x.astype(_NUMPY[str(typ)]), typ)

    def trunc(self, v, typ, name=""):
        return V(v.x.astype(_NUMPY[str(typ)]), typ)  # numpy's unsigned casts keep the low bits


def bpermute(addresses: np.ndarray, words: np.ndarray, wave: int) -> np.ndarray:
    """``ds_bpermute_b32``: lane ``l`` gets the word of lane ``addresses[l] / 4`` (mod the wave)."""
    return words[(addresses.astype(np.int64) >> 2) & (wave - 1)]


def wave_of(wave: int) -> SimpleNamespace:
    """A ``codegen_llvm.kernel.Ctx`` of one wave, as far as the lane exchange uses it."""
    ctx = SimpleNamespace(b=Lanes(), lane=V(np.arange(wave), llir.IntType(32)), lowering=AmdLowering(wave), calls=[])

    def call(name, args, ret=None):
        assert name == "llvm.amdgcn.ds.bpermute" and [str(a.type) for a in args] == ["i32", "i32"]
        ctx.calls.append(name)
        return V(bpermute(args[0].x, args[1].x, wave), ret)

    ctx.call = call
    return ctx


@pytest.mark.parametrize("wave", [64, 32])
@settings(max_examples=20, deadline=None)
@given(st.data())
def test_a_butterfly_over_the_lane_bits_gives_every_lane_the_waves_sum(wave, data):
    ctx = wave_of(wave)
    values = np.array(data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=wave, max_size=wave)), np.uint32)
    acc = V(values, llir.IntType(32))
    for bit in range(wave.bit_length() - 1):
        acc = V(acc.x + ctx.lowering.shuffle_xor(ctx, acc, 1 << bit).x, acc.type)
    assert (acc.x == np.uint32(int(values.astype(np.uint64).sum()) % 2**32)).all()
    assert len(ctx.calls) == wave.bit_length() - 1


@pytest.mark.parametrize("wave", [64, 32])
@pytest.mark.parametrize("typ", [llir.IntType(16), llir.HalfType(), llir.FloatType(), llir.IntType(64),
                                 llir.DoubleType()], ids=str)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_any_type_moves_whole_between_lanes(wave, typ, data):
    """Codegen's ``shuffle_xor``: narrow values widened to a word, 64-bit ones
    moved as two words and put back together, floats by their bits."""
    ctx = wave_of(wave)
    bits = np.dtype(_NUMPY[str(typ)]).itemsize * 8
    raw = np.array(data.draw(st.lists(st.integers(0, 2**bits - 1), min_size=wave, max_size=wave)), np.uint64)
    values = raw.astype(_NUMPY[f"i{bits}"]).view(_NUMPY[str(typ)])
    mask = data.draw(st.integers(1, wave - 1))
    moved = shuffle_xor(ctx, V(values, typ), mask)
    assert moved.type == typ
    assert (moved.x.view(_NUMPY[f"i{bits}"]) == values.view(_NUMPY[f"i{bits}"])[np.arange(wave) ^ mask]).all()
    assert len(ctx.calls) == max(1, bits // 32)
