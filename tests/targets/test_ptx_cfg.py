"""tilec.backends.nvidia.ptx_cfg: PTX text in, its control-flow graph and the loops
entered past their header out.  Hand-written shapes (the loop that hung the
H100 among them), then hypothesis: structured programs have none, and one
branch from before a loop into its body is found."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tilec.errors import TilecError
from tilec.backends.nvidia.stages import check_reducible
from tilec.backends.nvidia.ptx_cfg import control_flow_graphs, irreducible_entries


def entry(body: str, name: str = "k") -> str:
    return f".visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n{{\n{body}\n}}\n"


# The shape LLVM made of the layer-norm backward at N = 1: thread 0 stores, then
# enters the lock loop at its header; the other threads jump to the loop's barrier.
TWO_ENTRY_LOOP = entry("""\
\tsetp.ne.b32 \t%p1, %r1, 0;
\t@%p1 bra \t$L__BB0_4;
\tst.global.b16 \t[%rd22], %rs4;
$L__BB0_2:
\t@%p4 bra \t$L__BB0_3;
\tbra.uni \t$L__BB0_4;
$L__BB0_3:
\tatom.relaxed.gpu.global.cas.b32 \t%r21, [%rd2], 0, 1;
$L__BB0_4:
\tbar.sync \t0;
\tld.shared.b32 \t%r17, [tilec_smem];
\tsetp.eq.b32 \t%p2, %r17, 1;
\t@%p2 bra \t$L__BB0_2;
\tret;""")

# The same after the fix: every thread enters at the header.
ONE_ENTRY_LOOP = entry("""\
\t@%p1 bra \t$L__BB0_2;
\tst.global.b16 \t[%rd22], %rs4;
$L__BB0_2:
\tbra.uni \t$L__BB0_3;
$L__BB0_7:
\tbar.sync \t0;
\t@%p3 bra \t$L__BB0_3;   // back to the header
\tbra.uni \t$L__BB0_8;
$L__BB0_3:
\t@!%p2 bra \t$L__BB0_5;
\tatom.relaxed.gpu.global.cas.b32 \t%r20, [%rd2], 0, 1;
$L__BB0_5:
\tbar.sync \t0;
\tbra.uni \t$L__BB0_7;
$L__BB0_8:
\tret;""")


def test_a_loop_entered_at_its_barrier_is_irreducible():
    (graph,) = control_flow_graphs(TWO_ENTRY_LOOP)
    assert graph.function == "k"
    assert graph.successors["k:entry"] == ["$L__BB0_4", "$L__BB0_2"]
    assert graph.successors["$L__BB0_4"] == ["$L__BB0_2"]  # the back edge; `ret` ends the block
    assert {dst for _, dst in irreducible_entries(graph)} == {"$L__BB0_4"}


def test_a_loop_whose_header_is_laid_out_after_its_latch_is_reducible():
    (graph,) = control_flow_graphs(ONE_ENTRY_LOOP)
    assert graph.successors["$L__BB0_3"] == ["$L__BB0_5", "$L__BB0_5"]  # branch, then fall through
    assert irreducible_entries(graph) == []


def test_code_after_an_unconditional_branch_starts_no_edge():
    """The `trap` after `bra.uni` is unreachable: it must not fall into the next label."""
    ptx = entry("\tbra.uni $L1;\n\ttrap;\n$L2:\n\tbra.uni $L2;\n$L1:\n\tret;")
    (graph,) = control_flow_graphs(ptx)
    assert graph.successors == {"k:entry": ["$L1"], "$L2": ["$L2"], "$L1": []}
    assert irreducible_entries(graph) == []  # $L2 is unreachable: no cycle is walked


def test_every_function_is_read_and_declarations_are_skipped():
    ptx = (".extern .func (.param .b32 r) vprintf(.param .b64 a);\n"
           ".func (.param .b32 r) helper(.param .b32 a)\n{\n\t{ // inline asm scope\n\t.reg .pred p;\n\t}\n\tret;\n}\n"
           + TWO_ENTRY_LOOP + entry("\tret;", name="other"))
    graphs = control_flow_graphs(ptx)
    assert [g.function for g in graphs] == ["helper", "k", "other"]
    assert [bool(irreducible_entries(g)) for g in graphs] == [False, True, False]


def test_the_nvidia_pipeline_refuses_a_two_entry_loop_by_name():
    check_reducible(ONE_ENTRY_LOOP)
    with pytest.raises(TilecError, match=r"`k` has a loop entered past its header \(at \$L__BB0_4"):
        check_reducible(TWO_ENTRY_LOOP)


# --- structured programs: a statement is "op", ("if", body) or ("loop", body) ---
statements = st.recursive(
    st.just("op"),
    lambda inner: st.tuples(st.sampled_from(["if", "loop"]), st.lists(inner, min_size=1, max_size=4)),
    max_leaves=24,
)
programs = st.lists(statements, min_size=1, max_size=5)


def render(program, labels, jump_into=None) -> tuple[list[str], list[str]]:
    """PTX lines of ``program``, and the labels inside a loop past its header.
    ``jump_into``: a label to branch to before every loop."""
    lines, inner = [], []
    for stmt in program:
        if stmt == "op":
            lines.append("\tadd.s32 %r1, %r1, 1;")
            continue
        kind, body = stmt
        if kind == "if":
            end = next(labels)
            body_lines, body_inner = render(body, labels, jump_into)
            lines += [f"\t@%p1 bra {end};", *body_lines, f"{end}:"]
            inner += body_inner
        else:
            head = next(labels)
            if jump_into is not None:
                lines.append(f"\t@%p2 bra {jump_into};")
            body_lines, body_inner = render(body, labels, jump_into)
            lines += [f"{head}:", *body_lines, f"\t@%p3 bra {head};"]
            inner += [line[:-1] for line in body_lines if line.endswith(":")]
    return lines, inner


def label_names():
    return (f"$L__BB0_{i}" for i in itertools.count())


@settings(max_examples=150, deadline=None)
@given(programs)
def test_structured_programs_are_reducible(program):
    lines, _ = render(program, label_names())
    (graph,) = control_flow_graphs(entry("\n".join(lines + ["\tret;"])))
    assert irreducible_entries(graph) == []


@settings(max_examples=150, deadline=None)
@given(programs, st.data())
def test_a_branch_from_outside_into_a_loop_body_is_found(program, data):
    _, inner = render(program, label_names())
    assume(inner)  # a loop with a label inside it
    target = data.draw(st.sampled_from(inner))
    # A branch to ``target`` before every loop: the one before the loop
    # around ``target`` enters that loop past its header.
    lines, _ = render(program, label_names(), jump_into=target)
    (graph,) = control_flow_graphs(entry("\n".join(lines + ["\tret;"])))
    assert irreducible_entries(graph) != []
