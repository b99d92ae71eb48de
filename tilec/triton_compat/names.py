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
    },
    "triton.runtime": {
        "JITFunction": "tilec:JITFunction", "Autotuner": "tilec.launch.autotune:Autotuner",
        "Heuristics": "tilec.launch.autotune:Heuristics", "Config": "tilec:Config", "autotune": "tilec:autotune",
        "heuristics": "tilec:heuristics", "InterpreterError": "tilec:InterpreterError",
        "OutOfResources": "tilec:OutOfResources", "KernelInterface": "tilec.runtime:KernelInterface",
    },
    "triton.runtime.jit": {"JITFunction": "tilec:JITFunction", "jit": "tilec:jit",
                           "KernelInterface": "tilec.runtime:KernelInterface"},
    "triton.runtime.autotuner": {
        "Autotuner": "tilec.launch.autotune:Autotuner", "Heuristics": "tilec.launch.autotune:Heuristics",
        "Config": "tilec:Config", "autotune": "tilec:autotune", "heuristics": "tilec:heuristics",
        "OutOfResources": "tilec:OutOfResources",
    },
    "triton.runtime.errors": {"InterpreterError": "tilec:InterpreterError", "OutOfResources": "tilec:OutOfResources"},
    "triton.compiler": {"CompilationError": "tilec:CompilationError", "CompiledKernel": "tilec:CompiledKernel"},
    "triton.compiler.errors": {"CompilationError": "tilec:CompilationError"},
    "triton.testing": {"do_bench": "tilec.testing:do_bench"},
    "triton.language.extra": {},
    "triton.language.extra.cuda": {},
    "triton.language.extra.libdevice": {},
    "triton.language.extra.cuda.libdevice": {},
}

# Submodules a built module imports when it is imported, as Triton's do
# (``import triton`` makes ``triton.language`` usable).
SUBMODULES = {
    "triton": ("language", "language.extra", "runtime", "compiler", "testing"),
    "triton.runtime": ("jit", "autotuner", "errors", "driver"),
    "triton.compiler": ("errors",),
    "triton.language.extra": ("cuda", "libdevice"),
    "triton.language.extra.cuda": ("libdevice",),
}

# Triton's libdevice functions (names only).  ``triton.language.extra[.cuda].libdevice``
# holds those that tilec.language.math also has, whatever tilec adds later.
LIBDEVICE_NAMES = frozenset("""
abs acos acosh asin asinh atan atan2 atanh brev byte_perm cbrt ceil clz copysign cos cosh cospi
div_rd div_rn div_ru div_rz erf erfc erfcinv erfcx erfinv exp exp10 exp2 expm1 fast_cosf fast_dividef
fast_exp10f fast_expf fast_log10f fast_log2f fast_logf fast_powf fast_sinf fast_tanf fdim ffs finitef
float2int_rn float_as_int floor fma fma_rd fma_rn fma_ru fma_rz fmax fmin fmod frexp hadd hiloint2double
hypot ilogb int_as_float isfinited isinf isnan j0 j1 jn ldexp lgamma llrint llround log log10 log1p log2
logb lrint lround modf mul24 mul_rd mul_rn mul_ru mul_rz mulhi nearbyint nextafter norm3d norm4d normcdf
normcdfinv popc pow rcbrt rcp_rd rcp_rn rcp_ru rcp_rz remainder rhypot rint rnorm3d rnorm4d round rsqrt
rsqrt_rn sad scalbn signbit sin sinh sinpi sqrt sqrt_rd sqrt_rn sqrt_ru sqrt_rz sub_rd sub_rn sub_ru
sub_rz tan tanh tgamma trunc uhadd umul24 umulhi urhadd usad y0 y1 yn add_rd add_rn add_ru add_rz
""".split())
LIBDEVICE_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice")


def resolve(reference: str) -> Any:
    """The object a ``"module:attribute"`` reference names."""
    module, attribute = reference.split(":")
    return getattr(importlib.import_module(module), attribute)


def exports(module_name: str) -> dict[str, Any]:
    """The names (with their tilec objects) the built module ``module_name`` holds."""
    names = {name: resolve(reference) for name, reference in EXPORTS[module_name].items()}
    if module_name in LIBDEVICE_MODULES:
        math = importlib.import_module("tilec.language.math")
        names.update({name: getattr(math, name) for name in LIBDEVICE_NAMES if hasattr(math, name)})
    return names


def provided(module_name: str) -> bool:
    """True when compatibility mode has a module of this name."""
    return module_name in ALIASES or module_name in EXPORTS


def missing(what: str) -> str:
    """The message for a Triton name tilec does not have."""
    return (f"tilec's Triton compatibility mode does not provide `{what}` yet "
            "(see docs/triton_compat.md for what it provides)")
