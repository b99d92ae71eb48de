"""The ``TILEC_*`` environment variables whose meaning several rooms share,
each parsed here once, so that every room reads it alike.  This is the lowest
room (it imports only ``errors``): the optimizer and the launcher both ask it.

``TILEC_DUMP``: a comma-separated list of the compile stages to write as files
(``STAGES``, ``all`` for every one: ``launch/dump.py``) and ``ir``, the IR after
every pass on stderr (``opt/pass_manager.py``); unset, empty or ``0`` is none.
Any other name (``1``, ``llvm``, a typo) is an error listing the valid ones,
never silently nothing.
"""
from __future__ import annotations

import os

from tilec.errors import TilecError

#: The stages of a compiled variant, in the order ``all`` writes them.
STAGES = ("tir", "tir-opt", "tir-gpu", "llir", "ptx", "cubin", "metadata")
#: Every name ``TILEC_DUMP`` takes, in the order its error lists them.
DUMP_NAMES = (*STAGES, "ir", "all")


def dump_names() -> frozenset[str]:
    """The names ``TILEC_DUMP`` lists (blanks ignored), ``all`` expanded to every
    stage; a TilecError naming the valid ones for any other."""
    text = os.environ.get("TILEC_DUMP", "").replace(" ", "")
    names = {n for n in text.split(",") if n} if text != "0" else set()
    unknown = sorted(names - set(DUMP_NAMES))
    if unknown:
        raise TilecError(f"TILEC_DUMP={text}: unknown name{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; TILEC_DUMP takes a comma-separated list of "
                         f"{', '.join(DUMP_NAMES)} (or 0 or nothing for none)")
    return frozenset(names - {"all"} | (set(STAGES) if "all" in names else set()))
