"""Tutorial 01: vector addition.  The kernel and its launcher are written
once, in docs/tutorials/01_vector_add.py; the tests and benchmarks take them from here."""
from pathlib import Path
from runpy import run_path

_tutorial = run_path(str(Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "01_vector_add.py"))
add_kernel, add = (_tutorial[name] for name in ("add_kernel", "add"))
