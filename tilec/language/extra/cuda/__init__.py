"""``tl.extra.cuda``: as Triton's, it holds ``libdevice`` (the same module
contents as ``tl.extra.libdevice``)."""
from tilec.language.extra.cuda import libdevice  # noqa: F401
