"""``tl.extra.cuda``: as Triton's, it holds ``libdevice`` (the same module
contents as ``tl.extra.libdevice``) and the helpers of ``utils``
(``num_warps``, ``num_threads``)."""
from tilec.language.extra.cuda import libdevice  # noqa: F401
from tilec.language.extra.cuda.utils import num_threads, num_warps  # noqa: F401
