"""Random numbers (``tl.rand``, ``tl.randn``, ``tl.randint`` and their ``4x``
forms): counter-based, from the Philox 4x32 generator, with Triton's stream.

A kernel asks for random numbers by a ``seed`` (scalar) and ``offset``s (a
tile, one counter per element): the same seed and offsets give the same
numbers in every program, on every target, and the same bits as Triton 3.6
(``tilec.frontend.tl_random`` says how).  Different offsets give independent
numbers, so ``tl.rand(seed, pid * BLOCK + tl.arange(0, BLOCK))`` draws one
number per element of a whole grid with no shared state.

``n_rounds`` (a constexpr, default ``N_ROUNDS_DEFAULT`` = 10) is how many
Philox rounds mix each counter; fewer rounds are faster and less random.
"""
from __future__ import annotations

from tilec.language.core import builtin

N_ROUNDS_DEFAULT = 10  # Philox4x32-10, the round count Random123 recommends


@builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=N_ROUNDS_DEFAULT):
    """``n_rounds`` Philox rounds on the counter ``(c0, c1, c2, c3)`` under the
    key ``(k0, k1)``; returns the four mixed words.

    ``c0`` sets the width: ``uint32`` counters run Philox 4x32, ``uint64``
    counters Philox 4x64 (each with its own multipliers and key increments).
    Python-number counters and keys take ``c0``'s type.
    """


@builtin
def philox(seed, c0, c1, c2, c3, n_rounds=N_ROUNDS_DEFAULT):
    """Philox on the counter ``(c0, c1, c2, c3)`` keyed by the integer ``seed``.

    32-bit counters (reinterpreted as ``uint32``) run Philox 4x32 keyed by the
    low and high halves of ``seed`` taken as ``uint64``; 64-bit counters run
    Philox 4x64 keyed by ``(seed, 0)``.  Returns four tiles of the counters'
    unsigned type.
    """


@builtin
def randint(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """One tile of random ``uint32`` for ``seed`` and the ``offset`` tile: the
    first word of ``randint4x``.  Asking ``randint4x`` once is cheaper than
    ``randint`` four times."""


@builtin
def randint4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four tiles of random ``uint32`` for ``seed`` and the integer ``offset``
    tile: Philox 4x32 on the counter ``(offset's low 32 bits, its high 32 bits
    (0 for offsets of 32 bits or fewer), 0, 0)``.  The cheapest way to many
    random bits."""


@builtin
def uint_to_uniform_float(x):
    """Random ``int32``/``uint32`` (or 64-bit) bits ``x`` as ``float32`` in ``[0, 1)``.

    The bits are read as a signed integer, negative values folded onto
    ``-x - 1``, and the result scaled by the largest factor that keeps the
    maximum below 1.0 after rounding.
    """


@builtin
def rand(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A tile of ``float32`` uniform in ``[0, 1)`` for ``seed`` and the ``offset`` tile."""


@builtin
def rand4x(seed, offsets, n_rounds=N_ROUNDS_DEFAULT):
    """Four tiles of ``float32`` uniform in ``[0, 1)``, one from each word of ``randint4x``."""


@builtin
def pair_uniform_to_normal(u1, u2):
    """The Box-Muller transform: two uniform tiles in ``[0, 1)`` to two
    independent standard normal tiles, ``r * cos(t)`` and ``r * sin(t)`` with
    ``r = sqrt(-2 log(max(u1, 1e-7)))`` and ``t = 2 pi u2``."""


@builtin
def randn(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """A tile of ``float32`` from the standard normal distribution N(0, 1) for
    ``seed`` and the ``offset`` tile (the first normal that Box-Muller makes
    from the first two words of ``randint4x``)."""


@builtin
def randn4x(seed, offset, n_rounds=N_ROUNDS_DEFAULT):
    """Four tiles of ``float32`` from N(0, 1): Box-Muller on the two pairs of ``rand4x``."""
