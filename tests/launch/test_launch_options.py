"""Triton's launch options on tilec: ``num_ctas``, ``maxnreg``,
``enable_fp_fusion``, ``launch_cooperative_grid``, ``launch_pdl``,
``matrix_instr_nonkdim`` and ``waves_per_eu`` (AMD's; ``tests/backends/amd`` checks what they do) (with
``num_warps`` and ``num_stages``, which ``test_jit.py`` covers), as launch
keywords, ``compile`` keywords and ``tilec.Config`` fields; and kernel
parameters named like an option, which get the launch's value.
"""
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from launch.kernels import fresh
from tilec.launch import cache
from tilec.launch.compiler import Options

E2E = settings(max_examples=10, deadline=None)
FLOAT_DTYPES = ["float16", "float32", "float64"]


@tilec.jit
def mul_add_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = a * b + c: one fma when fusion is allowed."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a, b, c = tl.load(a_ptr + offs, mask=m), tl.load(b_ptr + offs, mask=m), tl.load(c_ptr + offs, mask=m)
    tl.store(out_ptr + offs, a * b + c, mask=m)


@tilec.jit
def warps_kernel(out_ptr, num_warps: tl.constexpr, num_stages: tl.constexpr):
    """Writes the launch options it was handed."""
    tl.store(out_ptr, num_warps)
    tl.store(out_ptr + 1, num_stages)


def operands(n, dtype):
    rng = np.random.default_rng(n)
    return [rng.standard_normal(n).astype(dtype) for _ in range(3)] + [np.full(n, 77, dtype)]


def assert_a_times_b_plus_c(out, a, b, c) -> None:
    """``out`` is ``a * b + c`` rounded after each op (the interpreter) or once, fused
    (a GPU's fma, code compiled for the CPU: ``TILEC_TEST_DEVICE`` runs these there)."""
    assert (np.abs(out - (a * b + c)) <= np.spacing(np.abs(a * b)) + np.spacing(np.abs(out))).all()


def ptx(dtype="float32", **options):
    return fresh(mul_add_kernel).compile(*operands(32, dtype), 32, BLOCK=32, target="sm_80", **options).asm["ptx"]


# --- enable_fp_fusion ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fp_fusion_is_on_by_default_as_in_triton(dtype):
    assert re.search(r"\bfma\.rn\.f(16|32|64)", ptx(dtype))
    assert re.search(r"\bfma\.rn\.f(16|32|64)", ptx(dtype, enable_fp_fusion=True))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_fp_fusion_off_keeps_the_multiply_and_the_add_apart(dtype):
    text = ptx(dtype, enable_fp_fusion=False)
    assert "fma" not in text
    assert re.search(r"\bmul\.rn\.f(16|32|64)", text) and re.search(r"\badd\.rn\.f(16|32|64)", text)


@E2E
@given(dtype=st.sampled_from(FLOAT_DTYPES), n=st.integers(1, 70), fusion=st.booleans(), data=st.data())
def test_fp_fusion_either_way_computes_a_times_b_plus_c_on_the_host(dtype, n, fusion, data):
    elems = hnp.arrays(dtype, n, elements=st.floats(-100, 100, width=np.dtype(dtype).itemsize * 8))
    a, b, c = (data.draw(elems) for _ in range(3))
    out = np.zeros(n, dtype)
    mul_add_kernel[(tilec.cdiv(n, 16),)](a, b, c, out, n, BLOCK=16, enable_fp_fusion=fusion)
    if fusion:
        assert_a_times_b_plus_c(out, a, b, c)
    else:
        np.testing.assert_array_equal(out, a * b + c)


def test_fp_fusion_must_be_a_bool():
    with pytest.raises(ValueError, match="enable_fp_fusion must be True or False, got 1"):
        mul_add_kernel[(1,)](*operands(4, np.float32), 4, BLOCK=16, enable_fp_fusion=1)


# --- maxnreg ------------------------------------------------------------------------------------
def test_maxnreg_caps_registers_in_the_ptx():
    assert ".maxnreg" not in ptx()
    compiled = fresh(mul_add_kernel).compile(*operands(32, np.float32), 32, BLOCK=32, target="sm_80", maxnreg=40)
    assert re.search(r"\.maxnreg\s+40\b", compiled.asm["ptx"])
    if compiled.metadata.registers is not None:  # ptxas found: it kept to the cap
        assert compiled.metadata.registers <= 40


def test_a_configs_maxnreg_reaches_the_ptx():
    """An autotuning ``Config``'s ``maxnreg`` is among the keywords the
    autotuner launches it with (``all_kwargs``), so it caps the variant's
    registers as a launch's does."""
    config = tilec.Config({"BLOCK": 32}, num_warps=2, maxnreg=40)
    compiled = fresh(mul_add_kernel).compile(*operands(32, np.float32), 32, target="sm_80", **config.all_kwargs())
    assert re.search(r"\.maxnreg\s+40\b", compiled.asm["ptx"])
    assert compiled.metadata.maxnreg == 40


def test_maxnreg_is_accepted_on_the_host():
    a, b, c, out = operands(20, np.float32)
    mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, maxnreg=32)
    assert_a_times_b_plus_c(out, a, b, c)


@pytest.mark.parametrize("value", [0, -1, True, 2.0])
def test_maxnreg_must_be_a_positive_int(value):
    a, b, c, out = operands(4, np.float32)
    with pytest.raises(ValueError, match=f"maxnreg must be a positive int, got {value!r}"):
        mul_add_kernel[(1,)](a, b, c, out, 4, BLOCK=16, maxnreg=value)
    assert (out == 77).all()


# --- num_ctas and the launch flags --------------------------------------------------------------
def test_num_ctas_1_is_accepted_everywhere():
    a, b, c, out = operands(20, np.float32)
    mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, num_ctas=1)
    assert_a_times_b_plus_c(out, a, b, c)
    assert "fma" in fresh(mul_add_kernel).compile(a, b, c, out, 20, BLOCK=16, target="sm_90", num_ctas=1).asm["ptx"]


@pytest.mark.parametrize("value", [2, 4])
def test_num_ctas_above_1_is_not_supported_yet_and_writes_nothing(value):
    a, b, c, out = operands(4, np.float32)
    with pytest.raises(ValueError, match=f"num_ctas={value}: thread-block clusters are not supported yet"):
        mul_add_kernel[(1,)](a, b, c, out, 4, BLOCK=16, num_ctas=value)
    assert (out == 77).all()


@tilec.jit
def wait_for_flag_kernel(flag_ptr):
    """Block 1 spins until block 0 has set the flag: only a cooperative grid runs it."""
    if tl.program_id(0) == 0:
        tl.atomic_xchg(flag_ptr, 1)
    else:
        while tl.atomic_add(flag_ptr, 0) == 0:
            pass


def test_a_cooperative_grid_runs_a_kernel_whose_blocks_cannot_wait():
    a, b, c, out = operands(20, np.float32)
    mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, launch_cooperative_grid=True)
    assert_a_times_b_plus_c(out, a, b, c)


def test_a_cooperative_grid_refuses_a_kernel_whose_blocks_may_wait():
    flag = np.zeros(1, np.int32)
    with pytest.raises(tilec.TilecError, match="launch_cooperative_grid=True for a kernel with a runtime `while` loop"):
        wait_for_flag_kernel[(2,)](flag, launch_cooperative_grid=True)
    assert flag[0] == 0  # refused before it ran


def test_pdl_is_a_hint():
    a, b, c, out = operands(20, np.float32)
    mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, launch_cooperative_grid=False, launch_pdl=True)
    assert_a_times_b_plus_c(out, a, b, c)
    with pytest.raises(ValueError, match="launch_pdl must be True or False, got 'yes'"):
        mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, launch_pdl="yes")


# --- matrix_instr_nonkdim ------------------------------------------------------------------------
def test_matrix_instr_nonkdim_is_0_16_or_32_and_other_targets_ignore_it():
    a, b, c, out = operands(20, np.float32)
    mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, matrix_instr_nonkdim=32)
    assert_a_times_b_plus_c(out, a, b, c)
    for bad in (8, 64, True, "32"):
        with pytest.raises(ValueError, match="matrix_instr_nonkdim must be 0 .*, 16 or 32"):
            mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, matrix_instr_nonkdim=bad)


def test_waves_per_eu_is_a_non_negative_int_and_other_targets_ignore_it():
    a, b, c, out = operands(20, np.float32)
    mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, waves_per_eu=2)
    assert_a_times_b_plus_c(out, a, b, c)
    for bad in (-1, True, "2", 1.5):
        with pytest.raises(ValueError, match="waves_per_eu must be 0 .* or a positive int"):
            mul_add_kernel[(2,)](a, b, c, out, 20, BLOCK=16, waves_per_eu=bad)


# --- the variant key ----------------------------------------------------------------------------
def test_options_that_change_code_are_part_of_the_variant_key():
    kernel = fresh(mul_add_kernel)
    args = operands(20, np.float32)
    for options in ({}, {"enable_fp_fusion": False}, {"maxnreg": 64}, {"num_ctas": 1}, {"launch_pdl": True}):
        kernel[(2,)](*args, 20, BLOCK=16, **options)
    assert sorted((o.enable_fp_fusion, o.maxnreg or 0) for (_, o, _) in kernel.cache) == [
        (False, 0), (True, 0), (True, 64)]


def test_the_metadata_names_the_options():
    m = fresh(mul_add_kernel).compile(*operands(20, np.float32), 20, BLOCK=16, target="sm_80", num_warps=2,
                                      maxnreg=48, enable_fp_fusion=False).metadata
    assert (m.num_warps, m.num_stages, m.num_ctas, m.maxnreg, m.enable_fp_fusion) == (2, 3, 1, 48, False)


def test_options_are_part_of_the_disk_cache_key():
    plan = mul_add_kernel.plan(operands(20, np.float32) + [20], {"BLOCK": 16})
    keys = {cache.kernel_key(mul_add_kernel.fn, plan.args, options, "sm_80")
            for options in (Options(), Options(enable_fp_fusion=False), Options(maxnreg=32),
                            Options(matrix_instr_nonkdim=16), Options(waves_per_eu=2))}
    assert len(keys) == 5


# --- tilec.Config ---------------------------------------------------------------------------------
def test_configs_take_num_ctas_and_maxnreg():
    configs = [tilec.Config({"BLOCK": 16}, num_ctas=1, maxnreg=32), tilec.Config({"BLOCK": 32}, num_ctas=2),
               tilec.Config({"BLOCK": 64, "enable_fp_fusion": False})]
    kernel = tilec.autotune(configs, key=["n"], cache_results=False)(fresh(mul_add_kernel))
    a, b, c, out = operands(100, np.float32)
    kernel[lambda meta: (tilec.cdiv(100, meta["BLOCK"]),)](a, b, c, out, 100)
    assert_a_times_b_plus_c(out, a, b, c)
    assert list(kernel.skipped) == [configs[1]] and "num_ctas=2" in kernel.skipped[configs[1]]
    assert configs[0].all_kwargs() == {"BLOCK": 16, "num_warps": 4, "num_ctas": 1, "num_stages": 3, "maxnreg": 32}
    assert configs[2].all_kwargs() == {"BLOCK": 64, "enable_fp_fusion": False, "num_warps": 4, "num_ctas": 1,
                                       "num_stages": 3}  # Triton's: a perf_model may take num_ctas
    assert str(configs[0]) == "BLOCK: 16, num_warps: 4, num_stages: 3, maxnreg: 32"
    assert str(configs[1]) == "BLOCK: 32, num_warps: 4, num_stages: 3, num_ctas: 2"


# --- parameters named like launch options ---------------------------------------------------------
@pytest.mark.parametrize("num_warps, num_stages", [(1, 1), (2, 5), (8, 2)])
def test_parameters_named_like_options_get_the_launch_value(num_warps, num_stages):
    kernel = fresh(warps_kernel)
    out = np.zeros(2, np.int32)
    compiled = kernel[(1,)](out, num_warps=num_warps, num_stages=num_stages)
    assert out.tolist() == [num_warps, num_stages]
    assert (compiled.options.num_warps, compiled.options.num_stages) == (num_warps, num_stages)
    ptx_text = kernel.compile(out, num_warps=num_warps, num_stages=num_stages, target="sm_80").asm["ptx"]
    assert re.search(rf"\.maxntid\s+{32 * num_warps}\b", ptx_text)


def test_a_bad_option_value_for_such_a_parameter_is_the_options_error():
    with pytest.raises(ValueError, match=r"num_warps must be a power of 2 \(1, 2, 4, 8, ...\), got 3"):
        warps_kernel[(1,)](np.zeros(2, np.int32), num_warps=3, num_stages=1)
