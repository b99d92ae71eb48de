"""``python -m tilec``: compile a kernel from the command line, show or clear
the disk cache, and show what tilec found on this machine.

    python -m tilec compile file.py:kernel --signature "*fp32,*fp32,*fp32,i32" \\
        --constexpr BLOCK=1024 [--target TARGET] [--stage STAGE]
    python -m tilec cache [--clear]
    python -m tilec info

``compile`` makes no arrays of its own kind: each ``--signature`` entry
becomes a tiny numpy array or numpy scalar that the launch layer classifies
(``launch/args.py``) into exactly that type and hint, and the kernel is
compiled through ``JITFunction.compile`` like any other: one argument
machinery, one cache.  A user's mistake (a bad file, no such kernel, a bad
signature, a compile error) prints one line and exits with status 2.

The targets, the stages and what ``info`` says of devices and tools come from
the backends, through ``tilec.targets.registry``.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import json
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from tilec.environment import cache_enabled
from tilec.errors import TilecError
from tilec.ir.types import ScalarType
from tilec.launch.args import ELEM_TYPES
from tilec.launch.dump import GENERIC_FILES, asm_stages
from tilec.targets import registry

USAGE_ERROR = 2


class CliError(Exception):
    """A user's mistake: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line too."""

    def error(self, message: str):
        raise CliError(f"{message} (see `{self.prog} --help`)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return args.run(args)
    except CliError as e:
        print(f"tilec: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except (TilecError, TypeError, ValueError) as e:  # what compiling a user's kernel raises on purpose
        print(f"tilec: error: {first_line(e)}", file=sys.stderr)
        return USAGE_ERROR


def first_line(e: BaseException) -> str:
    """The first line of ``e``'s message (a CompilationError quotes the source below it)."""
    return (str(e).splitlines() or [type(e).__name__])[0]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m tilec", description="The tilec compiler's command line.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    comp = commands.add_parser("compile", help="compile a kernel and print or write its stages")
    comp.add_argument("kernel", help="path/to/file.py:kernel_name")
    comp.add_argument("--signature", "-s", required=True,
                      help='types of the non-constexpr parameters in order: "*fp32:16,*fp32,i32" '
                           "(* = pointer, :16 = divisible by 16)")
    comp.add_argument("--constexpr", "-c", action="append", default=[], metavar="NAME=VALUE",
                      help="a tl.constexpr parameter's value (a Python literal or tl.<dtype>); repeatable")
    comp.add_argument("--target", "-t", default=None, help=f"one of {', '.join(registry.target_names())} "
                                                           f"(default: {registry.default_target()})")
    comp.add_argument("--num-warps", type=int, default=4)
    comp.add_argument("--num-stages", type=int, default=3)
    comp.add_argument("--stage", choices=asm_stages() + ("all",),
                      help="the stage to print (default: the target's assembly, or tir-opt for the host); "
                           "all: every one")
    comp.add_argument("--out", "-o", type=Path, metavar="DIR", help="write the stage(s) to DIR instead")
    comp.add_argument("--metadata", action="store_true", help="print (or write) the metadata as JSON")
    comp.set_defaults(run=compile_command)

    cache = commands.add_parser("cache", help="show the disk cache (where, how many entries, how big)")
    cache.add_argument("--clear", action="store_true", help="remove every entry")
    cache.set_defaults(run=cache_command)

    info = commands.add_parser("info", help="versions, devices and tools of every backend, cache, targets")
    info.set_defaults(run=info_command)
    return parser


# --------------------------------------------------------------------------- #
# compile
# --------------------------------------------------------------------------- #

def compile_command(args: argparse.Namespace) -> int:
    kernel = load_kernel(args.kernel)
    values = bind_signature(kernel, parse_signature(args.signature))
    values.update(parse_constexprs(kernel, args.constexpr))
    target = args.target or registry.default_target()
    compiled = kernel.compile(target=target, num_warps=args.num_warps, num_stages=args.num_stages, **values)
    stages = _selected_stages(compiled, args)
    if args.out is not None:
        _write(compiled, stages + ["metadata"] * args.metadata, args.out)
        return 0
    for stage in stages:
        _print_stage(compiled, stage, header=len(stages) > 1)
    if args.metadata:
        print(json.dumps(dataclasses.asdict(compiled.metadata), indent=2))
    return 0


def load_kernel(spec: str) -> Any:
    """The ``@tilec.jit`` kernel ``spec`` (``path/to/file.py:name``) names, its file imported as a module."""
    from tilec.launch.jit import JITFunction

    path_text, colon, name = spec.rpartition(":")
    if not colon or not path_text or not name:
        raise CliError(f"expected path/to/file.py:kernel_name, got {spec!r}")
    module = _import_file(Path(path_text))
    obj = getattr(module, name, None)
    while obj is not None and not isinstance(obj, JITFunction) and hasattr(obj, "fn"):
        obj = obj.fn  # an autotuner or heuristics wrapper holds the kernel as ``fn``
    if not isinstance(obj, JITFunction):
        kernels = sorted(n for n, v in vars(module).items() if isinstance(v, JITFunction))
        found = f"its kernels: {', '.join(kernels)}" if kernels else "it has no @tilec.jit kernels"
        what = "is not there" if getattr(module, name, None) is None else "is not a @tilec.jit kernel"
        raise CliError(f"`{name}` {what} in {path_text} ({found})")
    return obj


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    module_name = f"tilec_cli_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # inspect and dataclasses look modules up by name
    sys.path.insert(0, str(path.resolve().parent))  # the file's own imports of its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise CliError(f"cannot import {path}: {type(e).__name__}: {first_line(e)}") from None
    return module


# --- the signature ------------------------------------------------------------
@dataclass(frozen=True)
class SignatureType:
    """One ``--signature`` entry: an element type, whether it is a pointer to it, and the ``:16`` hint."""

    elem: ScalarType
    pointer: bool
    divisible_by_16: bool

    def __str__(self) -> str:
        return f"{'*' * self.pointer}{self.elem}{':16' * self.divisible_by_16}"


def _type_names() -> dict[str, ScalarType]:
    """Every name a signature may use for a type: tilec's (``f32``) and Triton's (``fp32``)."""
    names: dict[str, ScalarType] = {}
    for t in ELEM_TYPES.values():
        names[str(t)] = t
        if t.is_float and str(t).startswith("f"):
            names[f"fp{t.bits}"] = t
    return names


TYPE_NAMES = _type_names()


def parse_signature(text: str) -> list[SignatureType]:
    """``"*fp32:16,i32"`` -> the entries' types (a CliError naming a bad entry)."""
    return [_parse_entry(entry.strip(), text) for entry in text.split(",")] if text.strip() else []


def _parse_entry(entry: str, text: str) -> SignatureType:
    body, colon, hint = entry.partition(":")
    pointer = body.startswith("*")
    elem = TYPE_NAMES.get(body.removeprefix("*").strip())
    if elem is None:
        raise CliError(f"--signature {text!r}: unknown type {entry!r} (types: {', '.join(TYPE_NAMES)}, "
                       "* before one for a pointer)")
    if colon and hint.strip() != "16":
        raise CliError(f"--signature {text!r}: {entry!r}: the only hint is :16 (divisible by 16)")
    if colon and not pointer and (elem.is_float or elem.is_bool):
        raise CliError(f"--signature {text!r}: {entry!r}: :16 applies to pointers and integers")
    return SignatureType(elem, pointer, bool(colon))


def bind_signature(kernel: Any, types: list[SignatureType]) -> dict[str, Any]:
    """The non-constexpr parameters of ``kernel`` by name, each a value of its signature type."""
    runtime = [n for n in kernel.signature.parameters if n not in kernel.constexprs]
    if len(types) != len(runtime):
        raise CliError(f"kernel `{kernel.__name__}` has {len(runtime)} non-constexpr parameters "
                       f"({', '.join(runtime)}) but --signature gives {len(types)} types")
    return {name: sample_value(t) for name, t in zip(runtime, types)}


def sample_value(t: SignatureType) -> Any:
    """A value the launch layer classifies as ``t``: a one-element numpy array at an
    address 16-byte aligned or not (a pointer), or a numpy scalar (which is never made
    a constexpr) divisible by 16 or not."""
    dtype = _numpy_dtype(t.elem)
    if t.pointer:
        return _array_at(dtype, 0 if t.divisible_by_16 else dtype.itemsize % 16 or 1)
    if t.elem.is_bool:
        return np.bool_(True)
    return dtype.type(16 if t.divisible_by_16 else (3 if t.elem.is_int else 0.5))


def _numpy_dtype(elem: ScalarType) -> np.dtype:
    name = next(n for n, t in ELEM_TYPES.items() if t == elem)
    if name != "bfloat16":
        return np.dtype(name)
    try:
        import ml_dtypes
    except ImportError:
        raise CliError("bf16 in --signature needs the ml_dtypes package (pip install ml_dtypes)") from None
    return np.dtype(ml_dtypes.bfloat16)


def _array_at(dtype: np.dtype, misalignment: int) -> np.ndarray:
    """A one-element array of ``dtype`` whose address is ``misalignment`` past a multiple of 16."""
    buffer = np.zeros(64, np.uint8)
    start = (misalignment - buffer.ctypes.data) % 16
    return buffer[start:start + dtype.itemsize].view(dtype)


# --- constexprs -----------------------------------------------------------------
def parse_constexprs(kernel: Any, items: Sequence[str]) -> dict[str, Any]:
    """``["BLOCK=1024", "DTYPE=tl.float16"]`` -> values by name; every constexpr without a default must be given."""
    values = {}
    for item in items:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise CliError(f"--constexpr {item!r}: expected NAME=VALUE")
        if name not in kernel.constexprs:
            raise CliError(f"--constexpr {name}: kernel `{kernel.__name__}` has no tl.constexpr parameter "
                           f"`{name}` (its constexprs: {', '.join(sorted(kernel.constexprs)) or 'none'})")
        values[name] = parse_constexpr_value(name, text.strip())
    missing = [n for n, p in kernel.signature.parameters.items()
               if n in kernel.constexprs and n not in values and p.default is p.empty]
    if missing:
        raise CliError(f"kernel `{kernel.__name__}` needs " + ", ".join(f"--constexpr {n}=VALUE" for n in missing))
    return values


def parse_constexpr_value(name: str, text: str) -> Any:
    """A Python literal (``1024``, ``True``, ``'relu'``, ``(1, 2)``, ``None``) or a ``tl.<dtype>``."""
    from tilec import language as tl

    if text.startswith("tl."):
        value = getattr(tl, text[3:], None)
        if isinstance(value, tl.dtype):
            return value
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise CliError(f"--constexpr {name}={text}: not a Python literal (1024, True, 'relu', (1, 2)) "
                       "nor a tl.<dtype>") from None


# --- output ------------------------------------------------------------------------
def _selected_stages(compiled: Any, args: argparse.Namespace) -> list[str]:
    """The stages to show: those asked for, checked to exist (none for ``--metadata`` alone)."""
    if args.stage == "all":
        return list(compiled.asm)
    if args.stage is None and args.metadata:
        return []
    backend = registry.backend_for(compiled.target)
    stage = args.stage or backend.default_stage
    if stage not in compiled.asm:
        raise CliError(f"kernel `{compiled.name}` compiled for {compiled.target} has no {stage} stage "
                       f"({_why_missing(stage, compiled.target)}); it has {', '.join(compiled.asm)}")
    return [stage]


def _why_missing(stage: str, target: str) -> str:
    """Why a kernel compiled for ``target`` lacks ``stage``: its backend's pipeline
    ended early (a tool missing), or the stage is another backend's."""
    backend = registry.backend_for(target)
    made = [*GENERIC_FILES, *(s.name for s in backend.stages)]
    if stage in made:
        return backend.why_missing(stage)
    maker = next(b for b in registry.preferred() if any(s.name == stage for s in b.stages))
    return f"{target} compiles stop at {made[-1]}; pass --target {maker.default_target} for the {stage} stage"


def _print_stage(compiled: Any, stage: str, header: bool) -> None:
    content = compiled.asm[stage]
    if isinstance(content, bytes):
        if header or sys.stdout.isatty():
            print(f"// -----// {stage}: {len(content)} bytes of binary; write it with --out DIR //----- //")
            return
        sys.stdout.flush()
        sys.stdout.buffer.write(content)
        return
    if header:
        print(f"// -----// {stage} //----- //")
    print(content, end="" if content.endswith("\n") else "\n")


def _write(compiled: Any, stages: list[str], directory: Path) -> None:
    from tilec.launch.dump import write_stages

    try:
        paths = write_stages(compiled, stages, directory)
    except OSError as e:
        raise CliError(f"cannot write to {directory}: {e.strerror or e}") from None
    for path in paths:
        print(path)


# --------------------------------------------------------------------------- #
# cache
# --------------------------------------------------------------------------- #

def cache_command(args: argparse.Namespace) -> int:
    """Show the disk cache, creating nothing, or clear it."""
    from tilec.launch import cache

    if args.clear:
        print(f"removed {count(cache.clear(), 'entry', 'entries')} from {cache_summary()}")
        return 0
    print(f"cache: {cache_summary()}")
    entries = cache.entries()
    kinds = sorted({e.kind for e in entries}, key=lambda k: (k == "temp", k))
    for kind in kinds:
        of_kind = [e for e in entries if e.kind == kind]
        print(f"  {kind}: {count(len(of_kind), 'entry', 'entries')}, {human_size(sum(e.size for e in of_kind))}")
    print(f"  total: {count(len(entries), 'entry', 'entries')}, {human_size(sum(e.size for e in entries))}")
    return 0


def cache_summary() -> str:
    """Where the disk cache is and, when it is not simply in use, why: it cannot be
    used (tilec works on without it), it is off, or nothing was cached yet."""
    from tilec.launch import cache

    try:
        directory = cache.cache_dir()
    except OSError as e:
        return f"none ({e})"
    trouble = cache.problem(directory)
    if trouble:
        return f"{directory} (cannot be used: {trouble}; tilec works without a disk cache)"
    if not cache_enabled():
        return f"{directory} (off: TILEC_CACHE=0)"
    return str(directory) if directory.exists() else f"{directory} (empty: nothing cached yet)"


def count(n: int, one: str, many: str) -> str:
    """``1 entry``, ``2 entries``, ``0 entries``."""
    return f"{n} {one if n == 1 else many}"


def human_size(n: int) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- #
# info
# --------------------------------------------------------------------------- #

def info_command(args: argparse.Namespace) -> int:
    for label, value in info_lines():
        print(f"{label + ':':<12}{value}")
    return 0


def info_lines() -> list[tuple[str, str]]:
    """(label, value) pairs: versions, each backend's devices and tools, cache, targets."""
    import llvmlite
    import llvmlite.binding as llvm

    from tilec import __version__

    return [
        ("tilec", f"{__version__} ({Path(__file__).parent})"),
        ("python", f"{platform.python_version()} ({sys.executable})"),
        ("llvmlite", f"{llvmlite.__version__} (LLVM {'.'.join(map(str, llvm.llvm_version_info))})"),
        ("numpy", np.__version__),
        *(line for backend in registry.backends() for line in backend.report()),
        ("cache", cache_summary()),
        ("targets", ", ".join(registry.target_names())),
    ]
