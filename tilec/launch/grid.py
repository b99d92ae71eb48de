"""Launch grids: the host helpers users size them with, and their normal form."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Union

Grid = Union[int, tuple, list, Callable[[Mapping[str, Any]], Any]]


def cdiv(x: int, y: int) -> int:
    """``x / y`` rounded up: how many blocks of ``y`` cover ``x`` elements."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two ``>= n`` (1 for ``n <= 1``)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def normalize_grid(grid: Grid, meta: Mapping[str, Any], kernel: str) -> tuple[int, int, int]:
    """``grid`` as three ints within ``GRID_LIMITS`` (missing axes are 1).

    ``grid`` is an int, a tuple/list of 1 to 3 ints, or a callable that
    receives ``meta`` (every bound argument by name) and returns one of those.
    """
    return grid_dims(grid(meta) if callable(grid) else grid, kernel)


_PADDING = (None, (1, 1), (1,), ())  # what pads 1, 2 or 3 dimensions to three

# The most programs along x, y and z: CUDA's gridDim limits.  Host launches
# keep them too, so a grid that runs on the host runs on a GPU, and a grid of
# 2**40 programs fails at once instead of after the interpreter tries it.
GRID_LIMITS = (2**31 - 1, 2**16 - 1, 2**16 - 1)
_AXES = "xyz"


def grid_dims(grid: Any, kernel: str) -> tuple[int, int, int]:
    """A grid that is not a callable as three ints within ``GRID_LIMITS``: a
    tuple of Python ints is checked in one loop (every launch has one),
    anything else goes through ``_checked_dims``, which words the errors."""
    if type(grid) is tuple and 1 <= len(grid) <= 3:
        for d, most in zip(grid, GRID_LIMITS):
            if type(d) is not int or not 0 <= d <= most:
                break
        else:
            return grid + _PADDING[len(grid)]
    return _checked_dims(grid, kernel)


def _checked_dims(grid: Any, kernel: str) -> tuple[int, int, int]:
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"grid of kernel `{kernel}` must have 1 to 3 dimensions, got {len(dims)}: {grid!r}")
    for axis, d in enumerate(dims):
        _check_dim(axis, d, grid, kernel)
    return tuple(int(d) for d in dims) + _PADDING[len(dims)]


def _check_dim(axis: int, d: Any, grid: Any, kernel: str) -> None:
    """Dimension ``axis`` of ``grid`` is an int in ``[0, GRID_LIMITS[axis]]``, or an error naming it."""
    name = f"dimension {axis} ({_AXES[axis]})"
    # numpy integers are welcome (index() accepts them); bools and floats are not.
    if isinstance(d, bool) or not hasattr(d, "__index__"):
        raise TypeError(f"grid of kernel `{kernel}` must hold ints, got {type(d).__name__} in {grid!r} "
                        f"({name}); tilec.cdiv(n, BLOCK) gives the programs that cover n as an int")
    if d < 0:
        raise ValueError(f"grid of kernel `{kernel}` must not be negative, got {grid!r} ({name} is {d})")
    if d > GRID_LIMITS[axis]:
        raise ValueError(f"grid of kernel `{kernel}` is too large: {name} is {d}, over the limit of "
                         f"{GRID_LIMITS[axis]} (2**31 - 1 for x, 2**16 - 1 for y and z, as on CUDA GPUs, "
                         "kept on the host too); give each program more of the work, in a loop")
