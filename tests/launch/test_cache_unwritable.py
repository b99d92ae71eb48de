"""A cache folder that cannot be created or written (a file in the way of
``TILEC_CACHE_DIR`` or of ``$HOME/.cache``, a read-only parent) costs the disk
cache only: every compile, launch and tuning works, with one warning per
process, and ``python -m tilec cache`` says what is wrong."""
from __future__ import annotations

import logging
import os
import stat

import numpy as np
import pytest

from tilec import cli
from tilec.launch import cache

from launch.kernels import add_kernel, fresh, scalars_kernel
from launch.test_cache import vectors


def blocked_by_a_file(monkeypatch, tmp_path):
    """``TILEC_CACHE_DIR`` names a regular file."""
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))


def blocked_home(monkeypatch, tmp_path):
    """No ``TILEC_CACHE_DIR``, and ``$HOME`` is a regular file (``~/.cache`` cannot be made, even by root)."""
    (tmp_path / "home").write_text("not a folder")
    monkeypatch.delenv("TILEC_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def read_only_parent(monkeypatch, tmp_path):
    """``TILEC_CACHE_DIR`` inside a folder without write permission (root writes anyway: skipped)."""
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(parent / "cache"))


def read_only_filesystem(monkeypatch, tmp_path):
    """``TILEC_CACHE_DIR`` under ``/proc`` (Linux), where nobody, root included, makes folders."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc")
    monkeypatch.setenv("TILEC_CACHE_DIR", f"/proc/tilec-test-{tmp_path.name}/cache")


BLOCKED = [blocked_by_a_file, blocked_home, read_only_parent, read_only_filesystem]


@pytest.fixture(params=BLOCKED)
def blocked(request, monkeypatch, tmp_path, caplog):
    """The cache on, its folder unusable; the warnings it logs."""
    monkeypatch.setenv("TILEC_CACHE", "1")
    monkeypatch.setenv("TILEC_CHECK", "0")
    monkeypatch.delenv("TILEC_DUMP", raising=False)
    monkeypatch.setattr(cache, "STATS", dict.fromkeys(cache.STATS, 0))
    request.param(monkeypatch, tmp_path)
    caplog.set_level(logging.WARNING, logger="tilec")
    yield caplog
    if (tmp_path / "ro").exists():
        (tmp_path / "ro").chmod(stat.S_IRWXU)  # let pytest remove it


def cache_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("tilec") and r.levelno >= logging.WARNING]


def test_compiles_and_launches_work_with_one_warning(blocked):
    x, y, out = vectors(100)
    for block in (128, 256):
        fresh(add_kernel)[(1,)](x, y, out, 100, BLOCK=block)
        np.testing.assert_array_equal(out, x + y)
    fresh(add_kernel).compile(x, y, out, 100, target="sm_90")
    scalar_out = np.zeros(1, np.int64)
    fresh(scalars_kernel)[(1,)](scalar_out, 2, 3, 4.0, True)
    assert scalar_out[0] == 9
    warned = cache_warnings(blocked)
    assert len(warned) == 1 and "without a disk cache" in warned[0], warned
    assert cache.STATS["stored"] == 0 and cache.STATS["hit"] == 0


def test_tuning_works_with_one_warning(blocked):
    from test_autotune import data, grid, tuned

    x, out = data(300)
    tuned()[grid](x, out, 300)
    tuned()[grid](x, out, 300)  # tuned again: nothing was kept
    np.testing.assert_array_equal(out, 2 * x)
    warned = cache_warnings(blocked)
    assert len(warned) == 1 and "without a disk cache" in warned[0], warned


def test_the_cache_command_says_what_is_wrong(blocked, capsys):
    if os.environ.get("TILEC_CACHE_DIR", "").startswith("/proc/"):
        pytest.skip("nothing short of trying to create a folder tells that /proc refuses one")
    assert cli.main(["cache"]) == 0
    out = capsys.readouterr().out
    assert "cannot be used" in out and "Traceback" not in out
    assert cli.main(["cache", "--clear"]) == 0
    assert "removed 0 entries" in capsys.readouterr().out


def test_nothing_is_created_where_a_cache_is_only_looked_at(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    assert cli.main(["cache"]) == 0 and cli.main(["info"]) == 0
    assert not (tmp_path / "cache").exists()
    assert f"cache: {tmp_path / 'cache'} (empty: nothing cached yet)\n" in capsys.readouterr().out
    cache.write_entry("tuning", "k" * 64, b"{}")
    assert cli.main(["cache"]) == 0
    shown = capsys.readouterr().out
    size = cache.entries()[0].size
    assert f"  tuning: 1 entry, {size} bytes\n" in shown and f"  total: 1 entry, {size} bytes\n" in shown
