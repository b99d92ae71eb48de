"""The function forms of the arithmetic operators: ``tl.add``, ``tl.sub``, ``tl.mul``.

Each builds what the operator builds (``semantic.binary``), promotion and
pointer arithmetic included.  Triton's ``sanitize_overflow`` only adds
overflow checks in its debug mode; tilec's integers always wrap, so it is
accepted and has no effect.
"""
from __future__ import annotations

from tilec import language as tl
from tilec.frontend import semantic
from tilec.frontend.tl_ops import implements


def _operator(name: str):
    def impl(ctx, x, y, sanitize_overflow):
        return semantic.binary(ctx, name, x, y)
    return impl


for _stub in (tl.add, tl.sub, tl.mul):
    implements(_stub)(_operator(_stub.__name__))
