"""tilec/environment.py: the one reader of every ``TILEC_*`` variable."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tilec import environment
from tilec.errors import TilecError

REPO = Path(__file__).resolve().parent.parent
TILEC = REPO / "tilec"
# A read of the process environment: os.environ[...], os.environ.get(...), os.getenv(...), environ.get(...).
ENVIRON_READ = re.compile(r"\b(?:environ\s*(?:\[|\.get\s*\(|\.setdefault\s*\(|\.pop\s*\()|getenv\s*\()\s*f?[\"']TILEC_")
FLAGS = {"TILEC_CACHE": (environment.cache_enabled, True), "TILEC_CHECK": (environment.check_enabled, False),
         "TILEC_SYNC": (environment.sync_enabled, False), "TILEC_QUIET": (environment.quiet, False),
         "TILEC_INTERPRET": (environment.interpret, False)}


def test_no_module_but_environment_reads_a_tilec_variable():
    readers = [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
               for path in sorted(TILEC.rglob("*.py")) if path != TILEC / "environment.py"
               for text in [path.read_text()] for m in ENVIRON_READ.finditer(text)]
    assert readers == [], "read TILEC_* variables through a function of tilec/environment.py"


def test_the_check_finds_every_spelling_of_a_read():
    for line in ['os.environ["TILEC_SYNC"]', "os.environ.get('TILEC_SYNC', '')", 'os.getenv("TILEC_SYNC")',
                 'environ.get("TILEC_SYNC")', 'os.environ.setdefault("TILEC_SYNC", "1")']:
        assert ENVIRON_READ.search(line), line
    assert not ENVIRON_READ.search('"TILEC_SYNC=1: synchronize after every launch"')


def test_environment_imports_nothing_of_tilec_but_errors():
    imports = re.findall(r"^\s*(?:from|import)\s+(tilec[\w.]*)", (TILEC / "environment.py").read_text(), re.M)
    assert set(imports) == {"tilec.errors"}


def test_every_variable_is_documented_and_every_documented_one_is_read():
    documented = set(re.findall(r"^\| `(TILEC_\w+)` \|", (REPO / "docs/environment.md").read_text(), re.M))
    tests_only = {"TILEC_GPU_COMPILE_CHECK", "TILEC_GPU_COMPILE_LOG", "TILEC_TEST_DEVICE", "TILEC_HYPOTHESIS_EXAMPLES"}
    read_here = set(re.findall(r"\"(TILEC_[A-Z_]+)\"", (TILEC / "environment.py").read_text()))
    toolchain = {m for p in TILEC.rglob("*.py") for m in re.findall(r"toolchain_file\(\"(TILEC_\w+)\"\)", p.read_text())}
    assert documented - tests_only == read_here | toolchain


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_a_flag_takes_on_and_off_words_and_defaults_when_unset(monkeypatch, name):
    reader, default = FLAGS[name]
    monkeypatch.delenv(name, raising=False)
    assert reader() is default
    for text, on in [("", default), ("1", True), (" On ", True), ("TRUE", True), ("yes", True),
                     ("0", False), ("off", False), ("False", False), ("no ", False)]:
        monkeypatch.setenv(name, text)
        assert reader() is on, text


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_a_flag_refuses_any_other_value_naming_the_variable(monkeypatch, name):
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(TilecError, match=f"{name}=maybe: .*{name} takes 1, on, true, yes .* 0, off, false, no"):
        FLAGS[name][0]()


@pytest.mark.parametrize("text", ["0", "-2", "two", "1.5", "4x"])
def test_num_threads_refuses_anything_but_a_positive_integer_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv("TILEC_NUM_THREADS", text)
    with pytest.raises(TilecError, match=f"TILEC_NUM_THREADS={text}: not a positive integer"):
        environment.num_threads()


def test_num_threads_is_none_unset_and_the_number_given(monkeypatch):
    monkeypatch.delenv("TILEC_NUM_THREADS", raising=False)
    assert environment.num_threads() is None
    monkeypatch.setenv("TILEC_NUM_THREADS", " 3 ")
    assert environment.num_threads() == 3


def test_folders_and_files_default_when_unset_or_empty(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    names = ("TILEC_CACHE_DIR", "TILEC_DUMP_DIR", "TILEC_LIBDEVICE")
    for name in names:
        monkeypatch.setenv(name, "")
    assert environment.cache_dir() == tmp_path / ".cache" / "tilec"
    assert environment.dump_dir() == Path("tilec-dump")
    assert environment.toolchain_file("TILEC_LIBDEVICE") is None
    for name in names:
        monkeypatch.setenv(name, str(tmp_path / name))
    assert environment.cache_dir() == tmp_path / "TILEC_CACHE_DIR"
    assert environment.dump_dir() == tmp_path / "TILEC_DUMP_DIR"
    assert environment.toolchain_file("TILEC_LIBDEVICE") == tmp_path / "TILEC_LIBDEVICE"


def test_a_toolchain_variable_is_a_tilec_variable():
    with pytest.raises(ValueError, match="TILEC_<TOOL>"):
        environment.toolchain_file("LIBDEVICE")


def test_values_are_read_when_asked_not_at_import(monkeypatch):
    monkeypatch.setenv("TILEC_SYNC", "1")
    assert environment.sync_enabled()
    monkeypatch.setenv("TILEC_SYNC", "0")
    assert not environment.sync_enabled()
