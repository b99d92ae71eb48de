"""Suite-wide setup: IR checking on, a modest hypothesis budget, every kernel
also compiled for sm_80, sm_90, gfx90a, gfx942 and gfx1100, a sample for gfx950 and gfx1201 (``gpu_compile_check.py``), host
launches on the reference interpreter (the oracle; ``TILEC_INTERPRET``
unless the run sets it), launches mirrored onto a GPU under
``TILEC_TEST_DEVICE=cuda`` and compiled for the host CPU under
``TILEC_TEST_DEVICE=cpu`` (``device_mirror.py``; ``test_suite_on_cpu.py``
runs that mirror), and `gpu` tests skipped cleanly on machines without one."""
from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import tempfile

import pytest
from gpu_compile_check import check_every_compile
from hypothesis import HealthCheck, settings

# Every kernel the tests compile is verified and must survive the text round trip.
os.environ["TILEC_CHECK"] = "1"
# Host launches run on the interpreter, which checks every access: the tests judge
# its results, and the cpu mirror judges the compiled ones against the same checks.
os.environ.setdefault("TILEC_INTERPRET", "1")
# The suite's compiled kernels and tuning choices go to a fresh directory, never the user's cache.
os.environ["TILEC_CACHE_DIR"] = tempfile.mkdtemp(prefix="tilec-test-cache-")

# The interpreter is slow and CI has 2 cores: a small default budget, which
# TILEC_HYPOTHESIS_EXAMPLES raises for a deeper local run.
settings.register_profile(
    "tilec",
    deadline=None,
    max_examples=int(os.environ.get("TILEC_HYPOTHESIS_EXAMPLES", "25")),
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("tilec")

check_every_compile()

if os.environ.get("TILEC_TEST_DEVICE") == "cuda":  # run the host suite's launches on the GPU too
    import tilec
    from device_mirror import mirror_launches

    mirror_launches(tilec.JITFunction)
elif os.environ.get("TILEC_TEST_DEVICE") == "cpu":  # and compiled for the host CPU
    import tilec
    from device_mirror import mirror_launches_on_cpu

    mirror_launches_on_cpu(tilec.JITFunction)


@pytest.fixture(autouse=True)
def _host_only_tests_are_not_mirrored(request):
    """A ``host_only`` test checks the interpreter itself (its bounds checks on aliasing
    views, data holding host addresses): its launches are not mirrored onto the GPU."""
    mirror = sys.modules.get("device_mirror")
    if mirror is None or request.node.get_closest_marker("host_only") is None:
        yield
        return
    mirror.ENABLED = False
    try:
        yield
    finally:
        mirror.ENABLED = True


def gpu_available() -> bool:
    """True when a CUDA device can be used (through torch, or the driver itself)."""
    if importlib.util.find_spec("torch") is not None:
        import torch

        return torch.cuda.is_available()
    return _cuda_driver_devices() > 0


def _cuda_driver_devices() -> int:
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def amd_gpu_available() -> bool:
    """True when hip-python, the HIP runtime and an AMD GPU are all here."""
    from tilec.backends.amd import hip

    return hip.available()


def pytest_collection_modifyitems(config, items):
    amd_items = [item for item in items if item.get_closest_marker("amd") is not None]
    if amd_items and not amd_gpu_available():
        skip = pytest.mark.skip(reason="needs an AMD GPU (none found: no hip-python, HIP runtime or device)")
        for item in amd_items:
            item.add_marker(skip)
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and not gpu_available():  # ask only when a gpu test was collected: torch is slow to import
        skip = pytest.mark.skip(reason="needs a GPU (none found: no torch.cuda device, no CUDA driver)")
        for item in gpu_items:
            item.add_marker(skip)
