"""Compiled-mode bugs the cpu mirror over the whole suite found
(``TILEC_TEST_DEVICE=cpu``, ``tests/test_suite_on_cpu.py``), each kept here
with the inputs that show it: code compiled for the ``cpu`` target must give
the interpreter's bits."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from launch.test_read_only import descriptor_copy, read_only
from tilec.backends.host import STREAMING_TARGET, TARGET, streaming
from tilec.targets import registry
from tilec.tools.tensor_descriptor import TensorDescriptor

HOST = registry.backend("host")

FLOATS = [np.float16, np.float32, np.float64]
SPECIAL = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0]


def compiled_and_interpreted(kernel, grid, make_args, **constexprs) -> tuple[list, list]:
    """``make_args()`` after ``kernel`` ran on it compiled for ``cpu``, and another after the interpreter."""
    results = []
    for target in ("cpu", "host"):
        args = make_args()
        compiled = kernel.compile(*args, target=target, **constexprs)
        registry.backend_for(target).launcher().launch(compiled, grid, kernel.plan(args, constexprs).args)
        results.append(args)
    return results[0], results[1]


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bit for bit, any NaN matching any NaN."""
    nan = np.isnan(want)
    unsigned = f"u{want.dtype.itemsize}"
    return bool((np.isnan(got) == nan).all() and (got.view(unsigned)[~nan] == want.view(unsigned)[~nan]).all())


@tilec.jit
def extrema(x_ptr, i_ptr, out_ptr, BLOCK: tl.constexpr):
    """Maxima and minima of a loaded float against one LLVM knows is no NaN (an int's value)."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    whole = tl.load(i_ptr + offs).to(x.dtype)
    tl.store(out_ptr + offs, tl.maximum(whole, x))
    tl.store(out_ptr + BLOCK + offs, tl.minimum(x, whole))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.maximum(x, (tl.program_id(0) * 0).to(x.dtype)))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.maximum(x, x.to(tl.int8).to(x.dtype)))


@given(dtype=st.sampled_from(FLOATS), data=st.data())
def test_maximum_and_minimum_of_nan_and_a_number_known_to_be_one_give_the_number(dtype, data):
    """LLVM 22's x86-64-v4 lowering of ``llvm.maximumnum`` gave NaN for ``max(float(i), nan)``."""
    n = 16
    x = data.draw(hnp.arrays(dtype, n, elements=st.one_of(st.sampled_from(SPECIAL), st.floats(-300, 300, width=16))))
    i = data.draw(hnp.arrays(np.int32, n, elements=st.integers(-5, 5)))
    mine, theirs = compiled_and_interpreted(extrema, (1, 1, 1), lambda: [x.copy(), i, np.zeros(4 * n, dtype)],
                                            BLOCK=n)
    assert same_bits(mine[2], theirs[2])
    assert not np.isnan(theirs[2][:2 * n]).any()  # the interpreter never gives NaN here: nor may the code


@given(rows=st.integers(1, 16))
def test_a_read_only_array_behind_a_tensor_descriptor_is_refused_by_compiled_code(rows):
    """The cpu launcher looked only at arrays passed alone: it ran a descriptor's
    store into a read-only array (found by tests/launch/test_read_only.py mirrored)."""
    src = np.arange(16 * rows, dtype=np.float32).reshape(rows, 16)
    for dst, refused in ((read_only(np.zeros((rows, 16))), True), (np.zeros((rows, 16), np.float32), False)):
        args = (TensorDescriptor.from_tensor(src, [16, 16]), TensorDescriptor.from_tensor(dst, [16, 16]))
        compiled = descriptor_copy.compile(*args, target="cpu")
        launch = lambda: HOST.launcher().launch(compiled, (1, 1, 1), descriptor_copy.plan(args, {}).args)  # noqa: E731
        if refused:
            with pytest.raises(ValueError, match=r"stores through `dst` \(.*\).* is read-only"):
                launch()
            assert not dst.any()
        else:
            launch()
            np.testing.assert_array_equal(dst, src)


@tilec.jit
def add_row_then_store_over_it(z_ptr, ROWS: tl.constexpr, COLS: tl.constexpr, SHIFT: tl.constexpr):
    """``z += z[SHIFT, :]`` for every row: the store's own loop writes row
    ``SHIFT`` before it reads it for the rows after (Triton's test_dot
    epilogue "add-cols", found by its test_core.py on the cpu target)."""
    rows, cols = tl.arange(0, ROWS), tl.arange(0, COLS)
    ptrs = z_ptr + rows[:, None] * COLS + cols[None, :]
    tl.store(ptrs, tl.load(ptrs) + tl.load(z_ptr + SHIFT * COLS + cols)[None, :])


@tilec.jit
def add_into_other(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@pytest.mark.parametrize("shift", [0, 3, 7])
def test_a_store_reading_what_it_overwrites_sees_the_memory_as_loaded(shift):
    z = np.random.default_rng(shift).standard_normal((8, 16)).astype(np.float32)
    got, want = compiled_and_interpreted(add_row_then_store_over_it, (1, 1, 1), lambda: [z.copy()], ROWS=8, COLS=16,
                                         SHIFT=shift)
    np.testing.assert_array_equal(want[0], z + z[shift][None, :])
    assert same_bits(got[0], want[0])


def test_a_store_of_values_loaded_from_other_arrays_needs_no_buffer():
    """Loads through pointers the kernel never writes stay in the store's loop:
    no stack memory, but for the streaming store's chunk in the variant of
    launches that stream (``streaming.py``)."""
    x = np.ones(1024, np.float32)
    assert add_into_other.compile(x, x, x.copy(), BLOCK=1024, target=TARGET).metadata.shared_bytes == 0
    assert (add_into_other.compile(x, x, x.copy(), BLOCK=1024, target=STREAMING_TARGET).metadata.shared_bytes
            == streaming.CHUNK_LINES * streaming.LINE)
