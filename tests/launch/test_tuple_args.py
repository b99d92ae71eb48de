"""Tuple kernel arguments at launch (``launch/tuple_args.py``): a tuple is a
constexpr layout under the parameter's name (its structure, in the key) and
one argument per leaf, each classified as it would be alone; ``tl.const``
parameters' pointers are const; ``do_not_specialize`` reaches a tuple's
leaves (``test_cache.py`` stores and loads a tuple kernel's variant)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.frontend.tuples import TupleLayout
from tilec.ir.types import PointerType, f32, i32


@tilec.jit
def pair_kernel(out, t):
    tl.store(out, tl.load(t[0]) + t[1][0])


@tilec.jit(do_not_specialize=["t"])
def plain_pair_kernel(out, t):
    tl.store(out, tl.load(t[0]) + t[1][0])


def classified(kernel, *args):
    return kernel.plan(args, {}).args


def test_a_tuple_is_its_layout_then_its_leaves_each_classified_alone():
    x = np.ones(4, np.float32)
    out, layout, *leaves = classified(pair_kernel, x, (x, (1, None, tl.constexpr(5), "s", tl.float16, 32)))
    assert layout.name == "t" and layout.is_constexpr
    assert layout.value == TupleLayout(("t_0", TupleLayout(("t_1_0", "t_1_1", "t_1_2", "t_1_3", "t_1_4", "t_1_5"))))
    assert [a.name for a in leaves] == ["t_0", "t_1_0", "t_1_1", "t_1_2", "t_1_3", "t_1_4", "t_1_5"]
    assert leaves[0].type == PointerType(f32) and leaves[0].place == "host"
    assert [a.key for a in leaves[1:6]] == [(None, int, 1), (None, type(None), None), (None, tl.constexpr, 5),
                                             (None, str, "s"), (None, tl.dtype, tl.float16)]
    assert (leaves[6].type, leaves[6].attrs) == (i32, (("divisibility", 16),))


def test_do_not_specialize_reaches_the_leaves():
    x = np.ones(4, np.float32)
    *_, one, sixteen = classified(plain_pair_kernel, x, (x, (1, 16)))
    assert (one.type, one.attrs, sixteen.attrs) == (i32, (), ())


@pytest.mark.parametrize("t, compiles", [(((1,), 2), 1), ((1, (2,)), 2)])
def test_the_same_leaves_in_another_nesting_are_another_variant(t, compiles):
    @tilec.jit
    def first_leaf(out, t):
        pass

    first_leaf[(1,)](np.zeros(1, np.float32), ((1,), 2))
    first_leaf[(1,)](np.zeros(1, np.float32), t)
    assert len(first_leaf.cache) == compiles
