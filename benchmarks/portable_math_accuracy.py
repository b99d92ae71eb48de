"""How accurate tilec's portable math library is, function by function, on
this host (``tests/codegen/portable_math_cases.py``: each function compiled
through ``scalar_math`` with ``PORTABLE_MATH`` and JIT-run).

For f32 and f64, ``--n`` inputs per function (uniform over the function's
interesting range, log-uniform over every magnitude, zeros, infinities,
NaN, subnormals) against the references of ``portable_math_cases``; for f64
erf and erfc against mpmath where it is installed (``math.erf`` is itself
off by an ulp or so), on a tenth of the inputs.  Prints the largest error
in ulps, and where it happens, as the table ``docs/internals.md`` quotes.

    python benchmarks/portable_math_accuracy.py [--n 400000] [--seed 0]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from codegen.portable_math_cases import CASES, compiled, reference, sample, ulp_errors  # noqa: E402


def _mpmath_reference(name: str, xs: list[np.ndarray]) -> np.ndarray | None:
    """erf/erfc in long double from mpmath (80 bits), or None without mpmath."""
    try:
        import mpmath
    except ImportError:
        return None
    mpmath.mp.prec = 80
    fn, plain = {"erf": (mpmath.erf, math.erf), "erfc": (mpmath.erfc, math.erfc)}[name]
    wide = [fn(mpmath.mpf(float(v))) if 0 < abs(v) < 30 else mpmath.mpf(plain(float(v))) for v in xs[0]]
    ref = np.array([np.longdouble(mpmath.nstr(v, 25)) for v in wide], np.longdouble)
    return np.where(xs[0] == 0, np.array([plain(float(v)) for v in xs[0]]), ref)  # mpmath has no -0


def measure(name: str, kind: str, n: int, rng: np.random.Generator) -> tuple[float, tuple]:
    xs = sample(name, kind, n, rng)
    with np.errstate(all="ignore"):
        got = compiled(name, kind)(*xs)
    ref = None
    if kind == "f64" and name in ("erf", "erfc"):
        xs, got = [x[::10] for x in xs], got[::10]
        ref = _mpmath_reference(name, xs)
    if ref is None:
        ref = reference(name, kind, *xs)
    errors = ulp_errors(got, ref, kind)
    worst = int(np.argmax(errors))
    return float(errors[worst]), (tuple(float(x[worst]) for x in xs), float(got[worst]), float(ref[worst]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print("| function | f32 max ulp | f64 max ulp |\n| --- | --- | --- |")
    for name in CASES:
        cells = []
        for kind in ("f32", "f64"):
            err, (at, got, ref) = measure(name, kind, args.n, rng)
            cells.append(f"{err:.2f}")
            print(f"  {name} {kind}: {err:.3f} at {at}: {got!r} vs {ref!r}", file=sys.stderr)
        print(f"| {name} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
