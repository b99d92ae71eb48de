"""Which Triton module names exist in compatibility mode, and what each holds.

Every entry maps a Triton name to the tilec object with the same meaning; a
name tilec lacks is left out, so code that needs it fails with a message
saying so (``missing``) instead of running something else.  Modules that ARE
tilec modules (``triton.language`` is ``tilec.language``) are listed in
``ALIASES``; the rest are built from ``EXPORTS`` by the import hook.
"""
from __future__ import annotations

import importlib
from typing import Any

# The Triton release whose language tilec follows (libraries gate code paths on it).
TRITON_VERSION = "3.6.0"

# Triton module name -> the tilec module that IS it (same object; while the hook
# is installed it also answers a missing name with ``missing``'s message).
ALIASES = {
    "triton.language": "tilec.language",
    "triton.language.core": "tilec.language.core",
    "triton.language.math": "tilec.language.math",
    "triton.language.random": "tilec.language.random",
    "triton.language.standard": "tilec.language.standard",
    "triton.language.target_info": "tilec.language.target_info",
    "triton.language.extra": "tilec.language.extra",
    "triton.language.extra.libdevice": "tilec.language.extra.libdevice",
    "triton.language.extra.cuda": "tilec.language.extra.cuda",
    "triton.language.extra.cuda.libdevice": "tilec.language.extra.cuda.libdevice",
    "triton.language.extra.cuda.utils": "tilec.language.extra.cuda.utils",
    "triton.runtime.driver": "tilec.runtime.driver",
}

# Triton module name -> {name: "tilec.module:attribute"} for the modules the hook builds.
EXPORTS: dict[str, dict[str, str]] = {
    "triton": {
        "jit": "tilec:jit", "JITFunction": "tilec:JITFunction", "autotune": "tilec:autotune",
        "Config": "tilec:Config", "heuristics": "tilec:heuristics", "cdiv": "tilec:cdiv",
        "next_power_of_2": "tilec:next_power_of_2", "CompilationError": "tilec:CompilationError",
        "OutOfResources": "tilec:OutOfResources", "TritonError": "tilec:TilecError",
        "KernelInterface": "tilec.runtime:KernelInterface", "__version__": "tilec.triton_compat.names:TRITON_VERSION",
        "reinterpret": "tilec:reinterpret", "TensorWrapper": "tilec:TensorWrapper",
    },
    "triton.runtime": {
        "JITFunction": "tilec:JITFunction", "Autotuner": "tilec.launch.autotune:Autotuner",
        "Heuristics": "tilec.launch.autotune:Heuristics", "Config": "tilec:Config", "autotune": "tilec:autotune",
        "heuristics": "tilec:heuristics", "InterpreterError": "tilec:InterpreterError",
        "OutOfResources": "tilec:OutOfResources", "KernelInterface": "tilec.runtime:KernelInterface",
    },
    "triton.runtime.jit": {"JITFunction": "tilec:JITFunction", "jit": "tilec:jit",
                           "KernelInterface": "tilec.runtime:KernelInterface", "reinterpret": "tilec:reinterpret",
                           "TensorWrapper": "tilec:TensorWrapper"},
    "triton.runtime.autotuner": {
        "Autotuner": "tilec.launch.autotune:Autotuner", "Heuristics": "tilec.launch.autotune:Heuristics",
        "Config": "tilec:Config", "autotune": "tilec:autotune", "heuristics": "tilec:heuristics",
        "OutOfResources": "tilec:OutOfResources",
    },
    "triton.runtime.errors": {"InterpreterError": "tilec:InterpreterError", "OutOfResources": "tilec:OutOfResources"},
    "triton.compiler": {"CompilationError": "tilec:CompilationError", "CompiledKernel": "tilec:CompiledKernel"},
    "triton.compiler.errors": {"CompilationError": "tilec:CompilationError"},
    "triton.testing": {"do_bench": "tilec.testing:do_bench"},
    "triton.tools": {},
    "triton.tools.tensor_descriptor": {"TensorDescriptor": "tilec.tools.tensor_descriptor:TensorDescriptor"},
}

# Submodules a module imports when it is imported, as Triton's do (``import
# triton`` makes ``triton.language`` usable; an aliased one's submodules then
# answer a missing name with ``missing``'s message too).
SUBMODULES = {
    "triton": ("language", "runtime", "compiler", "testing"),
    "triton.language": ("extra", "target_info"),
    "triton.language.extra": ("cuda", "libdevice"),
    "triton.language.extra.cuda": ("libdevice", "utils"),
    "triton.runtime": ("jit", "autotuner", "errors", "driver"),
    "triton.compiler": ("errors",),
    "triton.tools": ("tensor_descriptor",),
}

def resolve(reference: str) -> Any:
    """The object a ``"module:attribute"`` reference names."""
    module, attribute = reference.split(":")
    return getattr(importlib.import_module(module), attribute)


def exports(module_name: str) -> dict[str, Any]:
    """The names (with their tilec objects) the built module ``module_name`` holds."""
    return {name: resolve(reference) for name, reference in EXPORTS[module_name].items()}


def provided(module_name: str) -> bool:
    """True when compatibility mode has a module of this name."""
    return module_name in ALIASES or module_name in EXPORTS


def missing(what: str) -> str:
    """The message for a Triton name tilec does not have."""
    return (f"tilec's Triton compatibility mode does not provide `{what}` yet "
            "(see docs/triton_compat.md for what it provides)")
