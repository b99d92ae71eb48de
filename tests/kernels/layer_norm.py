"""Tutorial 04: layer normalization, forward and backward.  The kernels, their
launchers and the numpy and torch references are written once, in
docs/tutorials/04_layer_norm.py; the tests and benchmarks take them from here."""
from pathlib import Path
from runpy import run_path

_tutorial = run_path(str(Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "04_layer_norm.py"))
(_layer_norm_fwd_fused, _layer_norm_bwd_dx_fused, _layer_norm_bwd_dwdb, layer_norm_forward, layer_norm_backward,
 numpy_layer_norm, numpy_layer_norm_grads, torch_layer_norm_grads) = (
    _tutorial[name] for name in ("_layer_norm_fwd_fused", "_layer_norm_bwd_dx_fused", "_layer_norm_bwd_dwdb",
                                 "layer_norm_forward", "layer_norm_backward", "numpy_layer_norm",
                                 "numpy_layer_norm_grads", "torch_layer_norm_grads"))
