"""The map of docs/architecture.md, checked: which room may import which
(import-linter's contracts in pyproject.toml) and where a vendor's words may
appear (only in that vendor's backend rooms).

Both checks describe the seam between the shared rooms and the backends; a
failure names each offending import chain or ``file:line: word`` and says
where such code belongs.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# --- import contracts -------------------------------------------------------


#: ``lint-imports`` run by the interpreter running the tests, so that it
#: checks with that environment's import-linter whatever PATH says.
LINT_IMPORTS = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"]


@pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None,
    reason="import-linter is not installed (it comes with the `test` extra: pip install -e '.[test]')",
)
def test_import_contracts_hold():
    """Every contract of ``[tool.importlinter]`` in pyproject.toml is kept.

    The graph is built from this checkout's ``tilec`` (``PYTHONPATH``), never
    from another install, and without import-linter's cache so that a stale
    cache cannot hide a new import."""
    result = subprocess.run(
        LINT_IMPORTS + ["--no-cache", "--no-logo"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},  # a contract's name on one line
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, (
        "import-linter found imports that cross the rooms' rules (docs/architecture.md, "
        "'Which room may import which'):\n" + result.stdout + result.stderr
    )


# --- vendor names -----------------------------------------------------------

#: A part of a name followed by a number (``sm_80``, ``sm90``).
NUMBER = "<number>"


@dataclass(frozen=True)
class VendorWords:
    """A vendor's words and the only places in tilec/ that may say them.

    ``words`` maps each word as people write it to its key: the word's
    letters without separators, so that ``cp.async``, ``cp_async`` and
    ``CpAsync`` are one word; a key ending in NUMBER needs a number after it.
    ``allowed`` names single files outside the backend's room, each with the
    reason it may speak the vendor's language."""

    family: str
    room: str
    words: dict[str, str]
    allowed: dict[str, str]

    def owns(self, path: str) -> bool:
        return path.startswith(self.room) or path in self.allowed


VENDORS = (
    VendorWords(
        family="NVIDIA",
        room="tilec/backends/nvidia/",
        # The list, plus the compounds that glue one of its words into
        # a tool or instruction name (nvptx, LLVM's NVIDIA target; ptxas, the
        # assembler; wgmma, Hopper's warp-group mma) and cubin, the binary
        # format (AMD's hsaco is on AMD's list).  Not on it: "cuda" (torch
        # calls every GPU device "cuda", ROCm's too) and "libdevice" (Triton's
        # vendor-neutral name for the math library, tl.extra.libdevice).
        words={
            "ptx": "ptx", "ptxas": "ptxas", "nvptx": "nvptx", "nvvm": "nvvm", "sm_<number>": "sm" + NUMBER,
            "ldmatrix": "ldmatrix", "cp.async": "cpasync", "mma": "mma", "wgmma": "wgmma", "ctaid": "ctaid",
            "shfl": "shfl", "__nv_": "nv", "cubin": "cubin",
        },
        allowed={
            "tilec/ir/layouts_nvidia.py": (
                "NVIDIA's tensor-core and shared-memory layouts as plain IR data, beside the generic "
                "layouts (as MLIR's TritonGPU dialect holds each vendor's), so the printer, parser and "
                "verifier know them; what picks them lives in tilec/backends/nvidia/"
            ),
        },
    ),
    VendorWords(
        family="AMD",
        room="tilec/backends/amd/",
        words={"amdgcn": "amdgcn", "mfma": "mfma", "wmma": "wmma", "hsaco": "hsaco"},
        allowed={},
    ),
)

#: A name as it appears in code or prose, dots and underscores included:
#: ``nvvm.maxntid``, ``cp.async``, ``__nv_expf``, ``sm_90a``.
DOTTED_NAME = re.compile(r"[A-Za-z0-9_.]+")
#: The parts of a name: an acronym (``PTX`` in ``PTXAsm``), a capitalised or
#: lower-case word (``Mma``, ``layout``) or a number.
NAME_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_parts(name: str) -> list[str]:
    """``MmaLayout`` -> ``['mma', 'layout']``; ``sm_90a`` -> ``['sm', '90', 'a']``."""
    return [part.lower() for part in NAME_PART.findall(name)]


def key_in_parts(key: str, parts: list[str]) -> bool:
    """Whether a run of whole, consecutive parts spells ``key`` (``gamma`` does
    not contain ``mma``; ``Ld``+``Matrix`` spells ``ldmatrix``)."""
    letters, needs_number = (key[: -len(NUMBER)], True) if key.endswith(NUMBER) else (key, False)
    for start in range(len(parts)):
        spelled = ""
        for end in range(start, len(parts)):
            spelled += parts[end]
            if spelled == letters:
                if not needs_number or (end + 1 < len(parts) and parts[end + 1].isdigit()):
                    return True
            if not letters.startswith(spelled):
                break
    return False


#: Triton's own names that hold a vendor's word and that the shared rooms
#: must spell as Triton does: ``float8e4nv`` (its fp8 E4M3FN dtype),
#: ``fp8e4nv`` (that dtype's ``name``) and ``f8e4nv`` (tilec's IR type for it).
TRITON_NAMES = re.compile(r"(?:float|fp|f)8e4nv")


def words_in(text: str, words: dict[str, str]) -> list[str]:
    """The words (as written in ``words``) that ``text`` says, each once, in
    table order (Triton's own names, ``TRITON_NAMES``, left out)."""
    names = [name_parts(name) for name in DOTTED_NAME.findall(TRITON_NAMES.sub(" ", text))]
    return [word for word, key in words.items() if any(key_in_parts(key, parts) for parts in names)]


def vendor_words_outside_their_rooms(root: Path) -> list[tuple[VendorWords, str, int, str]]:
    """Every ``(vendor, file, line, word)`` where a .py file under tilec/ says
    a vendor's word outside that vendor's rooms (code, strings, comments and
    docstrings alike)."""
    hits = []
    for path in sorted((root / "tilec").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        for vendor in VENDORS:
            if vendor.owns(rel):
                continue
            for lineno, line in enumerate(lines, 1):
                hits += [(vendor, rel, lineno, word) for word in words_in(line, vendor.words)]
    return hits


def test_vendor_words_stay_in_their_backend():
    """A shared room never names a vendor: what it needs from a backend comes
    through the Target facts or the backend object (docs/architecture.md,
    'Vendor names')."""
    hits = vendor_words_outside_their_rooms(ROOT)
    report = []
    for vendor in VENDORS:
        own = [f"  {rel}:{line}: {word}" for v, rel, line, word in hits if v is vendor]
        if own:
            report.append(
                f"{vendor.family}'s words outside {vendor.room} ({len(own)}): such code belongs in "
                f"{vendor.room}; a shared room says what it needs through the Target facts or the "
                "backend object, in vendor-neutral words\n" + "\n".join(own)
            )
    assert not report, "\n\n".join(report)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("asm['ptx']", ["ptx"]),
        ('asm["ptx"]', ["ptx"]),
        ("PTX", ["ptx"]),
        ("ptxas -v", ["ptxas"]),
        ("llvm.nvvm.barrier0", ["nvvm"]),
        ('"nvvm.maxntid"', ["nvvm"]),
        ("NVVMReflect", ["nvvm"]),
        ("nvptx64-nvidia-cuda", ["nvptx"]),
        ("target='sm_80'", ["sm_<number>"]),
        ("sm_90a", ["sm_<number>"]),
        ("ARCH_SM90", ["sm_<number>"]),
        ("ldmatrix.sync.aligned.x4", ["ldmatrix"]),
        ("emit_ldmatrix_x4", ["ldmatrix"]),
        ("cp.async.commit_group", ["cp.async"]),
        ("CpAsyncWait", ["cp.async"]),
        ("is_cp_async", ["cp.async"]),
        ("class MmaLayout:", ["mma"]),
        ("if is_mma(layout):", ["mma"]),
        ("Mma", ["mma"]),
        ("the MMA accumulator", ["mma"]),
        ("mma16816", ["mma"]),
        ("wgmma.mma_async", ["mma", "wgmma"]),
        ("%ctaid.x", ["ctaid"]),
        ("shfl.sync.bfly.b32", ["shfl"]),
        ("__nv_expf", ["__nv_"]),
        ("asm['cubin']", ["cubin"]),
        ("ptx and mma", ["ptx", "mma"]),
    ],
)
def test_vendor_words_are_found(text, expected):
    assert words_in(text, VENDORS[0].words) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a comma, gamma and lgamma, a dilemma",
        "summary = summarize(sm)",
        "smem_bytes, sm_count, smooth",
        "the NVIDIA backend's tensor-core layout",
        "device='cuda'",
        "tl.extra.libdevice",
        "async copy into shared memory; cp and async apart",
        "env = environ['TILEC_DUMP']",
        "inv_sqrt, envelope",
        "ptr_x, pt_xs",
    ],
)
def test_vendor_neutral_text_is_not_flagged(text):
    assert words_in(text, VENDORS[0].words) == []


def test_amd_words_are_found():
    assert words_in("amdgcn-amd-amdhsa, v_mfma_f32, kernel.hsaco", VENDORS[1].words) == ["amdgcn", "mfma", "hsaco"]


def test_rooms_and_allowed_files_are_exempt():
    nvidia = VENDORS[0]
    assert nvidia.owns("tilec/backends/nvidia/mma.py")
    assert nvidia.owns("tilec/ir/layouts_nvidia.py")
    assert not nvidia.owns("tilec/ir/layouts.py")
    assert not nvidia.owns("tilec/backends/nvidia_extra.py")


def test_scan_names_file_line_and_word(tmp_path):
    """Only words outside their vendor's rooms count, each with its file and line."""
    files = {
        "tilec/backends/nvidia/stages.py": "ptx = emit(llir)  # NVIDIA's own room\n",
        "tilec/ir/layouts_nvidia.py": "class Mma: ...\n",
        "tilec/opt/plan.py": '"""Plans shared memory."""\n# the mma layout wants this\n',
        "tilec/backends/nvidia/mfma_note.py": "# unlike AMD's mfma\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    hits = [(vendor.family, rel, line, word) for vendor, rel, line, word in vendor_words_outside_their_rooms(tmp_path)]
    assert hits == [("AMD", "tilec/backends/nvidia/mfma_note.py", 1, "mfma"), ("NVIDIA", "tilec/opt/plan.py", 2, "mma")]


def test_every_room_is_on_the_map():
    """docs/architecture.md names every top-level room of tilec/ and every
    backend family, so a new room cannot arrive without its place on the map
    (and, for a top-level room, in the contracts' lists in pyproject.toml)."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    rooms = [p for p in (ROOT / "tilec").iterdir() if _is_room(p)]
    rooms += [p for p in (ROOT / "tilec" / "backends").iterdir() if _is_room(p)]
    missing = [name for name in sorted(_doc_name(p) for p in rooms) if name not in doc]
    assert not missing, f"rooms missing from docs/architecture.md: {', '.join(missing)}"


def _is_room(path: Path) -> bool:
    if path.is_dir():
        return (path / "__init__.py").exists()
    return path.suffix == ".py" and path.name != "__init__.py"


def _doc_name(path: Path) -> str:
    """How the map writes a room: ``tilec/ir/``, ``tilec/cli.py``."""
    return path.relative_to(ROOT).as_posix() + ("/" if path.is_dir() else "")
