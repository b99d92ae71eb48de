"""Random numbers (``tl.rand``, ``tl.randn``, ``tl.randint``, their ``4x``
forms, ``tl.philox``, ``tl.philox_impl``, ``tl.uint_to_uniform_float``,
``tl.pair_uniform_to_normal``) on the interpreter.

The core is proved on Random123's published Philox known-answer vectors;
the stream around it (seed split, counters from offsets, the uniform and
normal transforms) against ``philox_reference`` below, a Philox written on
Python ints from the algorithm's definition, for drawn seeds (64-bit ones
too), offset dtypes, ragged lengths and round counts.  Then the
distributions' sanity, the errors, and a compile for an NVIDIA GPU.  That
the stream is Triton's own, bit for bit, is ``tests/gpu/test_random_gpu.py``'s
job.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tilec
import tilec.language as tl
from helpers import FEW, PROPERTY, assert_close, grid1

# --------------------------------------------------------------------------- #
# The reference: Philox on Python ints
# --------------------------------------------------------------------------- #

ROUND_MULTIPLIERS = {32: (0xD2511F53, 0xCD9E8D57), 64: (0xD2E7470EE14C6C93, 0xCA5A826395121157)}
KEY_INCREMENTS = {32: (0x9E3779B9, 0xBB67AE85), 64: (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)}


def philox_reference(counter, key, bits: int = 32, rounds: int = 10) -> list[np.ndarray]:
    """Philox4x``bits`` of the counter words ``counter`` (four int arrays or
    ints) under ``key`` (two), as ``np.uint{bits}`` arrays: each round takes the
    double-width products ``A c0`` and ``B c2`` and makes ``(hi(B c2) ^ c1 ^
    k0, lo(B c2), hi(A c0) ^ c3 ^ k1, lo(A c0))``, then bumps the key."""
    mask = (1 << bits) - 1
    words = np.broadcast_arrays(*(np.asarray(w, dtype=object) for w in (*counter, *key)))
    c0, c1, c2, c3, k0, k1 = (w & mask for w in words)
    mul_a, mul_b = ROUND_MULTIPLIERS[bits]
    inc_a, inc_b = KEY_INCREMENTS[bits]
    for _ in range(rounds):
        prod_a, prod_b = mul_a * c0, mul_b * c2
        c0, c1, c2, c3 = (prod_b >> bits) ^ c1 ^ k0, prod_b & mask, (prod_a >> bits) ^ c3 ^ k1, prod_a & mask
        k0, k1 = (k0 + inc_a) & mask, (k1 + inc_b) & mask
    unsigned = np.dtype(f"uint{bits}")
    return [np.asarray(c).astype(np.uint64).astype(unsigned) for c in (c0, c1, c2, c3)]


def randint4x_reference(seed, offsets: np.ndarray, rounds: int = 10) -> list[np.ndarray]:
    """Triton's counter for ``offsets`` (low word, high word for 64-bit offsets,
    0, 0) keyed by ``seed`` as uint64 (low word, high word)."""
    seed = np.asarray(seed).astype(object) % (1 << 64)
    values = offsets.astype(object)
    high = values >> 32 if offsets.dtype.itemsize == 8 else values * 0
    return philox_reference((values, high, 0, 0), (seed, seed >> 32), 32, rounds)


def uniform_reference(bits: np.ndarray) -> np.ndarray:
    """Random bits as float32 in [0, 1): signed, negatives folded onto ``~x``, times the scale."""
    signed = bits.view(np.dtype(f"int{bits.dtype.itemsize * 8}"))
    scale = 4.6566127342e-10 if bits.dtype.itemsize == 4 else 1.0842020432385337e-19
    return np.where(signed < 0, ~signed, signed).astype(np.float32) * np.float32(scale)


def normal_reference(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box-Muller in float32, as the kernels compute it."""
    u1 = np.maximum(np.float32(1e-7), u1)
    angle = np.float32(6.283185307179586) * u2
    radius = np.sqrt(np.float32(-2.0) * np.log(u1))
    return radius * np.cos(angle), radius * np.sin(angle)


# The interpreter's float32 log/sqrt/sin/cos are numpy's, as the reference's; a few
# ulps leave room for a numpy whose float32 math differs from its own in the last bits.
NORMAL_ULPS = 4

# --------------------------------------------------------------------------- #
# The core: Random123's known answers
# --------------------------------------------------------------------------- #

# (counter, key, result) of Random123's kat_vectors, Philox4x32-10 and Philox4x64-10.
KAT_4X32 = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]
KAT_4X64 = [
    ((0, 0, 0, 0), (0, 0), (0x16554D9ECA36314C, 0xDB20FE9D672D0FDC, 0xD7E772CEE186176B, 0x7E68B68AEC7BA23B)),
    ((0xFFFFFFFFFFFFFFFF,) * 4, (0xFFFFFFFFFFFFFFFF,) * 2,
     (0x87B092C3013FE90B, 0x438C3C67BE8D0224, 0x9CC7D7C69CD777B6, 0xA09CAEBF594F0BA0)),
    ((0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89),
     (0x452821E638D01377, 0xBE5466CF34E90C6C),
     (0xA528F45403E61D95, 0x38C72DBD566E9788, 0xA5A1610E72FD18B5, 0x57BD43B5E52B7FE6)),
]


@tilec.jit
def philox_impl_kernel(c_ptr, k_ptr, out_ptr, N_ROUNDS: tl.constexpr):
    words = tl.philox_impl(tl.load(c_ptr), tl.load(c_ptr + 1), tl.load(c_ptr + 2), tl.load(c_ptr + 3),
                           tl.load(k_ptr), tl.load(k_ptr + 1), N_ROUNDS)
    for i in tl.static_range(4):
        tl.store(out_ptr + i, words[i])


@pytest.mark.parametrize("bits, vector", [(32, v) for v in KAT_4X32] + [(64, v) for v in KAT_4X64])
def test_philox_impl_gives_random123s_known_answers(bits, vector):
    counter, key, want = vector
    dtype = np.dtype(f"uint{bits}")
    out = np.zeros(4, dtype)
    philox_impl_kernel[(1,)](np.array(counter, dtype), np.array(key, dtype), out, N_ROUNDS=10)
    assert [hex(x) for x in out] == [hex(x) for x in want]
    assert [hex(x) for x in philox_reference(counter, key, bits)] == [hex(x) for x in want]


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("rounds", [0, 1, 7])
def test_philox_impl_runs_n_rounds(bits, rounds):
    counter, key, _ = (KAT_4X32 if bits == 32 else KAT_4X64)[2]
    dtype = np.dtype(f"uint{bits}")
    out = np.zeros(4, dtype)
    philox_impl_kernel[(1,)](np.array(counter, dtype), np.array(key, dtype), out, N_ROUNDS=rounds)
    np.testing.assert_array_equal(out, philox_reference(counter, key, bits, rounds))


# --------------------------------------------------------------------------- #
# The stream: seeds, offsets, uniform and normal floats
# --------------------------------------------------------------------------- #

@tilec.jit
def streams_kernel(seed, off_ptr, int_ptr, float_ptr, n, N_ROUNDS: tl.constexpr, BLOCK: tl.constexpr):
    """Every stream of one seed at the loaded offsets: ``int_ptr`` rows randint,
    randint4x (4); ``float_ptr`` rows rand, rand4x (4), randn, randn4x (4)."""
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    off = tl.load(off_ptr + i, mask=mask)
    ints = (tl.randint(seed, off, N_ROUNDS),) + tl.randint4x(seed, off, N_ROUNDS)
    floats = ((tl.rand(seed, off, N_ROUNDS),) + tl.rand4x(seed, off, N_ROUNDS) + (tl.randn(seed, off, N_ROUNDS),)
              + tl.randn4x(seed, off, n_rounds=N_ROUNDS))
    for row in tl.static_range(5):
        tl.store(int_ptr + row * n + i, ints[row], mask=mask)
    for row in tl.static_range(10):
        tl.store(float_ptr + row * n + i, floats[row], mask=mask)


def run_streams(seed, offsets: np.ndarray, rounds: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(offsets)
    ints, floats = np.zeros((5, n), np.uint32), np.zeros((10, n), np.float32)
    streams_kernel[grid1(n, block)](seed, offsets, ints, floats, n, N_ROUNDS=rounds, BLOCK=block)
    return ints, floats


def check_streams(seed, offsets: np.ndarray, rounds: int, block: int) -> None:
    ints, floats = run_streams(seed, offsets, rounds, block)
    words = randint4x_reference(seed, offsets, rounds)
    np.testing.assert_array_equal(ints, [words[0], *words])
    uniforms = [uniform_reference(w) for w in words]
    np.testing.assert_array_equal(floats[:5], [uniforms[0], *uniforms])
    normals = [*normal_reference(uniforms[0], uniforms[1]), *normal_reference(uniforms[2], uniforms[3])]
    for got, want in zip(floats[5:], [normals[0], *normals]):
        assert_close(got, want, "float32", ulps=NORMAL_ULPS)


SEEDS = st.one_of(st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**64 - 1))
OFFSET_DTYPES = ["int32", "int64", "uint32", "uint64", "int16"]


@PROPERTY
@given(seed=SEEDS, dtype=st.sampled_from(OFFSET_DTYPES), n=st.integers(1, 70), data=st.data())
def test_streams_match_the_reference(seed, dtype, n, data):
    offsets = data.draw(hnp.arrays(np.dtype(dtype), n), label="offsets")
    check_streams(seed, offsets, 10, 32)


@FEW
@given(seed=SEEDS, rounds=st.sampled_from([0, 1, 3, 7]), n=st.integers(1, 40), data=st.data())
def test_streams_with_fewer_rounds(seed, rounds, n, data):
    offsets = data.draw(hnp.arrays(np.int64, n), label="offsets")
    check_streams(seed, offsets, rounds, 16)


@tilec.jit
def tile_2d_kernel(seed, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows, cols = tl.arange(0, BM)[:, None], tl.arange(0, BN)[None, :]
    mask = (rows < M) & (cols < N)
    off = rows * N + cols
    tl.store(out_ptr + off, tl.rand(seed, off), mask=mask)
    tl.store(out_ptr + M * N + off, tl.randn(seed, off), mask=mask)


@FEW
@given(seed=SEEDS, m=st.integers(1, 9), n=st.integers(1, 13))
def test_two_dimensional_ragged_offset_tiles(seed, m, n):
    out = np.zeros(2 * m * n, np.float32)
    tile_2d_kernel[(1,)](seed, out, m, n, BM=16, BN=16)
    words = randint4x_reference(seed, np.arange(m * n, dtype=np.int32))
    u1, u2 = uniform_reference(words[0]), uniform_reference(words[1])
    np.testing.assert_array_equal(out[:m * n], u1)
    assert_close(out[m * n:], normal_reference(u1, u2)[0], "float32", ulps=NORMAL_ULPS)


# (seed, offset, offset dtype) -> randint4x's words and rand, as Triton 3.6 wrote them on an H100.
TRITON_ANSWERS = [
    ((-7, 5, "int32"), (0x7F19BE53, 0xB35F0F3E, 0x8FFACE0B, 0x4E48EE1C), 0.9929731),
    ((0x123456789ABCDEF, 4005, "int32"), (0xD1F18CC7, 0x86AC51A8, 0xF66461F6, 0x6A52ACC1), 0.35981596),
    ((0, 21475229702, "int64"), (0xFFA1D544, 0x1CE74C22, 0x62A3794E, 0x823E1A87), 0.002873746),
    ((2**40 + 5, 13148229554, "int64"), (0xE3451046, 0xDB2FD912, 0x0A3BB202, 0x10D24069), 0.22445484),
]


@pytest.mark.parametrize("case, words, uniform", TRITON_ANSWERS)
def test_the_stream_is_tritons(case, words, uniform):
    seed, offset, dtype = case
    ints, floats = run_streams(seed, np.array([offset], dtype), 10, 16)
    assert [hex(x) for x in ints[1:, 0]] == [hex(x) for x in words]
    assert floats[0, 0] == np.float32(uniform)


@pytest.mark.parametrize("seed", [0, 1, -1, 2**31 - 1, -2**31, 2**32, 2**63 - 1, -2**63, 2**64 - 1])
def test_extreme_seeds(seed):
    check_streams(seed, np.arange(-5, 45, dtype=np.int64) * (2**31 + 3), 10, 64)


@tilec.jit
def tile_seed_kernel(seed_ptr, out_ptr, OFFSET: tl.constexpr, BLOCK: tl.constexpr):
    """A tile of seeds (one key per element) at one constant offset, and a literal seed."""
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.randint(tl.load(seed_ptr + i), OFFSET))
    tl.store(out_ptr + BLOCK + i, tl.randint(-12345, i))


def test_seed_may_be_a_tile_or_a_literal_and_offset_a_scalar():
    seeds = np.array([0, -1, 2**40 + 7, 123, -2**63, 2**62, 5, 99], np.int64)
    out = np.zeros(16, np.uint32)
    tile_seed_kernel[(1,)](seeds, out, OFFSET=77, BLOCK=8)
    np.testing.assert_array_equal(out[:8], randint4x_reference(seeds, np.full(8, 77, np.int32))[0])
    np.testing.assert_array_equal(out[8:], randint4x_reference(-12345, np.arange(8, dtype=np.int32))[0])


@tilec.jit
def philox_kernel(seed, c_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    c = tl.load(c_ptr + i)
    words = tl.philox(seed, c, c + 1, c * 3, 0)
    for row in tl.static_range(4):
        tl.store(out_ptr + row * BLOCK + i, words[row])


@pytest.mark.parametrize("dtype", ["int32", "float32", "int64", "uint64"])
def test_philox_splits_the_seed_by_counter_width(dtype):
    """32-bit counters (a float's bits too) key Philox 4x32 with the seed's two
    halves; 64-bit counters key Philox 4x64 with ``(seed, 0)``."""
    seed, counters = -2**40 - 3, np.arange(16).astype(dtype) * 3 + 1
    bits = counters.dtype.itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    out = np.zeros((4, 16), unsigned)
    philox_kernel[(1,)](seed, counters, out, BLOCK=16)
    words = [c.view(unsigned).astype(object) for c in (counters, counters + 1, counters * 3)] + [0]
    key = seed % 2**64
    np.testing.assert_array_equal(out, philox_reference(words, (key, key >> 32) if bits == 32 else (key, 0), bits))


@tilec.jit
def uniform_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.uint_to_uniform_float(tl.load(x_ptr + i)))


EDGE_BITS = [0, 1, 2, 2**23, 2**24 + 1, 2**31 - 2, 2**31 - 1, 2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1]


@pytest.mark.parametrize("dtype", ["uint32", "int32", "uint64", "int64"])
def test_uint_to_uniform_float_stays_in_0_1(dtype):
    bits = 32 if "32" in dtype else 64
    edges = EDGE_BITS if bits == 32 else EDGE_BITS + [2**63 - 1, 2**63, 2**64 - 1, 2**64 - 2**40]
    x = (np.array(edges + [0] * (16 - len(edges)), np.uint64).astype(np.dtype(f"uint{bits}"))
         .view(np.dtype(dtype)))
    out = np.zeros(16, np.float32)
    uniform_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out, uniform_reference(x.view(np.dtype(f"uint{bits}"))))
    assert out.min() >= 0.0 and out.max() < 1.0


@tilec.jit
def normal_kernel(u_ptr, v_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    a, b = tl.pair_uniform_to_normal(tl.load(u_ptr + i), tl.load(v_ptr + i))
    tl.store(out_ptr + i, a)
    tl.store(out_ptr + BLOCK + i, b)


def test_pair_uniform_to_normal_is_box_muller():
    u = np.array([0.0, 1e-9, 1e-7, 0.25, 0.5, 0.75, 0.999999, 0.3] * 2, np.float32)
    v = np.array([0.0, 0.1, 0.25, 0.5, 0.75, 0.9999, 0.6, 0.125] * 2, np.float32)
    out = np.zeros(32, np.float32)
    normal_kernel[(1,)](u, v, out, BLOCK=16)
    want_a, want_b = normal_reference(u, v)
    assert_close(out[:16], want_a, "float32", ulps=NORMAL_ULPS, atol=1e-6)
    assert_close(out[16:], want_b, "float32", ulps=NORMAL_ULPS, atol=1e-6)


# --------------------------------------------------------------------------- #
# Distributions
# --------------------------------------------------------------------------- #

@tilec.jit
def sample_kernel(seed, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs))
    tl.store(out_ptr + tl.num_programs(0) * BLOCK + offs, tl.randn(seed, offs))


def test_rand_is_uniform_and_randn_standard_normal_on_2_16_samples():
    n, block = 2**16, 1024
    out = np.zeros(2 * n, np.float32)
    sample_kernel[(n // block,)](20261124, out, BLOCK=block)
    uniform, normal = out[:n].astype(np.float64), out[n:].astype(np.float64)
    assert uniform.min() >= 0.0 and uniform.max() < 1.0
    assert abs(uniform.mean() - 0.5) < 0.005 and abs(uniform.var() - 1 / 12) < 0.002
    counts = np.histogram(uniform, bins=16, range=(0, 1))[0]
    assert counts.min() > n / 16 * 0.9 and counts.max() < n / 16 * 1.1
    assert abs(normal.mean()) < 0.02 and abs(normal.std() - 1.0) < 0.02
    assert abs((np.abs(normal) < 1).mean() - 0.6827) < 0.01
    assert len(np.unique(out[:n])) > 0.99 * n


# --------------------------------------------------------------------------- #
# Errors, and a compile for an NVIDIA GPU
# --------------------------------------------------------------------------- #

@tilec.jit
def float_seed_kernel(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), tl.rand(1.5, tl.arange(0, 4)))


@tilec.jit
def float_offsets_kernel(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), tl.rand(1, tl.arange(0, 4).to(tl.float32)))


@tilec.jit
def signed_counter_kernel(out_ptr):
    c = tl.arange(0, 4)
    a, b, c, d = tl.philox_impl(c, c, c, c, c, c)
    tl.store(out_ptr + tl.arange(0, 4), a)


@tilec.jit
def runtime_rounds_kernel(out_ptr, rounds):
    tl.store(out_ptr + tl.arange(0, 4), tl.randint(1, tl.arange(0, 4), rounds))


@tilec.jit
def float_bits_kernel(out_ptr):
    tl.store(out_ptr + tl.arange(0, 4), tl.uint_to_uniform_float(tl.arange(0, 4).to(tl.float32)))


@pytest.mark.parametrize("kernel, message", [
    (float_seed_kernel, "`tl.philox` needs an integer seed, got fp32"),
    (float_offsets_kernel, "`tl.randint4x` needs integer offsets, got tile<4xfp32>"),
    (signed_counter_kernel, "`tl.philox_impl` counters must be uint32 or uint64, got tile<4xint32>"),
    (runtime_rounds_kernel, "n_rounds must be a constexpr int"),
    (float_bits_kernel, "`tl.uint_to_uniform_float` takes int32/uint32/int64/uint64 bits"),
])
def test_mistakes_are_compile_errors_at_the_users_line(kernel, message):
    with pytest.raises(tilec.CompilationError, match="test_language_random.py") as e:
        kernel[(1,)](np.zeros(4, np.float32), *([3] if kernel is runtime_rounds_kernel else []))
    assert message in str(e.value)


def test_the_random_module_is_tritons():
    assert tl.random.N_ROUNDS_DEFAULT == 10
    assert tl.random.randn4x is tl.randn4x and tl.random.philox is tl.philox


@tilec.jit
def every_random_kernel(seed, off_ptr, c_ptr, out_ptr, bits_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    off = tl.load(off_ptr + i)
    n1, n2, n3, n4 = tl.randn4x(seed, off)
    u1, u2, u3, u4 = tl.rand4x(seed, off, 7)
    total = tl.rand(seed, off) + tl.randn(seed, off) + n1 + n2 + n3 + n4 + u1 + u2 + u3 + u4
    tl.store(out_ptr + i, total)
    a, b, c, d = tl.philox(seed, tl.load(c_ptr + i), 0, 0, 0)  # 64-bit counters: Philox 4x64
    tl.store(bits_ptr + i, a ^ b ^ c ^ d ^ tl.randint(seed, off).to(tl.uint64))


def test_compiles_for_an_nvidia_gpu():
    """Built from ops every backend lowers: the NVIDIA stages take it to a cubin with no GPU here."""
    args = (2**40 + 1, np.zeros(128, np.int64), np.zeros(128, np.uint64), np.zeros(128, np.float32),
            np.zeros(128, np.uint64))
    compiled = every_random_kernel.compile(*args, target="sm_90", BLOCK=128)
    assert "mul.hi.u32" in compiled.asm["ptx"] and "mul.hi.u64" in compiled.asm["ptx"]
