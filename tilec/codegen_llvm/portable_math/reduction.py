"""Payne and Hanek's reduction for sin, cos and tan of a huge argument:
``x = q pi/2 + r``, ``|r| <= pi/4``, with ``r`` correct to far more bits
than the format's, for every finite ``x``, from a table of the bits of 2/pi.

``|x| = m 2^e`` with ``m`` the significand as an integer of ``P`` bits.  A
bit of 2/pi of weight ``2^-j`` adds ``m 2^(e-j)`` to ``x 2/pi``: a multiple
of 4 for ``j <= e - 2``, which changes neither ``q mod 4`` (all that sin,
cos and tan ask of ``q``) nor ``r``.  So only the ``32 K`` bits from
``j = e - 1`` on are read (the window ``W``, an integer of ``K`` 32-bit
words), and ``x 2/pi mod 4 = m W 2^(2 - 32 K)`` up to what the bits past
the window add, below ``2^(P + 2 - 32 K)``.  The product's low ``32 K``
bits (``m W mod 2^(32K)``, schoolbook on 32-bit words in 64-bit integers)
are ``x 2/pi mod 4`` in fixed point: its top two bits ``q``, rounded to
nearest, and the rest the fraction ``f`` in ``[-1/2, 1/2)``, whose
magnitude, summed word by word in double-double, times pi/2 (two floats)
is ``r`` as a pair.

The window is wide enough for the worst case: the closest a float comes
to a multiple of pi/2 leaves ``|f|`` about ``2^-29`` for f32 and ``2^-61``
for f64 (Muller, "Elementary Functions", for the binary formats), and ``f``
needs ``P + 2`` good bits past those: ``K = 3`` (96 bits, an error below
``2^-70``) for f32, ``K = 6`` (192 bits, below ``2^-137``) for f64.  The
arithmetic is f64's and i64's whatever the format (``Emitter.in_format``):
f32's ``r`` is that of f64 rounded to a pair of f32.

Branch-free like the rest of the library: the window's words are loads
from a constant table (``TABLE_WORDS`` words, the first 0 so that the
smallest exponent reduced still starts inside), a gather in a vectorized
loop; the exponent is held to the table, so any input, infinities and NaN
included, computes something finite that ``trig.Reduced`` selects away.
"""
from __future__ import annotations

from tilec.codegen_llvm.portable_math.constants import split, two_over_pi_words
from tilec.codegen_llvm.portable_math.emitter import F64, Emitter, Int, Mask, Num, constant_table, two_sum

#: The window's 32-bit words by format.
WINDOW = {"f32": 3, "f64": 6}
#: Zero words before 2/pi's bits in the table: room for windows starting before its first bit.
LEADING_ZEROS = 1
#: The smallest exponent ``e`` (``|x| = m 2^e``) reduced: the windows of
#: smaller ones start before the table (such ``x`` take Cody and Waite's way).
SMALLEST_EXPONENT = 2 - 32 * LEADING_ZEROS
#: The table: enough words for f64's largest exponent and its window.
TABLE_WORDS = (1023 - 52 - 2 + 32 * LEADING_ZEROS) // 32 + WINDOW["f64"] + 1
WORD = 0xFFFFFFFF


def two_over_pi_table(e: Emitter):
    """The constant table of 2/pi's bits in ``e``'s module (made once)."""
    words = (0,) * LEADING_ZEROS + two_over_pi_words(TABLE_WORDS - LEADING_ZEROS)
    return constant_table(e.b.module, "tilec.math.two_over_pi", words, 32)


def payne_hanek(e: Emitter, x: Num) -> tuple[Int, Num, Num]:
    """``q`` (an integer of ``e``'s width, right mod 4) and ``r + r_lo`` with
    ``x = q pi/2 + r + r_lo`` (module docstring), for finite ``|x| >= 2^(P - 1 +
    SMALLEST_EXPONENT)``; finite garbage for anything else."""
    fmt, d = e.fmt, Emitter(e.b, F64, e.call, e.native_scale)
    bits = d.in_format(e.bits(x))
    biased = bits.lshr(fmt.mantissa_bits) & (2 * fmt.bias + 1)
    m = (bits & ((1 << fmt.mantissa_bits) - 1)) | (1 << fmt.mantissa_bits)
    exponent = biased - (fmt.bias + fmt.mantissa_bits)
    exponent = d.select(exponent < SMALLEST_EXPONENT, SMALLEST_EXPONENT, exponent)
    exponent = d.select(exponent > fmt.bias - fmt.mantissa_bits, fmt.bias - fmt.mantissa_bits, exponent)
    start = exponent + (32 * LEADING_ZEROS - 2)  # the table's bit of weight 2^-(e - 1)
    window = _window(d, start.lshr(5), start & 31, WINDOW[fmt.kind])
    limbs = [m & WORD, m.lshr(32)] if fmt.width > 32 else [m]
    product = _low_product(window, limbs)
    top = product[-1]
    q = (top + (1 << 29)).lshr(30) & 3
    product[-1] = (top - (q << 30)) & WORD  # x 2/pi - q, two's complement, in [-1/2, 1/2)
    negative = product[-1] > 0x7FFFFFFF
    magnitude = [d.select(negative, n, p) for n, p in zip(_negated(product), product)]
    hi, lo = _fraction(d, magnitude)
    r_hi, r_lo = _times_pi_2(d, hi, lo)
    flip = Mask(d, d.b.xor(negative.v, e.signbit(x).v))  # r's sign: the fraction's, then x's
    r_hi, r_lo = d.select(flip, -r_hi, r_hi), d.select(flip, -r_lo, r_lo)
    q = d.select(e.signbit(x), 0 - q, q)
    rounded = e.in_format(r_hi)  # f32's pair: f64's rounded, and the rest
    return e.in_format(q), rounded, e.in_format((r_hi - d.in_format(rounded)) + r_lo)


def _window(d: Emitter, word: Int, shift: Int, count: int) -> list[Int]:
    """The ``count`` 32-bit words of the table from bit ``32 word + shift``, least significant first."""
    table = two_over_pi_table(d)
    words = [d.word(table, word + k) for k in range(count + 1)]
    return [(((words[k] << 32) | words[k + 1]) << shift).lshr(32) for k in reversed(range(count))]


def _low_product(window: list[Int], limbs: list[Int]) -> list[Int]:
    """The low ``32 len(window)`` bits of ``window * limbs`` (both 32-bit
    words, least significant first), as words, least significant first."""
    columns: list[list[Int]] = [[] for _ in window]
    for i, w in enumerate(window):
        for k, limb in enumerate(limbs):
            if i + k < len(window):
                partial = w * limb
                columns[i + k].append(partial & WORD)
                if i + k + 1 < len(window):
                    columns[i + k + 1].append(partial.lshr(32))
    out, carry = [], None
    for column in columns:
        total = column[0]
        for term in column[1:] + ([carry] if carry is not None else []):
            total = total + term
        out.append(total & WORD)
        carry = total.lshr(32)
    return out


def _negated(words: list[Int]) -> list[Int]:
    """``-words`` modulo ``2^(32 len(words))`` (least significant first)."""
    out, carry = [], 1
    for w in words:
        total = (w ^ WORD) + carry
        out.append(total & WORD)
        carry = total.lshr(32)
    return out


def _fraction(d: Emitter, words: list[Int]) -> tuple[Num, Num]:
    """``sum(words[k] 2^(32 k)) 2^(2 - 32 len(words))`` (non-negative words,
    least significant first) as a double-double ``(hi, lo)``."""
    scale = [2.0 ** (32 * k + 2 - 32 * len(words)) for k in range(len(words))]
    hi, lo = d.to_float(words[0]) * scale[0], d.num(0.0)
    for w, s in zip(words[1:], scale[1:]):
        hi, error = two_sum(d.to_float(w) * s, hi)
        lo = lo + error
    return hi, lo


def _times_pi_2(d: Emitter, hi: Num, lo: Num) -> tuple[Num, Num]:
    """``(hi + lo) pi/2`` as a pair whose sum is the product to about 2^-100."""
    p_hi, p_lo = split("pi_2", F64)
    product = hi * p_hi
    rest = d.fma(hi, p_hi, -product) + d.fma(hi, p_lo, lo * p_hi)
    return two_sum(product, rest)
