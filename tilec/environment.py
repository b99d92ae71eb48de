"""Every ``TILEC_*`` environment variable tilec reads, one function each.

No other module reads one (``tests/test_environment.py`` checks): a room that
needs a setting calls its function here, and a backend asks ``toolchain_file``
for the variables that name its tools.  Each function reads the variable when
it is called, never at import, says what the variable means, which values it
takes and its default, and turns a value it does not take into a
``TilecError`` that names the variable and what it takes, never silently
something else.  docs/environment.md is the user's page of the same.

This is the lowest room: it imports nothing of tilec but ``errors``, so that
every room may ask it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence

from tilec.errors import TilecError

#: The names ``TILEC_DUMP`` takes besides the stages: the pass manager's and "every stage".
DUMP_WORDS = ("ir", "all")

#: What a flag (``TILEC_CHECK``, ``TILEC_SYNC``...) takes, any case, blanks around ignored.
FLAG_ON = ("1", "on", "true", "yes")
FLAG_OFF = ("0", "off", "false", "no")


def _flag(name: str, default: bool) -> bool:
    """The flag ``name``: ``FLAG_ON`` or ``FLAG_OFF``; unset or empty is ``default``."""
    text = os.environ.get(name, "").strip().lower()
    if not text:
        return default
    if text not in FLAG_ON + FLAG_OFF:
        raise TilecError(f"{name}={os.environ[name]}: not a flag's value; {name} takes "
                         f"{', '.join(FLAG_ON)} to turn it on and {', '.join(FLAG_OFF)} or nothing to turn it off")
    return text in FLAG_ON


def _path(name: str) -> Optional[Path]:
    """The path ``name`` holds; None when it is unset or empty."""
    text = os.environ.get(name, "")
    return Path(text) if text else None


# --------------------------------------------------------------------------- #
# The disk cache (launch/cache.py)
# --------------------------------------------------------------------------- #

def cache_enabled() -> bool:
    """``TILEC_CACHE``, a flag, default on: off, the disk cache of compiled
    kernels and tuning choices is neither read nor written."""
    return _flag("TILEC_CACHE", True)


def cache_dir() -> Path:
    """``TILEC_CACHE_DIR``, a folder, default ``~/.cache/tilec``: where the disk
    cache lives.  Nothing is created here (a write makes the folders it needs);
    an OSError when it is unset and there is no home folder."""
    configured = _path("TILEC_CACHE_DIR")
    if configured is not None:
        return configured
    try:
        return Path.home() / ".cache" / "tilec"
    except RuntimeError as e:  # no $HOME and no password entry
        raise OSError(f"no home folder for the cache ({e}); set TILEC_CACHE_DIR") from None


# --------------------------------------------------------------------------- #
# Watching the compiler (launch/compiler.py, launch/dump.py, opt/pass_manager.py)
# --------------------------------------------------------------------------- #

def check_enabled() -> bool:
    """``TILEC_CHECK``, a flag, default off (the test suite turns it on): the IR
    as built, after every pass and after ``optimize`` is verified and must
    survive its text form; the kernel cache is bypassed."""
    return _flag("TILEC_CHECK", False)


def dump_names(stages: Optional[Sequence[str]] = None) -> frozenset[str]:
    """``TILEC_DUMP``, default none: a comma-separated list of the compile
    stages to write as files (``all`` for every one: ``launch/dump.py``) and
    ``ir``, the IR after every pass on stderr (``opt/pass_manager.py``);
    blanks are ignored, and empty or ``0`` is none.  Which stages there are
    depends on the backends registered, which this room does not know: given
    every compile ``stages`` (the launcher passes them), ``all`` is expanded to
    them and any name but those and ``DUMP_WORDS`` (``1``, ``llvm``, a typo) is
    a TilecError naming the valid ones; without, the names are returned as
    written (the pass manager asks only for ``ir``)."""
    text = os.environ.get("TILEC_DUMP", "").replace(" ", "")
    names = {n for n in text.split(",") if n} if text != "0" else set()
    if stages is None:
        return frozenset(names)
    valid = (*stages, *DUMP_WORDS)
    unknown = sorted(names - set(valid))
    if unknown:
        raise TilecError(f"TILEC_DUMP={text}: unknown name{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; TILEC_DUMP takes a comma-separated list of "
                         f"{', '.join(valid)} (or 0 or nothing for none)")
    return frozenset(names - {"all"} | (set(stages) if "all" in names else set()))


def dump_dir() -> Path:
    """``TILEC_DUMP_DIR``, a folder, default ``./tilec-dump``: where ``TILEC_DUMP`` writes."""
    return _path("TILEC_DUMP_DIR") or Path("tilec-dump")


# --------------------------------------------------------------------------- #
# Running kernels (launch/autotune.py, the GPU launchers)
# --------------------------------------------------------------------------- #

def sync_enabled() -> bool:
    """``TILEC_SYNC``, a flag, default off: every GPU launch synchronizes its
    stream, so a fault inside a kernel raises naming the kernel (slow: for debugging)."""
    return _flag("TILEC_SYNC", False)


def interpret() -> bool:
    """``TILEC_INTERPRET``, a flag, default off: kernels launched on host arrays
    run through the reference interpreter (which checks every access) instead
    of code compiled for the host CPU; ``@tilec.jit(interpret=...)`` decides
    for one kernel over this."""
    return _flag("TILEC_INTERPRET", False)


def num_threads() -> Optional[int]:
    """``TILEC_NUM_THREADS``, a positive integer, default none (every CPU this
    process may run on): how many threads run the programs of a kernel
    compiled for the host CPU."""
    text = os.environ.get("TILEC_NUM_THREADS", "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise TilecError(f"TILEC_NUM_THREADS={os.environ['TILEC_NUM_THREADS']}: not a positive integer; "
                         "TILEC_NUM_THREADS takes how many threads run a host kernel's programs")
    return int(text)


def quiet() -> bool:
    """``TILEC_QUIET``, a flag, default off: no autotuning progress line on the terminal."""
    return _flag("TILEC_QUIET", False)


# --------------------------------------------------------------------------- #
# A backend's toolchain
# --------------------------------------------------------------------------- #

def toolchain_file(variable: str) -> Optional[Path]:
    """A backend's toolchain variable, ``TILEC_<TOOL>``, a file, default none
    (the backend searches): the tool or library to use instead of the one the
    backend would find.  The backend names its variables (docs/environment.md
    lists them); a path that does not work is an error where it is used, not
    a fallback to the search."""
    if not variable.startswith("TILEC_"):
        raise ValueError(f"a toolchain variable is named TILEC_<TOOL>, got {variable!r}")
    return _path(variable)
