"""``tl.extra.cuda.libdevice``: the functions of ``tl.extra.libdevice``
(Triton has both paths; kernels written for either run)."""
from tilec.language.extra.libdevice import *  # noqa: F401,F403
from tilec.language.extra.libdevice import __all__  # noqa: F401
