"""``tl.extra``: Triton's vendor-library namespace.  ``libdevice`` (and the
same functions as ``cuda.libdevice``) holds the libdevice math functions;
they run on every target, the host's interpreter included."""
from tilec.language.extra import cuda, libdevice  # noqa: F401
