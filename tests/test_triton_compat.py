"""``tilec.triton_compat``: ``import triton`` resolves to tilec in one process only.

What it maps (the same objects as tilec's), what it refuses (with a message
naming the Triton name), that ``uninstall`` leaves no trace, that the command
runs a script or module like ``python`` does, and that torch's own imports of
``triton`` keep answering "no Triton"."""
from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_close, from_host, to_host, values
from hypothesis import given, strategies as st

import tilec
import tilec.language
import tilec.language.math
import tilec.runtime
import tilec.testing
import tilec.triton_compat as compat

REPO = Path(__file__).resolve().parent.parent
MISSING = "tilec's Triton compatibility mode does not provide `{}` yet"


@contextlib.contextmanager
def triton_alias():
    """The hook installed for a block, and removed after it whatever happens."""
    compat.install()
    try:
        yield
    finally:
        compat.uninstall()


# Kernels written the way Triton code is, against the alias.
with triton_alias():
    import triton
    import triton.language as tl
    from triton.language.extra.cuda import libdevice

    @triton.jit
    def floor_or_abs(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, tl.where(x > 0, libdevice.floor(x), libdevice.abs(x)), mask=mask)


@given(data=st.data(), n=st.integers(0, 300), dtype=st.sampled_from(["float16", "float32", "float64"]),
       block=st.sampled_from([16, 64, 128]))
def test_a_kernel_written_for_triton_runs_on_tilec(data, n, dtype, block):
    x = data.draw(values(dtype, n))
    out = to_host(np.zeros(n), dtype)
    floor_or_abs[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](to_host(x, dtype), out, n, BLOCK=block)
    with np.errstate(invalid="ignore"):
        want = np.where(x > 0, np.floor(x), np.abs(x))
    assert_close(from_host(out), want, dtype)


class Launcher(triton.KernelInterface):
    """How Triton libraries wrap a kernel: a KernelInterface whose ``run`` adds arguments."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, []

    def run(self, *args, grid, warmup, **kwargs):
        self.calls.append(warmup)
        return self.kernel[grid](*args, **kwargs, BLOCK=64)


@given(data=st.data(), n=st.integers(0, 200))
def test_a_kernel_interface_subclass_launches_like_tritons(data, n):
    x = data.draw(values("float32", n))
    out = np.zeros(n, np.float32)
    launcher = Launcher(floor_or_abs)
    launcher[(triton.cdiv(n, 64),)](x, out, n)
    assert launcher.calls == [False]  # Triton's __getitem__ passes warmup=False
    with np.errstate(invalid="ignore"):
        assert_close(out, np.where(x > 0, np.floor(x), np.abs(x)), "float32")


def test_tilecs_kernels_are_kernel_interfaces():
    assert isinstance(floor_or_abs, triton.KernelInterface)
    assert isinstance(triton.autotune([triton.Config({})], key=[])(floor_or_abs), triton.KernelInterface)
    with pytest.raises(NotImplementedError, match="must define run"):
        type("NoRun", (triton.KernelInterface,), {})()[(1,)]()


def test_triton_names_are_tilecs_objects():
    with triton_alias():
        import triton.runtime.autotuner
        import triton.runtime.driver
        assert triton.language is tilec.language and triton.language.math is tilec.language.math
        assert (triton.jit, triton.JITFunction, triton.Config) == (tilec.jit, tilec.JITFunction, tilec.Config)
        assert triton.TritonError is tilec.TilecError
        assert triton.KernelInterface is triton.runtime.jit.KernelInterface is tilec.runtime.KernelInterface
        assert triton.runtime.autotuner.Autotuner is importlib.import_module("tilec.launch.autotune").Autotuner
        assert triton.runtime.driver.active is tilec.runtime.driver.active
        assert triton.__version__ == "3.6.0" and triton.testing.do_bench is tilec.testing.do_bench
        assert tilec.language.__spec__.name == "tilec.language"  # an alias keeps its own identity


def test_libdevice_modules_are_tilecs():
    with triton_alias():
        import triton.language.extra.libdevice as flat
        from triton.language.extra.cuda import libdevice as cuda
        assert flat is tilec.language.extra.libdevice and cuda is tilec.language.extra.cuda.libdevice
        assert flat.tanh is cuda.tanh is tilec.language.math.tanh and flat.floor is tl.floor
        assert tl.extra.libdevice is flat and tl.extra.cuda.libdevice is cuda


@pytest.mark.parametrize("statement, name", [
    ("import triton.tools.disasm", "triton.tools.disasm"),
    ("import triton.backends.compiler", "triton.backends"),
    ("from triton import knobs", "triton.knobs"),
    ("triton.set_allocator", "triton.set_allocator"),
    ("import triton.language.extra.hip", "triton.language.extra.hip"),
    ("from triton.runtime.jit import MockTensor", "triton.runtime.jit.MockTensor"),
    ("from triton.compiler.compiler import ASTSource", "triton.compiler.compiler"),
    ("triton.runtime.driver.driver.active.utils.no_such", None),
    ("triton.testing.perf_report", "triton.testing.perf_report"),
    ("triton.language.no_such_name", "triton.language.no_such_name"),
    ("triton.runtime.driver.no_such_name", "triton.runtime.driver.no_such_name"),
])
def test_a_name_tilec_lacks_fails_saying_so(statement, name):
    with triton_alias():
        import triton
        error = ImportError if "import" in statement else AttributeError
        with pytest.raises(error, match=MISSING.format(name).replace(".", r"\.") if name else "no_such"):
            exec(statement, {"triton": triton})


def test_a_libdevice_function_tilec_lacks_fails_saying_so():
    """``rcp_rz`` (directed rounding) is one tilec leaves out (docs/language.md)."""
    with triton_alias():
        from triton.language.extra import libdevice
        with pytest.raises(AttributeError, match=MISSING.format("triton.language.extra.libdevice.rcp_rz")):
            libdevice.rcp_rz  # noqa: B018
        with pytest.raises(ImportError, match="cannot import name 'rcp_rz'"):
            exec("from triton.language.extra.libdevice import rcp_rz")


def test_probing_for_a_missing_name_answers_false():
    with triton_alias():
        import triton
        assert not hasattr(triton, "knobs") and not hasattr(triton.language.extra, "hip")
        assert getattr(triton.runtime, "__file__", None) is None


def test_uninstall_leaves_no_trace():
    meta_path, import_, find_spec = list(sys.meta_path), builtins.__import__, importlib.util.find_spec
    with triton_alias():
        compat.install()  # a second install changes nothing
        import triton.language.extra  # noqa: F401
        import triton.runtime.driver  # noqa: F401
    compat.uninstall()  # nor does a second uninstall
    assert sys.meta_path == meta_path and not compat.installed()
    assert builtins.__import__ is import_ and importlib.util.find_spec is find_spec
    assert not [name for name in sys.modules if name.split(".")[0] == "triton"]
    assert "__getattr__" not in vars(tilec.language) and "__getattr__" not in vars(tilec.language.extra.libdevice)
    assert tilec.language.extra is importlib.import_module("tilec.language.extra")
    assert vars(tilec.runtime.driver)["__getattr__"].__module__ == "tilec.runtime.driver"
    if importlib.util.find_spec("triton") is None:
        with pytest.raises(ModuleNotFoundError):
            import triton  # noqa: F401


def test_uninstall_puts_back_a_tilec_language_extra_of_tilecs_own(monkeypatch):
    own = type(sys)("tilec.language.extra")
    monkeypatch.setattr(tilec.language, "extra", own, raising=False)
    with triton_alias():
        import triton.language.extra
        assert tilec.language.extra is triton.language.extra is not own
    assert tilec.language.extra is own


def test_install_refuses_when_a_triton_is_already_imported(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", type(sys)("triton"))
    meta_path = list(sys.meta_path)
    with pytest.raises(ImportError, match="a `triton` module is already imported"):
        compat.install()
    assert not compat.installed() and sys.meta_path == meta_path


def test_the_hook_shadows_a_triton_on_the_path(tmp_path, monkeypatch):
    (tmp_path / "triton").mkdir()
    (tmp_path / "triton" / "__init__.py").write_text("INSTALLED = True\n")
    (tmp_path / "triton" / "profiler.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with triton_alias():
        import triton
        assert triton.jit is tilec.jit and not hasattr(triton, "INSTALLED")
        with pytest.raises(ImportError, match=MISSING.format("triton.profiler")):
            import triton.profiler  # noqa: F401
    import triton
    try:
        assert triton.INSTALLED  # after uninstall the process finds what it found before
    finally:
        del sys.modules["triton"]


@pytest.mark.parametrize("importer", ["torch._inductor.runtime.triton_compat", "torch", "functorch.compile"])
def test_torchs_own_imports_find_no_triton(importer):
    """torch asks ``import triton`` whether it has a Triton to generate code for:
    its modules must get the same answer as without Triton, even once user
    code has imported the alias."""
    with triton_alias():
        import triton  # noqa: F401  (the user's import: now in sys.modules)
        for statement in ("import triton", "import triton.backends.compiler", "from triton.compiler import compiler"):
            with pytest.raises(ModuleNotFoundError, match="No module named 'triton"):
                exec(statement, {"__name__": importer})
        exec("import triton.language", {"__name__": "torch_user_library"})  # not torch's: gets tilec


@pytest.mark.parametrize("imported", [False, True])
def test_torchs_spec_queries_find_no_triton(imported):
    """``importlib.util.find_spec("triton") is None`` is torch's other way to ask."""
    query = "import importlib.util\nspec = importlib.util.find_spec({!r})"
    with triton_alias():
        if imported:
            import triton  # noqa: F401
        for name in ("triton", "triton.language"):
            asked = {"__name__": "torch.cuda"}
            exec(query.format(name), asked)
            assert asked["spec"] is None
        assert importlib.util.find_spec("triton") is not None  # everyone else finds the alias


# --- the command ------------------------------------------------------------------
SCRIPT = '''
import os, sys
import numpy as np
import triton
import triton.language as tl

@triton.jit
def add_rsqrt(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    y = tl.extra.cuda.libdevice.rsqrt(tl.load(y_ptr + offs, mask=m, other=1.0))
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + y, mask=m)

n = int(sys.argv[1])
x = np.arange(n, dtype=np.float32) - 7
y = np.full(n, 4.0, np.float32)
out = np.zeros_like(x)
add_rsqrt[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
assert np.array_equal(out, x + 0.5), out
print(__name__, sys.argv, sys.path[0] == os.path.dirname(os.path.abspath(__file__)), "ok")
'''


def run_python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python args`` in a new process running this checkout's tilec."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.fixture
def script(tmp_path) -> Path:
    (tmp_path / "scripts").mkdir()
    path = tmp_path / "scripts" / "vector_add.py"
    path.write_text(SCRIPT)
    return path


def test_the_command_runs_an_unmodified_triton_script(script, tmp_path):
    done = run_python("-m", "tilec.triton_compat", str(script), "77", "--flag", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"__main__ {[str(script), '77', '--flag']} True ok"


def test_the_command_runs_a_module(script, tmp_path):
    done = run_python("-m", "tilec.triton_compat", "-m", "vector_add", "5", cwd=script.parent)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"__main__ {[str(script), '5']} True ok"  # sys.path[0]: the current folder


def test_without_the_hook_triton_is_not_tilec(script, tmp_path):
    if importlib.util.find_spec("triton") is not None:
        pytest.skip("a real Triton is installed here")
    done = run_python(str(script), "5", cwd=tmp_path)
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'triton'" in done.stderr


@pytest.mark.parametrize("args, status, message", [
    ((), 2, "usage: python -m tilec.triton_compat"),
    (("-m",), 2, "usage: python -m tilec.triton_compat"),
    (("no_such_script.py",), 2, "can't open file 'no_such_script.py'"),
])
def test_the_command_refuses_nothing_to_run(tmp_path, args, status, message):
    done = run_python("-m", "tilec.triton_compat", *args, cwd=tmp_path)
    assert done.returncode == status and message in done.stderr


# --- torch in the same process (skipped where torch is not installed) ---------------
TORCH_SCRIPT = '''
import triton, triton.language as tl   # the user's Triton code first
import torch
from torch.utils._triton import has_triton, has_triton_package

def f(x, y):
    return torch.sin(x) * y + 1

x, y = torch.randn(37), torch.randn(37)
assert torch.allclose(torch.compile(f)(x, y), f(x, y))
assert not has_triton_package() and not has_triton()
import triton as again
assert again.jit.__module__.startswith("tilec")
print("ok")
'''


def test_torch_compile_keeps_working_and_sees_no_triton(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "uses_torch.py").write_text(TORCH_SCRIPT)
    done = subprocess.run([sys.executable, "-m", "tilec.triton_compat", "uses_torch.py"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=600,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


DEVICE_QUERY_SCRIPT = '''
import torch, triton, triton.language as tl
from triton.runtime import driver

DEVICE = triton.runtime.driver.active.get_active_torch_device()   # how Triton's tutorials pick a device
properties = driver.active.utils.get_device_properties(DEVICE.index)
assert properties["multiprocessor_count"] >= 1 and properties["warpSize"] == 32

@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)

x, y = torch.rand(9843, device=DEVICE), torch.rand(9843, device=DEVICE)
out = torch.empty_like(x)
add[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK_SIZE"]),)](x, y, out, x.numel(), BLOCK_SIZE=1024)
assert torch.equal(out, x + y)
print(DEVICE.type)
'''


def test_a_script_that_asks_the_driver_for_its_device_runs_where_tilec_runs(tmp_path):
    torch = pytest.importorskip("torch")
    (tmp_path / "tutorial.py").write_text(DEVICE_QUERY_SCRIPT)
    done = run_python("-m", "tilec.triton_compat", "tutorial.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == ("cuda" if torch.cuda.is_available() else "cpu")


GPU_SCRIPT = '''
import triton, triton.language as tl
import torch
from torch.utils._triton import has_triton
from triton.runtime import driver

@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3 - 1, mask=m)

x = torch.randn(1000, device="cuda")     # torch.cuda's lazy init asks find_spec("triton")
out = torch.empty_like(x)
scale[(triton.cdiv(1000, 128),)](x, out, 1000, BLOCK=128)
torch.testing.assert_close(out, x * 3 - 1)  # a GPU may fuse the two into one fma
target = driver.active.get_current_target()
assert target.backend == "cuda" and target.arch == torch.cuda.get_device_capability()[0] * 10 + torch.cuda.get_device_capability()[1]
assert driver.active.get_active_torch_device() == x.device
assert not has_triton()
f = torch.compile(lambda a: torch.sin(a) + 1, backend="aot_eager")
assert torch.allclose(f(x), torch.sin(x) + 1)
print("ok")
'''


@pytest.mark.gpu
def test_on_a_gpu_triton_code_runs_and_torch_keeps_working(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "on_gpu.py").write_text(GPU_SCRIPT)
    done = run_python("-m", "tilec.triton_compat", "on_gpu.py", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
