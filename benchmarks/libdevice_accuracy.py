"""How accurate ``tl.extra.libdevice`` is on the GPU, function by function,
and whether tilec calls libdevice exactly as Triton does.

For every case of ``tests/libdevice_cases.py`` (its operands, domain,
float64 reference) and every dtype it is tested in, one deterministic sample
of ``--n`` inputs (uniform and log-uniform over the case's domain, plus
zeros, infinities, NaN and the extremes unless the case is finite-only) runs
through tilec on the GPU, and where Triton is installed through the same
libdevice function compiled by Triton.  Per case:

* ``max_ulps``: the largest error against the float64 reference rounded to
  the result type, in units in its last place (NaN against a number counts in
  ``nan_mismatches`` instead); ``worst`` the inputs where it happens, with
  the result and the reference; ``max_abs`` the largest absolute error (the
  measure for the Bessel functions, whose relative error near their zeros is
  unbounded);
* ``triton_differ``: how many results differ from Triton's in their bits
  (NaNs of any payload are equal), ``triton_max_ulps`` by how much; None
  where Triton has no such function for the dtype (it takes float32/float64);
* for float16/bfloat16, ``narrow_differ``: how many results differ from the
  float32 result on the same inputs rounded once to the narrow type (tilec's
  definition of the narrow forms).

    python benchmarks/libdevice_accuracy.py [--n 4096] [--out benchmarks/results/libdevice_accuracy.json]

The JSON holds the device, the versions and the tree; the table printed
last is what docs/language.md quotes.
"""
from __future__ import annotations

import argparse
import math
import sys
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from benchmarks.common import RESULTS, device_info, format_table, require_cuda, write_json  # noqa: E402
from helpers import cast, ulp  # noqa: E402
from libdevice_cases import apply_kernel, arity, case_dtypes, case_id, expected, triton_apply_kernel  # noqa: E402

import tilec.language.extra.libdevice as libdevice  # noqa: E402

TORCH_NAMES = {"bfloat16": "bfloat16", "int1": "bool"}
NARROW = ("float16", "bfloat16")


def sample(case, dtype: str, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The case's operands: ``n`` values per operand, deterministic for ``rng``'s seed."""
    return [rng.integers(case.n_range[0], case.n_range[1] + 1, n).astype(np.int32) if letter == "n"
            else _values(case, dtype, n, rng) for letter in case.params]


def _values(case, dtype: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Floats over the case's domain cut to the dtype's finite range, a third
    each: uniform over its core (within +-10), uniform over all of it, and
    log-uniform in magnitude from the smallest normal to the largest (either
    sign); specials first.  Integers over the dtype's whole range."""
    if not dtype.startswith("float") and dtype != "bfloat16":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    info = np.finfo(np.float32 if dtype == "bfloat16" else dtype)
    big, tiny = float(info.max), float(info.tiny)
    lo = -big if case.lo is None else max(case.lo, -big)
    hi = big if case.hi is None else min(case.hi, big)
    magnitude = np.exp(rng.uniform(math.log(tiny), math.log(max(abs(lo), abs(hi))), n))
    logs = np.clip(np.where(rng.uniform(size=n) < 0.5, -magnitude, magnitude), lo, hi)
    part = rng.integers(0, 3, n)
    x = np.where(part == 0, rng.uniform(max(lo, -10.0), min(hi, 10.0), n),
                 np.where(part == 1, rng.uniform(lo / 2, hi / 2, n) * 2, logs))
    specials = [v for v in (0.0, -0.0, lo, hi) if lo <= v <= hi]
    if not case.finite and case.lo is None:
        specials += [math.inf, -math.inf, math.nan]
    x[:len(specials)] = specials
    x = x.astype(np.float32 if dtype == "bfloat16" else dtype)
    if dtype == "bfloat16":
        x = (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    return x


def ulps(got: np.ndarray, want: np.ndarray, dtype: str) -> np.ndarray:
    """|got - want| in units in the last place of ``want`` rounded to ``dtype``
    (0 where both are the same infinity: a result past the type's range)."""
    with np.errstate(over="ignore"):
        want = cast(want, dtype).astype(np.float64)
    got = got.astype(np.float64)
    with np.errstate(all="ignore"):
        error = np.where(got == want, 0.0, np.abs(got - want) / ulp(want, dtype))
    return np.where(np.isnan(error), 0.0, error)


def both_nan_or_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":
        return a == b
    return (a == b) | (np.isnan(a) & np.isnan(b))


class Runner:
    """Launches a case's function through tilec and through Triton on the GPU."""

    def __init__(self, torch, n: int):
        self.torch, self.n = torch, n

    def tensor(self, x: np.ndarray, dtype: str):
        """A CUDA tensor of ``x``'s values as ``dtype``; bfloat16-exact float32
        values keep their bits (a NaN its sign, which a conversion need not)."""
        torch = self.torch
        if dtype == "bfloat16" and x.dtype == np.float32:
            high = (x.view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
            return torch.from_numpy(high).view(torch.bfloat16).cuda()
        t = torch.from_numpy(np.ascontiguousarray(x))
        return t.to(getattr(torch, TORCH_NAMES.get(dtype, dtype))).cuda()

    def host(self, t) -> np.ndarray:
        t = t.cpu()
        return t.float().numpy() if t.dtype == self.torch.bfloat16 else t.numpy()

    def operands(self, case, dtype: str, values: list[np.ndarray]) -> list:
        ts = [self.tensor(x, "int32" if letter == "n" else dtype) for letter, x in zip(case.params, values)]
        return ts + [ts[0]] * (4 - len(ts))

    def tilec(self, case, dtype: str, values: list[np.ndarray]) -> np.ndarray:
        out = self.tensor(np.zeros(self.n), case.result or dtype)
        apply_kernel[(1,)](*self.operands(case, dtype, values), out,
                           FN=getattr(libdevice, case.name), ARITY=arity(case), BLOCK=self.n)
        return self.host(out)

    def triton(self, case, dtype: str, values: list[np.ndarray]):
        """Triton's result, or None where its libdevice does not take these operands."""
        out = self.tensor(np.zeros(self.n), case.result or dtype)
        try:
            triton_apply_kernel(case.name, arity(case))[(self.n // 256,)](
                *self.operands(case, dtype, values), out, BLOCK=256)
        except Exception:  # Triton rejects the dtype (its libdevice takes float32/float64) or lacks the name
            return None
        return self.host(out)


def measure(runner: Runner, case, dtype: str, values: list[np.ndarray]) -> dict:
    """The row of one (case, dtype)."""
    result = case.result or dtype
    got = runner.tilec(case, dtype, values)
    row = {"case": f"{case_id(case)}-{dtype}", "n": int(got.size)}
    floating = result.startswith("float") or result == "bfloat16"
    want = np.asarray(expected(case, dtype, values))
    if floating:
        nan_mismatch = np.isnan(got.astype(np.float64)) != np.isnan(want.astype(np.float64))
        error = np.where(nan_mismatch, 0.0, ulps(got, want, result))
        worst = int(np.argmax(error))
        with np.errstate(all="ignore"):
            absolute = np.abs(got.astype(np.float64) - want.astype(np.float64))
        absolute = np.where(nan_mismatch | ~np.isfinite(absolute), 0.0, absolute)
        row.update(max_ulps=float(error[worst]), max_abs=float(absolute.max()), nan_mismatches=int(nan_mismatch.sum()),
                   worst=[float(v[worst]) for v in values] + [float(got[worst]), float(want.astype(np.float64)[worst])])
    else:
        row.update(wrong=int((got != want.astype(got.dtype)).sum()))
    theirs = runner.triton(case, dtype, values)
    row["triton_differ"] = None if theirs is None else int((~both_nan_or_equal(got, theirs)).sum())
    if theirs is not None and floating:
        row["triton_max_ulps"] = float(ulps(got, theirs, result).max())
    if dtype in NARROW and case.result is None:
        wide = runner.tilec(case, "float32", [v.astype(np.float32) if v.dtype.kind == "f" else v for v in values])
        rounded = runner.host(runner.tensor(wide, "float32").to(getattr(runner.torch, dtype)))
        row["narrow_differ"] = int((~both_nan_or_equal(got, rounded)).sum())
    return row


def table(rows: list[dict]) -> str:
    headers = ["case", "max ulps", "NaN mismatches", "wrong ints", "differ from Triton", "narrow differ"]
    cells = [[r["case"], f"{r['max_ulps']:.3g}" if "max_ulps" in r else "", str(r.get("nan_mismatches", "")),
              str(r.get("wrong", "")), "-" if r["triton_differ"] is None else str(r["triton_differ"]),
              str(r.get("narrow_differ", ""))] for r in rows]
    return format_table(headers, cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4096, help="inputs per case (a power of two, at least 256)")
    parser.add_argument("--only", default="", help="cases whose id contains this text")
    parser.add_argument("--out", type=Path, default=RESULTS / "libdevice_accuracy.json")
    opts = parser.parse_args()
    torch = require_cuda()
    runner = Runner(torch, opts.n)
    rows = []
    for param in case_dtypes():
        case, dtype = param.values
        if opts.only not in param.id:
            continue
        rng = np.random.default_rng(zlib.crc32(param.id.encode()))
        rows.append(measure(runner, case, dtype, sample(case, dtype, opts.n, rng)))
        print(rows[-1], flush=True)
    write_json(opts.out, {"device": device_info(), "n": opts.n, "rows": rows})
    print(table(rows))


if __name__ == "__main__":
    main()
