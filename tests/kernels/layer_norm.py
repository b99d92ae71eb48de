"""Tutorial 04: layer normalization, forward and backward.  The kernels and
their launchers are written once, in docs/tutorials/04_layer_norm.py; the
tests and benchmarks take them from here."""
from pathlib import Path
from runpy import run_path

_tutorial = run_path(str(Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "04_layer_norm.py"))
_layer_norm_fwd_fused, _layer_norm_bwd_dx_fused, _layer_norm_bwd_dwdb, layer_norm_forward, layer_norm_backward = (
    _tutorial[name] for name in ("_layer_norm_fwd_fused", "_layer_norm_bwd_dx_fused", "_layer_norm_bwd_dwdb",
                                 "layer_norm_forward", "layer_norm_backward"))
