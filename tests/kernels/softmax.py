"""Tutorial 02: fused softmax.  The kernel and its launcher are written once,
in docs/tutorials/02_fused_softmax.py; the tests and benchmarks take them from here."""
from pathlib import Path
from runpy import run_path

_tutorial = run_path(str(Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "02_fused_softmax.py"))
softmax_kernel, softmax = (_tutorial[name] for name in ("softmax_kernel", "softmax"))
