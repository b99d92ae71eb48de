"""What codegen asks of a backend: ``TargetLowering``.

The lowering rules of ``codegen_llvm`` are written once, for every target.
Where a rule needs something only the hardware knows -- which thread this
is, how a block waits for its threads, how lanes swap values, how to print,
whether it runs the author's assembly -- it calls a hook of the ``TargetLowering`` the backend handed to
``lower``.  A backend may also bring rules of its own (``rules``: its
tensor-core ``dot``, its asynchronous copies), looked up before the generic
ones, and its math library (``math``).

A hook gets the lowering context (``kernel.Ctx``: the builder ``ctx.b``,
``ctx.call``, ``ctx.declare``...) and emits code at the builder's position.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Mapping, Optional

from llvmlite import ir as llir

from tilec.errors import TilecError
from tilec.codegen_llvm.scalar_base import C_MATH, MathLibrary

if TYPE_CHECKING:
    from tilec.codegen_llvm.kernel import Ctx, Rule
    from tilec.ir.core import Function


class TargetLowering(ABC):
    """A backend's answers to codegen (module docstring).  Attributes with a
    default suit a target that has nothing special there; the abstract hooks
    every backend answers."""

    name: str = "generic"  # in messages: "the <name> backend cannot compile `op` yet"
    rules: Mapping[type, Rule] = {}  # op class -> ``rule(ctx, op)``, over the generic rules
    math: MathLibrary = C_MATH
    calling_convention: str = ""  # the kernel function's LLVM calling convention
    shared_address_space: int = 0  # LLVM address space of the block's shared memory

    def extra_parameters(self, fn: Function) -> list[tuple[str, llir.Type, str]]:
        """Parameters the kernel takes after ``fn``'s arguments, as (name, LLVM
        type, LLVM parameter attributes): a rule reads one as
        ``ctx.extra_params[name]``.  None by default."""
        return []

    # --- where this thread is --------------------------------------------------
    @abstractmethod
    def thread_id(self, ctx: Ctx) -> llir.Value:
        """The thread's index in its program's block (i32; warps are its
        consecutive runs of ``target.warp_size``)."""

    @abstractmethod
    def program_id(self, ctx: Ctx, axis: int) -> llir.Value:
        """The program's index along grid ``axis`` (0, 1, 2; i32)."""

    @abstractmethod
    def num_programs(self, ctx: Ctx, axis: int) -> llir.Value:
        """How many programs the grid has along ``axis`` (i32)."""

    # --- threads working together ----------------------------------------------
    @abstractmethod
    def barrier(self, ctx: Ctx) -> None:
        """Wait until every thread of the block gets here; their shared-memory
        writes before it are seen by all after it."""

    @abstractmethod
    def shuffle_xor(self, ctx: Ctx, word: llir.Value, lane_mask: int) -> llir.Value:
        """The i32 ``word`` of the lane of this warp whose lane id differs from
        ours by ``lane_mask`` (xor); every lane of the warp takes part."""

    def syncscope(self, scope: str) -> Optional[str]:
        """The LLVM syncscope of an atomic of tile-IR ``scope`` (``"gpu"``,
        ``"cta"``, ``"sys"``); None is the whole system, right for every scope."""
        return None

    # --- memory -----------------------------------------------------------------
    def load(self, ctx: Ctx, ptr: llir.Value, vtype: llir.Type, cache: str, eviction: str,
             volatile: bool) -> Optional[llir.Value]:
        """``*ptr`` as ``vtype`` through the target's own instruction for the
        cache hints (``tl.load``'s ``cache_modifier``, ``eviction_policy``,
        ``volatile``); None leaves it to LLVM's ``load``, the hints unused."""
        return None

    def store(self, ctx: Ctx, ptr: llir.Value, value: llir.Value, cache: str, eviction: str) -> bool:
        """Write ``value`` to ``ptr`` through the target's own instruction for
        the cache hints; False leaves it to LLVM's ``store``."""
        return False

    def atomic_rmw(self, ctx: Ctx, name: str, ptr: llir.Value, value: llir.Value, sem: str,
                   scope: str) -> Optional[llir.Value]:
        """The old value of read-modify-write ``name`` (LLVM's ``atomicrmw``
        operation: ``add``, ``fadd``, ``umax``...) of ``value`` (its memory form)
        at ``ptr``, with tile-IR ordering ``sem`` and ``scope``, as the target's
        own instruction; None leaves it to LLVM's ``atomicrmw`` between fences
        (``memory._fenced``)."""
        return None

    def atomic_cas(self, ctx: Ctx, ptr: llir.Value, cmp: llir.Value, val: llir.Value, sem: str,
                   scope: str) -> Optional[llir.Value]:
        """The old value at ``ptr`` of a compare-and-swap (bit by bit) of
        ``cmp`` for ``val`` as the target's own instruction; None leaves it to
        LLVM's ``cmpxchg``."""
        return None

    def shared_memory(self, ctx: Ctx) -> Optional[llir.Value]:
        """Where the block's shared memory starts, when the target hands it to
        the kernel (a CPU's scratch argument); None is the module's
        ``@tilec_smem``, which the GPU places."""
        return None

    # --- debugging ---------------------------------------------------------------
    @abstractmethod
    def printf(self, ctx: Ctx, fmt: str, args: list[llir.Value]) -> None:
        """Print C's ``printf(fmt, *args)`` (``args`` already promoted as C's
        varargs are: doubles, i32 or wider ints, pointers as i64)."""

    @abstractmethod
    def assert_fail(self, ctx: Ctx, message: str, file: str, line: int, function: str) -> None:
        """Stop the kernel with an error the host sees, reporting ``message``
        at ``file:line`` in ``function`` (emitted where an assertion failed)."""

    # --- the author's assembly ---------------------------------------------------
    def inline_asm(self, ctx: Ctx, asm: str, constraints: str, operands: list[llir.Value],
                   result: llir.Type, side_effects: bool) -> llir.Value:
        """Run ``asm``, the target's assembly text, on ``operands`` under LLVM
        ``constraints``, giving ``result`` (``tl.inline_asm_elementwise``;
        ``maps.emit_inline_asm`` emits it).  A target that runs no such text
        says so here, and the kernel fails to compile at the asm's line."""
        raise TilecError(f"the {self.name} backend cannot run inline assembly (`tl.inline_asm_elementwise`): "
                         "this kernel needs a GPU target whose assembly the text is written in")

    # --- the kernel function -----------------------------------------------------
    def kernel_attributes(self, num_warps: int) -> dict[str, str]:
        """String attributes of the kernel's ``define`` (launch bounds...)."""
        return {}
