"""Fit the polynomial coefficients of tilec's portable math library and
write them to ``tilec/codegen_llvm/portable_math/coefficients.py``.

Each approximation is a weighted minimax polynomial found by Remez's
exchange in 40-digit arithmetic (mpmath), then rounded to f32 or f64.  The
degree is the smallest whose rounded coefficients reach the target
(``TARGET``) on a dense grid.  Needs mpmath, which tilec does not: run it
where mpmath is installed, from the repository root:

    python3 benchmarks/fit_portable_math.py
"""
from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import mpmath as mp

mp.mp.dps = 40
OUT = Path(__file__).resolve().parent.parent / "tilec/codegen_llvm/portable_math/coefficients.py"

#: The largest weighted error each fit aims for: well inside half an ulp.
TARGET = {"f32": 2.0 ** -27, "f64": 2.0 ** -56}
FIRST_TERMS = {"f32": 2, "f64": 5}


@dataclass(frozen=True)
class Fit:
    """``g(t) ~ sum c_i t^i`` on ``[lo, hi]``, the error weighted by ``weight(t)``
    (what an error in ``g`` is, relative to the function's value)."""

    name: str
    g: Callable
    weight: Callable
    lo: object
    hi: object
    max_degree: int = 30
    extra_bits: int = 0  # aim this much past TARGET (erf: erfc = 1 - erf magnifies its error)


def _round(value, kind: str) -> float:
    x = float(value)
    return struct.unpack("<f", struct.pack("<f", x))[0] if kind == "f32" else x


def _solve_reference(fit: Fit, n: int, points: list) -> tuple[list, object]:
    """The coefficients and levelled error E with weight*(P - g) = +-E at ``points``."""
    rows, rhs = [], []
    for i, t in enumerate(points):
        w = fit.weight(t)
        rows.append([w * t ** j for j in range(n)] + [(-1) ** i])
        rhs.append(w * fit.g(t))
    sol = mp.lu_solve(mp.matrix(rows), mp.matrix(rhs))
    return [sol[j] for j in range(n)], sol[n]


class Grid:
    """Chebyshev-spaced points of ``[lo, hi]`` with g and the weight there (computed once)."""

    def __init__(self, fit: Fit, count: int):
        lo, hi = mp.mpf(fit.lo), mp.mpf(fit.hi)
        self.points = [lo + (hi - lo) * (1 - mp.cos(mp.pi * k / (count - 1))) / 2 for k in range(count)]
        self.values = [fit.g(t) for t in self.points]
        self.weights = [fit.weight(t) for t in self.points]

    def errors(self, coeffs: list) -> list:
        rev = coeffs[::-1]
        return [w * (mp.polyval(rev, t) - g) for t, g, w in zip(self.points, self.values, self.weights)]


def _alternating_extrema(points: list, errors: list, want: int) -> list:
    """One extremum per run of one sign, trimmed to ``want`` points that alternate."""
    runs: list = []
    for t, e in zip(points, errors):
        if runs and (runs[-1][1] >= 0) == (e >= 0):
            if abs(e) > abs(runs[-1][1]):
                runs[-1] = (t, e)
        else:
            runs.append((t, e))
    while len(runs) > want:
        drop = 0 if abs(runs[0][1]) < abs(runs[-1][1]) else len(runs) - 1
        runs.pop(drop)
    return [t for t, _ in runs]


def remez(fit: Fit, grid: Grid, n: int, iterations: int = 10) -> list:
    lo, hi = mp.mpf(fit.lo), mp.mpf(fit.hi)
    points = [lo + (hi - lo) * (1 - mp.cos(mp.pi * k / n)) / 2 for k in range(n + 1)]
    coeffs = None
    for _ in range(iterations):
        coeffs, _ = _solve_reference(fit, n, points)
        found = _alternating_extrema(grid.points, grid.errors(coeffs), n + 1)
        if len(found) < n + 1 or found == points:
            break
        points = found
    return coeffs


def fit_for(fit: Fit, kind: str) -> tuple[int, float, list]:
    """The fewest terms whose rounded coefficients reach ``TARGET[kind]``, or
    the best there is when rounding them to the type stops the error falling first."""
    grid = Grid(fit, 1500)
    best = None
    for n in range(FIRST_TERMS[kind], fit.max_degree + 1):
        try:
            coeffs = [_round(c, kind) for c in remez(fit, grid, n)]
        except ZeroDivisionError:  # past what the type's coefficients can resolve
            break
        worst = float(max(abs(e) for e in grid.errors([mp.mpf(c) for c in coeffs])))
        if best is None or worst < 0.8 * best[1]:
            best = (n, worst, coeffs)
        elif n >= best[0] + 3:
            break  # rounding the coefficients, not the degree, limits it now
        if worst <= TARGET[kind] * 2.0 ** -fit.extra_bits:
            return best
    print(f"warning: {fit.name} {kind} reached only {best[1]:.3g}", file=sys.stderr)
    return best


def _ratio(num: Callable, den: Callable) -> Callable:
    return lambda t: num(t) / den(t)


LN2 = mp.log(2)
REDUCED = mp.pi / 4 + mp.pi / 32  # the largest |r| of sin and cos's reduction
TINY = mp.mpf(2) ** -40  # stands in for 0 where g has a removable singularity there


def _erfcx_in_z(L):
    """(1 + 2x) erfcx(x) as a function of z = (x - L)/(x + L)."""
    def g(z):
        x = L * (1 + z) / (1 - z)
        return (1 + 2 * x) * mp.exp(x * x) * mp.erfc(x)
    return g


def _z_of(x, L):
    return (x - L) / (x + L)


def fits(kind: str) -> list[Fit]:
    """The approximations, for ``kind`` (the erfc tail's range depends on it)."""
    x_underflow = {"f32": mp.mpf("10.1"), "f64": mp.mpf("27.3")}[kind]
    L = {"f32": mp.mpf(2), "f64": mp.mpf(3)}[kind]
    one = lambda t: mp.mpf(1)  # noqa: E731
    return [
        # exp(r) = 1 + r + r^2 g(r), |r| <= ln2/2
        Fit("exp", lambda r: (mp.exp(r) - 1 - r) / r ** 2, lambda r: r ** 2 / mp.exp(r), -LN2 / 2, LN2 / 2 + TINY),
        # 2^r = 1 + r g(r), |r| <= 1/2
        Fit("exp2", lambda r: (mp.exp(r * LN2) - 1) / r, lambda r: r / mp.exp(r * LN2), -0.5, 0.5 + TINY),
        # 10^r = 1 + r g(r), |r| <= log10(2)/2
        Fit("exp10", lambda r: (mp.power(10, r) - 1) / r, lambda r: r / mp.power(10, r),
            -mp.log10(2) / 2, mp.log10(2) / 2 + TINY),
        # expm1(r) = r + r^2/2 + r^3 g(r)
        Fit("expm1", lambda r: (mp.expm1(r) - r - r * r / 2) / r ** 3, lambda r: r ** 3 / mp.expm1(r),
            -LN2 / 2, LN2 / 2 + TINY),
        # log(1+f) = 2s + s z g(z), s = f/(2+f), z = s^2 <= ((sqrt2-1)/(sqrt2+1))^2
        Fit("log", lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / (mp.sqrt(z) * z), lambda z: z / 2,
            TINY, ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2),
        # the same for pow, whose log needs more bits
        Fit("log_pow", lambda z: (2 * mp.atanh(mp.sqrt(z)) - 2 * mp.sqrt(z)) / (mp.sqrt(z) * z), lambda z: z / 2,
            TINY, ((mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)) ** 2, extra_bits=6),
        # sin(r) = r + r^3 g(r^2), |r| <= pi/4 + pi/32: q = rint(2x/pi) may be off by
        # an eighth where 2x/pi has 3 fraction bits left (f32 to 2^21, f64 to 2^50)
        Fit("sin", lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / (z * mp.sqrt(z)),
            lambda z: z * mp.sqrt(z) / mp.sin(mp.sqrt(z)), TINY, REDUCED ** 2),
        # cos(r) = 1 - r^2/2 + r^4 g(r^2)
        Fit("cos", lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z ** 2, lambda z: z ** 2 / mp.cos(mp.sqrt(z)),
            TINY, REDUCED ** 2),
        # atan(t) = t + t^3 g(t^2), |t| <= 7/16
        Fit("atan", lambda z: (mp.atan(mp.sqrt(z)) - mp.sqrt(z)) / (z * mp.sqrt(z)),
            lambda z: z * mp.sqrt(z) / mp.atan(mp.sqrt(z)), TINY, mp.mpf(7) ** 2 / 16 ** 2),
        # asin(s) = s + s^3 g(s^2), s <= 1/2
        Fit("asin", lambda z: (mp.asin(mp.sqrt(z)) - mp.sqrt(z)) / (z * mp.sqrt(z)),
            lambda z: z * mp.sqrt(z) / mp.asin(mp.sqrt(z)), TINY, mp.mpf(1) / 4),
        # tanh(x) = x + x^3 g(x^2), |x| <= 0.55
        Fit("tanh", lambda z: (mp.tanh(mp.sqrt(z)) - mp.sqrt(z)) / (z * mp.sqrt(z)),
            lambda z: z * mp.sqrt(z) / mp.tanh(mp.sqrt(z)), TINY, mp.mpf("0.55") ** 2),
        # sinh(x) = x + x^3 g(x^2), |x| <= 1
        Fit("sinh", lambda z: (mp.sinh(mp.sqrt(z)) - mp.sqrt(z)) / (z * mp.sqrt(z)),
            lambda z: z * mp.sqrt(z) / mp.sinh(mp.sqrt(z)), TINY, mp.mpf(1)),
        # erf(x) = x + x (c + x^2 g(x^2)), |x| <= 0.875, c = 2/sqrt(pi) - 1 exactly (a pair)
        Fit("erf", lambda z: (mp.erf(mp.sqrt(z)) / mp.sqrt(z) - 2 / mp.sqrt(mp.pi)) / z,
            lambda z: z * mp.sqrt(z) / mp.erf(mp.sqrt(z)), TINY, mp.mpf("0.875") ** 2, extra_bits=3),
        # erfc(x) = exp(-x^2) g(z) / (1 + 2x), z = (x - L)/(x + L), 0.875 <= x <= underflow
        Fit("erfc", _erfcx_in_z(L), lambda z: 1 / _erfcx_in_z(L)(z), _z_of(mp.mpf("0.875"), L), _z_of(x_underflow, L)),
    ]


EXACT = {
    "ln2": mp.log(2), "ln10": mp.log(10), "log2e": 1 / mp.log(2), "log10e": 1 / mp.log(10),
    "log10_2": mp.log10(2), "log2_10": mp.log(10) / mp.log(2), "pi": mp.pi, "pi_2": mp.pi / 2,
    "pi_4": mp.pi / 4, "two_over_pi": 2 / mp.pi, "pi_8": mp.pi / 8, "atan_half": mp.atan(mp.mpf(1) / 2),
    "atan_1_5": mp.atan(mp.mpf(3) / 2), "erf_slope_minus_1": 2 / mp.sqrt(mp.pi) - 1,
}

#: The erfc tail's centre L of z = (x - L)/(x + L), per type (must match ``fits``).
ERFC_CENTRE = {"f32": 2.0, "f64": 3.0}


def main() -> None:
    lines = [
        '"""Polynomial coefficients of the portable math library, lowest degree first.',
        "",
        "Generated by ``benchmarks/fit_portable_math.py`` (weighted minimax by Remez's exchange,",
        "rounded to the type); do not edit by hand.  ``MAX_ERROR`` is each fit's largest weighted",
        'error with the rounded coefficients (what the fit adds, relative to the function)."""',
        "",
        f"ERFC_CENTRE = {ERFC_CENTRE!r}",
        "",
        "#: Constants to 40 digits, for splitting into sums of floats.",
        "EXACT = {",
        *(f'    "{name}": "{mp.nstr(value, 40)}",' for name, value in EXACT.items()),
        "}",
        "",
    ]
    errors = {}
    for kind in ("f32", "f64"):
        lines.append(f"{kind.upper()} = {{")
        for fit in fits(kind):
            n, worst, coeffs = fit_for(fit, kind)
            errors[(fit.name, kind)] = worst
            print(f"{kind} {fit.name}: {n} terms, error {worst:.3g} (2^{float(mp.log(worst, 2)):.1f})", file=sys.stderr)
            body = ", ".join(repr(c) for c in coeffs)
            lines.append(f'    "{fit.name}": ({body},),')
        lines.append("}")
        lines.append("")
    lines.append("MAX_ERROR = {")
    lines += [f'    ("{name}", "{kind}"): {worst:.3g},' for (name, kind), worst in errors.items()]
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
