"""Tutorial 05: fused attention (forward).  The kernel and its launcher are
written once, in docs/tutorials/05_fused_attention.py; the tests and benchmarks take them from here."""
from pathlib import Path
from runpy import run_path

_tutorial = run_path(str(Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "05_fused_attention.py"))
_attn_fwd, attention, launch_attention, default_scale = (
    _tutorial[name] for name in ("_attn_fwd", "attention", "launch_attention", "default_scale"))
