"""The backend registry: which backend compiles, caches and launches for each target.

A backend is the code of one target family, in rooms of its own under
``tilec/backends/<family>/``.  Its package defines ``BACKEND``, an instance
of ``Backend`` (below), and ``FAMILIES`` names the package; nothing else in
tilec names a family or a target.  ``tilec.launch``, the command line and the
runtime ask this module:

* ``backend_for(target)``: the backend that compiles for ``target``
  (``kernel.compile(..., target=...)``), a ValueError listing
  ``target_names()`` for an unknown one;
* ``backend_for_place(place)``: the backend whose launcher runs kernels on
  arrays that live there (``"host"`` for host memory, a device kind such as
  ``"cuda"``: ``launch/args.py`` says where each array lives);
* ``stage_names()``: every stage any backend makes (``TILEC_DUMP``, ``--stage``);
* ``default_target()`` and ``active_driver()``: what tilec picks when nobody
  said (``python -m tilec compile``, ``tilec.runtime.driver.active``).

Adding a backend is adding its rooms and one line to ``FAMILIES``.

Importing this module imports no backend.  The first question about targets,
places or stages imports the backends' packages, which are small (facts and
the ``Backend`` object); a backend's heavy parts (LLVM, its toolchain, its
device driver) load when its target is first compiled or its arrays first
launched.
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Sequence

from tilec.errors import TilecError

if TYPE_CHECKING:
    from tilec.launch.args import KernelArg
    from tilec.launch.compiler import CompiledKernel
    from tilec.targets.base import Target

#: Every backend family, by name, with the package that defines its ``BACKEND``.
#: The order is the order targets are listed in (``target_names``).
FAMILIES: dict[str, str] = {
    "interpreter": "tilec.backends.interpreter",
    "nvidia": "tilec.backends.nvidia",
    "host": "tilec.backends.host",
    "amd": "tilec.backends.amd",
}

#: The place of host memory (``launch/args.py``): numpy arrays, CPU tensors.
HOST_PLACE = "host"


@dataclass(frozen=True)
class Stage:
    """One step of a backend's pipeline after the generic ``optimize``.

    ``run(previous, context)`` takes the previous stage's output (the first
    stage gets the optimized tile IR, a ``Function``) and the backend's own
    per-compile ``context`` (whatever its ``compile`` passes to
    ``launch.compiler.run_stages``), and returns its output: IR (printed),
    text, or bytes when ``binary``.  Returning None ends the pipeline there
    (a tool that is not installed).  ``name`` keys the output in
    ``CompiledKernel.asm``, names it in ``TILEC_DUMP`` and ``--stage``, and
    is a section of the kernel's cache entry; ``suffix`` is the extension of
    its file (``TILEC_DUMP``, ``python -m tilec compile --out``).  Two
    backends may share a name only for the same kind of output.
    """

    name: str
    suffix: str
    run: Callable[[Any, Any], Any]
    binary: bool = False


class Launcher(Protocol):
    """What ``launch/jit.py`` asks of a backend's launcher (a module or an object)."""

    def target(self, args: Sequence["KernelArg"], device: Optional[int]) -> str:
        """The target a launch on ``args`` compiles for (a device's arch), ``device``
        being the index the arrays said (None: ask where they live)."""

    def default_target(self, args: Sequence["KernelArg"], device: Optional[int]) -> str:
        """What ``kernel.compile`` picks for ``args``: as ``target``, or the backend's
        ``default_target`` on a machine without its device (compiling needs none)."""

    def launch(self, compiled: "CompiledKernel", grid: tuple[int, int, int], args: Sequence["KernelArg"],
               device: Optional[int], stream: Any = None) -> None:
        """Run ``compiled`` over ``grid`` (three ints >= 0) on ``args``."""

    def fast_launch(self, compiled: "CompiledKernel", args: Sequence["KernelArg"],
                    device: int) -> Optional[Callable[..., None]]:
        """A function of (grid, every bound argument's launch value, stream) for later
        launches of ``compiled`` on arrays like ``args``, or None (general path only).
        The function may decline a launch by raising ``launch.args.NotFast``
        before it runs anything: the general path then takes it."""

    def device_name(self, args: Sequence["KernelArg"], device: Optional[int]) -> Optional[str]:
        """The name of the device ``args`` live on (a tuning result is kept per device),
        None where there is only one (the host)."""


class Backend:
    """A target family: what it compiles for, how, with which tools, and how it runs.

    A backend subclasses this in its package and sets ``BACKEND = TheBackend()``
    there; then one line in ``FAMILIES`` registers it.  Keep the package's
    ``__init__`` light (no LLVM, no driver, no toolchain at import): import the
    heavy modules inside the methods.  What a backend gives:

    * ``targets``: the target names it compiles for, unique across backends
      (part of cache keys and of ``CompiledKernel.target``);
      ``default_target``: the one tilec picks when nobody said;
    * ``places``: where the arrays live that its ``launcher()`` runs kernels
      on (``HOST_PLACE`` for host memory; empty: compile-only);
      ``reference``: it is the reference interpreter, which runs a place's
      arrays only when asked (``backend_for_place(place, reference=True)``)
      or when no other backend runs them;
    * ``stages``: its ``Stage`` list after the generic ``tir``/``tir-opt``;
      ``default_stage``: the one ``python -m tilec compile`` prints unasked;
    * ``compile(compiled)``: run the stages on ``compiled.fn`` (most backends:
      ``launch.compiler.run_stages``) and check the kernel fits the target;
    * ``target(name)``: its ``targets.base.Target`` facts, when it goes through LLVM;
    * ``language_target(name)``: Triton's ``(backend, arch, warp_size)`` of
      target ``name``, what ``tl.target_info`` answers in a kernel compiled for it;
    * ``toolchain(target)``: what its outputs depend on besides tilec's source
      (tool versions and files: ``file_identity``), part of every cache key;
    * ``driver()``: its ``tilec.runtime.driver`` object, or a TilecError saying
      why its devices cannot run kernels here (no driver, no device);
    * ``report()``: lines for ``python -m tilec info`` (devices, tools found);
    * ``why_missing(stage)``: why a compile made no ``stage`` (a tool missing).
    """

    targets: tuple[str, ...] = ()
    default_target: str = ""
    places: tuple[str, ...] = ()
    reference: bool = False
    default_stage: str = ""

    @property
    def stages(self) -> Sequence[Stage]:
        """The pipeline after ``optimize``, in order (none: the optimized IR is the product)."""
        return ()

    def compile(self, compiled: "CompiledKernel") -> None:
        """Run ``stages`` on ``compiled.fn`` for ``compiled.target``, filling ``compiled.asm``
        and ``compiled.metadata``; raise ``OutOfResources`` when the kernel cannot run there."""
        raise NotImplementedError(f"{type(self).__name__} must define compile(compiled)")

    def launcher(self) -> Launcher:
        """The launcher for arrays in ``places`` (imported on first use)."""
        raise NotImplementedError(f"{type(self).__name__} runs nothing: it has no launcher")

    def target(self, name: str) -> Optional["Target"]:
        """The LLVM target facts of target ``name``; None for a family that does not use LLVM."""
        return None

    def language_target(self, name: str) -> tuple[str, Any, int]:
        """Triton's ``(backend, arch, warp_size)`` of target ``name`` (``GPUTarget``'s
        fields): by default the target's name for both, one thread a warp."""
        return (name, name, 1)

    def toolchain(self, target: str) -> tuple:
        """The cache key's part for ``target``: plain values, the same in every
        process, that change when an installed tool that shapes the output does."""
        return ()

    def driver(self) -> Any:
        """The runtime driver of this family's devices (a ``runtime.driver.Driver``);
        a TilecError saying why when they cannot run kernels here."""
        raise TilecError(f"{type(self).__name__} has no devices to run kernels on")

    def report(self) -> list[tuple[str, str]]:
        """(label, value) lines about this family's devices and tools for ``python -m tilec info``."""
        return []

    def why_missing(self, stage: str) -> str:
        """Why a compile for this family made no ``stage`` although it is one of ``stages``."""
        return f"the pipeline ended before {stage}"


@functools.cache
def backend(family: str) -> Backend:
    """The backend of ``family`` (its package imported on first use)."""
    return importlib.import_module(FAMILIES[family]).BACKEND


def backends() -> list[Backend]:
    """Every registered backend, in ``FAMILIES`` order."""
    return [backend(family) for family in FAMILIES]


def target_names() -> tuple[str, ...]:
    """Every target some backend compiles for, in ``FAMILIES`` order."""
    return tuple(t for b in backends() for t in b.targets)


def backend_for(target: Any) -> Backend:
    """The backend that compiles for ``target``; a ValueError naming the valid targets otherwise."""
    found = _backends_by_target().get(target) if isinstance(target, str) else None
    if found is None:
        raise ValueError(f"unknown target {target!r}; tilec compiles for {', '.join(target_names())}")
    return found


@functools.cache
def _backends_by_target() -> dict[str, Backend]:
    return {t: b for b in backends() for t in b.targets}


@functools.cache
def backend_for_place(place: str, reference: bool = False) -> Optional[Backend]:
    """The backend that launches kernels on arrays living at ``place``: the
    first that compiles for it, or the reference interpreter when
    ``reference`` or when none compiles for it; None if none runs it."""
    running = [b for b in backends() if place in b.places]
    compiled = [b for b in running if not b.reference]
    interpreted = [b for b in running if b.reference]
    return next(iter((interpreted or compiled) if reference else (compiled or interpreted)), None)


def stage_names() -> tuple[str, ...]:
    """Every stage some backend makes after ``optimize``, in ``FAMILIES`` order, each once."""
    return tuple(dict.fromkeys(s.name for b in backends() for s in b.stages))


def preferred() -> list[Backend]:
    """The backends in the order tilec picks from when nobody said: device
    families first (in ``FAMILIES`` order), those that run host arrays last."""
    return sorted(backends(), key=lambda b: HOST_PLACE in b.places)


def default_target() -> str:
    """The target tilec compiles for when none is named (``python -m tilec compile``)."""
    return preferred()[0].default_target


def active_driver() -> Any:
    """The runtime driver of the first ``preferred`` family whose devices are usable here."""
    reasons = []
    for b in preferred():
        try:
            return b.driver()
        except TilecError as e:
            reasons.append(str(e))
    raise TilecError(f"no backend can run kernels here: {'; '.join(reasons)}")


def file_identity(path: Optional[Path]) -> Optional[tuple]:
    """A tool file's part of a cache key without running it: its path, size and
    modification time (None: no file; (path, None): it cannot be read)."""
    if path is None:
        return None
    try:
        stat = Path(path).stat()
    except OSError:
        return (str(path), None)
    return (str(path), stat.st_size, stat.st_mtime_ns)
