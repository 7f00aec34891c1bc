"""The self-contained HTML page of measured backward graphs: the SVG (gradlab.report.graph_svg) inline, with pan, zoom,
a fold button per parameter group and a panel that shows the clicked node's chain rule (gradlab.report.chain); it is
the step-through too. Nothing is fetched: no CDN, no URL.
"""

from __future__ import annotations

import html
import json

from gradlab.kit.autograd_graph import Graph, Node
from gradlab.report import chain, repeats
from gradlab.report.graph_svg import svg

PAGE_SCRIPT = r"""
// The page is the step-through: click a node (or use the arrow keys) for its chain rule. Pan (drag), zoom (wheel,
// + and -), fit (0); fold a parameter group to one box (its button). Repeated layers come folded (a "×3" box): a
// click on it, the "unfold repeats" button or a step onto a folded node shows the drawing with every node (the
// second svg). Plain DOM, nothing fetched.
var data = JSON.parse(document.getElementById('graph-data').textContent);
var svgs = document.querySelectorAll('#view svg'), svg, box, W, H;
var drag = null, moved = 0, current = -1, predict = document.getElementById('predict');
function use(i) {  // show drawing I (0: repeats folded, 1: every node), as fitted as the one it replaces
  svgs.forEach(function (s, k) { s.style.display = k === i ? '' : 'none'; });
  svg = svgs[i]; box = svg.viewBox.baseVal; W = +svg.getAttribute('width'); H = +svg.getAttribute('height');
  var b = document.getElementById('repeats');
  if (b) b.textContent = i ? 'fold repeats' : 'unfold repeats';
}
use(0);
function nodeEl(key) {  // KEY's box in the drawing shown; a folded node unfolds the repeats first
  var el = svg.querySelector('g.node[data-node="' + key + '"]');
  if (!el && svgs.length > 1 && svg === svgs[0] && svgs[1].querySelector('g.node[data-node="' + key + '"]')) {
    use(1); focus(null); el = svg.querySelector('g.node[data-node="' + key + '"]');
  }
  return el;
}
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
focus(nodeEl('g0n0'));
document.querySelectorAll('#looks li[data-node]').forEach(function (li) {
  li.addEventListener('click', function () {
    var key = li.getAttribute('data-node');
    focus(nodeEl(key)); show(key);
  });
});
svgs.forEach(function (s) {
  s.addEventListener('wheel', function (e) {
    e.preventDefault(); zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, e.clientX, e.clientY);
  }, {passive: false});
  s.addEventListener('mousedown', function (e) { drag = [e.clientX, e.clientY]; moved = 0; });
});
document.querySelectorAll('g.series').forEach(function (el) {
  el.addEventListener('click', function () {  // the first folded node, where the box was
    if (moved < 5) { use(1); focus(nodeEl(el.getAttribute('data-first'))); }
  });
});
if (document.getElementById('repeats')) document.getElementById('repeats').addEventListener('click', function () {
  use(svg === svgs[0] ? 1 : 0); focus(null);
});
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
  var el = nodeEl(key);
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
document.body.setAttribute('data-drawn', svgs[svgs.length - 1].querySelectorAll('g.node').length);
"""

PAGE_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:1em} #wrap{display:flex;gap:1em;align-items:flex-start}"
    "#view{flex:1 1 64%;min-width:0} #view svg{width:100%;height:80vh;border:1px solid #ddd;cursor:grab}"
    "#panel{flex:0 0 34%;max-height:80vh;overflow:auto;border:1px solid #ddd;padding:.2em .8em}"
    "#panel pre{font:12px 'DejaVu Sans Mono',Menlo,monospace;background:#f6f8fa;padding:.3em;margin:.2em 0;"
    "white-space:pre-wrap;overflow-wrap:anywhere} #panel h2{font-size:16px}"
    " #panel h3{font-size:13px;margin:.8em 0 .2em}"
    "#panel .from{font-size:12px;color:#555} #panel .sum{background:#e8f0fe} .right{color:#137333} .wrong{color:"
    "#c5221f} g.node,g.series{cursor:pointer} g.node.sel rect{stroke:#f29900;stroke-width:4}"
    " button{margin:0 .3em .4em 0} button.folded{background:#ddd} #looks li{cursor:pointer;margin:.2em 0}"
    " #looks li:hover{background:#f1f3f4}"
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
    parameter group; repeated layers folded, a click unfolds them (the drawing with every node, a second svg);
    no external resource."""
    groups = list(dict.fromkeys(n.group for g in graphs for n in g.nodes if n.group))
    buttons = "".join(f'<button data-group="{html.escape(g)}">fold {html.escape(g)}</button>' for g in groups)
    data = {"nodes": {f"g{i}n{n.id}": chain.panel(g, n) for i, g in enumerate(graphs) for n in g.nodes},
            "order": [f"g{i}n{n.id}" for i, g in enumerate(graphs) for n in _order(g)]}
    drawing = svg(graphs, inline=True, side_by_side=side_by_side, clickable=True)
    if any(repeats.find(g) for g in graphs):
        drawing += svg(graphs, inline=True, side_by_side=side_by_side, fold=False)
        buttons = '<button id="repeats">unfold repeats</button>' + buttons
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
