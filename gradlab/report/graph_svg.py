"""A measured backward graph (gradlab.kit.autograd_graph.Graph) drawn as an SVG: what each box says, where it goes
(grandalf's Sugiyama layout of layered DAGs; the output's node on top, the leaves at the bottom) and each arrow the
way the gradient flows, labelled with the ‖∇‖ it carries. gradlab.report.graph_page wraps it in the page that steps,
gradlab.report.graph_tree says the same in the terminal.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass, field

from grandalf.graphs import Edge as GEdge
from grandalf.graphs import Graph as GGraph
from grandalf.graphs import Vertex
from grandalf.layouts import SugiyamaLayout

from gradlab.kit.autograd_graph import Cut, Graph, Node, norm, summary
from gradlab.report import repeats

CHAR_W, LINE_H, PAD = 7.2, 16, 8  # 12px monospace: a character's width, a line's height; a box's padding
CHAR_W, LINE_H, PAD = 7.2, 16, 8  # 12px monospace: a character's width, a line's height; a box's padding
GAP = 40  # between graphs drawn side by side
HEADER = 90  # a header line is wrapped at this many characters
WHERE = 60  # a source line is cut to this many characters in a box (whole in its tooltip and the page's panel)
RED, GREY = "#c5221f", "#777"
GROUP_FILL = ["#e6f4ea", "#fef7e0", "#e8f0fe", "#fce8e6", "#f3e8fd"]  # one per parameter group, in order


# ---------------------------------------------------------------------------------------------------------------
# What each box says.
# ---------------------------------------------------------------------------------------------------------------

def born_here(graph: Graph, node: Node) -> bool:
    first = graph.first_nonfinite
    return first is not None and first.id == node.id


def box_lines(graph: Graph, node: Node) -> list[str]:
    """The text of a node's box: its name, the tensor it made, the gradient that arrived, what the lesson measured
    there."""
    title = f"{node.group}.{node.label}" if node.group else node.label or node.name
    lines = [title if not node.leaf else f"{title}  (AccumulateGrad)"]
    if node.part:
        lines[0] += f"  · {node.part}"
    if node.outside:
        lines.append("after backward, outside autograd")
        return lines + node.facts
    if node.shape is not None:
        lines.append(f"{'×'.join(map(str, node.shape)) or 'scalar'}  {node.value}".rstrip())
    if node.grad_in is not None:
        lines.append(f"∇ {summary(node.grad_in)}")
    elif node.order is None and not node.leaf:
        lines.append("not run")
    if born_here(graph, node):
        lines.append(why_nonfinite(node))
    lines += node.facts
    if node.forward is not None and node.forward.where:
        lines.append(node.forward.where[:WHERE] + ("…" if len(node.forward.where) > WHERE else ""))
    return lines


def why_nonfinite(node: Node) -> str:
    """'NaN born here: 0 × inf' for a node whose incoming gradient was finite and outgoing one is not."""
    out = next((g for g in node.grads_out if g is not None and not bool(g.isfinite().all())), None)
    kind = "NaN" if out is not None and bool(out.isnan().any()) else "inf"
    big = node.forward.output if node.forward is not None else None
    if big is not None and not bool(big.isfinite().all()) and node.grad_in is not None:
        return f"{kind} born here: ∇ {summary(node.grad_in)} × {summary(big)}"
    return f"{kind} born here"


# ---------------------------------------------------------------------------------------------------------------
# Layout (grandalf) and SVG.
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class _Box:
    """A box to place: a node of the graph, a cut feeding one, or a series of repeated layers folded."""

    key: str
    lines: list[str]
    node: Node | None = None
    cut: Cut | None = None
    series: repeats.Series | None = None
    x: float = 0.0
    y: float = 0.0

    @property
    def w(self) -> float:
        return max(len(s) for s in self.lines) * CHAR_W + 2 * PAD

    @property
    def h(self) -> float:
        return len(self.lines) * LINE_H + PAD


@dataclass
class _Layout:
    boxes: dict[str, _Box]
    arrows: list[tuple[str, str, str, dict]] = field(default_factory=list)  # (from, to, label, style)
    width: float = 0.0
    height: float = 0.0


class _View:
    def __init__(self, w: float, h: float):
        self.w, self.h, self.xy = w, h, (0.0, 0.0)


def _boxes(graph: Graph, fold: bool, clickable: bool) -> _Layout:
    """The boxes and arrows to place; FOLD: each series of repeated layers (gradlab.report.repeats) as one box after
    its first copy, the arrows into and out of its other copies redrawn to it."""
    series = repeats.find(graph) if fold else []
    hide = repeats.hidden(series)
    boxes = {f"n{n.id}": _Box(f"n{n.id}", box_lines(graph, n), node=n) for n in graph.nodes if n.id not in hide}
    for s in series:
        marked = ["a node inside is marked: unfold it"] if _marked(graph, s) else []
        boxes[s.key] = _Box(s.key, s.lines(clickable) + marked, series=s)
    layout, drawn = _Layout(boxes), set()
    for e in graph.edges:
        a, b = (hide[i].key if i in hide else f"n{i}" for i in (e.src, e.dst))
        if a == b or (a, b) in drawn:
            continue
        drawn.add((a, b))
        g = graph.edge_grad(e)
        label = "" if g is None else f"‖∇‖ {norm(g):.3g}"
        style = {"color": RED if e.forbidden or (g is not None and not bool(g.isfinite().all())) else "#444"}
        style["group"] = _edge_group(graph, e)
        layout.arrows.append((a, b, label, style))
    for k, (node, cut) in enumerate(graph.cuts):
        if node.id in hide:
            continue
        key = f"c{k}"
        boxes[key] = _Box(key, [f"✂ cut: {cut.why}", cut.where[:60]], cut=cut)
        # drawn as the input it is, below the node it feeds: the gradient stops there
        layout.arrows.append((f"n{node.id}", key, "no gradient", {"color": GREY, "dash": True, "group": ""}))
    return layout


def _edge_group(graph: Graph, e) -> str:
    """The parameter group an edge folds away with: the group of the leaf at either end, or ""."""
    for end in (graph.nodes[e.dst], graph.nodes[e.src]):
        if end.leaf and end.group:
            return end.group
    return ""


def layout(graph: Graph, fold: bool = True, clickable: bool = False) -> _Layout:
    """Place every box with grandalf's Sugiyama layout; components side by side. FOLD: repeated layers folded (into
    a box that says it unfolds on a click, where CLICKABLE)."""
    lay = _boxes(graph, fold, clickable)
    vertices = {k: Vertex(k) for k in lay.boxes}
    for k, v in vertices.items():
        v.view = _View(lay.boxes[k].w, lay.boxes[k].h)
    edges = [GEdge(vertices[a], vertices[b]) for a, b, _, _ in lay.arrows]
    x0 = 0.0
    for component in GGraph(list(vertices.values()), edges).C:
        sug = SugiyamaLayout(component)
        sug.init_all()
        sug.draw()
        views = [v for v in component.sV]
        left = min(v.view.xy[0] - v.view.w / 2 for v in views)
        top = min(v.view.xy[1] - v.view.h / 2 for v in views)
        for v in views:
            box = lay.boxes[v.data]
            box.x, box.y = v.view.xy[0] - v.view.w / 2 - left + x0, v.view.xy[1] - v.view.h / 2 - top
        x0 = max(b.x + b.w for b in (lay.boxes[v.data] for v in views)) + GAP
        lay.height = max(lay.height, max(lay.boxes[v.data].y + lay.boxes[v.data].h for v in views))
    lay.width = x0 - GAP
    return lay


def _fill(box: _Box, groups: list[str]) -> str:
    if box.series is not None:
        return "#fff8e1"
    if box.cut is not None:
        return "#f1f3f4"
    if box.node.leaf:
        return GROUP_FILL[groups.index(box.node.group) % len(GROUP_FILL)] if box.node.group in groups else "#e6f4ea"
    return "#ffffff"


def _marked(graph: Graph, series: repeats.Series) -> bool:
    """Whether a folded node is where a NaN is born or where a student's gradient first differs."""
    return any(born_here(graph, graph.nodes[i]) or any(f.startswith("≠") for f in graph.nodes[i].facts)
               for i in series.rest)


def _series_svg(box: _Box, graph: Graph, index: int) -> str:
    """A series' folded box: "×3", its ops, what it folds; red when a folded node is where a NaN is born or where a
    student's gradient differs. The page unfolds it on a click."""
    s, red, bold = box.series, _marked(graph, box.series), ' font-weight="700"'
    text = "".join(f'<text x="{box.x + PAD:.1f}" y="{box.y + PAD / 2 + (i + 0.8) * LINE_H:.1f}"'
                   f'{bold if i == 0 else ""} fill="{RED if red and i == len(box.lines) - 1 else "#111"}">'
                   f"{html.escape(line)}</text>" for i, line in enumerate(box.lines))
    return (f'<g class="series" data-series="g{index}{s.key}" data-first="g{index}n{s.rest[0]}">'
            f'<title>{html.escape(", ".join(s.layers))}</title>'
            f'<rect x="{box.x + 4:.1f}" y="{box.y + 4:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="5" '
            f'fill="{_fill(box, [])}" stroke="#999"/><rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
            f'height="{box.h:.1f}" rx="5" fill="{_fill(box, [])}" stroke="{RED if red else "#b06000"}" '
            f'stroke-width="{3 if red else 1.6}"/>{text}</g>')


def _box_svg(box: _Box, graph: Graph, groups: list[str], key: str) -> str:
    n = box.node
    red = n is not None and (born_here(graph, n) or any(f.startswith("≠") for f in n.facts))
    stroke = RED if red else GREY if box.cut is not None else "#2a56c6" if n.outside else "#333"
    attrs = f'class="node" data-group="{html.escape(n.group if n else "")}"'
    if n is not None:
        attrs += f' data-node="{key}{n.id}"'
    where = box.cut.where if box.cut else n.forward.where if n.forward else ""
    tip = f"<title>{html.escape(where)}</title>" if where else ""  # the whole source line, on hover
    dash = ' stroke-dasharray="4 3"' if box.cut else ""
    parts = [f'<g {attrs}>{tip}<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="5" '
             f'fill="{_fill(box, groups)}" stroke="{stroke}" stroke-width="{3 if red else 1.2}"'
             f'{dash}/>']
    for i, line in enumerate(box.lines):
        weight = ' font-weight="700"' if i == 0 else ""
        colour = RED if (red and line.startswith(("NaN", "inf", "≠"))) else "#555" if ".py:" in line else "#111"
        parts.append(f'<text x="{box.x + PAD:.1f}" y="{box.y + PAD / 2 + (i + 0.8) * LINE_H:.1f}"{weight} '
                     f'fill="{colour}">{html.escape(line)}</text>')
    return "".join(parts) + "</g>"


def _fold_svg(lay: _Layout, graph: Graph, group: str, fill: str) -> str:
    """GROUP's leaves as one box where they lie, with the arrows into and out of them redrawn to it: hidden until
    the page's fold button for GROUP is pressed."""
    leaves = [b for b in lay.boxes.values() if b.node is not None and b.node.leaf and b.node.group == group]
    if not leaves:
        return ""
    x, y = min(b.x for b in leaves), min(b.y for b in leaves)
    w = max(max(b.x + b.w for b in leaves) - x, 260)
    grads = [g for i, g in graph.leaf_grads.items() if graph.nodes[i].group == group and g is not None]
    lines = [f"{group}.*  folded: {len(leaves)} tensors", f"‖∇ {group}‖ = {graph.group_norm(group):.4g}"] if grads \
        else [f"{group}.*  folded: {len(leaves)} tensors", "no gradient reaches it"]
    fold = _Box(f"fold-{group}", lines, x=x, y=y)
    inside = {b.key for b in leaves}
    arrows, seen = [], set()
    for a, b, _, style in lay.arrows:
        if (b in inside) == (a in inside):
            continue
        ends = (a, fold.key) if b in inside else (fold.key, b)
        if ends in seen:
            continue
        seen.add(ends)
        src, dst = (lay.boxes[a], fold) if b in inside else (fold, lay.boxes[b])
        arrows.append(_arrow_svg(src, dst, "", {**style, "dash": False}, ""))
    bold = ' font-weight="700"'
    text = "".join(f'<text x="{x + PAD:.1f}" y="{y + PAD / 2 + (i + 0.8) * LINE_H:.1f}"{bold if i == 0 else ""} '
                   f'fill="#111">{html.escape(line)}</text>' for i, line in enumerate(lines))
    return (f'<g class="fold" data-fold="{html.escape(group)}" style="display:none">{"".join(arrows)}'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{fold.h:.1f}" rx="5" fill="{fill}" stroke="#333" '
            f'stroke-width="1.6"/>{text}</g>')


def _arrow_svg(a: _Box, b: _Box, label: str, style: dict, group: str) -> str:
    x1, y1, x2, y2 = a.x + a.w / 2, a.y + a.h, b.x + b.w / 2, b.y
    if y2 < y1:  # laid out the other way (rare): leave from the top
        y1, y2 = a.y, b.y + b.h
    dash = ' stroke-dasharray="5 4"' if style.get("dash") else ""
    colour = style["color"]
    marker = "red" if colour == RED else "grey" if colour == GREY else "dark"
    text = (f'<text x="{(x1 + x2) / 2 + 4:.1f}" y="{(y1 + y2) / 2:.1f}" fill="{colour}" '
            f'font-size="11">{html.escape(label)}</text>') if label else ""
    return (f'<g class="edge" data-group="{html.escape(group)}"><line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" '
            f'y2="{y2:.1f}" stroke="{colour}" stroke-width="{2.2 if colour == RED else 1.3}"{dash} '
            f'marker-end="url(#arrow-{marker})"/>{text}</g>')


MARKERS = "".join(
    f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
    f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
    for name, colour in (("red", RED), ("grey", GREY), ("dark", "#444")))


def header(graph: Graph, drawing: bool = True) -> list[str]:
    """The lines above a drawing (or the terminal's tree): its title and what was measured."""
    shown = "arrows: the gradient's way, each with its ‖∇‖" if drawing else "∇: the gradient arriving at each node"
    lines = [graph.title, f"backward from ∂out/∂out = {graph.seed}; {shown}"]
    for group, value in graph.forbidden.items():
        lines.append(f"gradient flows into {group} (red path): ‖∇ {group}‖ = {value:.6g}")
    first = graph.first_nonfinite
    if first is not None:
        lines.append(f"first non-finite gradient: {first.name} ({why_nonfinite(first)})")
    for _, cut in graph.cuts:
        lines.append(f"cut ({cut.why}): {cut.where}")
    if graph.note:
        lines.append(graph.note)
    return lines


def svg(graphs: list[Graph], inline: bool = False, side_by_side: bool = False, fold: bool = True,
        clickable: bool = False) -> str:
    """Every graph in one SVG, each under its header: one under the other, or SIDE_BY_SIDE (a student's graph beside
    the reference's). INLINE: for an HTML page, which needs no XML namespace (so the page holds no URL at all).
    FOLD: each series of repeated layers drawn once, the other copies one box ("×3"; CLICKABLE: in the page)."""
    parts, x, y, width, height = [], 10.0, 10.0, 0.0, 0.0
    for index, graph in enumerate(graphs):
        groups = list(dict.fromkeys(n.group for n in graph.nodes if n.group))
        lines = [part for i, line in enumerate(header(graph))
                  for part in ([line] if i == 0 else textwrap.wrap(line, HEADER, subsequent_indent="  "))]
        last = ("", "#333")
        for i, line in enumerate(lines):
            bold, colour = (' font-weight="700" font-size="15"', "#111") if i == 0 else ("", "#333")
            if line.startswith(("gradient flows", "first non-finite")):
                colour = RED
            elif line.startswith("look at:"):
                bold, colour = ' font-weight="700"', "#2a56c6"
            elif line.startswith("  "):  # a wrapped line goes on as it began
                bold, colour = last
            last = bold, colour
            parts.append(f'<text x="{x:.1f}" y="{y + (i + 1) * 18:.1f}"{bold} fill="{colour}">{html.escape(line)}'
                         "</text>")
        top = y + len(lines) * 18 + 20
        lay = layout(graph, fold, clickable)
        parts.append(f'<g transform="translate({x:.1f},{top:.1f})">')
        for a, b, label, style in lay.arrows:
            parts.append(_arrow_svg(lay.boxes[a], lay.boxes[b], label, style, style["group"]))
        key = f"g{index}n"
        parts.extend(_series_svg(box, graph, index) if box.series else _box_svg(box, graph, groups, key)
                     for box in lay.boxes.values())
        parts.extend(_fold_svg(lay, graph, g, GROUP_FILL[k % len(GROUP_FILL)]) for k, g in enumerate(groups))
        parts.append("</g>")
        column = max(lay.width + 20, max(len(s) for s in lines) * 7.6 + 20)
        width, height = max(width, x + column), max(height, top + lay.height + 50)
        x, y = (x + column + GAP, y) if side_by_side else (x, top + lay.height + 50)
    namespace = "" if inline else ' xmlns="http://www.w3.org/2000/svg"'
    return (f'<svg{namespace} width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, Menlo, monospace" font-size="12">'
            f'<defs>{MARKERS}</defs><rect width="100%" height="100%" fill="white"/>{"".join(parts)}</svg>')
