"""Random ``tl`` functions: Philox and what is built on it (``tl.rand``,
``tl.randn``, ``tl.randint`` and their ``4x`` forms), with Triton 3.6's exact stream.

Everything here is integer and float arithmetic the front end already
builds (``umulhi``, ``*``, ``^``, ``+``, shifts, casts, ``tl.log``...), so
the interpreter and every backend run it with no op of its own.  The facts
that fix the stream, each as Triton 3.6 has them:

* Philox 4x32 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
  3", 2011; Random123): a round maps the counter ``(c0, c1, c2, c3)`` and
  key ``(k0, k1)`` to ``(hi(B c2) ^ c1 ^ k0, lo(B c2), hi(A c0) ^ c3 ^ k1,
  lo(A c0))``, then adds the Weyl increments to the key.  4x64 (64-bit
  counters, reachable through ``tl.philox``) is the same with 64-bit
  constants.  ``n_rounds`` rounds, 10 by default.
* The key is the seed taken as ``uint64`` (a signed seed sign-extends):
  ``(low 32 bits, high 32 bits)`` for 4x32, ``(seed, 0)`` for 4x64, where
  the 0 is a ``(1,)`` tile, so scalar 64-bit counters give ``(1,)`` tiles
  (as Triton's).
* The counter of ``randint4x(seed, offset)`` is ``(offset as uint32,
  offset >> 32 as uint32 for offsets wider than 32 bits else 0, 0, 0)``.
* ``uint_to_uniform_float`` reads the bits as signed, folds ``x < 0`` onto
  ``-x - 1`` and multiplies by ``4.6566127342e-10`` (64 bits:
  ``1.0842020432385337e-19``) in ``float32``.
* Box-Muller: ``r = sqrt(-2 log(max(1e-7, u1)))``, ``t = 6.283185307179586
  * u2``, normals ``r cos(t)`` and ``r sin(t)``; ``randn`` keeps the first.
"""
from __future__ import annotations

from tilec import ir
from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.common import unwrap
from tilec.frontend.semantic import Tensor, TypingError, bitcast_to, cast_to, constant, describe, to_tensor
from tilec.frontend.tl_ops import call_builtin, const_int, implements

# Per counter width: the round multipliers (A, B) and the key's Weyl increments.
_ROUND_MULTIPLIERS = {32: (0xD2511F53, 0xCD9E8D57), 64: (0xD2E7470EE14C6C93, 0xCA5A826395121157)}
_KEY_INCREMENTS = {32: (0x9E3779B9, 0xBB67AE85), 64: (0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B)}

# uint_to_uniform_float: per width, the largest scale with (2**(bits-1) - 1) * scale < 1.0 in float32.
_UNIFORM_SCALE = {32: 4.6566127342e-10, 64: 1.0842020432385337e-19}
_TWO_PI = 6.283185307179586
_SMALLEST_UNIFORM = 1.0e-7  # Box-Muller's floor on u1, keeping log(u1) finite


def _apply(ctx, fn, *args):
    """The IR of the ``tl`` function ``fn(*args)``, built as a kernel calling it would."""
    return call_builtin(ctx, fn, list(args), {})


def _binary(ctx, op: str, lhs, rhs) -> Tensor:
    """``lhs <op> rhs`` with the operators' typing rules (``op`` as ``semantic.binary`` names it)."""
    return semantic.binary(ctx, op, lhs, rhs)


def _rounds(n_rounds, fname: str) -> int:
    n = const_int(unwrap(n_rounds), f"`{fname}` n_rounds")
    if n < 0:
        raise TypingError(f"`{fname}` n_rounds must be at least 0, got {n}")
    return n


# --------------------------------------------------------------------------- #
# Philox
# --------------------------------------------------------------------------- #

def _word(ctx, value, elem: ir.ScalarType, what: str, fname: str) -> Tensor:
    """A counter or key word: a tensor as it is, a Python int as an ``elem``
    constant (Triton would refuse the int a few ops later; taking it is kinder)."""
    value = unwrap(value)
    if isinstance(value, Tensor):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not -(1 << (elem.bits - 1)) <= value < 1 << elem.bits:
        raise TypingError(f"`{fname}`: {what} must be a tile or a {elem.bits}-bit int, got {describe(value)}")
    return constant(ctx, value, elem)


@implements(tl.philox_impl)
def _philox_impl(ctx, c0, c1, c2, c3, k0, k1, n_rounds):
    c0 = to_tensor(ctx, c0)
    if c0.elem not in (ir.u32, ir.u64):
        raise TypingError(f"`tl.philox_impl` counters must be uint32 or uint64, got {describe(c0)}; "
                          "tl.philox takes any 32- or 64-bit counters and a seed")
    bits = c0.elem.bits
    c1, c2, c3, k0, k1 = (_word(ctx, v, c0.elem, name, "tl.philox_impl") for v, name in
                          ((c1, "c1"), (c2, "c2"), (c3, "c3"), (k0, "k0"), (k1, "k1")))
    mul_a, mul_b = _ROUND_MULTIPLIERS[bits]
    inc_a, inc_b = _KEY_INCREMENTS[bits]
    for _ in range(_rounds(n_rounds, "tl.philox_impl")):
        c0, c1, c2, c3 = (
            _binary(ctx, "xor", _binary(ctx, "xor", _apply(ctx, tl.umulhi, mul_b, c2), c1), k0),
            _binary(ctx, "mul", mul_b, c2),
            _binary(ctx, "xor", _binary(ctx, "xor", _apply(ctx, tl.umulhi, mul_a, c0), c3), k1),
            _binary(ctx, "mul", mul_a, c0),
        )
        k0, k1 = _binary(ctx, "add", k0, inc_a), _binary(ctx, "add", k1, inc_b)
    return c0, c1, c2, c3


@implements(tl.philox)
def _philox(ctx, seed, c0, c1, c2, c3, n_rounds):
    seed = to_tensor(ctx, seed)
    if not (isinstance(seed.elem, ir.ScalarType) and seed.elem.is_int):
        raise TypingError(f"`tl.philox` needs an integer seed, got {describe(seed)}")
    seed = cast_to(ctx, seed, ir.u64)
    first = to_tensor(ctx, c0)
    bits = first.elem.bits if isinstance(first.elem, ir.ScalarType) else 0
    if bits == 32:
        word = ir.u32
        keys = [cast_to(ctx, _binary(ctx, "and", half, 0xFFFFFFFF), word)
                for half in (seed, _binary(ctx, "rshift", seed, 32))]
    elif bits == 64:
        word = ir.u64
        keys = [seed, constant(ctx, 0, word, (1,))]
    else:
        raise TypingError(f"`tl.philox` counters must be 32 or 64 bits wide, got {describe(first)}")
    counters = [bitcast_to(ctx, _word(ctx, c, word, name, "tl.philox"), word)
                for name, c in (("c0", first), ("c1", c1), ("c2", c2), ("c3", c3))]
    return _philox_impl(ctx, *counters, *keys, n_rounds)


@implements(tl.randint4x)
def _randint4x(ctx, seed, offset, n_rounds):
    offset = to_tensor(ctx, offset)
    if not (isinstance(offset.elem, ir.ScalarType) and offset.elem.is_int):
        raise TypingError(f"`tl.randint4x` needs integer offsets, got {describe(offset)}")
    low = cast_to(ctx, offset, ir.u32)
    zero = constant(ctx, 0, ir.u32, low.shape)
    high = cast_to(ctx, _binary(ctx, "rshift", offset, 32), ir.u32) if offset.elem.bits > 32 else zero
    return _philox(ctx, seed, low, high, zero, zero, n_rounds)


@implements(tl.randint)
def _randint(ctx, seed, offset, n_rounds):
    return _randint4x(ctx, seed, offset, n_rounds)[0]


# --------------------------------------------------------------------------- #
# Uniform and normal floats
# --------------------------------------------------------------------------- #

@implements(tl.uint_to_uniform_float)
def _uint_to_uniform_float(ctx, x):
    x = to_tensor(ctx, x)
    if x.elem not in (ir.i32, ir.u32, ir.i64, ir.u64):
        raise TypingError(f"`tl.uint_to_uniform_float` takes int32/uint32/int64/uint64 bits, got {describe(x)}")
    bits = x.elem.bits
    signed = bitcast_to(ctx, x, ir.i32 if bits == 32 else ir.i64)
    folded = _binary(ctx, "sub", semantic.unary(ctx, "neg", signed), 1)
    magnitude = semantic.where(ctx, semantic.compare(ctx, "lt", signed, 0), folded, signed)
    return _binary(ctx, "mul", magnitude, _UNIFORM_SCALE[bits])


@implements(tl.rand)
def _rand(ctx, seed, offset, n_rounds):
    return _uint_to_uniform_float(ctx, _randint(ctx, seed, offset, n_rounds))


@implements(tl.rand4x)
def _rand4x(ctx, seed, offsets, n_rounds):
    return tuple(_uint_to_uniform_float(ctx, bits) for bits in _randint4x(ctx, seed, offsets, n_rounds))


@implements(tl.pair_uniform_to_normal)
def _pair_uniform_to_normal(ctx, u1, u2):
    u1 = _apply(ctx, tl.maximum, _SMALLEST_UNIFORM, u1)
    angle = _binary(ctx, "mul", _TWO_PI, u2)
    radius = _apply(ctx, tl.sqrt, _binary(ctx, "mul", -2.0, _apply(ctx, tl.log, u1)))
    return (_binary(ctx, "mul", radius, _apply(ctx, tl.cos, angle)),
            _binary(ctx, "mul", radius, _apply(ctx, tl.sin, angle)))


@implements(tl.randn)
def _randn(ctx, seed, offset, n_rounds):
    i1, i2, _, _ = _randint4x(ctx, seed, offset, n_rounds)
    u1, u2 = _uint_to_uniform_float(ctx, i1), _uint_to_uniform_float(ctx, i2)
    return _pair_uniform_to_normal(ctx, u1, u2)[0]


@implements(tl.randn4x)
def _randn4x(ctx, seed, offset, n_rounds):
    u1, u2, u3, u4 = _rand4x(ctx, seed, offset, n_rounds)
    return _pair_uniform_to_normal(ctx, u1, u2) + _pair_uniform_to_normal(ctx, u3, u4)
