"""``TILEC_DUMP``: write the stages of every kernel tilec compiles to files.

``TILEC_DUMP`` is a comma-separated list of stage names (``tir``,
``tir-opt``, then every registered backend's stages: ``tir-gpu``, ``llir``
and the GPU's assembly and binary for the NVIDIA one), ``metadata`` (the
``KernelMetadata`` as JSON), or ``all`` for every one of them.  Each stage of
each compiled variant is written as it is made (so a compile that fails later
leaves the stages before the failure) to ``TILEC_DUMP_DIR`` (default
``./tilec-dump``), named ``<kernel>-<variant>.<ext>``: the variant is a short
hash of the specialization, options and target, so the variants of one
kernel sit side by side and compiling one again overwrites its own files.
The first file of a variant prints one line to stderr saying where.

``ir`` in ``TILEC_DUMP`` is the pass manager's (the IR after every pass, to
stderr: ``opt/pass_manager.py``); ``all`` does not include it.  Any other
name (``TILEC_DUMP=1``, ``llvm``, a typo) is an error listing the valid ones,
not silently nothing; unset, empty or ``0`` dumps nothing.
``environment.dump_names`` is the one reader of ``TILEC_DUMP``: this file,
the pass manager and the cache (which a dump bypasses) all ask it; this file
tells it the stages (``dump_stages``: the backends' come from the registry).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Iterable

from tilec.environment import dump_dir, dump_names
from tilec.errors import TilecError
from tilec.targets.registry import backend_for, stage_names

#: The stages every compile makes before its backend's, with their files' extensions.
GENERIC_FILES = {"tir": "tir", "tir-opt": "opt.tir"}
METADATA, METADATA_FILE = "metadata", "json"

_announced: set[Path] = set()  # variants whose first file was reported on stderr


def asm_stages() -> tuple[str, ...]:
    """Every name a ``CompiledKernel.asm`` may hold: the generic stages, then every backend's."""
    return (*GENERIC_FILES, *stage_names())


def dump_stages() -> tuple[str, ...]:
    """Every stage ``TILEC_DUMP`` may name, in the order ``all`` writes them."""
    return (*asm_stages(), METADATA)


def requested_names() -> frozenset[str]:
    """Every name ``TILEC_DUMP`` lists, ``all`` expanded; a TilecError naming the valid ones for any other."""
    return dump_names(dump_stages())


def requested() -> frozenset[str]:
    """The stages ``TILEC_DUMP`` asks to write (``ir`` is the pass manager's, not a file)."""
    return requested_names() - {"ir"}


def variant_id(compiled: Any) -> str:
    """8 hex digits naming a variant: a hash of its specs, options and target."""
    key = repr((compiled.name, compiled.specs, compiled.options, compiled.target))
    return hashlib.sha256(key.encode()).hexdigest()[:8]


def variant_prefix(directory: Path, compiled: Any) -> Path:
    """``directory/<kernel>-<variant>``: every file of ``compiled`` is this plus an extension."""
    return directory / f"{compiled.name}-{variant_id(compiled)}"


def stage_path(directory: Path, compiled: Any, stage: str) -> Path:
    """Where ``stage`` of ``compiled`` goes in ``directory``."""
    prefix = variant_prefix(directory, compiled)
    return prefix.with_name(f"{prefix.name}.{stage_suffix(compiled, stage)}")


def stage_suffix(compiled: Any, stage: str) -> str:
    """The extension of ``stage``'s file: a generic stage's, or that of the stage of ``compiled``'s backend."""
    if stage == METADATA:
        return METADATA_FILE
    if stage in GENERIC_FILES:
        return GENERIC_FILES[stage]
    return next(s.suffix for s in backend_for(compiled.target).stages if s.name == stage)


def stage_content(compiled: Any, stage: str) -> "str | bytes":
    """What the file of ``stage`` holds: the stage's output, or the metadata as JSON."""
    if stage == METADATA:
        return json.dumps(dataclasses.asdict(compiled.metadata), indent=2) + "\n"
    return compiled.asm[stage]


def write_stages(compiled: Any, stages: Iterable[str], directory: Path) -> list[Path]:
    """Write the files of ``stages`` (those ``compiled`` has) into ``directory``; their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stage in stages:
        if stage != METADATA and stage not in compiled.asm:
            continue
        path = stage_path(directory, compiled, stage)
        content = stage_content(compiled, stage)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        written.append(path)
    return written


def dump_stage(compiled: Any, stage: str) -> None:
    """Under ``TILEC_DUMP`` naming ``stage``: write it now (the compiler calls this as each stage is made)."""
    if stage not in requested():
        return
    directory = dump_dir()
    try:
        write_stages(compiled, [stage], directory)
    except OSError as e:
        raise TilecError(f"TILEC_DUMP: cannot write kernel `{compiled.name}`'s {stage} to {directory}: "
                         f"{e.strerror or e}") from None
    prefix = variant_prefix(directory, compiled)
    if prefix not in _announced:
        _announced.add(prefix)
        print(f"tilec: TILEC_DUMP: kernel `{compiled.name}` ({compiled.target}, variant {variant_id(compiled)}) "
              f"-> {prefix}.*", file=sys.stderr)
