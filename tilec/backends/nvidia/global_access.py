"""Global loads and stores as PTX ``ld``/``st``: masked ones predicated, and
those that carry Triton's cache hints.

LLVM has no predicated load: written as LLVM IR, a masked access is a branch
around it (``codegen_llvm/memory.py``'s generic path) and NVPTX keeps the
branch, one per vector.  Here a masked access is one predicated instruction,
as Triton emits it; a load first moves its ``other`` words into its
destinations, so lanes whose mask is off keep them::

    mov.b32 $0, $5; mov.b32 $1, $6; mov.b32 $2, $7; mov.b32 $3, $8;
    @$9 ld.global.v4.b32 {$0, $1, $2, $3}, [$4+4096];
    @$5 st.global.v4.b32 [$0+4096], {$1, $2, $3, $4};

(a store's predicate also holds its owner test, ``memory._owner``).  The
address is the register's base pointer and its constant byte offset
(``addresses.pointer_parts``) as the instruction's immediate: the registers
of a thread share a few base registers, as LLVM's own loads do.  (An inline
access taking its whole address as one register, tried before, gave every
access a 64-bit register of its own: docs/internals.md.)  An access that is
neither masked nor hinted stays LLVM's (``load`` gives None, ``store``
False).

Cache hints:

* ``cache_modifier`` is the PTX cache operator: ``.ca``/``.cg``/``.cv`` on
  loads, ``.wb``/``.cg``/``.cs``/``.wt`` on stores;
* ``eviction_policy`` is an L2 cache policy made by ``createpolicy`` and
  passed with ``.L2::cache_hint`` (PTX takes it beside a cache operator,
  where ``.L1::evict_*`` would exclude one);
* ``volatile`` is ``ld.volatile.global`` (PTX gives it no cache operator).

The access moves the same bytes as LLVM's: up to 16 per thread, as one
``b8``/``b16``/``b32``/``b64`` or a ``v2``/``v4`` of 32-bit words, the
values bitcast from and to the vector codegen asked for.  Every access
clobbers ``memory``, so LLVM keeps it in order with the other memory
accesses; only a volatile load is also a side effect.
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir as llir

from tilec.codegen_llvm.addresses import pointer_parts
from tilec.codegen_llvm.kernel import I32, Ctx
from tilec.codegen_llvm.maps import emit_inline_asm
from tilec.codegen_llvm.scalar_base import bit_width
from tilec.backends.nvidia.target import REGISTER_CONSTRAINTS

I64 = llir.IntType(64)
# PTX's address immediate is a signed 32-bit offset.
_IMMEDIATE = range(-2**31, 2**31)


def _words(t: llir.Type) -> tuple[int, int, llir.IntType]:
    """(how many, how wide, the register holding one): the PTX data operands
    that move a value of ``t`` (8-bit ones travel in 16-bit registers)."""
    bits = bit_width(t)
    n, w = (bits // 32, 32) if bits > 64 else (1, bits)
    return n, w, llir.IntType(max(16, w))


def _names(n: int, first: int) -> list[str]:
    return [f"${first + i}" for i in range(n)]


def _data(names: list[str]) -> tuple[str, str]:
    """The vector qualifier and the operand text of data operands ``names``:
    ``(".v4", "{$1, $2, $3, $4}")`` or ``("", "$1")``."""
    return (f".v{len(names)}", f"{{{', '.join(names)}}}") if len(names) > 1 else ("", names[0])


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


def _address(ptr: llir.Value, index: int) -> tuple[llir.Value, str]:
    """The base register to pass as operand ``index`` and the address text:
    ``[$4+4096]`` where ``ptr`` is a base moved by constant bytes."""
    base, offset = pointer_parts(ptr)
    if offset == 0 or offset not in _IMMEDIATE:
        return ptr, f"[${index}]"
    return base, f"[${index}+{offset}]"


def _width_name(bits: int) -> str:
    return f"b{max(8, bits)}"


def _to_words(ctx: Ctx, value: llir.Value) -> list[llir.Value]:
    """``value``'s bits as its data operands' registers (``_words``)."""
    n, w, wt = _words(value.type)
    b = ctx.b
    bits = b.bitcast(value, llir.IntType(w) if n == 1 else llir.VectorType(wt, n))
    if n > 1:
        return [b.extract_element(bits, I32(i)) for i in range(n)]
    return [b.zext(bits, wt) if wt.width != w else bits]


def _from_words(ctx: Ctx, got: llir.Value, vtype: llir.Type) -> llir.Value:
    """The value of ``vtype`` whose bits an inline access returned in ``got``."""
    n, w, wt = _words(vtype)
    b = ctx.b
    if n == 1:
        word = got if wt.width == w else b.trunc(got, llir.IntType(w))
    else:
        word = llir.Constant(llir.VectorType(wt, n), None)
        for i in range(n):
            word = b.insert_element(word, b.extract_value(got, i), I32(i))
    return b.bitcast(word, vtype) if word.type != vtype else word


def load(ctx: Ctx, ptr: llir.Value, vtype: llir.Type, mask: Optional[llir.Value], other: Optional[llir.Value],
         cache: str, eviction: str, volatile: bool) -> Optional[llir.Value]:
    """``*ptr`` as ``vtype`` through one ``ld.global`` with the hints, where
    ``mask`` (an i1, or None for always) holds; ``other`` (of ``vtype``) where
    it does not.  None for an
    unmasked access without hints (LLVM's own load)."""
    if mask is None and not (cache or eviction or volatile):
        return None
    instruction, policy = _access(ctx, "ld", cache, eviction, volatile)
    n, w, wt = _words(vtype)
    reg = REGISTER_CONSTRAINTS[wt.width]
    dest = _names(n, 0)
    base, address = _address(ptr, n)
    operands, constraints, text = [base] + policy, [f"={reg}"] * n + ["l"] * (1 + len(policy)), ""
    if mask is not None:
        fallback = _names(n, len(operands) + n)
        text = "".join(f"mov.b{wt.width} {d}, {f}; " for d, f in zip(dest, fallback))
        text += f"@${len(operands) + 2 * n} "
        operands += _to_words(ctx, other) + [mask]
        constraints += [reg] * n + ["b"]
    vec, dests = _data(dest)
    hint = f", ${n + 1}" if policy else ""
    text += f"{instruction}{vec}.{_width_name(w)} {dests}, {address}{hint};"
    result = wt if n == 1 else llir.LiteralStructType([wt] * n)
    got = emit_inline_asm(ctx, text, ",".join(constraints + ["~{memory}"]), operands, result,
                          side_effects=volatile)
    return _from_words(ctx, got, vtype)


def store(ctx: Ctx, ptr: llir.Value, value: llir.Value, mask: Optional[llir.Value], cache: str,
          eviction: str) -> bool:
    """Write ``value`` to ``ptr`` through one ``st.global`` with the hints,
    where ``mask`` (an i1, or None for always) holds; False for an unmasked
    access without hints (LLVM's own store)."""
    if mask is None and not (cache or eviction):
        return False
    instruction, policy = _access(ctx, "st", cache, eviction, False)
    n, w, wt = _words(value.type)
    base, address = _address(ptr, 0)
    operands = [base] + _to_words(ctx, value) + policy + ([mask] if mask is not None else [])
    constraints = ["l"] + [REGISTER_CONSTRAINTS[wt.width]] * n + ["l"] * len(policy)
    vec, src = _data(_names(n, 1))
    hint = f", ${n + 1}" if policy else ""
    guard = "" if mask is None else f"@${len(operands) - 1} "
    text = f"{guard}{instruction}{vec}.{_width_name(w)} {address}, {src}{hint};"
    constraints += ["b"] if mask is not None else []
    emit_inline_asm(ctx, text, ",".join(constraints + ["~{memory}"]), operands, llir.VoidType(), side_effects=True)
    return True
