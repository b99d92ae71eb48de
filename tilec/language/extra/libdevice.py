"""``tl.extra.libdevice``: Triton 3.6's libdevice functions that tilec has,
under Triton's names and signatures (``libdevice.tanh(x)``...).  They are the
stubs of ``tilec.language.math``; docs/language.md lists the ones left out
(directed rounding, most conversions) and each function's error bound."""
from tilec.language import math as _math

# The libdevice names ``tilec.language.math`` had before (its own stubs, which
# take a superset of what Triton's libdevice versions take).
_CORE = ("abs", "floor", "ceil", "sqrt", "sqrt_rn", "rsqrt", "exp", "exp2", "log", "log2", "sin", "cos", "erf",
         "fma", "div_rn")

__all__ = sorted(_CORE + tuple(_math.LIBDEVICE_FUNCTIONS))
globals().update({name: getattr(_math, name) for name in __all__})
