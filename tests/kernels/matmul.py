"""Tutorial 03: matrix multiplication.  The kernel and its launchers are
written once, in docs/tutorials/03_matrix_multiplication.py; the tests and
benchmarks take them from here."""
from pathlib import Path
from runpy import run_path

_tutorial = run_path(str(Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "03_matrix_multiplication.py"))
(leaky_relu, matmul_kernel, matmul_descriptor_kernel, element_strides, launch_matmul, launch_matmul_descriptors,
 float16_like, matmul) = (_tutorial[name] for name in (
    "leaky_relu", "matmul_kernel", "matmul_descriptor_kernel", "element_strides", "launch_matmul",
    "launch_matmul_descriptors", "float16_like", "matmul"))
