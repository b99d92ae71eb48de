"""The language tests again, with every launch also run on the GPU
(``tests/device_mirror.py``): every op and dtype the interpreter tests draw,
checked by the same numpy assertions."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
SUITE = sorted(str(p) for p in TESTS.glob("test_language_*.py")) + [str(TESTS / "test_semantic.py"),
                                                                     str(TESTS / "test_tutorials.py")]


@pytest.mark.gpu
@pytest.mark.slow
def test_language_suite_passes_on_the_device():
    env = dict(os.environ, TILEC_TEST_DEVICE="cuda")
    workers = max(1, min(8, (os.cpu_count() or 2) // 2))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           "-n", str(workers), *SUITE], env=env, cwd=TESTS.parent,
                          capture_output=True, text=True)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    assert proc.returncode == 0, tail
    print(tail.splitlines()[-1])
