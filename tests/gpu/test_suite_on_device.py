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


def run_mirrored_suite() -> None:
    """The language suite with every launch mirrored onto torch's ``"cuda"``
    device (a ROCm build of torch calls its AMD GPU that too)."""
    env = dict(os.environ, TILEC_TEST_DEVICE="cuda")
    workers = max(1, min(8, (os.cpu_count() or 2) // 2))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                           "-n", str(workers), *SUITE], env=env, cwd=TESTS.parent,
                          capture_output=True, text=True)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    assert proc.returncode == 0, tail
    print(tail.splitlines()[-1])


@pytest.mark.gpu
@pytest.mark.slow
def test_language_suite_passes_on_the_device():
    run_mirrored_suite()


@pytest.mark.amd
@pytest.mark.slow
def test_language_suite_passes_on_an_amd_gpu():
    """``pytest -m amd``: the mirror on an AMD GPU, through hip-python and the
    AMD backend (tensors of a ROCm torch are at place ``rocm``); skipped
    (conftest) without hip-python, the HIP runtime or a device."""
    run_mirrored_suite()
