"""The ``TILEC_*`` environment variables whose meaning several rooms share,
each parsed here once, so that every room reads it alike.  This is the lowest
room (it imports only ``errors``): the optimizer and the launcher both ask it.

``TILEC_DUMP``: a comma-separated list of the compile stages to write as files
(``all`` for every one: ``launch/dump.py``) and ``ir``, the IR after every pass
on stderr (``opt/pass_manager.py``); unset, empty or ``0`` is none.  Which
stages there are depends on the backends registered, which this room does not
know: the launcher passes them in (``launch/dump.py``, before every compile),
and any other name (``1``, ``llvm``, a typo) is then an error listing the
valid ones, never silently nothing.
"""
from __future__ import annotations

import os
from typing import Optional, Sequence

from tilec.errors import TilecError

#: The names ``TILEC_DUMP`` takes besides the stages: the pass manager's and "every stage".
DUMP_WORDS = ("ir", "all")


def dump_names(stages: Optional[Sequence[str]] = None) -> frozenset[str]:
    """The names ``TILEC_DUMP`` lists (blanks ignored).  Given every compile
    ``stages`` (the launcher knows them), ``all`` is expanded to them and any
    name but those and ``DUMP_WORDS`` is a TilecError naming the valid ones;
    without, the names are returned as written (the pass manager asks for ``ir``)."""
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
