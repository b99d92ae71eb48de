"""The host test suite again, with every launch on host arrays also compiled
for the host CPU (``TILEC_TEST_DEVICE=cpu``, ``tests/device_mirror.py``):
the interpreter runs first on copies (the oracle: its errors raise as in the
plain run), then the compiled code on the test's arrays, which the test's
own numpy assertions judge.  Every file that launches kernels on host arrays
is in it (``mirrored_files``) but those ``LEFT_OUT`` says why not.  A
smaller hypothesis budget than the plain run keeps it inside CI's time
(``MIRROR_EXAMPLES``; the fuzzer draws six times it, ``test_fuzz.py``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: Where the files that launch kernels on host arrays are: the top level, the launch
#: layer's tests, and single files elsewhere.
LAUNCHING = ["test_*.py", "launch/test_*.py", "opt/test_written_pointers.py"]
#: Files among them the mirror leaves out, and why.
LEFT_OUT = {
    "test_suite_on_cpu.py": "the mirror itself",
    "test_architecture.py": "launches nothing",
    "test_install.py": "launches nothing (it installs the package)",
    "test_language_doc.py": "launches nothing (it reads the docs)",
    "test_tutorial_scripts.py": "runs the tutorials as programs in child processes, which the mirror does not reach",
    "launch/test_cache.py": "counts the disk cache's entries and hits, which the mirror's compiles add to",
    "launch/test_cache_entries.py": "counts the disk cache's entries and hits, which the mirror's compiles add to",
    "launch/test_cache_locations.py": "checks where the disk cache writes, which the mirror's compiles add to",
    "launch/test_cache_unwritable.py": "counts the disk cache's warnings, which the mirror's compiles add to",
}
#: Hypothesis examples per test in the mirror (the plain run draws 25).
MIRROR_EXAMPLES = "6"
#: Worker processes of the mirror's run.
WORKERS = "2"


def mirrored_files() -> list[str]:
    """Every file of ``LAUNCHING`` but ``LEFT_OUT``'s, as paths."""
    found = {str(p.relative_to(TESTS)) for pattern in LAUNCHING for p in TESTS.glob(pattern)}
    return sorted(str(TESTS / name) for name in found - set(LEFT_OUT))


def test_what_the_mirror_leaves_out_exists():
    assert all((TESTS / name).is_file() for name in LEFT_OUT)
    assert str(TESTS / "test_language_memory.py") in mirrored_files()


@pytest.mark.slow
def test_the_suite_passes_compiled_for_the_host_cpu():
    env = dict(os.environ, TILEC_TEST_DEVICE="cpu", TILEC_HYPOTHESIS_EXAMPLES=MIRROR_EXAMPLES)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", WORKERS,
                           *mirrored_files()], env=env, cwd=TESTS.parent, capture_output=True, text=True)
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
    assert proc.returncode == 0, tail
    print(tail.splitlines()[-1])


def test_the_gpu_mirror_skips_what_the_amd_backend_refuses_and_fails_on_nvidia(monkeypatch):
    """``device_mirror.skip_if_amd_refuses`` (the mirror under ``pytest -m amd``), torch stood in for."""
    from types import SimpleNamespace

    import device_mirror
    from tilec.errors import CompilationError

    error = CompilationError("k.py", 3, 4, "the AMD backend cannot compile `device_print` yet")
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(version=SimpleNamespace(hip="6.4")))
    with pytest.raises(pytest.skip.Exception, match="the AMD backend refuses this kernel: k.py:3: the AMD backend "
                                                    "cannot compile `device_print` yet"):
        device_mirror.skip_if_amd_refuses(error)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(version=SimpleNamespace(hip=None)))
    assert device_mirror.skip_if_amd_refuses(error) is None  # NVIDIA: the mirror re-raises it
