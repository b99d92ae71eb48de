"""``tilec.language`` (``import tilec.language as tl``): what kernels call.

The same names and meanings as Triton's ``triton.language``.  Everything
here is a declaration; ``tilec.frontend.semantic`` and ``tilec.frontend.tl_ops`` give it
meaning when a kernel is compiled.
"""
from tilec.language import extra, math, random, target_info
from tilec.language.core import TRITON_MAX_TENSOR_NUMEL, PropagateNan, advance, arange, assume, atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min, atomic_or, atomic_xchg, atomic_xor, bfloat16, block_type, broadcast, broadcast_to, builtin, cast, condition, const, constexpr, constexpr_function, constexpr_type, debug_barrier, device_assert, device_print, dtype, expand_dims, float16, float32, float64, full, full_like, int1, int8, int16, int32, int64, interleave, join, load, make_block_ptr, max_constancy, max_contiguous, multiple_of, num_programs, permute, pi32_t, pointer_type, program_id, range, ravel, reshape, slice, split, static_assert, static_print, static_range, store, tensor, trans, tuple, tuple_type, uint8, uint16, uint32, uint64, view, zeros, zeros_like
from tilec.language.core import float8e4b8, float8e4b15, float8e4nv, float8e5, float8e5b16
from tilec.language.core import load_tensor_descriptor, make_tensor_descriptor, store_tensor_descriptor, tensor_descriptor, tensor_descriptor_type
from tilec.language.indexing import add, bitonic_merge, cat, flip, gather, histogram, mul, sort, sub, swizzle2d, topk
from tilec.language.custom import inline_asm_elementwise, map_elementwise
from tilec.language.math import abs, ceil, cos, div_rn, erf, exp, exp2, fdiv, floor, fma, log, log2, rsqrt, sin, sqrt, sqrt_rn, umulhi
from tilec.language.random import pair_uniform_to_normal, philox, philox_impl, rand, rand4x, randint, randint4x, randn, randn4x, uint_to_uniform_float
from tilec.language.standard import argmax, argmin, associative_scan, cdiv, clamp, cumprod, cumsum, dot, dot_scaled, max, maximum, min, minimum, next_power_of_2, reduce, reduce_or, sigmoid, softmax, sum, where, xor_sum

# ``x.name(...)`` inside a kernel means ``tl.<function>(x, ...)``.
TENSOR_METHODS = {
    "to": cast, "cast": cast,
    **{f.__name__: f for f in (
        broadcast_to, expand_dims, reshape, view, ravel, trans, permute, split, join, interleave,
        sum, max, min, argmax, argmin, xor_sum, reduce, cumsum, cumprod, associative_scan,
        gather, flip, sort, histogram, reduce_or,
        exp, exp2, log, log2, sqrt, sqrt_rn, rsqrt, sin, cos, erf, floor, ceil, abs, sigmoid, softmax,
    )},
}

for _name, _fn in TENSOR_METHODS.items():
    setattr(tensor, _name, _fn)
del _name, _fn
