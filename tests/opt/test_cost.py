"""The per-program cost estimate (``tilec/opt/cost.py``): bytes and flops of the
tutorial kernels, trip counts as numbers or formulas, and the metadata fields
it fills (plain JSON values)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from kernels.matmul import matmul_kernel
from kernels.softmax import softmax_kernel
from kernels.vector_add import add_kernel
from opt.golden import function_text

import tilec
import tilec.language as tl
from tilec.ir.parser import parse_function
from tilec.launch.compiler import KernelMetadata
from tilec.opt.cost import Cost, estimate_cost, evaluate


@tilec.jit
def dot_loop(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             KTOTAL: tl.constexpr):
    """C[BM, BN] = A[BM, K] @ B[K, BN], K a constexpr (KTOTAL) or an argument (KTOTAL None)."""
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K if KTOTAL is None else KTOTAL, BK):
        a = tl.load(a_ptr + rm[:, None] * BK + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def f32(n=4096):
    return np.zeros(n, np.float32)


def test_vector_add_moves_three_vectors_and_adds_one():
    m = add_kernel.compile(f32(), f32(), f32(), 4000, BLOCK_SIZE=1024).metadata
    assert (m.bytes_moved, m.flops) == (3 * 1024 * 4, 1024)  # masked elements count as moved
    assert (m.bytes_formula, m.flops_formula) == ("12288", "1024")
    assert m.arithmetic_intensity == pytest.approx(1 / 12)


@pytest.mark.parametrize("BM,BN,BK,K", [(16, 16, 16, 64), (32, 16, 16, 48)])
def test_a_dot_loop_with_constant_bounds_counts_2mnk(BM, BN, BK, K):
    m = dot_loop.compile(f32(), f32(), f32(), 5, BM=BM, BN=BN, BK=BK, KTOTAL=K).metadata
    assert m.flops == 2 * BM * BN * K
    assert m.bytes_moved == 4 * (BM * K + K * BN + BM * BN)


def test_a_loop_bounded_by_an_argument_gives_a_formula():
    m = dot_loop.compile(f32(), f32(), f32(), 5, BM=16, BN=16, BK=16, KTOTAL=None).metadata
    assert (m.bytes_moved, m.flops) == (None, None)
    assert m.flops_formula == "8192*cdiv(K, 16)"
    assert m.bytes_formula == "1024 + 2048*cdiv(K, 16)"
    assert evaluate(m.flops_formula, K=64) == 2 * 16 * 16 * 64
    assert m.arithmetic_intensity == 4.0  # the loop's: 8192 flops per 2048 bytes


def test_tutorial_matmul_trip_count_from_tl_cdiv():
    a = np.zeros(64 * 64, np.float16)
    c = np.zeros(64 * 64, np.float16)
    m = matmul_kernel.compile(a, a, c, 48, 48, 40, 40, 1, 48, 1, 48, 1, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16,
                              BLOCK_SIZE_K=16, GROUP_SIZE_M=2, ACTIVATION="").metadata
    assert m.flops_formula == "8192*((K + 15) // 16)"
    for K in (1, 16, 40, 1000):
        trips = -(-K // 16)
        assert evaluate(m.flops_formula, K=K) == 2 * 16 * 16 * 16 * trips
        assert evaluate(m.bytes_formula, K=K) == 2 * (2 * 16 * 16) * trips + 16 * 16 * 2


def test_softmax_row():
    m = softmax_kernel.compile(f32(), f32(), 1000, 1000, 1000, BLOCK_SIZE=1024).metadata
    n = 1024
    assert m.bytes_moved == 2 * n * 4
    # max (n - 1 maximums), subtract, exp, sum (n - 1 adds), divide.
    assert m.flops == (n - 1) + n + n + (n - 1) + n


# --- golden IR: what each op counts ------------------------------------------
def cost_of(body: str) -> Cost:
    return estimate_cost(parse_function(function_text(body)))


def test_integer_arithmetic_is_free_and_fma_counts_two():
    c = cost_of("""
        %a = add %x, %y : i32
        %b = fma %f, %f, %f : f32
        %s = splat %f {shape = (8,)} : tile<8xf32>
        %n = neg %s : tile<8xf32>
    """)
    assert (c.bytes, c.flops) == (0, 2 + 8) and c.intensity is None


def test_an_if_counts_its_costlier_branch():
    c = cost_of("""
        %v = if %c : f32 {
          %l = load %p, _, _ : f32
          yield [%l]
        } {
          %m = mul %f, %f : f32
          %n = mul %m, %f : f32
          yield [%n]
        }
        store %p, %v, _
    """)
    assert (c.bytes, c.flops) == (4 + 4, 2)


def test_loops_without_a_formula_are_named_by_line():
    c = cost_of("""
        %one = constant {value = 1, type = i32} : i32
        %r = for %one, %x, %one, [%f] : f32 {
        ^(%i: i32, %acc: f32):
          %n = add %acc, %f : f32
          yield [%n]
        }
        %w = while [%r] : f32 {
        ^(%a: f32):
          %b = cmp %a, %f {pred = "lt"} : i1
          condition %b, [%a]
        } {
        ^(%a2: f32):
          %l = load %p, _, _ : f32
          yield [%l]
        }
    """)
    assert c.flops is None
    assert c.flops_formula == "(x - 1) + trips_line0"  # a parsed function has no source lines
    assert c.bytes_formula == "4*trips_line0"
    assert evaluate(c.flops_formula, x=11, trips_line0=3) == 13


def test_reduce_and_scan_combine_n_minus_one_pairs_per_line():
    c = cost_of("""
        %ft = splat %f {shape = (4, 8)} : tile<4x8xf32>
        %r = reduce [%ft] {axis = 1} : tile<4xf32> {
        ^(%a1: f32, %b1: f32):
          %s = add %a1, %b1 : f32
          yield [%s]
        }
        %q = scan [%ft] {axis = 0} : tile<4x8xf32> {
        ^(%a2: f32, %b2: f32):
          %s2 = add %a2, %b2 : f32
          yield [%s2]
        }
    """)
    assert c.flops == 4 * 7 + 8 * 3


def test_metadata_survives_json():
    m = dot_loop.compile(f32(), f32(), f32(), 5, BM=16, BN=16, BK=16, KTOTAL=None).metadata
    again = KernelMetadata(**json.loads(json.dumps(dataclasses.asdict(m))))
    assert again == m and again.flops_formula == "8192*cdiv(K, 16)"
