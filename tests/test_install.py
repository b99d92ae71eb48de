"""What a new user installs is enough: the `cuda` extra brings the ptxas and
libdevice tilec finds (math kernels need libdevice), the `test` extra's CUDA
tools are the `cuda` extra's, every "not found" message names an extra that
brings the tools, README's first commands stay true and the demo says where it
runs and why."""
from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tilec.backends.nvidia import ptxas

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
CUDA_TOOLS = [(ptxas.find_libdevice, "libdevice.10.bc", "TILEC_LIBDEVICE"), (ptxas.find_ptxas, "ptxas", "TILEC_PTXAS")]


def extra_requirements(extra: str) -> list[Requirement]:
    return [Requirement(text) for text in EXTRAS[extra]]


def installed_closure(names) -> list[metadata.Distribution]:
    """The installed distributions among ``names`` and, recursively, those they
    require (what ``pip install`` of ``names`` put here)."""
    seen, todo, found = set(), list(names), []
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found.append(dist)
        todo += [Requirement(r).name for r in dist.requires or [] if "extra ==" not in r]
    return found


def files_named(dists, filename: str) -> set[Path]:
    return {Path(d.locate_file(f)).resolve() for d in dists for f in d.files or [] if f.name == filename}


def cuda_wheel_owning(path: Path) -> str | None:
    """The installed nvidia-* distribution that installed ``path``, if any."""
    for dist in metadata.distributions():
        if dist.metadata["Name"].startswith("nvidia") and path in files_named([dist], path.name):
            return dist.metadata["Name"]
    return None


@pytest.mark.parametrize("finder, filename, variable", CUDA_TOOLS, ids=["libdevice", "ptxas"])
def test_the_cuda_extra_brings_the_file_tilec_finds(finder, filename, variable, monkeypatch):
    """Installed by a CUDA wheel here, the file is one the `cuda` extra's
    dependencies install, and ``finder`` finds it."""
    monkeypatch.delenv(variable, raising=False)
    found = finder.__wrapped__()  # uncached: the variable may have been set when it ran first
    owner = found and cuda_wheel_owning(found.resolve())
    if not owner:
        pytest.skip(f"no CUDA wheel installed {filename} here (found: {found})")
    brought = files_named(installed_closure(r.name for r in extra_requirements("cuda")), filename)
    assert found.resolve() in brought, f"{owner} installed the {filename} tilec uses; the cuda extra does not bring it"


def test_the_test_extra_brings_no_cuda_tool_the_cuda_extra_lacks():
    """CI gets its ptxas and libdevice from the test extra: they must be the
    ones users get from `cuda`, or CI passes where a user's install fails."""
    tools = {str(r) for r in extra_requirements("test") if r.name.startswith("nvidia")}
    assert tools and tools <= {str(r) for r in extra_requirements("cuda")}


def test_not_found_messages_name_extras_that_bring_the_tools():
    extras = re.findall(r"tilec\[(\w+)\]", ptxas.INSTALL_CUDA_TOOLS)
    assert extras and extras[0] == "cuda"
    for extra in extras:
        names = {r.name for r in extra_requirements(extra)}
        assert names & {"nvidia-cuda-nvcc", "nvidia-cuda-nvcc-cu12"}, f"`{extra}` brings no ptxas or libdevice"
        assert names & {"cuda-python"}, f"`{extra}` brings no driver bindings"


def readme_commands() -> list[str]:
    """The lines of README's first code block (.ci/run runs the second)."""
    block = (ROOT / "README.md").read_text().split("```", 2)[1]
    return block.strip("\n").splitlines()


def test_readme_install_line_installs_an_extra_and_runs_the_demo():
    install = readme_commands()[0]
    extra = re.search(r"pip install -e '\.\[(\w+)\]'", install).group(1)
    assert extra in EXTRAS
    assert ". .venv/bin/activate" in install.split("pip install")[0], "the venv must be active before installing"
    module = re.search(r"python -m ([\w.]+)$", install).group(1)
    assert importlib.util.find_spec(module) is not None


def test_readme_says_the_test_line_needs_the_venv_and_ci_can_run_it():
    test_line = readme_commands()[1]
    assert test_line.startswith("python -m pytest"), ".ci/run runs only a `python -m pytest` line"
    assert re.search(r"\. \.venv/bin/activate. first", (ROOT / "README.md").read_text())


def test_the_demo_says_why_it_runs_on_the_host(tmp_path):
    """No GPU visible: the demo blames the GPU, without asking torch (here a
    torch that cannot be imported), and still checks its results."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('the demo asked torch first')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "CUDA_VISIBLE_DEVICES": ""}
    env.pop("TILEC_INTERPRET", None)  # as a newcomer runs it: compiled for the CPU
    proc = subprocess.run([sys.executable, "-m", "tilec.demo"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert "running on the host CPU (compiled for it by LLVM): no usable CUDA GPU" in first, first
    assert proc.stdout.count("PASS") == 2


@pytest.mark.gpu
def test_the_demo_runs_on_the_gpu_when_there_is_one():
    pytest.importorskip("torch")
    proc = subprocess.run([sys.executable, "-m", "tilec.demo"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "running on an NVIDIA GPU" in proc.stdout.splitlines()[0]
