"""``python -m tilec`` (``tilec/cli.py``): compile a kernel file to any stage,
signatures and constexprs, errors as one line with exit status 2, the cache
and info commands.  Needs no GPU: PTX comes from llvmlite alone."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tilec import cli
from tilec.launch import dump
from tilec.launch.args import classify_arg
from tilec.backends.nvidia import ptxas

REPO = Path(__file__).resolve().parent.parent

KERNELS = '''
import tilec
import tilec.language as tl


@tilec.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@tilec.jit
def fill(out_ptr, value, BLOCK: tl.constexpr = 64, DTYPE: tl.constexpr = tl.float32):
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.full((BLOCK,), value, DTYPE))


@tilec.jit
def broken(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + undefined_name)


not_a_kernel = 3
'''
ADD = ["--signature", "*fp32:16,*fp32:16,*fp32:16,i32:16", "--constexpr", "BLOCK=1024"]


@pytest.fixture
def kernels(tmp_path, monkeypatch) -> str:
    """The path of a file holding ``KERNELS``; the disk cache goes to ``tmp_path`` too."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "kernels.py"
    path.write_text(KERNELS)
    return str(path)


def tilec_command(*args: str, cwd: Path, unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``python -m tilec args`` in a new process running this checkout's tilec, without the ``unset`` variables."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    for name in unset:
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "tilec", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def run_main(capsys, *args: str) -> tuple[int, str, str]:
    status = cli.main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


# --- end to end, in a new process ---------------------------------------------------
def test_compile_prints_ptx_for_sm_90(kernels, tmp_path):
    proc = tilec_command("compile", f"{kernels}:add", *ADD, "--target", "sm_90", "--stage", "ptx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ".target sm_90" in proc.stdout and ".visible .entry add(" in proc.stdout
    assert "ld.global.v4" in proc.stdout  # the :16 hints reached the specialization: 16-byte vectors


def test_an_error_is_one_line_and_status_2(kernels, tmp_path):
    proc = tilec_command("compile", f"{kernels}:broken", "--signature", "*fp32", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    line = KERNELS.splitlines().index("    tl.store(x_ptr, tl.load(x_ptr) + undefined_name)") + 1
    assert proc.stderr.startswith(f"tilec: error: {kernels}:{line}: ") and "undefined_name" in proc.stderr


def test_info_and_cache(kernels, tmp_path):
    info = tilec_command("info", cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    labels = [line.split(":")[0] for line in info.stdout.splitlines()]
    assert {"tilec", "python", "llvmlite", "numpy", "ptxas", "libdevice", "cache", "targets"} <= set(labels)
    assert "driver" in labels or "gpu" in labels  # a driver and its GPUs, or one line saying why not
    assert f"cache:      {tmp_path / 'cache'}" in info.stdout
    assert "host, sm_80, sm_86, sm_89, sm_90, sm_90a" in info.stdout

    # TILEC_CHECK (set by conftest.py) bypasses the disk cache
    assert tilec_command("compile", f"{kernels}:add", *ADD, cwd=tmp_path, unset=("TILEC_CHECK",)).returncode == 0
    shown = tilec_command("cache", cwd=tmp_path)
    assert shown.stdout.startswith(f"cache: {tmp_path / 'cache'}\n") and "  kernel: 1 entry, " in shown.stdout
    cleared = tilec_command("cache", "--clear", cwd=tmp_path)
    assert cleared.stdout == f"removed 1 entry from {tmp_path / 'cache'}\n"
    assert "total: 0 entries, 0 bytes" in tilec_command("cache", cwd=tmp_path).stdout


def test_a_cached_kernel_shows_the_same_stages_and_metadata(kernels, tmp_path):
    args = ("compile", f"{kernels}:add", *ADD, "--stage", "all", "--metadata")
    first = tilec_command(*args, cwd=tmp_path, unset=("TILEC_CHECK",))  # TILEC_CHECK bypasses the disk cache
    (entry,) = (tmp_path / "cache" / "kernel").rglob("*.bin")
    written = entry.stat().st_mtime_ns
    again = tilec_command(*args, cwd=tmp_path, unset=("TILEC_CHECK",))
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert entry.stat().st_mtime_ns == written  # a hit: read, not rewritten
    assert again.stdout == first.stdout and '"flops": 1024' in again.stdout and "// -----// ptx //" in again.stdout


# --- compile, in this process -------------------------------------------------------
def test_every_stage_to_a_directory_with_metadata(kernels, tmp_path, capsys):
    status, out, err = run_main(capsys, "compile", f"{kernels}:add", *ADD, "--target", "sm_80",
                                "--stage", "all", "--metadata", "--out", str(tmp_path / "out"))
    assert status == 0, err
    written = [Path(line) for line in out.splitlines()]
    expected = ["tir", "opt.tir", "gpu.tir", "ll", "ptx"] + ["cubin"] * (ptxas.find_ptxas() is not None) + ["json"]
    assert [p.name.split(".", 1)[1] for p in written] == expected
    assert all(p.parent == tmp_path / "out" and p.name.startswith("add-") for p in written)
    metadata = json.loads(written[-1].read_text())
    assert (metadata["target"], metadata["bytes_moved"], metadata["flops"]) == ("sm_80", 3 * 1024 * 4, 1024)


def test_metadata_alone_and_options(kernels, capsys):
    status, out, _ = run_main(capsys, "compile", f"{kernels}:add", *ADD, "--metadata", "--num-warps", "8",
                              "--num-stages", "2")
    metadata = json.loads(out)
    assert status == 0 and (metadata["target"], metadata["num_warps"], metadata["num_stages"]) == ("sm_90", 8, 2)


def test_host_target_defaults_to_the_optimized_tile_ir(kernels, capsys):
    status, out, _ = run_main(capsys, "compile", f"{kernels}:fill", "-s", "*fp16,fp32", "-c", "DTYPE=tl.float16",
                              "--target", "host")
    assert status == 0 and out.startswith("func @fill(%out_ptr: ptr<f16>, %value: f32)")
    assert "tile<64xf16>" in out


def test_stage_all_prints_each_text_stage_under_a_header(kernels, capsys):
    status, out, _ = run_main(capsys, "compile", f"{kernels}:fill", "-s", "*fp32,fp32", "--stage", "all")
    assert status == 0
    headers = [line for line in out.splitlines() if line.startswith("// -----// ")]
    assert headers[:5] == [f"// -----// {s} //----- //" for s in ("tir", "tir-opt", "tir-gpu", "llir", "ptx")]


@pytest.mark.parametrize("args, message", [
    (["nofile.py:add", "-s", "i32"], "no such file: nofile.py"),
    (["{k}", "-s", "i32"], "expected path/to/file.py:kernel_name, got '{k}'"),
    (["{k}:nope", "-s", "i32"], "`nope` is not there in {k} (its kernels: add, broken, fill)"),
    (["{k}:not_a_kernel", "-s", "i32"], "`not_a_kernel` is not a @tilec.jit kernel in {k}"),
    (["{k}:add", "-s", "*fp32,*fp32,i32", "-c", "BLOCK=4"],
     "kernel `add` has 4 non-constexpr parameters (x_ptr, y_ptr, out_ptr, n) but --signature gives 3 types"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i33", "-c", "BLOCK=4"], "unknown type 'i33'"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32:8,i32", "-c", "BLOCK=4"], "the only hint is :16"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32"], "kernel `add` needs --constexpr BLOCK=VALUE"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "N=4", "-c", "BLOCK=4"],
     "--constexpr N: kernel `add` has no tl.constexpr parameter `N` (its constexprs: BLOCK)"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=four"], "--constexpr BLOCK=four: not a Python literal"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=1000"], "the length 1000 must be a power of two"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "--target", "sm_75"], "unknown target 'sm_75'"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "--num-warps", "3"],
     "num_warps must be a power of 2 (1, 2, 4, 8, ...), got 3"),
    (["{k}:add", "-s", "*fp32,*fp32,*fp32,i32", "-c", "BLOCK=4", "--target", "host", "--stage", "ptx"],
     "kernel `add` compiled for host has no ptx stage (host compiles stop at tir-opt"),
])
def test_mistakes_are_one_line(kernels, capsys, args, message):
    status, out, err = run_main(capsys, "compile", *(a.replace("{k}", kernels) for a in args))
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("tilec: error: ") and message.replace("{k}", kernels) in err


def test_an_unimportable_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import tilec\nraise RuntimeError('boom')\n")
    status, _, err = run_main(capsys, "compile", f"{bad}:k", "-s", "i32")
    assert status == 2 and err == f"tilec: error: cannot import {bad}: RuntimeError: boom\n"


def test_usage_errors_are_one_line(capsys):
    status, _, err = run_main(capsys, "compile")
    assert status == 2 and err.count("\n") == 1 and "the following arguments are required" in err


# --- signatures ---------------------------------------------------------------------
@pytest.mark.parametrize("entry, ir_type, attrs", [
    ("*fp32", "ptr<f32>", ()), ("*fp32:16", "ptr<f32>", (("divisibility", 16),)),
    ("*f16", "ptr<f16>", ()), ("*i8", "ptr<i8>", ()), ("*i1:16", "ptr<i1>", (("divisibility", 16),)),
    ("*fp64", "ptr<f64>", ()), ("*bf16:16", "ptr<bf16>", (("divisibility", 16),)),
    ("i32", "i32", ()), ("i32:16", "i32", (("divisibility", 16),)), ("i64", "i64", ()),
    ("u64:16", "u64", (("divisibility", 16),)), ("fp32", "f32", ()), ("fp16", "f16", ()), ("i1", "i1", ()),
    ("bf16", "bf16", ()),
])
def test_each_signature_entry_classifies_as_written(entry, ir_type, attrs):
    if "bf16" in entry:
        pytest.importorskip("ml_dtypes")
    (t,) = cli.parse_signature(entry)
    arg = classify_arg("a", cli.sample_value(t), False, "k")
    assert (str(arg.type), arg.attrs) == (ir_type, attrs)


def test_constexpr_values():
    assert cli.parse_constexpr_value("A", "1024") == 1024
    assert cli.parse_constexpr_value("A", "'relu'") == "relu"
    assert cli.parse_constexpr_value("A", "(1, 2)") == (1, 2)
    assert cli.parse_constexpr_value("A", "None") is None
    import tilec.language as tl
    assert cli.parse_constexpr_value("A", "tl.bfloat16") is tl.bfloat16


def test_the_out_files_are_named_as_tilec_dump_names_them(kernels, tmp_path, capsys):
    run_main(capsys, "compile", f"{kernels}:add", *ADD, "--stage", "ptx", "--out", str(tmp_path))
    kernel = cli.load_kernel(f"{kernels}:add")
    values = cli.bind_signature(kernel, cli.parse_signature(ADD[1])) | {"BLOCK": 1024}
    compiled = kernel.compile(target="sm_90", **values)
    assert [p.name for p in tmp_path.glob("*.ptx")] == [f"add-{dump.variant_id(compiled)}.ptx"]
    assert (tmp_path / f"add-{dump.variant_id(compiled)}.ptx").read_text() == compiled.asm["ptx"]


@pytest.mark.skipif(ptxas.find_ptxas() is None, reason="no ptxas: no cubin")
def test_cubin_goes_to_a_pipe_as_bytes(kernels, capsysbinary):
    assert cli.main(["compile", f"{kernels}:add", *ADD, "--stage", "cubin"]) == 0
    assert capsysbinary.readouterr().out[:4] == b"\x7fELF"

# --- docs ---------------------------------------------------------------------------
def variables_in(paths) -> set[str]:
    return {m for p in paths for m in re.findall(r"\bTILEC_[A-Z0-9_]*[A-Z0-9]\b", p.read_text())}


def test_environment_doc_lists_every_variable_the_code_reads():
    documented = set(re.findall(r"^\| `(TILEC_[A-Z0-9_]+)` \|", (REPO / "docs/environment.md").read_text(), re.M))
    read = variables_in((REPO / "tilec").rglob("*.py")) | variables_in((REPO / "tests").rglob("*.py"))
    assert read - documented == set(), "add these to docs/environment.md"
    assert documented - read == set(), "docs/environment.md lists variables nothing reads"

