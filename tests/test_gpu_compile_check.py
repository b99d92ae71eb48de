"""What ``tests/gpu_compile_check.py`` checks of the suite's kernels: every
distinct kernel for the archs checked in full, and for the sampled archs
(AArch64, gfx950, gfx1201) each kernel holding an op line none before held,
plus on gfx950 and gfx1201 each kernel with a dot."""
from __future__ import annotations

import gpu_compile_check as check

ADD = """func @add(%x: ptr<f32>, %n: i32) {
  %r = arange {start = 0, end = 64} : tile<64xi32>
  store %x, %r, _
}
"""
# the same ops on other numbers and names: no new line once ADD was seen
ADD_AGAIN = ADD.replace("64", "128").replace("%r", "%s")
DOT = """func @dot(%x: ptr<f16>) {
  %d = dot %a, %b, %c {input_precision = "tf32"} : tile<32x32xf32>
}
"""


def test_the_default_checks_all_five_amd_archs_some_on_a_sample():
    assert {"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"} <= set(check.DEFAULT_ARCHS.split(","))
    assert set(check.SAMPLED_ARCHS) == {"aarch64", "gfx950", "gfx1201"}


def test_a_full_arch_checks_each_distinct_kernel_a_sampled_one_each_new_op_line():
    seen: set = set()
    for arch in ("gfx942", "gfx950", "aarch64"):
        assert check.is_new(arch, ADD, None, seen)
        assert not check.is_new(arch, ADD, None, seen)  # once per kernel
    assert check.is_new("gfx942", ADD_AGAIN, None, seen)
    assert not check.is_new("gfx950", ADD_AGAIN, None, seen) and not check.is_new("aarch64", ADD_AGAIN, None, seen)


def test_gfx950_and_gfx1201_check_every_kernel_with_a_dot():
    seen: set = set()
    for arch in ("gfx950", "gfx1201"):
        assert check.is_new(arch, DOT, None, seen)
        assert check.is_new(arch, DOT.replace("<32x", "<16x"), None, seen)  # no new line, a new kernel
        assert not check.is_new(arch, DOT, None, seen)
    assert check.is_new("aarch64", DOT, None, seen)
    assert not check.is_new("aarch64", DOT.replace("%d", "%e"), None, seen)  # no new line
