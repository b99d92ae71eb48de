"""``tl.extra.cuda``: as Triton's, it holds ``libdevice`` (the same module
contents as ``tl.extra.libdevice``) and the helpers of ``utils``
(``num_warps``, ``num_threads``, ``smid``, ``globaltimer``)."""
from tilec.language.extra.cuda import libdevice  # noqa: F401
from tilec.language.extra.cuda.utils import globaltimer, num_threads, num_warps, smid  # noqa: F401
