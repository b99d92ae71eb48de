"""Globals a kernel reads are compiled in: changing one between launches in
one process is an error naming it (as Triton), not a silent run with the old
value; globals the kernel does not read may change freely."""
from __future__ import annotations

import importlib.util
import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilec
import tilec.language as tl
from launch.fake_gpu import FakeTensor, fake_torch, gpu  # noqa: F401

SOURCE = '''
import tilec
import tilec.language as tl
{imports}

SCALE = 2.0
OFFSET = 10
UNREAD = "not read"
BLOCK = tl.constexpr(8)


@tilec.jit
def shift(x):
    return x + OFFSET


@tilec.jit
def scale(x_ptr, out_ptr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, shift(tl.load(x_ptr + offs) * SCALE){extra})
'''


def load_module(tmp_path, name, imports="", extra=""):
    """The kernels above as a module of their own, whose globals a test changes."""
    path = tmp_path / f"{name}.py"
    path.write_text(SOURCE.format(imports=imports, extra=extra))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds the source through the module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def kernels(tmp_path, request):
    name = f"globals_{request.node.name.replace('[', '_').replace(']', '').replace('-', '_')}"
    yield load_module(tmp_path, name)
    sys.modules.pop(name, None)


def run(module):
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    module.scale[(1,)](x, out)
    return out


@pytest.mark.parametrize("name, new, old_text, new_text, reader", [
    ("SCALE", 3.0, "2.0", "now 3.0", ""),
    ("SCALE", 2, "2.0", "now 2", ""),  # 2 == 2.0, but an int compiles differently
    ("OFFSET", 11, "10", "now 11", " (in `shift`)"),  # read by a @jit function the kernel calls
    ("BLOCK", 16, "constexpr[8]", "now 16", ""),
])
def test_a_changed_global_is_an_error_naming_it(kernels, name, new, old_text, new_text, reader):
    np.testing.assert_array_equal(run(kernels), np.arange(8) * 2 + 10)
    setattr(kernels, name, new)
    x, out = np.arange(8, dtype=np.float32), np.full(8, -1, np.float32)
    with pytest.raises(tilec.TilecError) as e:
        kernels.scale[(1,)](x, out)
    assert isinstance(e.value, RuntimeError)  # what Triton raises
    message = str(e.value)
    assert message.startswith(f"kernel `scale` read the global `{name}`{reader} when it compiled, as ")
    assert old_text in message and f"it is {new_text}" in message
    assert "pass `" + name + "` as an argument or a tl.constexpr parameter" in message
    assert (out == -1).all()  # nothing ran


def test_a_redefined_function_is_an_error(kernels):
    """The kernel inlined the old ``shift``: a new definition under the name is not what runs."""
    run(kernels)
    kernels.shift = tilec.jit(kernels.shift.fn)
    with pytest.raises(tilec.TilecError, match=r"the global `shift` when it compiled, as JITFunction\(.*:shift\), "
                                               r"and it is now JITFunction\(.*:shift\), another object \(redefined\)"):
        run(kernels)


def test_a_deleted_global_is_an_error(kernels):
    run(kernels)
    del kernels.SCALE
    with pytest.raises(tilec.TilecError, match="the global `SCALE` when it compiled, as 2.0, and it is deleted"):
        run(kernels)


def test_unchanged_and_unread_globals(kernels):
    """Launching again, rebinding a global to an equal value, changing one the kernel does not read: no error."""
    run(kernels)
    kernels.UNREAD = "changed"
    kernels.SCALE = float("2.0")
    kernels.BLOCK = tl.constexpr(8)  # another object, equal
    kernels.NEW_GLOBAL = 5
    np.testing.assert_array_equal(run(kernels), np.arange(8) * 2 + 10)


def test_restoring_the_value_runs_again(kernels):
    run(kernels)
    kernels.SCALE = 5.0
    with pytest.raises(tilec.TilecError):
        run(kernels)
    kernels.SCALE = 2.0
    np.testing.assert_array_equal(run(kernels), np.arange(8) * 2 + 10)


def test_a_failed_compile_does_not_pin_the_globals(kernels):
    """A global fixed after the compile it broke is what the next compile reads."""
    kernels.BLOCK = tl.constexpr(6)  # tl.arange needs a power of two
    with pytest.raises(tilec.CompilationError):
        run(kernels)
    kernels.BLOCK = tl.constexpr(8)
    np.testing.assert_array_equal(run(kernels), np.arange(8) * 2 + 10)


def test_clearing_the_cache_takes_the_new_value(kernels):
    run(kernels)
    kernels.SCALE = 3.0
    kernels.scale.cache.clear()
    np.testing.assert_array_equal(run(kernels), np.arange(8) * 3 + 10)


def test_a_new_kernel_compiles_the_new_value(kernels):
    run(kernels)
    kernels.SCALE = 3.0
    fresh = tilec.jit(kernels.scale.fn)
    x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    fresh[(1,)](x, out)
    np.testing.assert_array_equal(out, np.arange(8) * 3 + 10)


def test_a_global_read_through_a_module(tmp_path):
    """``config.FACTOR``: the attribute of another module the kernel reads."""
    config = load_module(tmp_path, "globals_config")
    try:
        module = load_module(tmp_path, "globals_through_module", imports="import globals_config",
                             extra=" + globals_config.OFFSET")
        x, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
        module.scale[(1,)](x, out)
        np.testing.assert_array_equal(out, np.arange(8) * 2 + 20)
        config.OFFSET = 0
        message = "the global `globals_config.OFFSET` when it compiled, as 10"
        with pytest.raises(tilec.TilecError, match=re.escape(message)):
            module.scale[(1,)](x, out)
    finally:
        sys.modules.pop("globals_config", None)
        sys.modules.pop("globals_through_module", None)


@settings(max_examples=15, deadline=None)
@given(st.one_of(st.integers(-100, 100), st.floats(-100, 100)), st.one_of(st.integers(-100, 100), st.floats(-100, 100)))
def test_error_exactly_when_the_value_changed(tmp_path_factory, old, new):
    module = load_module(tmp_path_factory.mktemp("g"), "globals_drawn")
    try:
        module.SCALE = old
        np.testing.assert_allclose(run(module), np.float32(np.arange(8) * np.float32(old)) + 10, rtol=1e-6)
        module.SCALE = new
        if type(new) is type(old) and new == old:
            run(module)
        else:
            with pytest.raises(tilec.TilecError, match="the global `SCALE`"):
                run(module)
    finally:
        sys.modules.pop("globals_drawn", None)


def test_a_changed_global_is_caught_on_the_fast_path(kernels, fake_torch):
    """A GPU launch remembered for the fast path checks the globals too (on a fake GPU here)."""
    x, out = FakeTensor(), FakeTensor(0x7F00_0000_0100)
    for _ in range(2):
        kernels.scale[(1,)](x, out)
    assert len(fake_torch.launches) == 2 and len(kernels.scale._launches) == 1
    kernels.SCALE = 4.0
    with pytest.raises(tilec.TilecError, match="the global `SCALE` when it compiled, as 2.0, and it is now 4.0"):
        kernels.scale[(1,)](x, out)
    assert len(fake_torch.launches) == 2
