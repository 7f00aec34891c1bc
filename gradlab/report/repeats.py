"""Repeated layers of a measured backward graph, found so that a drawing shows each once: an MLP's Linear → ReLU
blocks, a loop of the same ops. What TensorBoard's graph view calls a series (nodes of one op type whose names differ
by a number in a row, folded into one box that expands on a click: tensorboard/plugins/graph/tf_graph_common/
hierarchy.ts, detectSeries), found here by structure, since an autograd graph's operations have no names: along
each chain of the graph (from a node, on to the child that reaches the most nodes), a block is a node with what
hangs off the chain below it (a Linear's bias and its TBackward0 → weight), and a block is the same as another when
its ops and its leaves' parameter names (weight, bias) are; the same run of blocks twice or more in a row is a
series. The first copy is drawn; the others fold into one box ("×3"), which the HTML page unfolds on a click.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradlab.kit.autograd_graph import Graph

LONGEST = 6  # blocks in one copy, at most
LAYER = re.compile(r"^(.*?)\.?(\d+)\.([^.]+)$")  # "online.2.weight" → ("online", "2", "weight")


@dataclass
class Series:
    """Copies of one run of blocks, in a row along a chain: FIRST is drawn, REST folded into one box."""

    key: str  # "r0": the folded box's key in a drawing
    unit: list[str]  # the op on the chain in each block of one copy ("AddmmBackward0", "ReluBackward0")
    first: list[int]  # the node ids of the first copy
    rest: list[int]  # the node ids of the other copies (the last may lack the unit's tail)
    times: int  # copies in all
    layers: list[str]  # the parameters of each copy after the first ("online.2", "online.0"), where named

    def lines(self, clickable: bool) -> list[str]:
        """What the folded box says (CLICKABLE: in the page, which unfolds it on a click)."""
        where = f": {', '.join(self.layers)}" if self.layers else ""
        how = "click to unfold" if clickable else "the --graph .html page unfolds them"
        return [f"×{self.times}  {' → '.join(self.unit)}", f"{self.times - 1} more the same{where}"[:90],
                f"{len(self.rest)} nodes folded: {how}"]


def _reach(graph: Graph) -> dict[int, int]:
    """Each node's reachable nodes (itself included), as a bit set."""
    children = {n.id: [e.dst for e in graph.outgoing(n) if not graph.nodes[e.dst].outside] for n in graph.nodes}
    reach: dict[int, int] = {}

    def visit(i: int) -> int:
        if i not in reach:
            reach[i] = 1 << i  # before the children: a graph from a broken sender may have a cycle
            bits = 1 << i
            for c in children[i]:
                bits |= visit(c)
            reach[i] = bits
        return reach[i]

    for n in graph.nodes:
        visit(n.id)
    return reach


def _chain(graph: Graph, start: int, reach: dict[int, int], taken: set[int]) -> list[tuple[int, list[int]]]:
    """From START down: each step's node and the nodes that hang off the chain below it (its block), on to the child
    that reaches the most nodes (3 at least: a TBackward0 → weight hangs off, it does not go on). What hangs off is
    at most 2 nodes (a bias, a TBackward0 → weight); a larger branch is left to a chain of its own."""
    steps, node = [], start
    while node is not None and node not in taken:
        kids = [e.dst for e in graph.outgoing(graph.nodes[node]) if not graph.nodes[e.dst].outside]
        kids = [k for k in dict.fromkeys(kids) if k not in taken]
        main = max(kids, key=lambda k: bin(reach[k]).count("1"), default=None)
        if main is not None and bin(reach[main]).count("1") < 3:
            main = None
        below = reach[main] if main is not None else 0
        hanging = [_ids(reach[k] & ~below) for k in kids if k != main]  # a larger one is a chain of its own
        block = [node] + [i for ids in hanging if len(ids) < 3 for i in ids if i not in taken]
        block = list(dict.fromkeys(block))
        taken.update(block)
        steps.append((node, block))
        node = main
    return steps


def _ids(bits: int) -> list[int]:
    return [i for i in range(bits.bit_length()) if bits >> i & 1]


def _signature(graph: Graph, block: list[int]) -> str:
    """A block as its ops and its leaves' parameter names, in order: equal for two copies of one layer."""
    parts = []
    for i in block:
        n = graph.nodes[i]
        if n.leaf:
            m = LAYER.match(n.label)
            parts.append(f"leaf:{m.group(3) if m else n.label}")
        else:
            parts.append(n.name)
    return "|".join(parts)


def _layer(graph: Graph, blocks: list[list[int]]) -> str:
    """The parameter prefix of a copy's leaves ("online.2"), or ""."""
    for block in blocks:
        for i in block:
            n = graph.nodes[i]
            if n.leaf and (m := LAYER.match(n.label)):
                return ".".join(p for p in (n.group, m.group(1), m.group(2)) if p)
    return ""


def _runs(graph: Graph, steps: list[tuple[int, list[int]]]) -> list[tuple[int, int, int]]:
    """(start, copy length, copies) of each series along one chain: the longest run first, greedily; a last copy
    may be the unit's head alone (an MLP's last Linear has no ReLU after it)."""
    sigs = [_signature(graph, block) for _, block in steps]
    out, i = [], 0
    while i < len(sigs):
        best = None
        for k in range(1, LONGEST + 1):
            r = 1
            while sigs[i + r * k:i + (r + 1) * k] == sigs[i:i + k] and len(sigs[i + r * k:i + (r + 1) * k]) == k:
                r += 1
            tail = 0
            while tail < k - 1 and i + r * k + tail < len(sigs) and sigs[i + r * k + tail] == sigs[i + tail]:
                tail += 1
            if r >= 2 and (best is None or r * k + tail > best[1] * best[2] + best[3]):
                best = (i, k, r, tail)
        if best is None:
            i += 1
            continue
        out.append(best)
        i += best[1] * best[2] + best[3]
    return [(i, k, r + (1 if tail else 0), tail) for i, k, r, tail in out]


def find(graph: Graph) -> list[Series]:
    """Every series of GRAPH, chains taken from each node no chain has taken yet, the output's first."""
    reach, taken, found = _reach(graph), set(), []
    for n in graph.nodes:
        if n.id in taken or n.outside:
            continue
        steps = _chain(graph, n.id, reach, taken)
        for i, k, times, tail in _runs(graph, steps):
            end = i + k * (times - 1) + tail if tail else i + k * times
            copies = [steps[j:min(j + k, end)] for j in range(i, end, k)]
            first = [x for _, block in copies[0] for x in block]
            rest = [x for copy in copies[1:] for _, block in copy for x in block]
            layers = [name for copy in copies[1:] if (name := _layer(graph, [b for _, b in copy]))]
            found.append(Series(key=f"r{len(found)}", unit=[graph.nodes[s].name for s, _ in copies[0]],
                                first=first, rest=rest, times=times, layers=layers))
    return found


def hidden(series: list[Series]) -> dict[int, Series]:
    """Each folded node's series."""
    return {i: s for s in series for i in s.rest}
