"""``tilec.jit`` as users hold it: binding errors, dispatch by device, launch
options, grids, the variant cache, and kernels run end to end on the host
against numpy.

No ``from __future__ import annotations`` here on purpose: these kernels
annotate with the ``tl.constexpr`` object; ``test_string_annotations`` covers
the string form.
"""
import importlib.util
import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from tilec.launch.args import ELEM_TYPES

# Every example here compiles and interprets a kernel: keep the budget small.
E2E = settings(max_examples=15, deadline=None)

NUMPY_DTYPES = [n for n, t in ELEM_TYPES.items() if n not in ("bfloat16", "bool") and not t.is_fp8]  # numpy has neither


@tilec.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 16):
    """out = x + y"""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tilec.jit
def fill_kernel(out_ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.full((BLOCK,), 0, out_ptr.dtype.element_ty) + value, mask=offs < n)


@tilec.jit
def strided_copy_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride, mask=offs < n), mask=offs < n)


@tilec.jit
def program_ids_kernel(out_ptr):
    """out[linear program index] = x + 1000 * y + 1000000 * z."""
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    linear = x + tl.num_programs(0) * (y + tl.num_programs(1) * z)
    tl.store(out_ptr + linear, x + 1000 * y + 1000000 * z)


def fresh(kernel):
    """The same kernel with an empty cache."""
    return tilec.jit(kernel.fn)


def aligned(values, dtype=np.float32):
    """``values`` in a fresh array whose address is a multiple of 16: the
    variant cache keys on pointer alignment, so cache tests must control it."""
    values = np.asarray(values, dtype)
    base = np.zeros(values.size + 16, dtype)
    skip = (-base.ctypes.data % 16) // base.itemsize
    out = base[skip:skip + values.size]
    out[:] = values
    return out


def vectors(n, dtype=np.float32):
    """Aligned ``x``, ``y`` (small random ints) and an output filled with 77."""
    rng = np.random.default_rng(n)
    return aligned(rng.integers(-100, 100, n), dtype), aligned(rng.integers(-100, 100, n), dtype), aligned(np.full(n, 77), dtype)


def launch_add(kernel, x, y, out, n=None, block=16, **options):
    n = math.prod(x.shape) if n is None else n  # numpy and torch arrays alike
    kernel[(tilec.cdiv(n, block),)](x, y, out, n, BLOCK=block, **options)


# --------------------------------------------------------------------------- #
# The JITFunction object
# --------------------------------------------------------------------------- #

def test_wraps_the_python_function():
    assert add_kernel.is_tilec_jit and add_kernel.fn.__name__ == "add_kernel"
    assert add_kernel.__name__ == "add_kernel" and add_kernel.__doc__ == "out = x + y"
    assert add_kernel.constexprs == {"BLOCK"}
    assert isinstance(add_kernel, tilec.JITFunction)


def test_jit_with_parentheses():
    assert tilec.jit()(add_kernel.fn).constexprs == {"BLOCK"}


def test_unknown_jit_options_are_rejected():
    with pytest.raises(TypeError, match="unexpected keyword argument 'inline_always'"):
        tilec.jit(inline_always=True)


def test_calling_a_kernel_directly_says_how_to_launch():
    with pytest.raises(tilec.TilecError, match=re.escape("kernel `add_kernel` is launched with a grid, `add_kernel[grid](...)`")):
        add_kernel(1, 2, 3, 4)


def test_string_annotations(tmp_path):
    path = tmp_path / "future_kernels.py"
    path.write_text(
        "from __future__ import annotations\n"
        "import tilec\n"
        "import tilec.language as tl\n"
        "from tilec.language import constexpr\n\n"
        "@tilec.jit\n"
        "def scale(x_ptr, n, A: tl.constexpr, BLOCK: constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * A, mask=offs < n)\n")
    spec = importlib.util.spec_from_file_location("future_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.scale.constexprs == {"A", "BLOCK"}
    x = np.arange(10, dtype=np.int32)
    module.scale[(1,)](x, 10, A=3, BLOCK=16)
    np.testing.assert_array_equal(x, np.arange(10) * 3)


@pytest.mark.parametrize("annotation", ['"tl.constexpr"', "'constexpr'", '"tilec.language.constexpr"',
                                        '"triton.language.constexpr"', '" tl.constexpr "'])
def test_quoted_annotations_under_future_annotations(tmp_path, annotation):
    """Under ``from __future__ import annotations`` a quoted annotation arrives
    quoted twice; the launcher and the front end must both see a constexpr."""
    path = tmp_path / "quoted_kernels.py"
    path.write_text(
        "from __future__ import annotations\n"
        "import tilec\n"
        "import tilec.language as tl\n\n"
        "@tilec.jit\n"
        f"def fill(out_ptr, n: 'int', B: {annotation}):\n"
        "    offs = tl.arange(0, B)\n"
        "    tl.store(out_ptr + offs, offs * 2, mask=offs < n)\n")
    spec = importlib.util.spec_from_file_location("quoted_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.fill.constexprs == {"B"}
    out = np.full(13, -1, np.int32)
    module.fill[(1,)](out, 13, B=16)
    np.testing.assert_array_equal(out, np.arange(13) * 2)


# --------------------------------------------------------------------------- #
# Binding and argument errors
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("args, kwargs, message", [
    ((1, 2, 3, 4, 5, 6), {}, "too many positional arguments"),
    ((np.zeros(2),), {}, "missing a required argument: 'y_ptr'"),
    ((1, 2, 3, 4), {"FOO": 1}, "got an unexpected keyword argument 'FOO'"),
    ((1, 2, 3, 4), {"BLOCK": 8, "n": 2}, "multiple values for argument 'n'"),
])
def test_binding_errors_name_the_kernel(args, kwargs, message):
    with pytest.raises(TypeError, match=r"kernel `add_kernel`\(x_ptr, y_ptr, out_ptr, n, BLOCK.*\): " + message):
        add_kernel[(1,)](*args, **kwargs)


def test_list_for_a_pointer():
    x, y, out = vectors(4)
    with pytest.raises(TypeError) as e:
        add_kernel[(1,)]([1.0, 2.0], y, out, 4)
    assert str(e.value) == "argument `x_ptr` of kernel `add_kernel`: expected an array or a scalar, got list"


def test_array_for_a_constexpr():
    x, y, out = vectors(4)
    with pytest.raises(TypeError, match="argument `BLOCK` of kernel `add_kernel` is a tl.constexpr: pass a plain"):
        add_kernel[(1,)](x, y, out, 4, BLOCK=np.array([16]))


def test_float_constexpr_where_an_int_is_needed_is_a_compilation_error():
    x, y, out = vectors(4)
    with pytest.raises(tilec.CompilationError, match="test_jit.py"):
        add_kernel[(1,)](x, y, out, 4, BLOCK=16.0)


@pytest.mark.parametrize("options, message", [
    ({"num_warps": 3}, r"num_warps must be a power of 2 \(1, 2, 4, 8, ...\), got 3"),
    ({"num_warps": 0}, "num_warps must be a positive int, got 0"),
    ({"num_stages": 0}, "num_stages must be a positive int, got 0"),
    ({"num_warps": True}, "num_warps must be a positive int, got True"),
])
def test_launch_options_are_checked(options, message):
    x, y, out = vectors(4)
    with pytest.raises(ValueError, match=message):
        add_kernel[(1,)](x, y, out, 4, **options)


# --------------------------------------------------------------------------- #
# Dispatch by where arrays live
# --------------------------------------------------------------------------- #

class FakeCudaArray:
    def __init__(self, n=4):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (0x7F0000000000, False), "version": 3}


class FakeRocmArray:
    memory = np.zeros(4, np.float32)  # the capsule's address and dtype are read, never the memory

    def __dlpack__(self, stream=None):
        return self.memory.__dlpack__()

    def __dlpack_device__(self):
        return (10, 0)


def test_mixed_host_and_device_arrays():
    x, y, out = vectors(4)
    with pytest.raises(ValueError) as e:
        add_kernel[(1,)](x, FakeCudaArray(), out, 4)
    assert str(e.value) == ("kernel `add_kernel` got arrays on different devices (host: `x_ptr`, `out_ptr`; "
                            "cuda: `y_ptr`); pass them all on the host or all on one device")


def test_rocm_arrays_go_to_the_amd_launcher_which_says_what_it_misses():
    from tilec.backends.amd import hip

    if hip.available():
        pytest.skip("this machine runs kernels on an AMD GPU")
    with pytest.raises(tilec.TilecError, match=r"(no HIP runtime|hip-python is not installed).*tilec\[amd\]"):
        add_kernel[(1,)](FakeRocmArray(), FakeRocmArray(), FakeRocmArray(), 4)


# --------------------------------------------------------------------------- #
# Grids
# --------------------------------------------------------------------------- #

@pytest.mark.parametrize("grid_form", ["tuple", "list", "int", "lambda"])
def test_grid_forms(grid_form):
    x, y, out = vectors(50)
    grid = {"tuple": (4,), "list": [4], "int": 4, "lambda": lambda meta: (tilec.cdiv(meta["n"], meta["BLOCK"]),)}
    add_kernel[grid[grid_form]](x, y, out, 50)
    np.testing.assert_array_equal(out, x + y)


def test_grid_lambda_sees_every_bound_argument():
    x, y, out = vectors(20)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (2,)

    add_kernel[grid](x, y, out, 20)
    assert seen.keys() == {"x_ptr", "y_ptr", "out_ptr", "n", "BLOCK"}
    assert seen["x_ptr"] is x and seen["n"] == 20 and seen["BLOCK"] == 16  # the default applied
    np.testing.assert_array_equal(out, x + y)


def test_empty_grid_runs_nothing():
    k = fresh(add_kernel)
    x, y, out = vectors(20)
    k[(0,)](x, y, out, 20)
    assert (out == 77).all() and len(k.cache) == 1  # compiled (errors surface), not run


@E2E
@given(st.integers(1, 5), st.integers(1, 4), st.integers(1, 3), st.sampled_from(["tuple", "lambda"]))
def test_three_dimensional_grids(gx, gy, gz, form):
    out = np.full(gx * gy * gz, -1, np.int32)
    grid = (gx, gy, gz) if form == "tuple" else lambda meta: [gx, gy, gz]
    program_ids_kernel[grid](out)
    x, y, z = np.meshgrid(np.arange(gx), np.arange(gy), np.arange(gz), indexing="ij")
    want = np.zeros_like(out)
    want[(x + gx * (y + gy * z)).ravel()] = (x + 1000 * y + 1000000 * z).ravel()
    np.testing.assert_array_equal(out, want)


# --------------------------------------------------------------------------- #
# Specialization and the variant cache
# --------------------------------------------------------------------------- #

def test_specialization_and_cache_hits():
    k = fresh(add_kernel)
    steps = [  # (what changes, launch kwargs, variants expected after it)
        ("n=33", dict(n=33), 1), ("n=35: hit", dict(n=35), 1),
        ("n=32: divisible", dict(n=32), 2), ("n=48: hit", dict(n=48), 2),
        ("n=1: constexpr", dict(n=1), 3), ("n=1 again: hit", dict(n=1), 3),
        ("BLOCK=32", dict(n=33, block=32), 4), ("num_warps=8", dict(n=33, num_warps=8), 5),
        ("num_stages=2", dict(n=33, num_stages=2), 6), ("n=0: divisible, hit", dict(n=0), 6),
    ]
    for what, kw, variants in steps:
        x, y, out = vectors(64)
        launch_add(k, x, y, out, **kw)
        assert len(k.cache) == variants, what
        n = kw["n"]
        np.testing.assert_array_equal(out[:n], x[:n] + y[:n], err_msg=what)
        assert (out[n:] == 77).all(), what


def test_pointer_alignment_is_part_of_the_key():
    k = fresh(add_kernel)
    x, y, out = vectors(20)
    launch_add(k, x[:16], y[:16], out[:16])
    launch_add(k, x[1:17], y[:16], out[:16])  # 4 bytes past a multiple of 16
    assert len(k.cache) == 2
    launch_add(k, x[2:18], y[:16], out[:16])
    assert len(k.cache) == 2
    np.testing.assert_array_equal(out[:16], x[2:18] + y[:16])


def test_dtypes_are_part_of_the_key():
    k = fresh(add_kernel)
    for dtype in ("float32", "float64", "int32", "float32"):
        x, y, out = vectors(16, dtype)
        launch_add(k, x, y, out)
        np.testing.assert_array_equal(out, x + y)
    assert len(k.cache) == 3


def test_compile_shows_the_ir_of_a_variant():
    x, y, out = vectors(64)
    compiled = fresh(add_kernel).compile(x, y, out, 32)
    assert compiled.asm["tir"].startswith("func @add_kernel(")
    assert "%n: i32 {divisibility = 16}" in compiled.asm["tir"]
    assert "tir-opt" in compiled.asm and compiled.fn.arg_names == ["x_ptr", "y_ptr", "out_ptr", "n"]
    assert fresh(add_kernel).compile(x, y, out, 1).fn.arg_names == ["x_ptr", "y_ptr", "out_ptr"]


def test_compile_reuses_the_cache():
    k = fresh(add_kernel)
    x, y, out = vectors(40)
    compiled = k.compile(x, y, out, 40)
    launch_add(k, x, y, out)
    assert len(k.cache) == 1 and next(iter(k.cache.values())) is compiled


def test_tilec_check_verifies_and_round_trips(monkeypatch):
    import tilec.ir.verify as verify

    calls = []
    for name in ("verify_function", "check_roundtrip"):
        real = getattr(verify, name)
        monkeypatch.setattr(verify, name, lambda fn, real=real, name=name: (calls.append(name), real(fn))[1])
    x, y, out = vectors(40)
    fresh(add_kernel).compile(x, y, out, 40)
    assert calls[:2] == ["verify_function", "check_roundtrip"]  # the IR as built, before any pass
    monkeypatch.setenv("TILEC_CHECK", "0")
    calls.clear()
    fresh(add_kernel).compile(x, y, out, 40)
    assert "check_roundtrip" not in calls


# --------------------------------------------------------------------------- #
# End to end on the host, against numpy
# --------------------------------------------------------------------------- #

def arrays(dtype, n):
    """Arrays of any ``dtype`` values: NaN, inf, extremes, subnormals included."""
    if dtype == "float16":  # hypothesis rejects most width-16 floats it draws: draw the bits
        return hnp.arrays(np.uint16, n).map(lambda a: a.view(np.float16))
    return hnp.arrays(dtype, n)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@E2E
@given(data=st.data(), n=st.integers(0, 150), block=st.sampled_from([16, 32, 128]))
def test_vector_add_matches_numpy(dtype, data, n, block):
    x, y = (data.draw(arrays(dtype, n)) for _ in range(2))
    out = np.zeros(n, dtype)
    launch_add(add_kernel, x, y, out, block=block)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(out, x + y)


SCALARS = {  # how each kind of scalar argument is drawn, and the array dtype that holds it
    "python int (i32)": (st.integers(-2**31, 2**31 - 1), np.int32),
    "python int (i64)": (st.integers(-2**63, 2**63 - 1).filter(lambda v: not -2**31 <= v < 2**31), np.int64),
    "python int (u64)": (st.integers(2**63, 2**64 - 1), np.uint64),
    "python float": (st.floats(width=32), np.float32),
    "python bool": (st.booleans(), np.bool_),
    **{f"numpy {d}": (hnp.from_dtype(np.dtype(d)), np.dtype(d).type) for d in NUMPY_DTYPES},
}


@pytest.mark.parametrize("kind", SCALARS)
@E2E
@given(data=st.data(), n=st.integers(1, 40))
def test_scalar_arguments_reach_the_kernel(kind, data, n):
    draw, dtype = SCALARS[kind]
    value = data.draw(draw)
    out = np.zeros(n + 3, dtype)
    fill_kernel[(tilec.cdiv(n, 16),)](out, value, n, BLOCK=16)
    np.testing.assert_array_equal(out[:n], np.full(n, value, dtype))
    assert not out[n:].any()


@E2E
@given(n=st.integers(0, 60), step=st.sampled_from([1, 2, 3, -1, -2]), dtype=st.sampled_from(NUMPY_DTYPES))
def test_strided_views_are_read_in_place(n, step, dtype):
    base = np.arange(abs(step) * n + 2).astype(dtype)
    x = base[1::step] if step > 0 else base[-2::step]
    x = x[:n]
    out = np.zeros(n, dtype)
    strided_copy_kernel[(tilec.cdiv(n, 16),)](x, out, n, x.strides[0] // x.itemsize if n else 1, BLOCK=16)
    np.testing.assert_array_equal(out, x)


def test_out_of_bounds_access_is_an_interpreter_error():
    x, y, out = vectors(10)
    with pytest.raises(tilec.InterpreterError, match="test_jit.py"):
        add_kernel[(1,)](x, y, out, 16)  # n says 16, the arrays hold 10


def test_torch_cpu_tensors_run_on_the_host():
    torch = pytest.importorskip("torch")
    x, y = torch.arange(40, dtype=torch.float32), torch.full((40,), 0.5, dtype=torch.float32)
    out = torch.zeros(40)
    launch_add(add_kernel, x, y, out)
    assert torch.equal(out, x + y)
    xb, yb, ob = (t.to(torch.bfloat16) for t in (x, y, out))
    launch_add(add_kernel, xb, yb, ob)
    assert torch.equal(ob, xb + yb)


def test_launches_reuse_one_variant_across_sizes():
    k = fresh(add_kernel)
    for n in itertools.chain(range(2, 16), range(17, 32)):
        x, y, out = vectors(n)
        launch_add(k, x, y, out)
        np.testing.assert_array_equal(out, x + y)
    assert len(k.cache) == 1
