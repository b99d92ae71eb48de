"""docs/language.md must tell the truth: every name marked supported exists in
``tilec.language`` and is exercised by a test, and every public name of
``tilec.language`` has a row."""
from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

import tilec.language as tl

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "language.md"
ROW = re.compile(r"^\| `(?P<name>[A-Za-z_][A-Za-z0-9_.]*)` \| (?P<group>[^|]+) \| (?P<status>[^|]+) \|")
STATUSES = {"supported", "not yet"}
# Module plumbing of tilec.language, not language names.
NOT_LANGUAGE = {"builtin", "core", "standard", "indexing", "custom", "TENSOR_METHODS", "annotations"}


def doc_table() -> dict[str, str]:
    """name -> status, from the rows of the table in docs/language.md."""
    rows = {}
    for line in DOC.read_text().splitlines():
        m = ROW.match(line)
        if m:
            assert m["name"] not in rows, f"{m['name']} has two rows"
            rows[m["name"]] = m["status"].strip()
    return rows


@functools.cache
def source_of_tests() -> str:
    """Every test file's text except this one (which names everything), and the
    tutorial scripts, whose kernels the tests run (tests/kernels re-exports them)."""
    files = sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "docs" / "tutorials").glob("*.py"))
    return "\n".join(f.read_text() for f in files if f.name != Path(__file__).name)


TABLE = doc_table()
SUPPORTED = sorted(name for name, status in TABLE.items() if status == "supported")


def test_the_table_is_there_and_every_status_is_known():
    assert len(TABLE) > 100
    unknown = {name: status for name, status in TABLE.items() if status not in STATUSES}
    assert not unknown, f"statuses must be one of {STATUSES}: {unknown}"


@pytest.mark.parametrize("name", SUPPORTED)
def test_supported_name_exists_and_is_tested(name):
    assert hasattr(tl, name), f"docs/language.md marks `{name}` supported but tilec.language has no `{name}`"
    used = re.search(rf"\btl\.{re.escape(name)}\b|\.{re.escape(name)}\(", source_of_tests())
    assert used, f"`{name}` is marked supported but no test under tests/ uses `tl.{name}` or `.{name}(`"


def test_every_public_language_name_has_a_row():
    public = {n for n in dir(tl) if not n.startswith("_")} - NOT_LANGUAGE
    missing = sorted(public - TABLE.keys())
    assert not missing, f"tilec.language names missing from docs/language.md: {missing}"
