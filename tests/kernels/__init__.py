"""Kernels written as Triton's tutorials write them (with ``import tilec`` and
``import tilec.language as tl``), plus the host wrappers that launch them on
numpy arrays.  ``tests/test_tutorials.py`` checks them against numpy."""
