"""Drawings of measured backward graphs (gradlab.kit.autograd_graph.Graph): an SVG, a self-contained HTML page (the SVG
with pan, zoom and a button per parameter group that folds it away; nothing fetched) and a rich Tree for the
terminal. The layout is grandalf's Sugiyama layout of layered DAGs; the output's node sits on top, the leaves at the
bottom, and each arrow points the way the gradient flows, labelled with the ‖∇‖ it carries.
"""

from __future__ import annotations

import html
import json
import textwrap
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
from gradlab.report import chain
from gradlab.report.files import STDOUT, check_graph_suffix, write_bytes

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
        style["group"] = _edge_group(graph, e)
        layout.arrows.append((f"n{e.src}", f"n{e.dst}", label, style))
    for k, (node, cut) in enumerate(graph.cuts):
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


def svg(graphs: list[Graph], inline: bool = False, side_by_side: bool = False) -> str:
    """Every graph in one SVG, each under its header: one under the other, or SIDE_BY_SIDE (a student's graph beside
    the reference's). INLINE: for an HTML page, which needs no XML namespace (so the page holds no URL at all)."""
    parts, x, y, width, height = [], 10.0, 10.0, 0.0, 0.0
    for index, graph in enumerate(graphs):
        groups = list(dict.fromkeys(n.group for n in graph.nodes if n.group))
        header = [part for i, line in enumerate(_header(graph))
                  for part in ([line] if i == 0 else textwrap.wrap(line, HEADER, subsequent_indent="  "))]
        last = ("", "#333")
        for i, line in enumerate(header):
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
        top = y + len(header) * 18 + 20
        lay = layout(graph)
        parts.append(f'<g transform="translate({x:.1f},{top:.1f})">')
        for a, b, label, style in lay.arrows:
            parts.append(_arrow_svg(lay.boxes[a], lay.boxes[b], label, style, style["group"]))
        key = f"g{index}n"
        parts.extend(_box_svg(box, graph, groups, key) for box in lay.boxes.values())
        parts.extend(_fold_svg(lay, graph, g, GROUP_FILL[k % len(GROUP_FILL)]) for k, g in enumerate(groups))
        parts.append("</g>")
        column = max(lay.width + 20, max(len(s) for s in header) * 7.6 + 20)
        width, height = max(width, x + column), max(height, top + lay.height + 50)
        x, y = (x + column + GAP, y) if side_by_side else (x, top + lay.height + 50)
    namespace = "" if inline else ' xmlns="http://www.w3.org/2000/svg"'
    return (f'<svg{namespace} width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, Menlo, monospace" font-size="12">'
            f'<defs>{MARKERS}</defs><rect width="100%" height="100%" fill="white"/>{"".join(parts)}</svg>')


PAGE_SCRIPT = r"""
// The page is the step-through: click a node (or use the arrow keys) for its chain rule. Pan (drag), zoom (wheel,
// + and -), fit (0); fold a parameter group to one box (its button). Plain DOM, nothing fetched.
var data = JSON.parse(document.getElementById('graph-data').textContent);
var svg = document.querySelector('#view svg'), box = svg.viewBox.baseVal, W = box.width, H = box.height;
var drag = null, moved = 0, current = -1, predict = document.getElementById('predict');
function toView(cx, cy) {
  var pt = svg.createSVGPoint(); pt.x = cx; pt.y = cy;
  return pt.matrixTransform(svg.getScreenCTM().inverse());
}
function fit() { box.x = 0; box.y = 0; box.width = W; box.height = H; }
function zoom(k, cx, cy) {
  var r = svg.getBoundingClientRect(), p = toView(cx === undefined ? r.left + r.width / 2 : cx,
                                                  cy === undefined ? r.top + r.height / 2 : cy);
  box.x = p.x - (p.x - box.x) * k; box.y = p.y - (p.y - box.y) * k; box.width *= k; box.height *= k;
}
function focus(el) {  // readable: one unit a pixel (or all of it, when it fits), EL's box at the top centre
  var r = svg.getBoundingClientRect();
  if (!r.width || (W <= r.width && H <= r.height)) { fit(); return; }
  box.width = Math.min(W, r.width); box.height = box.width * r.height / r.width; box.x = 0; box.y = 0;
  if (!el) return;
  var b = el.getBoundingClientRect(), p = toView(b.left + b.width / 2, b.top);
  box.x = Math.max(0, Math.min(W - box.width, p.x - box.width / 2)); box.y = Math.max(0, p.y - 120);
}
if (window.self !== window.top) document.body.classList.add('embedded');  // in a docs page: the drawing first
focus(document.querySelector('g.node[data-node="g0n0"]'));
document.querySelectorAll('#looks li[data-node]').forEach(function (li) {
  li.addEventListener('click', function () {
    var key = li.getAttribute('data-node');
    focus(document.querySelector('g.node[data-node="' + key + '"]')); show(key);
  });
});
svg.addEventListener('wheel', function (e) {
  e.preventDefault(); zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, e.clientX, e.clientY);
}, {passive: false});
svg.addEventListener('mousedown', function (e) { drag = [e.clientX, e.clientY]; moved = 0; });
window.addEventListener('mouseup', function () { drag = null; });
window.addEventListener('mousemove', function (e) {
  if (!drag) return;
  var a = toView(drag[0], drag[1]), b = toView(e.clientX, e.clientY);
  moved += Math.abs(e.clientX - drag[0]) + Math.abs(e.clientY - drag[1]);
  box.x -= b.x - a.x; box.y -= b.y - a.y; drag = [e.clientX, e.clientY];
});
document.getElementById('fit').addEventListener('click', fit);
document.getElementById('zin').addEventListener('click', function () { zoom(1 / 1.3); });
document.getElementById('zout').addEventListener('click', function () { zoom(1.3); });
function add(parent, tag, text, cls) {
  var el = document.createElement(tag);
  if (text !== undefined) el.textContent = text;
  if (cls) el.className = cls;
  parent.appendChild(el); return el;
}
function tensors(parent, heading, rows, key, label) {
  if (!rows.length) return;
  add(parent, 'h3', heading);
  rows.forEach(function (r) { add(parent, 'div', label + ' ' + r[key], 'from'); add(parent, 'pre', r.grad); });
}
function centre(el) {  // bring a selected box into view
  var r = el.getBoundingClientRect(), v = svg.getBoundingClientRect();
  if (r.left >= v.left && r.right <= v.right && r.top >= v.top && r.bottom <= v.bottom) return;
  var p = toView(r.left + r.width / 2, r.top + r.height / 2);
  box.x = p.x - box.width / 2; box.y = p.y - box.height / 2;
}
function show(key) {
  var d = data.nodes[key];
  if (!d) return;
  current = data.order.indexOf(key);
  document.querySelectorAll('g.node.sel').forEach(function (el) { el.classList.remove('sel'); });
  var el = document.querySelector('g.node[data-node="' + key + '"]');
  if (el) { el.classList.add('sel'); centre(el); }
  var p = document.getElementById('panel');
  p.textContent = '';
  p.setAttribute('data-node', key);
  add(p, 'h2', d.title);
  if (d.where) add(p, 'pre', d.where, 'where');
  if (d.value) { add(p, 'h3', d.leaf ? 'its value' : 'it computed (forward)'); add(p, 'pre', d.value, 'value'); }
  tensors(p, d.incoming.length > 1 ? 'gradients arriving (' + d.incoming.length + ' uses: they add)' :
          'gradient arriving', d.incoming, 'from', 'from');
  if (d.sum) {
    add(p, 'h3', d.incoming.length > 1 ? 'their sum: ∇ = ∂out/∂(this)' : '∇ = ∂out/∂(this)');
    add(p, 'pre', d.sum, 'sum');
  }
  var rest = add(p, 'div', undefined, 'rest');
  add(rest, 'h3', 'local derivative'); add(rest, 'pre', d.formula, 'formula');
  if (d.local) { add(rest, 'div', 'here, element by element:', 'from'); add(rest, 'pre', d.local, 'local'); }
  tensors(rest, 'sends on (∇ × local derivative)', d.sends, 'to', 'to');
  if (d.facts.length) { add(rest, 'h3', 'measured here'); add(rest, 'pre', d.facts.join('\n'), 'facts'); }
  if (!predict.checked || (!d.sends.length && !d.local)) return;
  rest.style.display = 'none';  // predict: ask first, then show
  var ask = add(p, 'div', undefined, 'ask'), input = null;
  add(ask, 'div', d.answer ? 'Your guess: what number does it send on?' :
      'Predict what it sends on (the local derivative, then ∇ × it), then press show.');
  if (d.answer) { input = add(ask, 'input'); input.type = 'text'; input.size = 12; }
  var go = add(ask, 'button', 'show');
  go.addEventListener('click', function () {
    rest.style.display = '';
    if (input && input.value.trim()) {
      var t = input.value.trim(), g = Number(t), a = Number(d.answer);
      var right = isNaN(a) ? /^nan$/i.test(t) : g === a || Math.abs(g - a) <= 1e-3 * Math.abs(a) + 1e-6;
      add(ask, 'div', right ? '✓ right' : '✗ autograd sent ' + d.answer, right ? 'right' : 'wrong');
    }
    go.remove();
  });
}
document.querySelectorAll('g.node[data-node]').forEach(function (el) {
  el.addEventListener('click', function () { if (moved < 5) show(el.getAttribute('data-node')); });
});
document.addEventListener('keydown', function (e) {
  if (e.target.tagName === 'INPUT') return;
  var step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1}[e.key];
  if (step) { e.preventDefault(); show(data.order[Math.max(0, Math.min(data.order.length - 1, current + step))]); }
  else if (e.key === '+' || e.key === '=') zoom(1 / 1.3);
  else if (e.key === '-') zoom(1.3);
  else if (e.key === '0') fit();
});
document.querySelectorAll('button[data-group]').forEach(function (b) {
  b.addEventListener('click', function () {
    var g = b.getAttribute('data-group'), hide = b.classList.toggle('folded');
    document.querySelectorAll('[data-group="' + g + '"]').forEach(function (el) {
      if (el !== b) el.style.display = hide ? 'none' : '';
    });
    document.querySelectorAll('[data-fold="' + g + '"]').forEach(function (el) {
      el.style.display = hide ? '' : 'none';
    });
  });
});
// page.html#fold=target,actor opens with those groups folded; #node=g0n3 with that node shown
((location.hash.match(/fold=([\w.,-]+)/) || [])[1] || '').split(',').forEach(function (g) {
  var b = document.querySelector('button[data-group="' + g + '"]');
  if (b) b.click();
});
show((location.hash.match(/node=(g\d+n\d+)/) || [])[1]);
if (/fit/.test(location.hash)) fit();
document.body.setAttribute('data-drawn', document.querySelectorAll('g.node').length);
"""

PAGE_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:1em} #wrap{display:flex;gap:1em;align-items:flex-start}"
    "#view{flex:1 1 64%;min-width:0} #view svg{width:100%;height:80vh;border:1px solid #ddd;cursor:grab}"
    "#panel{flex:0 0 34%;max-height:80vh;overflow:auto;border:1px solid #ddd;padding:.2em .8em}"
    "#panel pre{font:12px 'DejaVu Sans Mono',Menlo,monospace;background:#f6f8fa;padding:.3em;margin:.2em 0;"
    "white-space:pre-wrap;overflow-wrap:anywhere} #panel h2{font-size:16px}"
    " #panel h3{font-size:13px;margin:.8em 0 .2em}"
    "#panel .from{font-size:12px;color:#555} #panel .sum{background:#e8f0fe} .right{color:#137333} .wrong{color:"
    "#c5221f} g.node{cursor:pointer} g.node.sel rect{stroke:#f29900;stroke-width:4} button{margin:0 .3em .4em 0}"
    "button.folded{background:#ddd} #looks li{cursor:pointer;margin:.2em 0} #looks li:hover{background:#f1f3f4}"
    " @media (max-width:900px){#wrap{flex-direction:column}#panel{max-height:none}}"
    " body.embedded{margin:.4em} body.embedded h1,body.embedded p.help,body.embedded #looks{display:none}"
    " body.embedded #view svg{height:calc(100vh - 5em)} body.embedded #panel{max-height:calc(100vh - 5em)}"
)


def _order(graph: Graph) -> list[Node]:
    """The nodes in the order the arrow keys step through them: as autograd ran them, then the leaves, then the
    steps after backward."""
    ran = sorted((n for n in graph.nodes if n.order is not None), key=lambda n: n.order)
    return ran + [n for n in graph.nodes if n.leaf] + [n for n in graph.nodes if n.outside]


def page(graphs: list[Graph], title: str, side_by_side: bool = False) -> str:
    """A self-contained HTML page that steps: the SVG inline, a panel with the clicked node's chain rule (each
    gradient arriving, their sum, the local derivative, what it sends on), predict mode, a fold button per
    parameter group; no external resource."""
    groups = list(dict.fromkeys(n.group for g in graphs for n in g.nodes if n.group))
    buttons = "".join(f'<button data-group="{html.escape(g)}">fold {html.escape(g)}</button>' for g in groups)
    data = {"nodes": {f"g{i}n{n.id}": chain.panel(g, n) for i, g in enumerate(graphs) for n in g.nodes},
            "order": [f"g{i}n{n.id}" for i, g in enumerate(graphs) for n in _order(g)]}
    drawing = svg(graphs, inline=True, side_by_side=side_by_side)
    payload = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")  # nothing in it can close the script
    looks = "".join(f'<li data-node="g{i}n0"><b>{html.escape(g.title)}</b>'
                    f'{"<br>" + html.escape(g.note) if g.note else ""}</li>' for i, g in enumerate(graphs))
    return (f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{PAGE_STYLE}</style></head><body><h1>{html.escape(title)}</h1><ol id=\"looks\">{looks}</ol>"
            '<p class="help">Click a node, or step with the arrow keys: its local derivative, each gradient arriving '
            "and their sum. Drag to pan, scroll or + − to zoom, 0 to fit.</p><p>"
            '<button id="fit">fit</button><button id="zin">+</button><button id="zout">−</button>'
            '<label><input type="checkbox" id="predict"> predict: ask before showing</label> '
            f'{buttons}</p><div id="wrap"><div id="view">{drawing}</div><aside id="panel">'
            "<p>Click a node to see the chain rule there.</p></aside></div>"
            f'<script type="application/json" id="graph-data">{payload}</script>'
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
    """The graph as a tree from each output down (joined graphs have one per part); a node reached twice is drawn
    once, then referred to; the steps after backward (clip, all-reduce) come last, with what they measured."""
    root = Tree("\n".join(f"[bold]{escape(line)}[/]" if i == 0 else escape(line)
                          for i, line in enumerate(_header(graph, drawing=False))))
    seen: set[int] = set()

    def add(parent: Tree, node: Node, forbidden: bool) -> None:
        if node.id in seen:
            parent.add(f"[dim]↑ #{node.id} {escape(node.name)} again: the gradients it receives add up[/]")
            return
        seen.add(node.id)
        branch = parent.add(_tree_label(graph, node, forbidden))
        for e in graph.outgoing(node):
            if not graph.nodes[e.dst].outside:
                add(branch, graph.nodes[e.dst], e.forbidden)

    fed = {e.dst for e in graph.edges}
    for node in graph.nodes:
        if node.id not in fed and not node.outside:
            add(root, node, False)
    for node in (n for n in graph.nodes if n.outside):
        branch = root.add(f"#{node.id} [bold]{escape(node.name)}[/] after backward, outside autograd: receives "
                          f"{len(graph.incoming(node))} leaves' gradients")
        for fact in node.facts:
            branch.add(escape(fact))
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


def write_graph(path: str, graphs: list[Graph], title: str, console, side_by_side: bool = False) -> None:
    """--graph PATH: an .html page, an .svg, or - (a tree on CONSOLE). Files are written atomically. SIDE_BY_SIDE:
    the graphs beside each other (gradlab check: the student's and the reference's)."""
    if path == STDOUT:
        for g in graphs:
            console.print(tree(g))
        return
    text = (page(graphs, title, side_by_side) if Path(path).suffix.lower() == ".html" else
            svg(graphs, side_by_side=side_by_side))
    write_bytes(path, text.encode())
    if console is not None:
        console.print(f"wrote {path}", markup=False, soft_wrap=True)  # a path is never broken across lines


def write_lesson_graph(path: str, lesson, config, console) -> None:
    """--graph on a lesson: the graphs its graphs(config) function measures (LESSON is the lesson module)."""
    write_graph(path, lesson.graphs(config), f"gradlab {lesson.__name__.split('.')[-2]}: the backward pass, measured",
                console)
