"""Property: no pass changes what a kernel computes.  Random runnable kernels
(``random_kernels``) are interpreted before and after each pass -- alone, and
chained in pipeline order -- and after ``optimize``; what they store must be
identical (bitwise for ints; floats equal with the same sign, or both NaN)."""
from __future__ import annotations

from hypothesis import given, settings
from opt.random_kernels import kernel_cases, same_results

from tilec.ir.printer import print_function
from tilec.ir.verify import verify_function
from tilec.opt import DEFAULT_PIPELINE, optimize
from tilec.opt.pass_manager import pass_name

EQUIVALENCE = settings(max_examples=50, deadline=None)


def _check_same(case, fn, want, what: str) -> None:
    verify_function(fn)
    got = case.run(fn)
    assert same_results(got, want), (f"{what} changed the results\nwant {want}\ngot  {got}\n"
                                     f"before:\n{print_function(case.fn)}\nafter:\n{print_function(fn)}")


@EQUIVALENCE
@given(kernel_cases())
def test_each_pass_preserves_results(case):
    verify_function(case.fn)
    want = case.run(case.fn)
    chained = case.fn
    for p in DEFAULT_PIPELINE:
        _check_same(case, p(case.fn), want, pass_name(p))
        chained = p(chained)
        _check_same(case, chained, want, f"{pass_name(p)} (chained)")


@EQUIVALENCE
@given(kernel_cases())
def test_optimize_preserves_results(case):
    want = case.run(case.fn)
    _check_same(case, optimize(case.fn), want, "optimize")
