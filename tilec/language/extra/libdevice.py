"""``tl.extra.libdevice``: Triton 3.6's libdevice functions that tilec has,
under Triton's names and signatures (``libdevice.tanh(x)``...).  They are the
stubs of ``tilec.language.math``, but for ``exp``: libdevice's ``expf`` is
within 2 ulps, where ``tl.exp`` (as Triton's) takes the GPU's faster
``exp2(x * log2(e))``.  docs/language.md lists the functions left out
(directed rounding, most conversions) and each function's error bound."""
from tilec.language import math as _math

# The libdevice names ``tilec.language.math`` had before (its own stubs, which
# take a superset of what Triton's libdevice versions take).
_CORE = ("abs", "floor", "ceil", "sqrt", "sqrt_rn", "rsqrt", "exp2", "log", "log2", "sin", "cos", "erf",
         "fma", "div_rn")

exp = _math.libdevice_stub("exp", 1, "e**x, within libdevice's 2 ulps in float32")
exp.__module__ = __name__  # named apart from tl.math.exp (the disk cache keys a stub by its name)

__all__ = sorted(_CORE + tuple(_math.LIBDEVICE_FUNCTIONS) + ("exp",))
globals().update({name: getattr(_math, name) for name in __all__ if name != "exp"})
