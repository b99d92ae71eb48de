"""Golden-text checking of a pass: IR text in, exact IR text out.

The input must be valid IR; the output must verify, survive the text round
trip, and the input function must come out of the pass unchanged.
"""
from __future__ import annotations

import textwrap

from tilec.ir.parser import parse_function
from tilec.ir.printer import print_function
from tilec.ir.verify import check_roundtrip, verify_function

# Arguments of every golden function, so that cases are just a body.
SIGNATURE = ("func @k(%x: i32, %y: i32, %u: u8, %f: f32, %h: f16, %p: ptr<f32>, "
             "%t: tile<4xi32>, %c: i1) {\n")


def function_text(body: str) -> str:
    """A function with the shared ``SIGNATURE`` around ``body`` (dedented, indented by 2)."""
    lines = textwrap.dedent(body).strip("\n").splitlines()
    return SIGNATURE + "".join(f"  {line}\n" for line in lines) + "}\n"


def apply_pass(pass_fn, text: str) -> str:
    """The printed result of ``pass_fn`` on IR ``text``, checked as the module docstring says."""
    fn = parse_function(text)
    verify_function(fn)
    before = print_function(fn)
    out = pass_fn(fn)
    verify_function(out)
    check_roundtrip(out)
    assert print_function(fn) == before, "the pass mutated its input"
    return print_function(out)


def check_body(pass_fn, body: str, expected: str) -> None:
    """``pass_fn`` turns the function with ``body`` into the one with ``expected``."""
    got = apply_pass(pass_fn, function_text(body))
    want = function_text(expected)
    assert got == want, f"--- got ---\n{got}--- want ---\n{want}"
