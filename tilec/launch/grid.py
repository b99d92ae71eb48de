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
    """``grid`` as three non-negative ints (missing axes are 1).

    ``grid`` is an int, a tuple/list of 1 to 3 ints, or a callable that
    receives ``meta`` (every bound argument by name) and returns one of those.
    """
    return grid_dims(grid(meta) if callable(grid) else grid, kernel)


_PADDING = (None, (1, 1), (1,), ())  # what pads 1, 2 or 3 dimensions to three


def grid_dims(grid: Any, kernel: str) -> tuple[int, int, int]:
    """A grid that is not a callable as three non-negative ints: a tuple of
    Python ints is checked in one loop (every launch has one), anything else
    goes through ``_checked_dims``, which words the errors."""
    if type(grid) is tuple and 1 <= len(grid) <= 3:
        for d in grid:
            if type(d) is not int or d < 0:
                break
        else:
            return grid + _PADDING[len(grid)]
    return _checked_dims(grid, kernel)


def _checked_dims(grid: Any, kernel: str) -> tuple[int, int, int]:
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"grid of kernel `{kernel}` must have 1 to 3 dimensions, got {len(dims)}: {grid!r}")
    for d in dims:
        _check_dim(d, grid, kernel)
    return tuple(int(d) for d in dims) + _PADDING[len(dims)]


def _check_dim(d: Any, grid: Any, kernel: str) -> None:
    # numpy integers are welcome (index() accepts them); bools and floats are not.
    if isinstance(d, bool) or not hasattr(d, "__index__"):
        raise TypeError(f"grid of kernel `{kernel}` must hold ints, got {type(d).__name__} in {grid!r}")
    if d < 0:
        raise ValueError(f"grid of kernel `{kernel}` must not be negative, got {grid!r}")
