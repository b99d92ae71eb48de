"""The pass manager (order, dumps, verification after each pass) and
``optimize`` (the default pipeline to a fixed point), on golden text; a
target's lowering passes (layouts, pipelining) through it too."""
from __future__ import annotations

import numpy as np
import pytest
from kernels.matmul import matmul_kernel
from opt.golden import apply_pass, function_text

import tilec
from tilec.backends.nvidia import pipeline
from tilec.ir import ops
from tilec.ir.core import Function, VerifyError, clone_block
from tilec.ir.parser import parse_function
from tilec.ir.printer import print_function
from tilec.opt import PassManager, canonicalize, eliminate_dead_code, optimize

BODY = """
%z = constant {value = 0, type = i32} : i32
%a = add %x, %z : i32
print [%a] {prefix = ""}
"""
AFTER_CANONICALIZE = """
%z = constant {value = 0, type = i32} : i32
print [%x] {prefix = ""}
"""
AFTER_DCE = """
print [%x] {prefix = ""}
"""


def _dump_of(text: str, name: str) -> str:
    return f"// -----// IR after {name} //----- //\n{text}\n"


def test_dump_after_each_pass_in_order(monkeypatch, capsys):
    monkeypatch.setenv("TILEC_DUMP", "llir,ir")
    out = PassManager([canonicalize, eliminate_dead_code]).run(parse_function(function_text(BODY)))
    assert print_function(out) == function_text(AFTER_DCE)
    assert capsys.readouterr().err == (_dump_of(function_text(AFTER_CANONICALIZE), "canonicalize")
                                       + _dump_of(function_text(AFTER_DCE), "eliminate_dead_code"))


@pytest.mark.parametrize("env", ["", "0", "llir", "ptx,tir"])
def test_no_dump_unless_ir_is_named(monkeypatch, capsys, env):
    monkeypatch.setenv("TILEC_DUMP", env)
    PassManager([canonicalize]).run(parse_function(function_text(BODY)))
    assert capsys.readouterr().err == ""


def _broken_pass(fn: Function) -> Function:
    """Copies ``fn`` but drops the definition of the value the last op prints."""
    body = clone_block(fn.body, {})
    body.ops = [op for op in body.ops if not isinstance(op, ops.Add)]
    return Function(fn.name, body, fn.arg_names, fn.arg_attrs)


def test_verification_names_the_pass_that_broke_the_ir():
    fn = parse_function(function_text(BODY))
    with pytest.raises(VerifyError, match="IR is invalid after pass _broken_pass: .*print"):
        PassManager([_broken_pass, canonicalize]).run(fn)
    broken = PassManager([_broken_pass], verify=False).run(fn)  # off: no check
    assert not any(isinstance(op, ops.Add) for op in broken.body.ops)


OPTIMIZE_CASES = {
    "fold_feeds_identity_feeds_cse_and_dce": (
        """
        %two = constant {value = 2, type = i32} : i32
        %one = constant {value = 1, type = i32} : i32
        %k = sub %two, %one : i32
        %a = mul %x, %k : i32
        %b = mul %x, %one : i32
        %c1 = add %a, %b : i32
        %d = add %x, %x : i32
        print [%c1, %d] {prefix = ""}
        """, """
        %c1 = add %x, %x : i32
        print [%c1, %c1] {prefix = ""}
        """),
    "invariant_leaves_two_loops_in_two_rounds": (
        """
        %z = constant {value = 0, type = i32} : i32
        %one = constant {value = 1, type = i32} : i32
        %r = for %z, %x, %one, [%z] : i32 {
        ^(%i: i32, %acc: i32):
          %s = for %z, %y, %one, [%acc] : i32 {
          ^(%j: i32, %inner: i32):
            %k = mul %x, %y : i32
            %n = add %inner, %k : i32
            yield [%n]
          }
          yield [%s]
        }
        print [%r] {prefix = ""}
        """, """
        %z = constant {value = 0, type = i32} : i32
        %one = constant {value = 1, type = i32} : i32
        %k = mul %x, %y : i32
        %r = for %z, %x, %one, [%z] : i32 {
        ^(%i: i32, %acc: i32):
          %s = for %z, %y, %one, [%acc] : i32 {
          ^(%j: i32, %inner: i32):
            %n = add %inner, %k : i32
            yield [%n]
          }
          yield [%s]
        }
        print [%r] {prefix = ""}
        """),
}


@pytest.mark.parametrize("name", OPTIMIZE_CASES)
def test_optimize_reaches_the_fixed_point(name):
    body, expected = OPTIMIZE_CASES[name]
    got = apply_pass(optimize, function_text(body))
    assert got == function_text(expected)
    assert apply_pass(optimize, got) == got


# --------------------------------------------------------------------------- #
# A target's lowering passes run through the pass manager too
# --------------------------------------------------------------------------- #

def _compile_matmul_for_sm_90():
    """A fresh compile (no cache) of the tutorial's matmul for sm_90: no GPU needed."""
    a = np.zeros((64, 64), np.float16)
    return tilec.jit(matmul_kernel.fn).compile(
        a, a, a, 64, 64, 64, 64, 1, 64, 1, 64, 1, target="sm_90", num_warps=4, num_stages=3,
        BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="")


GPU_LOWERING = ["assign_layouts", "hoist_loop_invariants", "eliminate_common_subexpressions", "pipeline_loops",
                "prefetch_loops", "stage_invariant_operands", "store_blocks_in_bulk"]


def test_the_layout_and_pipelining_passes_show_in_the_ir_dump(monkeypatch, capsys):
    monkeypatch.setenv("TILEC_CACHE", "0")
    monkeypatch.setenv("TILEC_DUMP", "ir")
    compiled = _compile_matmul_for_sm_90()
    dumps = capsys.readouterr().err.split("// -----// IR after ")[1:]
    names = [d.split(" //----- //\n", 1)[0] for d in dumps]
    assert names[-len(GPU_LOWERING):] == GPU_LOWERING    # after the generic pipeline's passes
    pipelined = GPU_LOWERING.index("pipeline_loops") - len(GPU_LOWERING)
    assert "async_copy" in dumps[pipelined] and "async_copy" not in dumps[pipelined - 1]  # pipeline_loops made them
    assert dumps[-1].split(" //----- //\n", 1)[1] == compiled.asm["tir-gpu"] + "\n"


def _dropping_the_first_op(fn: Function, num_stages, target, num_warps) -> Function:
    body = clone_block(fn.body, {})
    body.ops = body.ops[1:]
    return Function(fn.name, body, fn.arg_names, fn.arg_attrs)


def test_a_lowering_pass_that_breaks_the_ir_is_named(monkeypatch):
    """Under ``TILEC_CHECK=1`` (the test suite) every lowering pass is verified."""
    monkeypatch.setenv("TILEC_CACHE", "0")
    monkeypatch.setattr(pipeline, "pipeline_loops", _dropping_the_first_op)
    with pytest.raises(VerifyError, match="IR is invalid after pass _dropping_the_first_op: "):
        _compile_matmul_for_sm_90()
