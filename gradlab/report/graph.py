"""Drawings of measured backward graphs (gradlab.kit.autograd_graph.Graph): an SVG, a self-contained HTML page (the SVG
with pan, zoom and a button per parameter group that folds it away; nothing fetched) and a rich Tree for the
terminal. The layout is grandalf's Sugiyama layout of layered DAGs; the output's node sits on top, the leaves at the
bottom, and each arrow points the way the gradient flows, labelled with the ‖∇‖ it carries.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from grandalf.graphs import Edge as GEdge
from grandalf.graphs import Graph as GGraph
from grandalf.graphs import Vertex
from grandalf.layouts import SugiyamaLayout
from rich.console import Group
from rich.markup import escape
from rich.tree import Tree

from gradlab.kit.autograd_graph import Cut, Graph, Node, norm, summary
from gradlab.report.files import STDOUT, check_graph_suffix, write_bytes

CHAR_W, LINE_H, PAD = 7.2, 16, 8  # 12px monospace: a character's width, a line's height; a box's padding
GAP = 40  # between graphs drawn side by side
RED, GREY = "#c5221f", "#777"
GROUP_FILL = ["#e6f4ea", "#fef7e0", "#e8f0fe", "#fce8e6", "#f3e8fd"]  # one per parameter group, in order


# ---------------------------------------------------------------------------------------------------------------
# What each box says.
# ---------------------------------------------------------------------------------------------------------------

def born_here(graph: Graph, node: Node) -> bool:
    first = graph.first_nonfinite
    return first is not None and first.id == node.id


def box_lines(graph: Graph, node: Node) -> list[str]:
    """The text of a node's box: its name, the tensor it made, the gradient that arrived."""
    title = f"{node.group}.{node.label}" if node.group else node.label or node.name
    lines = [title if not node.leaf else f"{title}  (AccumulateGrad)"]
    if node.shape is not None:
        lines.append(f"{'×'.join(map(str, node.shape)) or 'scalar'}  {node.value}".rstrip())
    if node.grad_in is not None:
        lines.append(f"∇ {summary(node.grad_in)}")
    elif node.order is None and not node.leaf:
        lines.append("not run")
    if born_here(graph, node):
        lines.append(why_nonfinite(node))
    if node.forward is not None and node.forward.where:
        lines.append(node.forward.where[:60])
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
    """A box to place: a node of the graph, or a cut feeding one."""

    key: str
    lines: list[str]
    node: Node | None = None
    cut: Cut | None = None
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


def _boxes(graph: Graph) -> _Layout:
    boxes = {f"n{n.id}": _Box(f"n{n.id}", box_lines(graph, n), node=n) for n in graph.nodes}
    layout = _Layout(boxes)
    for e in graph.edges:
        g = graph.edge_grad(e)
        label = "" if g is None else f"‖∇‖ {norm(g):.3g}"
        style = {"color": RED if e.forbidden or (g is not None and not bool(g.isfinite().all())) else "#444"}
        layout.arrows.append((f"n{e.src}", f"n{e.dst}", label, style))
    for k, (node, cut) in enumerate(graph.cuts):
        key = f"c{k}"
        boxes[key] = _Box(key, [f"✂ cut: {cut.why}", cut.where[:60]], cut=cut)
        # drawn as the input it is, below the node it feeds: the gradient stops there
        layout.arrows.append((f"n{node.id}", key, "no gradient", {"color": GREY, "dash": True}))
    return layout


def layout(graph: Graph) -> _Layout:
    """Place every box with grandalf's Sugiyama layout; components side by side."""
    lay = _boxes(graph)
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
    if box.cut is not None:
        return "#f1f3f4"
    if box.node.leaf:
        return GROUP_FILL[groups.index(box.node.group) % len(GROUP_FILL)] if box.node.group in groups else "#e6f4ea"
    return "#ffffff"


def _box_svg(box: _Box, graph: Graph, groups: list[str]) -> str:
    n = box.node
    red = n is not None and born_here(graph, n)
    stroke = RED if red else GREY if box.cut is not None else "#333"
    attrs = f'class="node" data-group="{html.escape(n.group if n else "")}"'
    dash = ' stroke-dasharray="4 3"' if box.cut else ""
    parts = [f'<g {attrs}><rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="5" '
             f'fill="{_fill(box, groups)}" stroke="{stroke}" stroke-width="{3 if red else 1.2}"'
             f'{dash}/>']
    for i, line in enumerate(box.lines):
        weight = ' font-weight="700"' if i == 0 else ""
        colour = RED if (red and line.startswith(("NaN", "inf"))) else "#555" if ".py:" in line else "#111"
        parts.append(f'<text x="{box.x + PAD:.1f}" y="{box.y + PAD / 2 + (i + 0.8) * LINE_H:.1f}"{weight} '
                     f'fill="{colour}">{html.escape(line)}</text>')
    return "".join(parts) + "</g>"


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


def _header(graph: Graph, drawing: bool = True) -> list[str]:
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


def svg(graphs: list[Graph], inline: bool = False) -> str:
    """Every graph in one SVG, one under the other, each under its header. INLINE: for an HTML page, which needs no
    XML namespace (so the page holds no URL at all)."""
    parts, y, width = [], 10.0, 0.0
    for graph in graphs:
        groups = list(dict.fromkeys(n.group for n in graph.nodes if n.group))
        header = _header(graph)
        for i, line in enumerate(header):
            bold, colour = (' font-weight="700" font-size="15"', "#111") if i == 0 else ("", "#333")
            if line.startswith(("gradient flows", "first non-finite")):
                colour = RED
            parts.append(f'<text x="10" y="{y + (i + 1) * 18:.1f}"{bold} fill="{colour}">{html.escape(line)}</text>')
        y += len(header) * 18 + 20
        lay = layout(graph)
        parts.append(f'<g transform="translate(10,{y:.1f})">')
        for a, b, label, style in lay.arrows:
            node = lay.boxes[b].node
            parts.append(_arrow_svg(lay.boxes[a], lay.boxes[b], label, style, node.group if node else ""))
        parts.extend(_box_svg(box, graph, groups) for box in lay.boxes.values())
        parts.append("</g>")
        y += lay.height + 50
        width = max(width, lay.width + 20, max(len(s) for s in header) * 7.6 + 20)
    namespace = "" if inline else ' xmlns="http://www.w3.org/2000/svg"'
    return (f'<svg{namespace} width="{width:.0f}" height="{y:.0f}" '
            f'viewBox="0 0 {width:.0f} {y:.0f}" font-family="DejaVu Sans Mono, Menlo, monospace" font-size="12">'
            f'<defs>{MARKERS}</defs><rect width="100%" height="100%" fill="white"/>{"".join(parts)}</svg>')


PAGE_SCRIPT = r"""
// pan (drag), zoom (wheel) and fold a parameter group away (its button): plain DOM, nothing fetched
var svg = document.querySelector('svg'), box = svg.viewBox.baseVal, drag = null;
svg.addEventListener('wheel', function (e) {
  e.preventDefault();
  var k = e.deltaY > 0 ? 1.15 : 1 / 1.15, r = svg.getBoundingClientRect();
  var px = box.x + (e.clientX - r.left) / r.width * box.width, py = box.y + (e.clientY - r.top) / r.height * box.height;
  box.x = px - (px - box.x) * k; box.y = py - (py - box.y) * k; box.width *= k; box.height *= k;
}, {passive: false});
svg.addEventListener('mousedown', function (e) { drag = [e.clientX, e.clientY]; });
window.addEventListener('mouseup', function () { drag = null; });
window.addEventListener('mousemove', function (e) {
  if (!drag) return;
  var r = svg.getBoundingClientRect();
  box.x -= (e.clientX - drag[0]) / r.width * box.width; box.y -= (e.clientY - drag[1]) / r.height * box.height;
  drag = [e.clientX, e.clientY];
});
document.querySelectorAll('button[data-group]').forEach(function (b) {
  b.addEventListener('click', function () {
    var g = b.getAttribute('data-group'), hide = !b.classList.toggle('folded');
    document.querySelectorAll('[data-group="' + g + '"]').forEach(function (el) {
      if (el !== b) el.style.display = hide ? '' : 'none';
    });
  });
});
// page.html#fold=target,actor opens with those groups folded
((location.hash.match(/fold=([\w.,-]+)/) || [])[1] || '').split(',').forEach(function (g) {
  var b = document.querySelector('button[data-group="' + g + '"]');
  if (b) b.click();
});
document.body.setAttribute('data-drawn', document.querySelectorAll('g.node').length);
"""


def page(graphs: list[Graph], title: str) -> str:
    """A self-contained HTML page: the SVG inline, a button per parameter group, no external resource."""
    groups = list(dict.fromkeys(n.group for g in graphs for n in g.nodes if n.group))
    buttons = "".join(f'<button data-group="{html.escape(g)}">fold {html.escape(g)}</button> ' for g in groups)
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title><style>'
            "body{font:14px system-ui,sans-serif;margin:1em} svg{border:1px solid #ddd;max-width:100%;height:auto;"
            "cursor:grab} button{margin:0 .3em .6em 0} button.folded{background:#ddd}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>Drag to pan, scroll to zoom. {buttons}</p>{svg(graphs, inline=True)}"
            f"<script>{PAGE_SCRIPT}</script></body></html>")


# ---------------------------------------------------------------------------------------------------------------
# The terminal: a rich Tree.
# ---------------------------------------------------------------------------------------------------------------

def _tree_label(graph: Graph, node: Node, forbidden: bool) -> str:
    lines = box_lines(graph, node)
    text = f"#{node.id} [bold]{escape(lines[0])}[/]  {escape('  '.join(lines[1:3]))}"
    if born_here(graph, node):
        text += f" [bold red]← {escape(why_nonfinite(node))}[/]"
    for _, cut in ((n, c) for n, c in graph.cuts if n.id == node.id):
        text += f" [dim]✂ {escape(cut.why)}: {escape(cut.where)}[/]"
    return text + (" [red](on the forbidden path)[/]" if forbidden else "")


def tree(graph: Graph) -> Tree:
    """The graph as a tree from the output down; a node reached twice is drawn once, then referred to."""
    root = Tree("\n".join(f"[bold]{escape(line)}[/]" if i == 0 else escape(line)
                          for i, line in enumerate(_header(graph, drawing=False))))
    seen: set[int] = set()

    def add(parent: Tree, node: Node, forbidden: bool) -> None:
        if node.id in seen:
            parent.add(f"[dim]↑ #{node.id} {escape(node.name)} again: the gradients it receives add up[/]")
            return
        seen.add(node.id)
        branch = parent.add(_tree_label(graph, node, forbidden))
        for e in (e for e in graph.edges if e.src == node.id):
            add(branch, graph.nodes[e.dst], e.forbidden)

    add(root, graph.nodes[0], False)
    return root


@dataclass
class GraphView:
    """What gradlab.graph returns: Jupyter shows it as the drawing (_repr_html_), rich as the tree; save() writes
    it as .html or .svg."""

    graphs: list[Graph]

    def _repr_html_(self) -> str:
        return f'<div style="overflow:auto">{svg(self.graphs, inline=True)}</div>'

    def __rich__(self):
        return Group(*(tree(g) for g in self.graphs))

    def save(self, path: str) -> None:
        """Write the drawing to PATH (.html: a self-contained page; .svg)."""
        check_graph_suffix(path)
        write_graph(path, self.graphs, self.graphs[0].title, None)


def write_graph(path: str, graphs: list[Graph], title: str, console) -> None:
    """--graph PATH: an .html page, an .svg, or - (a tree on CONSOLE). Files are written atomically."""
    if path == STDOUT:
        for g in graphs:
            console.print(tree(g))
        return
    text = page(graphs, title) if Path(path).suffix.lower() == ".html" else svg(graphs)
    write_bytes(path, text.encode())
    if console is not None:
        console.print(f"wrote {path}", markup=False, soft_wrap=True)  # a path is never broken across lines


def write_lesson_graph(path: str, lesson, config, console) -> None:
    """--graph on a lesson: the graphs its graphs(config) function measures (LESSON is the lesson module)."""
    write_graph(path, lesson.graphs(config), f"gradlab {lesson.__name__.split('.')[-2]}: the backward pass, measured",
                console)
