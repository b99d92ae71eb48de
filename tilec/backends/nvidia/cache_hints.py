"""Loads and stores that carry Triton's cache hints, as PTX ``ld``/``st``.

LLVM's NVPTX backend has no way to say ``ld.global.cg`` or an eviction
priority, so an access with a ``cache_modifier``, an ``eviction_policy`` or
``volatile`` is one inline ``ld``/``st`` (as Triton emits them):

* ``cache_modifier`` is the PTX cache operator: ``.ca``/``.cg``/``.cv`` on
  loads, ``.wb``/``.cg``/``.cs``/``.wt`` on stores;
* ``eviction_policy`` is an L2 cache policy made by ``createpolicy`` and
  passed with ``.L2::cache_hint`` (PTX takes it beside a cache operator,
  where ``.L1::evict_*`` would exclude one);
* ``volatile`` is ``ld.volatile.global`` (PTX gives it no cache operator).

The access moves the same bytes as the plain one: up to 16 per thread, as
one ``b8``/``b16``/``b32``/``b64`` or a ``v2``/``v4`` of 32-bit words, the
values bitcast from and to the vector codegen asked for.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as llir

from tilec.codegen_llvm.kernel import I32, Ctx
from tilec.codegen_llvm.maps import emit_inline_asm
from tilec.codegen_llvm.scalar_base import bit_width
from tilec.backends.nvidia.target import REGISTER_CONSTRAINTS

I64 = llir.IntType(64)


def _words(t: llir.Type) -> tuple[int, int, llir.IntType]:
    """(how many, how wide, the register holding one): the PTX data operands
    that move a value of ``t`` (8-bit ones travel in 16-bit registers)."""
    bits = bit_width(t)
    n, w = (bits // 32, 32) if bits > 64 else (1, bits)
    return n, w, llir.IntType(max(16, w))


def _data(n: int, first: int) -> tuple[str, str]:
    """The vector qualifier and the operand text of ``n`` data operands
    numbered from ``first``: ``(".v4", "{$1, $2, $3, $4}")`` or ``("", "$1")``."""
    names = ", ".join(f"${first + i}" for i in range(n))
    return (f".v{n}", f"{{{names}}}") if n > 1 else ("", names)


def _access(ctx: Ctx, op: str, cache: str, eviction: str, volatile: bool) -> tuple[str, list]:
    """``ld.global.cg.L2::cache_hint`` and the like: the instruction up to its
    vector width, and the cache-policy operand it takes (an
    ``eviction_policy``'s ``createpolicy``; ``evict_normal`` is the default
    and needs none)."""
    if volatile:
        return f"{op}.volatile.global", []
    if eviction in ("", "evict_normal"):
        return f"{op}.global{cache}", []
    level = eviction.replace("evict_", "L2::evict_")
    policy = emit_inline_asm(ctx, f"createpolicy.fractional.{level}.b64 $0, 1.0;", "=l", [], I64,
                             side_effects=False)
    return f"{op}.global{cache}.L2::cache_hint", [policy]


def _policy_operand(policy: list, index: int) -> str:
    return f", ${index}" if policy else ""


def _width_name(bits: int) -> str:
    return f"b{max(8, bits)}"


def load(ctx: Ctx, ptr: llir.Value, vtype: llir.Type, cache: str, eviction: str,
         volatile: bool) -> Optional[llir.Value]:
    """``*ptr`` as ``vtype`` through one ``ld.global`` with the hints (module
    docstring); None when there are none (LLVM's own load)."""
    if not (cache or eviction or volatile):
        return None
    instruction, policy = _access(ctx, "ld", cache, eviction, volatile)
    n, w, wt = _words(vtype)
    vec, dest = _data(n, 0)
    text = f"{instruction}{vec}.{_width_name(w)} {dest}, [${n}]{_policy_operand(policy, n + 1)};"
    reg = REGISTER_CONSTRAINTS[wt.width]
    constraints = ",".join([f"={reg}"] * n + ["l"] + ["l"] * len(policy)) + ",~{memory}"
    result = wt if n == 1 else llir.LiteralStructType([wt] * n)
    got = emit_inline_asm(ctx, text, constraints, [ptr] + policy, result, side_effects=True)
    b = ctx.b
    if n == 1:
        word = got if wt.width == w else b.trunc(got, llir.IntType(w))
        return b.bitcast(word, vtype) if word.type != vtype else word
    words = llir.Constant(llir.VectorType(wt, n), None)
    for i in range(n):
        words = b.insert_element(words, b.extract_value(got, i), I32(i))
    return b.bitcast(words, vtype)


def store(ctx: Ctx, ptr: llir.Value, value: llir.Value, cache: str, eviction: str) -> bool:
    """Write ``value`` to ``ptr`` through one ``st.global`` with the hints;
    False when there are none (LLVM's own store)."""
    if not (cache or eviction):
        return False
    instruction, policy = _access(ctx, "st", cache, eviction, False)
    n, w, wt = _words(value.type)
    b = ctx.b
    bits = b.bitcast(value, llir.IntType(w) if n == 1 else llir.VectorType(wt, n))
    words = [bits] if n == 1 else [b.extract_element(bits, I32(i)) for i in range(n)]
    if n == 1 and wt.width != w:
        words = [b.zext(bits, wt)]
    vec, src = _data(n, 1)
    text = f"{instruction}{vec}.{_width_name(w)} [$0], {src}{_policy_operand(policy, n + 1)};"
    constraints = ",".join(["l"] + [REGISTER_CONSTRAINTS[wt.width]] * n + ["l"] * len(policy)) + ",~{memory}"
    emit_inline_asm(ctx, text, constraints, [ptr] + words + policy, llir.VoidType(), side_effects=True)
    return True
