"""The tutorial scripts (docs/tutorials/0[1-4]_*.py) run as a user runs them,
``--small`` in a fresh process: each must check its results on the host
interpreter, show what tilec compiled for sm_90, and say it skipped the
benchmark.  And the kernels the tests and benchmarks use are the scripts' own."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parent.parent / "docs" / "tutorials"


def checkout_env(*first: Path) -> dict[str, str]:
    """The environment a script runs in: this checkout's tilec (not whichever
    one is installed), after the folders ``first``."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, first), str(TUTORIALS.parent.parent)])}

# script: (how many checks it runs, lines its "what tilec does" part must print)
SCRIPTS = {
    "01_vector_add.py": (3, [r"load .*blocked<\[4\], \[32\], \[4\], \[0\]>", r"\d+ x ld\.global\.v4\.b32"]),
    "02_fused_softmax.py": (3, [r"= reduce \[%row\]", r"\d+ x shfl\.sync\.bfly"]),
    "03_matrix_multiplication.py": (5, [r"local_alloc .*shape = \(4, 256, 64\)", r"async_wait \{pending = 1\}",
                                        r"dot_wait .*\{pending = 1\}", r"dot_op<0, 2, mma<\[8, 1\]>>",
                                        r"8 x wgmma\.mma_async\.sync\.aligned\.m64n128k16", r"\d+ x cp\.async\.cg"]),
    "04_layer_norm.py": (15, [r"atomic_cas %Lock", r"\d+ x atom\.[\w.]*cas", r"= reduce \[%_var\]"]),
    "05_fused_attention.py": (5, [r"\d+ x wgmma\.mma_async\.sync\.aligned\.m64n\d+k16", r"= reduce \["]),
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_script_runs_small(script, tmp_path):
    proc = subprocess.run([sys.executable, str(TUTORIALS / script), "--small"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=checkout_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks, patterns = SCRIPTS[script]
    assert f"all {checks} checks passed" in proc.stdout, proc.stdout
    assert "metadata (.metadata): " in proc.stdout
    for pattern in patterns:
        assert re.search(pattern, proc.stdout), f"{pattern!r} not in:\n{proc.stdout}"
    assert "benchmark skipped: --small (run without it on a CUDA GPU to benchmark)" in proc.stdout
    assert not list(tmp_path.iterdir()), "--small must write nothing"


def test_without_a_gpu_the_script_blames_the_gpu_whatever_torch(tmp_path):
    """No --small and no GPU (none visible): the script says the GPU is missing,
    without asking torch (here a torch that cannot be imported), and does not
    tell the user to leave out a --small they did not pass."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('the tutorial asked torch first')\n")
    env = {**checkout_env(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(TUTORIALS / "01_vector_add.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, skipped = proc.stdout.splitlines()[0], re.findall(r"benchmark skipped: .*", proc.stdout)
    assert first.startswith("no usable CUDA GPU") and first.endswith("small sizes on the host interpreter, no benchmark")
    assert len(skipped) == 1 and skipped[0].startswith("benchmark skipped: no usable CUDA GPU"), skipped
    assert "--small" not in proc.stdout


def test_a_failed_check_fails_the_script(tmp_path):
    """The checks can fail: a vector add whose kernel adds one too many exits non-zero."""
    broken = tmp_path / "01_vector_add.py"
    source = (TUTORIALS / "01_vector_add.py").read_text()
    broken.write_text(source.replace("output = x + y\n", "output = x + y + 1\n", 1))
    (tmp_path / "tutorial_support.py").write_text((TUTORIALS / "tutorial_support.py").read_text())
    proc = subprocess.run([sys.executable, str(broken), "--small"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=checkout_env())
    assert proc.returncode != 0
    assert "Mismatched elements" in proc.stderr


@pytest.mark.parametrize("module, kernel, script", [
    ("vector_add", "add_kernel", "01_vector_add.py"),
    ("softmax", "softmax_kernel", "02_fused_softmax.py"),
    ("matmul", "matmul_kernel", "03_matrix_multiplication.py"),
    ("layer_norm", "_layer_norm_bwd_dx_fused", "04_layer_norm.py"),
    ("attention", "_attn_fwd", "05_fused_attention.py"),
])
def test_kernels_are_written_once_in_the_tutorials(module, kernel, script):
    import importlib

    fn = getattr(importlib.import_module(f"kernels.{module}"), kernel).fn
    assert Path(fn.__code__.co_filename).resolve() == TUTORIALS / script
