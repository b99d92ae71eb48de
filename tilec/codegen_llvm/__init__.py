"""Tile IR with layouts -> llvmlite modules, one file per op family (next milestone)."""
