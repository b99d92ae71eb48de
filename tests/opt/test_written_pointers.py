"""Which pointer arguments a kernel may write through (``tilec/opt/written_pointers.py``):
traced through pointer arithmetic, broadcasts, selects, branches, loops and
inlined calls; a pointer loaded from memory or made from an integer counts as
a write through every pointer argument."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from tilec.opt.written_pointers import written_arguments


def written(kernel, *args, **kwargs):
    """{argument: traced?} of the variant ``args`` select, compiled for the host."""
    compiled = kernel.compile(*args, target="host", **kwargs)
    return {name: site.traced for name, site in written_arguments(compiled.fn).items()}


def f32(n=64):
    return np.zeros(n, np.float32)


@tilec.jit
def copy_2d(x_ptr, out_ptr, B: tl.constexpr):
    r = tl.arange(0, B)
    offs = r[:, None] * B + r[None, :]  # broadcasts of pointers on both sides
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@tilec.jit
def select_store(a_ptr, b_ptr, x_ptr, flag, B: tl.constexpr):
    r = tl.arange(0, B)
    p = tl.where(r < flag, a_ptr + r, b_ptr + r)
    tl.store(p, tl.load(x_ptr + r))


@tilec.jit
def branch_store(a_ptr, b_ptr, x_ptr, flag):
    if flag > 3:
        p = a_ptr + 1
    else:
        p = b_ptr
    tl.store(p, tl.load(x_ptr))


@tilec.jit
def loop_store(x_ptr, out_ptr, n, B: tl.constexpr):
    """Both pointers are carried around the loop; only one is written."""
    r = tl.arange(0, B)
    src, dst = x_ptr + r, out_ptr + r
    for _ in range(n):
        tl.store(dst, tl.load(src))
        src += B
        dst += B


@tilec.jit
def while_store(x_ptr, out_ptr, n):
    """A pointer swapped between carried values: the store may go through either."""
    a, b, i = out_ptr, x_ptr, 0
    while i < n:
        a, b = b, a
        i += 1
    tl.store(a, 1.0)


@tilec.jit
def _store_one(p):
    tl.store(p, 1.0)


@tilec.jit
def calls_store(x_ptr, out_ptr):
    _store_one(out_ptr + 2)
    tl.load(x_ptr)


@tilec.jit
def atomics(count_ptr, lock_ptr, x_ptr):
    tl.atomic_add(count_ptr, tl.load(x_ptr))
    tl.atomic_cas(lock_ptr, 0, 1)


@tilec.jit
def pointer_from_memory(addr_ptr, x_ptr, out_ptr):
    """A pointer built from an integer loaded from memory may point anywhere."""
    p = tl.load(addr_ptr).to(tl.pointer_type(tl.float32))
    tl.store(p, tl.load(x_ptr))


@tilec.jit
def pointer_from_scalar(x_ptr, out_ptr, address):
    p = address.to(tl.pointer_type(tl.float32))
    tl.store(p, tl.load(x_ptr))


@tilec.jit
def reads_only(x_ptr, y_ptr):
    tl.load(x_ptr) + tl.load(y_ptr)


@pytest.mark.parametrize("kernel, args, kwargs, want", [
    (copy_2d, (f32(), f32()), {"B": 8}, {"out_ptr": True}),
    (select_store, (f32(), f32(), f32(), 5), {"B": 8}, {"a_ptr": True, "b_ptr": True}),
    (branch_store, (f32(), f32(), f32(), 5), {}, {"a_ptr": True, "b_ptr": True}),
    (loop_store, (f32(), f32(), 5), {"B": 8}, {"out_ptr": True}),
    (while_store, (f32(), f32(), 5), {}, {"out_ptr": True, "x_ptr": True}),
    (calls_store, (f32(), f32()), {}, {"out_ptr": True}),
    (atomics, (f32(), np.zeros(4, np.int32), f32()), {}, {"count_ptr": True, "lock_ptr": True}),
    (reads_only, (f32(), f32()), {}, {}),
])
def test_writes_are_traced_to_their_arguments(kernel, args, kwargs, want):
    assert written(kernel, *args, **kwargs) == want


@pytest.mark.parametrize("kernel, args, want", [
    (pointer_from_memory, (np.zeros(4, np.int64), f32(), f32()), {"addr_ptr": False, "x_ptr": False, "out_ptr": False}),
    (pointer_from_scalar, (f32(), f32(), 2**40), {"x_ptr": False, "out_ptr": False}),
])
def test_an_untraced_pointer_may_write_every_argument(kernel, args, want):
    """Conservative: a read-only array is then refused wherever it is passed."""
    assert written(kernel, *args) == want


def test_the_analysis_runs_once_per_variant():
    compiled = copy_2d.compile(f32(), f32(), B=8, target="host")
    assert written_arguments(compiled.fn) is written_arguments(compiled.fn)


def filled(n=64, value=-7.0):
    return np.full(n, value, np.float32)


# (kernel, arguments from a drawn runtime int k, constexprs): the int steers branches, loops and selects
RUNS = [
    (select_store, lambda k: (filled(), filled(), filled(value=5.0), k), {"B": 8}),
    (branch_store, lambda k: (filled(), filled(), filled(value=5.0), k), {}),
    (loop_store, lambda k: (filled(value=5.0), filled(), k), {"B": 8}),
    (while_store, lambda k: (filled(), filled(), k), {}),
    (calls_store, lambda k: (filled(), filled()), {}),
    (atomics, lambda k: (filled(), np.zeros(4, np.int32), filled(value=k + 2.0)), {}),
]


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(RUNS), st.integers(0, 7))
def test_every_array_a_run_changes_was_found_written(run, k):
    """Soundness against the interpreter: what a launch changed, the analysis named."""
    kernel, make_args, kwargs = run
    args = make_args(k)
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[(1,)](*args, **kwargs)
    names = list(kernel.signature.parameters)
    changed = {names[i] for i, (a, b) in enumerate(zip(args, before))
               if isinstance(a, np.ndarray) and not np.array_equal(a, b)}
    assert changed <= set(written(kernel, *before, **kwargs))
