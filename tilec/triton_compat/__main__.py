"""``python -m tilec.triton_compat script.py args...``: run a Triton program on tilec.

Runs ``script.py`` as ``__main__`` the way ``python script.py`` would
(``sys.argv`` is the script and its arguments, ``sys.path[0]`` the script's
folder) with the import hook installed, so its ``import triton`` gets tilec.
``python -m tilec.triton_compat -m package.module args...`` runs a module the
way ``python -m`` would (``sys.path[0]`` is the current folder).
"""
from __future__ import annotations

import os
import runpy
import sys

from tilec.triton_compat import install

USAGE = "usage: python -m tilec.triton_compat script.py [args...] | -m module [args...]"


def main(argv: list[str]) -> int:
    """Install the hook and run what ``argv`` names; 2 (with the usage) when it names nothing."""
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if not argv or argv == ["-m"]:
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0] != "-m" and not os.path.isfile(argv[0]):
        print(f"python -m tilec.triton_compat: can't open file {argv[0]!r}: no such file", file=sys.stderr)
        return 2
    install()
    run(argv)
    return 0


def run(argv: list[str]) -> None:
    """Run ``script.py args...`` or ``-m module args...`` as ``__main__``, with
    ``sys.argv`` and ``sys.path[0]`` set as ``python`` itself sets them."""
    if argv[0] == "-m":
        sys.argv = argv[1:]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
