"""The control-flow graph of each function in PTX text, and the loops in it
that can be entered other than through their header (irreducible control flow).

Why tilec looks: a warp that branches apart must come back together before a
``bar.sync`` (which is ``barrier.sync.aligned``), a ``shfl.sync`` or an
``mma.sync``.  ptxas reconverges a warp where its paths meet, which it finds
in loops with one entry; in a loop with two it did not, and the layer-norm
backward at N = 1 hung the H100 with every thread of the block in the loop,
half of them at its barrier.  LLVM made that loop (see
``libdevice.py``); the NVIDIA pipeline checks every PTX it emits
with ``irreducible_entries``, so the same slip is a compile error, not a hang.

A CFG is reducible when every edge that closes a cycle in a depth-first walk
goes to a block that dominates its source (the loop's header).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_FUNCTION = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
_LABEL = re.compile(r"^\s*([\w$]+):")
_BRANCH = re.compile(r"^\s*(@!?%\w+\s+)?bra(?:\.uni)?\s+([\w$]+)\s*;")
_END = re.compile(r"^\s*(?:ret|exit|trap)\s*;")  # unpredicated: nothing follows
_INDIRECT = re.compile(r"^\s*(?:@!?%\w+\s+)?brx\.idx\b")


@dataclass
class ControlFlow:
    """One PTX function's basic blocks (by label; ``entry`` is the first),
    each with the blocks it may branch or fall through to."""

    function: str
    entry: str
    successors: dict[str, list[str]]


def control_flow_graphs(ptx: str) -> list[ControlFlow]:
    """The CFG of every function defined in ``ptx``; a function with an
    indirect branch (``brx.idx``, which tilec never emits) is left out."""
    graphs = []
    for name, body in _function_bodies(ptx):
        if not any(_INDIRECT.match(line) for line in body):
            graphs.append(_graph(name, body))
    return graphs


def _function_bodies(ptx: str) -> list[tuple[str, list[str]]]:
    """(name, lines between the braces) of each function with a body."""
    bodies, name, depth, body = [], None, 0, []
    for line in ptx.splitlines():
        code = line.split("//", 1)[0]
        if name is None:
            match = _FUNCTION.match(code)
            if match:
                name, depth, body = match[1], 0, []
            continue
        opened = depth
        depth += code.count("{") - code.count("}")
        if opened > 0 and depth > 0:
            body.append(code)
        elif opened > 0:  # the closing brace
            bodies.append((name, body))
            name = None
        elif code.rstrip().endswith(";"):  # a declaration only (.func ... ;)
            name = None
    return bodies


def _graph(name: str, body: list[str]) -> ControlFlow:
    """Blocks start at the top and at each label; a block ends at an
    unconditional branch or return, or falls through to the next label."""
    entry = f"{name}:entry"
    successors: dict[str, list[str]] = {entry: []}
    current: str | None = entry  # None: after an unconditional exit, unreachable until a label
    for line in body:
        label = _LABEL.match(line)
        if label:
            if current is not None:
                successors[current].append(label[1])
            current = label[1]
            successors.setdefault(current, [])
            continue
        if current is None:
            continue
        branch = _BRANCH.match(line)
        if branch:
            successors[current].append(branch[2])
            if branch[1] is None:
                current = None
        elif _END.match(line):
            current = None
    return ControlFlow(name, entry, successors)


def irreducible_entries(graph: ControlFlow) -> list[tuple[str, str]]:
    """The edges (source, target) that close a cycle at a block not
    dominating their source: each enters a loop past its header.  Empty for
    a reducible CFG."""
    order, retreating = _depth_first(graph)
    idom = _dominators(graph, order)
    return [(src, dst) for src, dst in retreating if not _dominates(dst, src, idom)]


def _depth_first(graph: ControlFlow) -> tuple[list[str], list[tuple[str, str]]]:
    """A depth-first walk from the entry: the blocks it reaches in reverse
    postorder, and its retreating edges (to a block still on its path)."""
    post, retreating, seen = [], [], {graph.entry}
    path, on_path = [graph.entry], {graph.entry}
    stack = [iter(graph.successors[graph.entry])]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            on_path.discard(path[-1])
            post.append(path.pop())
            stack.pop()
        elif child in on_path:
            retreating.append((path[-1], child))
        elif child not in seen:
            seen.add(child)
            path.append(child)
            on_path.add(child)
            stack.append(iter(graph.successors.get(child, [])))
    return post[::-1], retreating


def _dominators(graph: ControlFlow, order: list[str]) -> dict[str, str]:
    """Each reachable block's immediate dominator (the entry's is itself), by
    Cooper, Harvey and Kennedy's iteration over reverse postorder."""
    index = {block: i for i, block in enumerate(order)}
    predecessors: dict[str, list[str]] = {block: [] for block in order}
    for block in order:
        for succ in graph.successors.get(block, []):
            predecessors[succ].append(block)
    idom = {graph.entry: graph.entry}
    changed = True
    while changed:
        changed = False
        for block in order[1:]:
            done = [p for p in predecessors[block] if p in idom]
            new = done[0]
            for other in done[1:]:
                new = _common_dominator(new, other, idom, index)
            if idom.get(block) != new:
                idom[block], changed = new, True
    return idom


def _common_dominator(a: str, b: str, idom: dict[str, str], index: dict[str, int]) -> str:
    while a != b:
        while index[a] > index[b]:
            a = idom[a]
        while index[b] > index[a]:
            b = idom[b]
    return a


def _dominates(a: str, b: str, idom: dict[str, str]) -> bool:
    """Whether every path from the entry to ``b`` passes ``a``."""
    while b != a:
        if idom[b] == b:
            return False
        b = idom[b]
    return True
