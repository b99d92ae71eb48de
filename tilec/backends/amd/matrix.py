"""Dots on AMD's matrix units (MFMA on CDNA, WMMA on RDNA3): not yet, every
dot runs on the FMA units (the generic rule)."""
from __future__ import annotations

from tilec.targets.base import Target

RULES: dict = {}


def matrix_unit(target: Target):
    """The ``tilec.opt.layouts.MatrixUnit`` of ``target``."""
    from tilec.opt.layouts import NO_MATRIX_UNIT

    return NO_MATRIX_UNIT
