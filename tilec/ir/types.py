"""Types of the tile IR: scalars, pointers and tiles, all frozen and hashable.

A value's type is one of:

* ``ScalarType`` -- ``i1 i8 i16 i32 i64 u8 u16 u32 u64 f16 bf16 f32 f64`` and
  the five 8-bit floats ``f8e4nv f8e5 f8e4b15 f8e4b8 f8e5b16`` (Triton's
  ``float8*``; their formats are ``FP8_FORMATS`` in ``fp8.py``);
* ``PointerType`` -- a pointer to a scalar (``ptr<f32>``, address space 1 by
  default, printed ``ptr<f32, 3>`` otherwise);
* ``TileType`` -- a multi-dimensional block of scalars or pointers
  (``tile<128x64xf32>``).  ``layout`` stays ``None`` until target lowering.

A *scalar* value (one per program) has a scalar or pointer type; a tile has a
``TileType``.  ``elem_type`` and ``shape_of`` treat both uniformly: a scalar
is a value of shape ``()``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class ScalarType:
    """A machine scalar: integer (signed or not), boolean (``i1``) or float."""

    name: str

    def __post_init__(self):
        if self.name not in _SCALAR_INFO:
            raise ValueError(f"unknown scalar type {self.name!r}")

    @property
    def bits(self) -> int:
        return _SCALAR_INFO[self.name][0]

    @property
    def kind(self) -> str:
        """``'bool'``, ``'int'``, ``'uint'`` or ``'float'``."""
        return _SCALAR_INFO[self.name][1]

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        """True for every integer type, ``i1`` included."""
        return self.kind in ("int", "uint", "bool")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_fp8(self) -> bool:
        """One of the 8-bit floats: a float whose values live as their bit
        patterns (no arithmetic of its own: casts, moves and selects)."""
        return self.name.startswith("f8")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    def __str__(self) -> str:
        return self.name


_SCALAR_INFO = {
    "i1": (1, "bool"),
    "i8": (8, "int"), "i16": (16, "int"), "i32": (32, "int"), "i64": (64, "int"),
    "u8": (8, "uint"), "u16": (16, "uint"), "u32": (32, "uint"), "u64": (64, "uint"),
    "f16": (16, "float"), "bf16": (16, "float"), "f32": (32, "float"), "f64": (64, "float"),
    "f8e4nv": (8, "float"), "f8e5": (8, "float"), "f8e4b15": (8, "float"), "f8e4b8": (8, "float"),
    "f8e5b16": (8, "float"),
}

i1, i8, i16, i32, i64 = (ScalarType(n) for n in ("i1", "i8", "i16", "i32", "i64"))
u8, u16, u32, u64 = (ScalarType(n) for n in ("u8", "u16", "u32", "u64"))
f16, bf16, f32, f64 = (ScalarType(n) for n in ("f16", "bf16", "f32", "f64"))
f8e4nv, f8e5, f8e4b15, f8e4b8, f8e5b16 = (ScalarType(n) for n in ("f8e4nv", "f8e5", "f8e4b15", "f8e4b8", "f8e5b16"))
SCALAR_TYPES = {n: ScalarType(n) for n in _SCALAR_INFO}


@dataclass(frozen=True)
class PointerType:
    """A pointer to ``elem`` in address space ``space`` (1 = global); a
    ``const`` one may be read through but never written (Triton's ``tl.const``:
    the front end refuses a store through it)."""

    elem: ScalarType
    space: int = 1
    const: bool = False

    @property
    def bits(self) -> int:
        return 64

    def __str__(self) -> str:
        elem = f"const {self.elem}" if self.const else str(self.elem)
        return f"ptr<{elem}>" if self.space == 1 else f"ptr<{elem}, {self.space}>"


ElemType = Union[ScalarType, PointerType]


@dataclass(frozen=True)
class TileType:
    """A block of ``shape`` elements of ``elem``; ``layout`` is set by target lowering."""

    shape: tuple[int, ...]
    elem: ElemType
    layout: Any = None

    def __post_init__(self):
        if not self.shape or any(not isinstance(d, int) or d <= 0 for d in self.shape):
            raise ValueError(f"tile shape must be a non-empty tuple of positive ints, got {self.shape}")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def with_elem(self, elem: ElemType) -> "TileType":
        return TileType(self.shape, elem, self.layout)

    def __str__(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        layout = "" if self.layout is None else f", {self.layout}"
        return f"tile<{dims}x{self.elem}{layout}>"


Type = Union[ScalarType, PointerType, TileType]


def elem_type(t: Type) -> ElemType:
    """The element type of a tile, or the type itself for a scalar."""
    return t.elem if isinstance(t, TileType) else t


def shape_of(t: Type) -> tuple[int, ...]:
    """The shape of a tile; ``()`` for a scalar."""
    return t.shape if isinstance(t, TileType) else ()


def with_shape(elem: ElemType, shape: tuple[int, ...]) -> Type:
    """A tile of ``elem`` with ``shape``, or the scalar ``elem`` when ``shape == ()``."""
    return TileType(tuple(shape), elem) if shape else elem


def with_elem(t: Type, elem: ElemType) -> Type:
    """``t`` with its element type replaced (shape and layout kept)."""
    return t.with_elem(elem) if isinstance(t, TileType) else elem


def without_layout(t: Type) -> Type:
    """``t`` as it was before target lowering gave it a layout."""
    return TileType(t.shape, t.elem) if isinstance(t, TileType) and t.layout is not None else t


def is_pointer(t: Type) -> bool:
    return isinstance(elem_type(t), PointerType)


def is_float(t: Type) -> bool:
    e = elem_type(t)
    return isinstance(e, ScalarType) and e.is_float


def is_int(t: Type) -> bool:
    e = elem_type(t)
    return isinstance(e, ScalarType) and e.is_int
