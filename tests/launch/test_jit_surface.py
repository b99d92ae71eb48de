"""What Triton code reaches for on a ``JITFunction`` and on the handle a launch
returns: ``@jit(do_not_specialize=..., debug=..., ...)``, ``.params``,
``.arg_names``, ``.src``, ``.cache_key``, ``.warmup()``, ``.run(warmup=True)``,
``.n_regs``, ``.metadata.shared``, and ``tilec.KernelInterface``.
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from launch.kernels import add_kernel, fresh

E2E = settings(max_examples=15, deadline=None)


def strided_copy(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=offs < n), mask=offs < n)


def run_strided(kernel, n, stride):
    x = np.arange(n * stride + 1, dtype=np.int32) - 7
    out = np.zeros(n, np.int32)
    kernel[(tilec.cdiv(n, 16),)](x, out, n, stride, BLOCK=16)
    np.testing.assert_array_equal(out, x[: n * stride: stride][:n])


# --- do_not_specialize ----------------------------------------------------------------------------
@E2E
@given(n=st.integers(1, 60), stride=st.sampled_from([1, 2, 3, 16, 32]))
def test_do_not_specialize_computes_the_same(n, stride):
    run_strided(tilec.jit(do_not_specialize=["stride"])(strided_copy), n, stride)


@pytest.mark.parametrize("given", [["n", "stride"], [2, 3], ("n", -2)])
def test_do_not_specialize_keeps_one_variant_for_every_value(given):
    kernel = tilec.jit(do_not_specialize=given)(strided_copy)
    for n, stride in [(1, 1), (16, 16), (5, 3), (32, 2)]:
        run_strided(kernel, n, stride)
    assert len(kernel.cache) == 1
    ((keys, _, _),) = kernel.cache
    assert keys[2][1] == () and keys[3][1] == ()  # i32, no divisibility: an i32 even for 1


def test_specialization_without_the_option_makes_variants():
    kernel = tilec.jit(strided_copy)
    for n, stride in [(1, 1), (16, 16), (5, 3)]:
        run_strided(kernel, n, stride)
    assert len(kernel.cache) == 3


def test_do_not_specialize_on_alignment_keeps_ones_but_not_alignment():
    kernel = tilec.jit(do_not_specialize_on_alignment=["x_ptr", "stride"])(strided_copy)
    run_strided(kernel, 16, 1)
    run_strided(kernel, 16, 16)
    (first, second) = [keys for keys, _, _ in kernel.cache]
    assert first[0][1] == () and first[3] == (None, int, 1) and second[3][1] == ()
    assert first[2][1] != ()  # n=16 still divisible


def test_unknown_do_not_specialize_names_warn():
    with pytest.warns(UserWarning, match=r"do_not_specialize=...\): m are not parameters of `strided_copy`"):
        tilec.jit(do_not_specialize=["m"])(strided_copy)


def test_do_not_specialize_on_a_constexpr_changes_nothing():
    kernel = tilec.jit(do_not_specialize=["BLOCK"])(strided_copy)
    run_strided(kernel, 20, 2)
    assert kernel.params[4].is_constexpr and kernel.params[4].do_not_specialize


# --- the other decorator options ------------------------------------------------------------------
def test_the_other_triton_decorator_options_are_kept():
    def metadata(grid, kernel, args):
        return {"name": "strided"}

    kernel = tilec.jit(debug=True, noinline=True, version=3, repr=lambda spec: "strided_v3",
                       launch_metadata=metadata)(strided_copy)
    run_strided(kernel, 20, 2)
    assert (kernel.debug, kernel.noinline, kernel.version, kernel.launch_metadata) == (True, True, 3, metadata)
    assert kernel.repr(None) == "strided_v3" and tilec.jit(strided_copy).repr(None) == "strided_copy"


def test_noinline_callees_compute_as_inlined_ones():
    @tilec.jit(noinline=True)
    def twice(x):
        return x * 2

    @tilec.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)

    x, out = np.arange(10, dtype=np.float32), np.zeros(10, np.float32)
    k[(1,)](x, out, 10, BLOCK=16)
    np.testing.assert_array_equal(out, 2 * x)


def test_debug_as_a_launch_keyword_is_accepted():
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    add_kernel[(1,)](x, y, out, 8, BLOCK=8, debug=True)
    np.testing.assert_array_equal(out, x + y)
    with pytest.raises(ValueError, match="debug must be True or False, got 'on'"):
        add_kernel[(1,)](x, y, out, 8, BLOCK=8, debug="on")


@pytest.mark.parametrize("flag", ["debug", "interpret"])
@pytest.mark.parametrize("value", ["on", 1, 0.0])
def test_a_jit_flag_that_is_not_a_bool_is_refused_where_it_is_written(flag, value):
    """``@jit(debug="on")`` would have been ``bool("on")``: True for any non-empty string."""
    with pytest.raises(TypeError, match=f"`strided_copy`: {flag} must be True, False or None, got {value!r}"):
        tilec.jit(**{flag: value})(strided_copy)


# --- the JITFunction surface ----------------------------------------------------------------------
def test_params_and_arg_names():
    kernel = tilec.jit(do_not_specialize=[3])(strided_copy)
    assert kernel.arg_names == ["x_ptr", "out_ptr", "n", "stride", "BLOCK"]
    assert [(p.num, p.name, p.is_constexpr, p.do_not_specialize, p.has_default) for p in kernel.params] == [
        (0, "x_ptr", False, False, False), (1, "out_ptr", False, False, False), (2, "n", False, False, False),
        (3, "stride", False, True, False), (4, "BLOCK", True, False, False)]
    assert add_kernel.params[4].default == 1024


def test_src_fn_and_cache_key():
    assert add_kernel.src.startswith("def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 1024):")
    assert add_kernel.fn.__name__ == "add_kernel"
    key = add_kernel.cache_key
    assert isinstance(key, str) and len(key) == 64 and key == fresh(add_kernel).cache_key
    assert tilec.jit(strided_copy).cache_key != key


def test_warmup_compiles_and_launches_nothing():
    kernel = fresh(add_kernel)
    x, y, out = np.ones(8, np.float32), np.ones(8, np.float32), np.full(8, 77, np.float32)
    handle = kernel.warmup(x, y, out, 8, BLOCK=8, grid=(1,))
    assert (out == 77).all() and len(kernel.cache) == 1 and handle is next(iter(kernel.cache.values()))
    assert kernel.run(x, y, out, 8, BLOCK=8, grid=(1,), warmup=True) is handle and (out == 77).all()
    assert kernel[(1,)](x, y, out, 8, BLOCK=8) is handle
    np.testing.assert_array_equal(out, x + y)


def test_warmup_takes_torch_dtypes_for_tensors_as_triton_does():
    """``kernel.warmup(torch.float32, ...)``: a tensor of that dtype on the active
    device (Triton's MockTensor), aligned; a launch with real tensors then finds the variant."""
    torch = pytest.importorskip("torch")
    kernel = fresh(add_kernel)
    handle = kernel.warmup(torch.float32, torch.float32, torch.float32, 1024, BLOCK=64, grid=(1,))
    assert len(kernel.cache) == 1 and [s.attrs for s in handle.specs[:3]] == [(("divisibility", 16),)] * 3
    device = tilec.runtime.driver.active.get_active_torch_device()
    x, out = torch.ones(64, device=device), torch.zeros(64, device=device)
    assert kernel[(1,)](x, x, out, 1024, BLOCK=64) is handle and (out == 2).all()
    assert kernel.warmup(torch.float16, x, out, 8, BLOCK=8, grid=(1,)).specs[0].type != handle.specs[0].type


def test_the_launch_handle_has_tritons_fields():
    x = np.ones(8, np.float32)
    handle = add_kernel.compile(x, x, x, 8, BLOCK=8, target="sm_80", num_warps=2)
    assert handle.name == "add_kernel" and "ptx" in handle.asm and "llir" in handle.asm
    assert (handle.metadata.shared, handle.metadata.num_warps, handle.metadata.num_stages) == (0, 2, 3)
    if "cubin" in handle.asm:  # ptxas found: its register count
        assert handle.n_regs > 0 and handle.n_spills == 0
    host = add_kernel[(1,)](x, x, x, 8, BLOCK=8)
    assert host.n_regs is None and host.n_spills is None and host.metadata.target == "host"


def test_kernels_and_wrappers_are_kernel_interfaces():
    tuned = tilec.autotune([tilec.Config({"BLOCK": 8})], key=["n"])(tilec.jit(add_kernel.fn))
    for k in (add_kernel, tuned, tilec.heuristics({"BLOCK": lambda a: 8})(tilec.jit(add_kernel.fn))):
        assert isinstance(k, tilec.KernelInterface)
        x, y, out = np.arange(8, dtype=np.float32), np.ones(8, np.float32), np.zeros(8, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            k[(1,)](x, y, out, 8)
        np.testing.assert_array_equal(out, x + 1)
