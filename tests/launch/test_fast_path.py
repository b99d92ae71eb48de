"""The launch fast path against the general one (``jit.py``'s module doc).

Every spec in ``args.SPECS`` must give the dispatch key ``classify_arg`` gives
the value and a launch value that packs to the same bytes; the generated
specializer must bind like the general binder; and a launch whose
specialization changed (an int becoming 1 or divisible by 16, a pointer's
alignment, dtype or device) must run the variant the general path picks for it.
"""
from __future__ import annotations

import inspect
import statistics
import time

import numpy as np
import pytest

import tilec
import tilec.language as tl
from launch.fake_gpu import FLOAT16, FLOAT32, INT64, FakeCudaArray, FakeTensor, fake_torch, gpu  # noqa: F401
from launch.kernels import add_kernel, fresh, scalars_kernel
from launch.test_none_args import bias_kernel
from tilec.launch.args import (
    SPECS, UNALIGNED_SPECS, UNSPECIALIZED_SPECS, NotFast, classify_arg, without_specialization,
)
from tilec.launch.binder import make_binder, make_specializer
from tilec.launch.compiler import Options
from tilec.launch.jit import JITFunction
from tilec.backends.nvidia.libcuda import LaunchFrame

BASE = 0x7F00_0000_0000

SCALARS = [
    0, 1, 2, 16, -16, 17, 24, 2**31 - 1, 2**31, -2**31, -2**31 - 16, 2**40, 2**63 - 16, 2**63, 2**64 - 16, 2**64 - 1,
    None, True, False, 0.0, -2.5, 1e-45, 3.4e38, -3.4028234663852886e38,
    np.int8(-3), np.int16(32), np.int32(48), np.int64(2**40), np.uint8(255), np.uint16(16), np.uint32(7),
    np.uint64(2**63), np.float16(1.5), np.float32(0.1), np.float64(1e300), np.bool_(True),
]
class CupyLikeArray:
    """A device array as CuPy's class exposes it: the CUDA array interface and the DLPack device."""

    def __init__(self, address=BASE, device=0, typestr="<f4"):
        self.address, self.device, self.typestr = address, device, typestr

    @property
    def __cuda_array_interface__(self):
        return {"shape": (64,), "typestr": self.typestr, "data": (self.address, False), "version": 3}

    def __dlpack_device__(self):
        return (2, self.device)


class NumbaLikeArray(CupyLikeArray):
    """Only the CUDA array interface: the device comes from the driver."""

    __dlpack_device__ = property(lambda self: self.no_such_attribute)


TENSORS = [FakeTensor(BASE), FakeTensor(BASE + 4), FakeTensor(BASE + 8, device=1), FakeTensor(BASE, dtype=FLOAT16),
           FakeTensor(BASE + 32, dtype=INT64), type("Parameter", (FakeTensor,), {})(BASE + 48),
           CupyLikeArray(), CupyLikeArray(BASE + 8, 1, "<f2"), CupyLikeArray(BASE + 64, 0, "<i8")]


def describe(value) -> str:
    """A test id that is the same in every process (no addresses)."""
    if isinstance(value, FakeTensor):
        return f"tensor({value.dtype}, {value.address - BASE:#x}, {value.index})"
    if isinstance(value, CupyLikeArray):
        return f"{type(value).__name__}({value.typestr}, {value.address - BASE:#x}, {value.device})"
    return repr(value) if type(value).__repr__ is not object.__repr__ else type(value).__name__


def packed(kind_of, value) -> bytes:
    """The bytes a launch passes for ``value`` as the kernel parameter ``kind_of`` classifies."""
    kind = "ptr" if kind_of.place is not None else kind_of.type.name
    frame = LaunchFrame([kind])
    frame.pack((1, 1, 1), (32, 1, 1), 0, 0, [value])
    return bytes(frame.buffer)


@pytest.mark.parametrize("value", SCALARS + TENSORS, ids=describe)
def test_each_spec_agrees_with_classify_arg(fake_torch, value):
    key, launch_value = SPECS[type(value)](value)
    a = classify_arg("x", value, False, "k")
    assert key == a.dispatch_key
    if a.is_constexpr:
        assert launch_value == a.value
    else:
        assert packed(a, launch_value) == packed(a, a.value)


@pytest.mark.parametrize("keep_one", [False, True])
@pytest.mark.parametrize("value", SCALARS + TENSORS, ids=describe)
def test_each_unspecialized_spec_agrees_with_classify_arg(fake_torch, value, keep_one):
    """The specs of ``do_not_specialize`` (and ``..._on_alignment``) parameters."""
    table = UNALIGNED_SPECS if keep_one else UNSPECIALIZED_SPECS
    key, launch_value = table[type(value)](value)
    a = without_specialization(classify_arg("x", value, False, "k"), keep_one)
    assert key == a.dispatch_key
    if a.is_constexpr:
        assert launch_value == a.value
    else:
        assert packed(a, launch_value) == packed(a, a.value)


_BYTES = np.zeros(64, np.uint8)
#: Host arrays: aligned or not (views of one buffer), of numpy's dtypes.
HOST_ARRAYS = [_BYTES[16:].view(np.float32), _BYTES[4:36].view(np.float32), _BYTES[16:48].view(np.float64),
               _BYTES[1:9], _BYTES[2:10].view(np.int16), _BYTES[:16].view(np.bool_), np.zeros((3, 5), np.int64)]


@pytest.mark.parametrize("value", HOST_ARRAYS, ids=lambda a: f"{a.dtype}@{a.__array_interface__['data'][0] % 16}")
def test_the_host_array_spec_agrees_with_classify_arg(value):
    key, launch_value = SPECS[type(value)](value)
    assert key == classify_arg("x", value, False, "k").dispatch_key and launch_value is value


class SubArray(np.ndarray):
    """A subclass of numpy's array (as ``np.memmap`` is): not its exact type."""


def bf16_array() -> list:
    """A bf16 host array (ml_dtypes'; launched as an int16 view), where ml_dtypes is installed."""
    try:
        import ml_dtypes
    except ImportError:
        return []
    return [np.zeros(4, ml_dtypes.bfloat16)]


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e39, -1e39, 2**64, -2**63 - 1,
                                   np.zeros(4, np.float32).view(SubArray), *bf16_array(), FakeCudaArray(),
                                   NumbaLikeArray(), FakeTensor(device=None), [1.0], object()],
                         ids=describe)
def test_what_a_spec_cannot_judge_goes_to_the_general_path(fake_torch, value):
    with pytest.raises(NotFast):
        SPECS[type(value)](value)


def kernel_with_every_kind(x_ptr, n, alpha, BLOCK: tl.constexpr = 64, *, flag=True, MODE: tl.constexpr = "a"):
    pass


@pytest.mark.parametrize("args, kwargs", [
    ((FakeTensor(), 5, 0.5), {}),
    ((FakeTensor(BASE + 4), 1, np.float32(2)), {"BLOCK": 32, "MODE": "b"}),
    ((), {"x_ptr": FakeTensor(dtype=FLOAT16), "n": 2**40, "alpha": 1.5, "flag": False}),
])
def test_specializer_binds_like_the_general_path(fake_torch, args, kwargs):
    signature = inspect.signature(kernel_with_every_kind)
    constexprs = frozenset({"BLOCK", "MODE"})
    keys, values, given = make_specializer(signature, constexprs)(*args, **kwargs)
    bound = make_binder(signature)(*args, **kwargs)
    classified = [classify_arg(n, v, n in constexprs, "k") for n, v in bound.items()]
    assert keys == tuple(a.dispatch_key for a in classified)
    assert given == tuple(bound.values())
    for a, v in zip(classified, values):
        if not a.is_constexpr:
            assert packed(a, v) == packed(a, a.value)


def test_signatures_the_generated_code_cannot_mirror_are_left_to_inspect():
    def positional_only(a, /, b):
        pass

    def clashing(_tilec_specs, b):
        pass

    for fn in (positional_only, clashing):
        assert make_specializer(inspect.signature(fn), frozenset()) is None
        assert make_binder(inspect.signature(fn)) is None


def test_a_parameter_may_be_called_type(fake_torch):
    def shadowing(x_ptr, type):
        pass

    keys, _, _ = make_specializer(inspect.signature(shadowing), frozenset())(FakeTensor(), 32)
    assert keys[1] == "i32 divisibility=16"


# --- launches ---------------------------------------------------------------------
@pytest.fixture
def general_launches(monkeypatch):
    """Counts the launches that took the general path."""
    counted = []
    general = JITFunction._run_general
    monkeypatch.setattr(JITFunction, "_run_general", lambda self, *a: counted.append(a) or general(self, *a))
    return counted


def expected_compiled(kernel, args, **options):
    """The variant the general path picks for ``args``."""
    classified = kernel._classify(kernel._bind(args, {}))
    return kernel.cache[(tuple(a.key for a in classified), Options(**options), "sm_90a")]  # the fake GPU: sm_90


def expected_frame(kernel, args, device=0, **options):
    """The launch frame of the variant the general path picks for ``args``, as loaded on ``device``."""
    return expected_compiled(kernel, args, **options).runtime[device].frame


def test_a_changed_specialization_takes_its_variant(fake_torch, general_launches):
    k = fresh(add_kernel)
    x, y, out = FakeTensor(BASE), FakeTensor(BASE + 0x100), FakeTensor(BASE + 0x200)
    cases = [  # (what, args, values the kernel receives)
        ("n=600", (x, y, out, 600), [BASE, BASE + 0x100, BASE + 0x200, 600]),
        ("n=608: divisible by 16", (x, y, out, 608), [BASE, BASE + 0x100, BASE + 0x200, 608]),
        ("n=1: a constexpr", (x, y, out, 1), [BASE, BASE + 0x100, BASE + 0x200]),
        ("n=2**40: i64", (x, y, out, 2**40), [BASE, BASE + 0x100, BASE + 0x200, 2**40]),
        ("x 4 bytes off", (FakeTensor(BASE + 4), y, out, 600), [BASE + 4, BASE + 0x100, BASE + 0x200, 600]),
        ("f16 arrays", tuple(FakeTensor(a, dtype=FLOAT16) for a in (BASE, BASE + 16, BASE + 32)) + (600,),
         [BASE, BASE + 16, BASE + 32, 600]),
    ]
    for what, args, values in cases:
        for attempt in ("general", "fast"):
            before = len(general_launches)
            k[(2,)](*args)
            assert len(general_launches) == before + (attempt == "general"), (what, attempt)
            launch = fake_torch.launches[-1]
            assert launch["values"] == values, (what, attempt)
            assert launch["frame"] is expected_frame(k, args), (what, attempt)
    assert len(k.cache) == len(cases)
    k[(2,)](x, y, out, 624)  # divisible again, another size: the second case's variant, without a look at it
    assert len(general_launches) == len(cases) and fake_torch.launches[-1]["frame"] is \
        expected_frame(k, (x, y, out, 608))


@pytest.mark.parametrize("option", ["do_not_specialize", "do_not_specialize_on_alignment"])
def test_unspecialized_parameters_take_the_fast_path(fake_torch, general_launches, option):
    k = tilec.jit(**{option: ["x_ptr", "n"]})(add_kernel.fn)
    y, out = FakeTensor(BASE + 0x100), FakeTensor(BASE + 0x200)
    sizes = [(BASE, 600), (BASE + 4, 608), (BASE + 16, 1), (BASE + 8, 624), (BASE, 1)]
    for address, n in sizes:
        args = (FakeTensor(address), y, out, n)
        k[(2,)](*args)
        assert fake_torch.launches[-1]["frame"] is expected_frame(k, args)
    variants = 1 if option == "do_not_specialize" else 2  # on alignment only, n=1 stays a constexpr
    assert len(k.cache) == variants and len(general_launches) == variants


def test_none_arguments_take_the_fast_path_with_their_own_variant(fake_torch, general_launches):
    k = fresh(bias_kernel)
    x = FakeTensor(BASE)
    for bias in (None, x, None, x):
        args = (x, bias, None, x, 600, 64)
        assert k[(1,)](*args) is expected_compiled(k, args)
        assert fake_torch.launches[-1]["frame"] is expected_frame(k, args)
    assert len(general_launches) == len(k.cache) == 2


def test_taking_variants_out_of_the_cache_forgets_their_launches(fake_torch, general_launches):
    k = fresh(add_kernel)
    x = FakeTensor()
    k[(1,)](x, x, x, 600)
    (key,) = k.cache
    del k.cache[key]
    k[(1,)](x, x, x, 600)
    assert len(general_launches) == 2 and list(k.cache) == [key]  # compiled again
    k.cache.clear()
    k[(1,)](x, x, x, 600)
    assert len(general_launches) == 3 and len(k.cache) == 1


def test_another_device_takes_its_own_launch(fake_torch, general_launches):
    k = fresh(add_kernel)
    on = {d: [FakeTensor(BASE + 0x100 * i, device=d) for i in range(3)] for d in (0, 1)}
    for d in (0, 1, 0, 1):
        k[(1,)](*on[d], 600)
        assert fake_torch.launches[-1]["device"] == d
    assert len(general_launches) == 2 and len(k.cache) == 1  # one variant, loaded on two devices


def test_options_a_grid_lambda_and_streams_on_the_fast_path(fake_torch, general_launches):
    k = fresh(add_kernel)
    x = FakeTensor()
    seen = []

    def grid(meta):
        seen.append(meta)
        return (meta["n"] // meta["BLOCK"], 2)

    for _ in range(2):
        k[grid](x, x, x, 4096, num_warps=8, stream=0x4000)
    launch = fake_torch.launches[-1]
    assert len(general_launches) == 1 and (launch["grid"], launch["block"], launch["stream"]) == \
        ((4, 2, 1), (256, 1, 1), 0x4000)
    assert seen[-1] == {"x_ptr": x, "y_ptr": x, "out_ptr": x, "n": 4096, "BLOCK": 1024}  # as given, defaults applied
    k[(1,)](x, x, x, 4096, num_warps=4)
    assert len(general_launches) == 2  # other options: another variant
    k[(0,)](x, x, x, 4096, num_warps=8)
    assert len(fake_torch.launches) == 3  # an empty grid launches nothing on the fast path either


@pytest.mark.parametrize("launch, error, message", [
    (lambda k, x: k[(1,)](x, x, x, 4096, num_warps=True), ValueError, "num_warps must be a positive int, got True"),
    (lambda k, x: k[(1,)](x, x, x, 4096, num_stages=np.int64(3)), ValueError, "num_stages must be a positive int"),
    (lambda k, x: k[(1,)](x, x, x), TypeError, r"kernel `add_kernel`\(x_ptr.*missing a required argument: 'n'"),
    (lambda k, x: k[(1,)](x, x, x, 4096, BLOCK=[64]), TypeError, "its value must be hashable"),
    (lambda k, x: k[(1,)](x, x, x, None), tilec.CompilationError, r"kernels\.py:\d+: .* got a Python NoneType"),
    (lambda k, x: k[(1,)](x, FakeTensor(device=1), x, 4096), ValueError, r"different devices \(cuda:0: `x_ptr`"),
    (lambda k, x: k[(-1,)](x, x, x, 4096), ValueError, "must not be negative"),
    (lambda k, x: k[lambda meta: (2.0,)](x, x, x, 4096), TypeError, "must hold ints, got float"),
    (lambda k, x: k[(2**31,)](x, x, x, 4096), ValueError, "is too large: dimension 0 .x. is 2147483648"),
    (lambda k, x: k[lambda meta: (1, 2**16)](x, x, x, 4096), ValueError, "is too large: dimension 1 .y. is 65536"),
])
def test_errors_after_a_fast_launch_are_the_general_paths(fake_torch, launch, error, message):
    k = fresh(add_kernel)
    x = FakeTensor()
    k[(1,)](x, x, x, 4096, num_warps=1)
    k[(1,)](x, x, x, 4096, num_stages=3)  # both options remembered, 1 among them
    with pytest.raises(error, match=message):
        launch(k, x)


def test_a_float_past_f32_is_still_an_error(fake_torch):
    k = fresh(scalars_kernel)
    out = FakeTensor(dtype=INT64)
    k[(1,)](out, 7, 2**40, 0.5, True)
    with pytest.raises(ValueError, match="overflows float32"):
        k[(1,)](out, 7, 2**40, 1e39, True)
    k[(1,)](out, 7, 2**40, float("inf"), True)  # inf is an f32: the general path passes it
    assert fake_torch.launches[-1]["values"][3] == float("inf")


def test_cupy_arrays_take_the_fast_path_and_others_still_launch(fake_torch, general_launches):
    k = fresh(add_kernel)
    for _ in range(2):
        k[(1,)](CupyLikeArray(BASE), CupyLikeArray(BASE + 16), CupyLikeArray(BASE + 32), 600)
    assert len(general_launches) == 1 and fake_torch.launches[-1]["values"] == [BASE, BASE + 16, BASE + 32, 600]
    for array in (FakeCudaArray, NumbaLikeArray):  # no spec, or no device said: the general path, every time
        for _ in range(2):
            k[(1,)](array(BASE), array(BASE), array(BASE), 600)
    assert len(general_launches) == 5 and len(fake_torch.launches) == 6


# --- cost -----------------------------------------------------------------------
@pytest.mark.parametrize("path", ["fast", "general"])
def test_host_side_cost_of_a_launch(fake_torch, monkeypatch, path):
    """Everything a launch does in Python, with the driver call itself a no-op:
    torch tensors take the fast path (specialize, one lookup, grid, stream,
    pack, the context check);
    arrays known only by ``__cuda_array_interface__`` the general one (bind,
    classify, variant lookup, grid, pack)."""
    monkeypatch.setattr(fake_torch, "launch_kernel_ex", lambda config, function, params, extra: 0)
    k = fresh(add_kernel)
    args = [(FakeTensor if path == "fast" else FakeCudaArray)(BASE + 0x10000 * i) for i in range(3)]
    k[(4,)](*args, 512)
    samples = []
    for _ in range(2000):
        t0 = time.perf_counter_ns()
        k[(4,)](*args, 512)
        samples.append(time.perf_counter_ns() - t0)
    us = statistics.median(samples) / 1000
    print(f"\n[cuda launcher] host-side cost of a 4-argument launch on the {path} path, driver call excluded: "
          f"{us:.2f} us")
    assert us < 200  # a sanity bound for slow CI machines; the GPU test bounds the real launch
