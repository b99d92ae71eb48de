"""One object per target: triple, data layout, warp size, limits, how to emit a binary (next milestone)."""
