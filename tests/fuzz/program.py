"""A fuzz program as data: the tile shape, the arrays it reads and writes and
a list of ops (``ops.py``); rendered as the source of one ``@tilec.jit``
kernel, and evaluated by the numpy model one program instance at a time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .dtypes import FLOATS, eps, int_arg_type, numpy_type
from .model import Env
from .ops import Atomic, Store, Val

SENTINEL = 7  # what output slots hold before the launch: masked lanes must leave it there


@dataclass(frozen=True)
class Array:
    """An array argument: its name, dtype and the tile axes it spans (outputs: all;
    atomic targets: none, ``bins`` slots)."""
    name: str
    dtype: str
    axes: tuple
    bins: int = 0


@dataclass(frozen=True)
class Program:
    blocks: tuple                 # the tile shape (powers of two)
    sizes: tuple                  # the data's extent along each axis (ragged)
    inputs: tuple                 # of Array
    ops: tuple                    # of ops.*
    s: int                        # the runtime int argument (its dtype: ``int_arg_type``)

    @property
    def rank(self) -> int:
        return len(self.blocks)

    @property
    def grid(self) -> tuple:
        return (math.ceil(self.sizes[0] / self.blocks[0]),)

    @property
    def outputs(self) -> tuple:
        """The written arrays, one per store or atomic, in argument order."""
        return tuple(Array(op.arg, op.a.dtype, tuple(range(self.rank)) if isinstance(op, Store) else (),
                           getattr(op, "bins", 0))
                     for op in self.ops if isinstance(op, (Store, Atomic)))

    def written(self) -> dict:
        """Each output's name -> the value stored into it (its dtype and error bound)."""
        return {op.arg: op.a for op in self.ops if isinstance(op, (Store, Atomic))}

    def shape(self, array: Array) -> tuple:
        return (array.bins,) if array.bins else tuple(self.sizes[a] for a in array.axes)

    def source(self) -> str:
        """The program as a Python module holding one ``@tilec.jit`` kernel, ``fuzz_kernel``."""
        params = [a.name for a in self.inputs + self.outputs] + ["s"] + [f"n{a}" for a in range(self.rank)]
        params += [f"B{a}: tl.constexpr" for a in range(self.rank)]
        body = ["pid = tl.program_id(0)", "r0 = pid * B0 + tl.arange(0, B0)"]
        body += [f"r{a} = tl.arange(0, B{a})" for a in range(1, self.rank)]
        for op in self.ops:
            body += op.source(self.rank)
        lines = ["import tilec", "import tilec.language as tl", "", "", "@tilec.jit",
                 f"def fuzz_kernel({', '.join(params)}):"]
        return "\n".join(lines + ["    " + line for line in body]) + "\n"

    def fresh_outputs(self) -> dict:
        """Output arrays as a launch starts them: sentinels (atomics start from them too)."""
        return {a.name: np.full(self.shape(a), SENTINEL).astype(numpy_type(a.dtype))
                for a in self.outputs}

    def evaluate(self, inputs: dict) -> tuple:
        """(the outputs the numpy model computes, the float error scale), for input arrays by name."""
        arrays = {**inputs, **self.fresh_outputs()}
        scale = 0.0
        for pid in range(self.grid[0]):
            env = Env(arrays, self.sizes, self.blocks, pid, scale)
            env.values["pid"] = np.int32(pid)
            env.values["s"] = np.array(self.s, numpy_type(int_arg_type(self.s)))
            for op in self.ops:
                op.evaluate(env)
            scale = env.scale
        return {a.name: arrays[a.name] for a in self.outputs}, scale

    def launch_args(self, inputs: dict, outputs: dict) -> tuple:
        """(positional args, constexpr kwargs) of ``fuzz_kernel`` for these arrays."""
        args = [inputs[a.name] for a in self.inputs] + [outputs[a.name] for a in self.outputs]
        args += [self.s, *self.sizes]
        return args, {f"B{a}": b for a, b in enumerate(self.blocks)}


def mismatch(got: np.ndarray, want: np.ndarray, value: Val, scale: float) -> str:
    """Why ``got`` is not ``want`` (empty when it is): exact for ints, bools and exact
    floats (NaN meets NaN), else within ``value.err * scale`` plus one rounding."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype}, want {want.shape} {want.dtype}"
    if value.dtype not in FLOATS:
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(all="ignore"):
            tol = value.err * scale + eps(value.dtype) * np.abs(w) if value.err else 0.0
            bad = ~((g == w) | (np.isnan(g) & np.isnan(w)) | (np.abs(g - w) <= tol))
    if not bad.any():
        return ""
    where = np.argwhere(bad)[:4].tolist()
    return f"{int(bad.sum())} of {bad.size} differ, first at {where}: got {got[bad][:4]}, want {want[bad][:4]}"
