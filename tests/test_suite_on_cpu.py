"""The language tests again, with every launch on host arrays also compiled
for the host CPU (``TILEC_TEST_DEVICE=cpu``, ``tests/device_mirror.py``):
the interpreter runs first on copies (the oracle: its errors raise as in the
plain run), then the compiled code on the test's arrays, which the test's
own numpy assertions judge.  A smaller hypothesis budget than the plain run
keeps it inside CI's time (``MIRROR_EXAMPLES``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SUITE = sorted(str(p) for p in TESTS.glob("test_language_*.py")) + [str(TESTS / "test_semantic.py"),
                                                                     str(TESTS / "test_tutorials.py")]
#: Hypothesis examples per test in the mirror (the plain run draws 25).
MIRROR_EXAMPLES = "6"


@pytest.mark.slow
def test_language_suite_passes_compiled_for_the_host_cpu():
    env = dict(os.environ, TILEC_TEST_DEVICE="cpu", TILEC_HYPOTHESIS_EXAMPLES=MIRROR_EXAMPLES)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", *SUITE],
                          env=env, cwd=TESTS.parent, capture_output=True, text=True)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
    assert proc.returncode == 0, tail
    print(tail.splitlines()[-1])
