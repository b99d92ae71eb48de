"""The interpreter backend: target ``"host"``, kernels on host arrays run by
the numpy reference interpreter (``tilec.ir.interpret``).

It has no stages after the generic ``optimize``: the optimized tile IR is what
runs.  Its rooms: ``launcher.py`` (runs a kernel over its grid) and
``driver.py`` (``tilec.runtime.driver.active`` when no GPU is usable).
"""
from __future__ import annotations

from typing import Any

from tilec.targets.registry import HOST_PLACE, Backend, Launcher

#: The interpreter's one target.
TARGET = "host"


class InterpreterBackend(Backend):
    """The host: compiles to optimized tile IR only, runs host arrays, always usable."""

    targets = (TARGET,)
    default_target = TARGET
    places = (HOST_PLACE,)
    reference = True
    default_stage = "tir-opt"

    def compile(self, compiled: Any) -> None:
        """Nothing to do: the interpreter runs ``compiled.fn`` as optimized."""

    def language_target(self, name: str) -> tuple[str, Any, int]:
        """No GPU backend (``is_cuda()`` is False, as in its driver's
        ``get_current_target()``), warps of 32 threads (the driver's warp size
        is the default GPU target's, whose facts load LLVM: not on a host compile)."""
        return ("host", "host", 32)

    def launcher(self) -> Launcher:
        from tilec.backends.interpreter import launcher

        return launcher

    def driver(self) -> Any:
        """Always usable: the host is where the interpreter runs."""
        from tilec.backends.interpreter.driver import HostDriver

        return HostDriver()


BACKEND = InterpreterBackend()
