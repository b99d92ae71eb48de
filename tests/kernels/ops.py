"""Elementwise ops as small ``@tilec.jit`` functions, one per operator or
``tl`` function: the elementwise tests hand them to one generic kernel as a
constexpr (``FN``), so that a new op is one function and one table row."""
import tilec
import tilec.language as tl


@tilec.jit
def op_add(x, y):
    return x + y


@tilec.jit
def op_sub(x, y):
    return x - y


@tilec.jit
def op_mul(x, y):
    return x * y


@tilec.jit
def op_truediv(x, y):
    return x / y


@tilec.jit
def op_fdiv(x, y):
    return tl.fdiv(x, y)


@tilec.jit
def op_div_rn(x, y):
    return tl.div_rn(x, y)


@tilec.jit
def op_floordiv(x, y):
    return x // y


@tilec.jit
def op_mod(x, y):
    return x % y


@tilec.jit
def op_and(x, y):
    return x & y


@tilec.jit
def op_or(x, y):
    return x | y


@tilec.jit
def op_xor(x, y):
    return x ^ y


@tilec.jit
def op_shl(x, y):
    return x << y


@tilec.jit
def op_shr(x, y):
    return x >> y


@tilec.jit
def op_eq(x, y):
    return x == y


@tilec.jit
def op_ne(x, y):
    return x != y


@tilec.jit
def op_lt(x, y):
    return x < y


@tilec.jit
def op_le(x, y):
    return x <= y


@tilec.jit
def op_gt(x, y):
    return x > y


@tilec.jit
def op_ge(x, y):
    return x >= y


@tilec.jit
def op_maximum(x, y):
    return tl.maximum(x, y)


@tilec.jit
def op_minimum(x, y):
    return tl.minimum(x, y)


@tilec.jit
def op_umulhi(x, y):
    return tl.umulhi(x, y)


@tilec.jit
def op_cdiv(x, y):
    return tl.cdiv(x, y)


@tilec.jit
def op_neg(x):
    return -x


@tilec.jit
def op_invert(x):
    return ~x


@tilec.jit
def op_abs(x):
    return tl.abs(x)


@tilec.jit
def op_exp(x):
    return tl.exp(x)


@tilec.jit
def op_exp2(x):
    return tl.exp2(x)


@tilec.jit
def op_log(x):
    return tl.log(x)


@tilec.jit
def op_log2(x):
    return tl.log2(x)


@tilec.jit
def op_sqrt(x):
    return tl.sqrt(x)


@tilec.jit
def op_sqrt_rn(x):
    return tl.sqrt_rn(x)


@tilec.jit
def op_rsqrt(x):
    return tl.rsqrt(x)


@tilec.jit
def op_sin(x):
    return tl.sin(x)


@tilec.jit
def op_cos(x):
    return tl.cos(x)


@tilec.jit
def op_sigmoid(x):
    return tl.sigmoid(x)


@tilec.jit
def op_erf(x):
    return tl.erf(x)


@tilec.jit
def op_floor(x):
    return tl.floor(x)


@tilec.jit
def op_ceil(x):
    return tl.ceil(x)


@tilec.jit
def op_method_abs(x):
    return x.abs()


@tilec.jit
def op_where(c, x, y):
    return tl.where(c, x, y)


@tilec.jit
def op_fma(x, y, w):
    return tl.fma(x, y, w)


@tilec.jit
def op_clamp(x, lo, hi):
    return tl.clamp(x, lo, hi)


@tilec.jit
def op_maximum_nan(x, y):
    return tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)


@tilec.jit
def op_minimum_nan(x, y):
    return tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
