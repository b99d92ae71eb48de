"""The GPU benchmarks' kernels and launch configurations, run on the host
interpreter against numpy (so CI guards what the benchmarks time), and their
Triton twins built from the same functions where triton is installed; and the
report helpers the GPU scripts share."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks import kernels


def rng_for(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_vector_add_over_several_blocks_and_a_partial_one():
    rng = rng_for(0)
    n = 3 * kernels.VECTOR_ADD_BLOCK + 77
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    kernels.launch_vector_add(kernels.kernel_for("vector_add", "tilec"), x, y, out)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("n_cols", [1, 100, 256])
def test_softmax_rows(n_cols):
    x = rng_for(n_cols).standard_normal((5, n_cols), dtype=np.float32) * 10
    out = np.full_like(x, np.nan)
    kernels.launch_softmax(kernels.kernel_for("softmax", "tilec"), x, out)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_softmax_warps_follow_the_tutorial_heuristic():
    assert [kernels.softmax_config(n) for n in (256, 1000, 2048, 3000, 4096, 16384)] == [
        (256, 4), (1024, 4), (2048, 8), (4096, 16), (4096, 16), (16384, 16)]


@pytest.mark.parametrize("n_cols", [64, 300])
def test_layer_norm_forward_fp16(n_cols):
    rng = rng_for(n_cols)
    x = (rng.standard_normal((4, n_cols)) * 0.5 - 2.3).astype(np.float16)
    w, b = rng.random(n_cols).astype(np.float16), rng.random(n_cols).astype(np.float16)
    y = np.full_like(x, np.nan)
    mean, rstd = np.full(4, np.nan, np.float32), np.full(4, np.nan, np.float32)
    kernels.launch_layer_norm(kernels.kernel_for("layer_norm", "tilec"), x, w, b, y, mean, rstd,
                              eps=1e-5, elem_size=2)
    x64 = x.astype(np.float64)
    want_rstd = 1 / np.sqrt(x64.var(axis=1) + 1e-5)
    want = (x64 - x64.mean(axis=1, keepdims=True)) * want_rstd[:, None] * w + b
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(mean, x64.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(rstd, want_rstd, rtol=1e-4)


def test_layer_norm_config_is_the_tutorials():
    assert kernels.layer_norm_config(1024, 2) == (1024, 4)
    assert kernels.layer_norm_config(3000, 2) == (4096, 8)
    assert kernels.layer_norm_config(40000, 2) == (32768, 8)  # at most 64 KB a block
    assert kernels.layer_norm_config(100, 4) == (128, 1)


def test_empty_kernel_launches():
    x = np.zeros(4, np.float32)
    kernels.launch_empty(kernels.kernel_for("empty", "tilec"), x, x.copy())


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="language must be one of"):
        kernels.kernel_for("softmax", "cuda")


def test_a_kernel_that_does_not_name_tilec_language_tl_is_not_retargeted():
    import tilec

    pytest.importorskip("triton")
    kernel = tilec.jit(lambda x: None)
    with pytest.raises(ValueError, match="must name tilec's language `tl`"):
        kernels.for_triton(kernel)


@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm", "empty"])
def test_triton_twin_runs_the_same_function_with_tritons_language(name):
    triton = pytest.importorskip("triton")
    import triton.language as ttl

    twin = kernels.kernel_for(name, "triton")
    original = kernels.kernel_for(name, "tilec").fn
    assert isinstance(twin, triton.runtime.JITFunction)
    assert twin.fn.__code__ is original.__code__
    assert twin.fn.__globals__["tl"] is ttl
    assert all(ann is not kernels.tl.constexpr for ann in twin.fn.__annotations__.values())


# --- the report helpers the GPU scripts share (benchmarks/common.py) ----------------
def test_sizes_are_written_plainly_or_as_powers_of_two():
    from benchmarks.common import parse_size, pow2_text

    assert [parse_size(t) for t in ("4096", "2^12", "2**12", " 2 ^ 24 ")] == [4096, 4096, 4096, 1 << 24]
    for bad in ("0", "-4", "2^", "1e6", "four"):
        with pytest.raises(Exception, match="size"):
            parse_size(bad)
    assert [pow2_text(n) for n in (4096, 1 << 28, 3000)] == ["2^12", "2^28", "3000"]


def test_ratios_and_target_verdicts():
    from benchmarks.common import Target, add_ratios

    target = Target(0.97, lambda n: n >= 1 << 24, "text")
    rows = [{"size": 1 << 24, "gbps": {"tilec": 2950.0, "triton": 3000.0, "torch": 2000.0}},
            {"size": 1 << 24, "gbps": {"tilec": 2000.0, "triton": 3000.0}},
            {"size": 1 << 24, "gbps": {"triton": 3000.0}},
            {"size": 1 << 12, "gbps": {"tilec": 1.0, "triton": 2.0}}]
    for row in rows:
        add_ratios(row, copy=3000.0, target=target)
    assert rows[0]["tilec/triton"] == pytest.approx(2950 / 3000) and rows[0]["target"] == "PASS"
    assert rows[0]["tilec/torch"] == pytest.approx(1.475) and rows[0]["tilec/copy"] == pytest.approx(2950 / 3000)
    assert rows[1]["target"] == "MISS" and rows[1]["tilec/torch"] is None
    assert rows[2]["target"] == "MISS" and rows[2]["tilec/triton"] is None  # tilec failed: a miss
    assert rows[3]["target"] == ""  # no target at this size


def test_table_columns_line_up():
    from benchmarks.common import format_table

    lines = format_table(["n", "GB/s"], [["2^12", "7"], ["2^28", "2987"]]).splitlines()
    assert lines == ["   n  GB/s", "----  ----", "2^12     7", "2^28  2987"]


@pytest.mark.parametrize("hip, props, arch", [
    (None, {"major": 9, "minor": 0}, "sm_90"),
    ("6.4.43482", {"major": 9, "minor": 4, "gcnArchName": "gfx942:sramecc+:xnack-"}, "gfx942"),
    ("7.0.1", {"major": 12, "minor": 0, "gcnArchName": "gfx1201"}, "gfx1201")])
def test_the_scripts_take_an_nvidia_or_an_amd_gpu(monkeypatch, hip, props, arch):
    """A ROCm torch calls its AMD GPU ``"cuda"``; the scripts compile for and report its ``gfx`` arch."""
    import sys
    from types import SimpleNamespace

    from benchmarks.common import device_arch

    cuda = SimpleNamespace(current_device=lambda: 0, get_device_properties=lambda d: SimpleNamespace(**props))
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda, version=SimpleNamespace(hip=hip)))
    assert device_arch() == arch


def test_matmul_times_fp8_with_twice_the_k_a_step_unless_told():
    from benchmarks import matmul

    opts = matmul.options(["--dtypes", "float8_e4m3fn", "float16"])
    fp8, fp16 = matmul.configs_for("float8_e4m3fn", opts.configs), matmul.configs_for("float16", opts.configs)
    assert fp16 == matmul.CONFIGS and len(fp8) == len(fp16)
    assert all(a.block_k == 2 * b.block_k and a._replace(block_k=b.block_k) == b for a, b in zip(fp8, fp16))
    chosen = matmul.options(["--dtypes", "float8_e5m2", "--configs", "256,128,128,8,8,3"])
    assert [str(c) for c in matmul.configs_for("float8_e5m2", chosen.configs)] == ["256x128x128 g8 w8 s3"]


def test_matmul_refuses_descriptors_with_fp8_naming_why(capsys):
    from benchmarks import matmul

    with pytest.raises(SystemExit) as exit_info:
        matmul.options(["--descriptors", "--dtypes", "float8_e4m3fn"])
    assert exit_info.value.code == 2
    assert "--descriptors takes float16 and bfloat16" in capsys.readouterr().err
