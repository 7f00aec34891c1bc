"""A measured backward graph in the terminal: a rich Tree from the output down, what each node received beside it."""

from __future__ import annotations

from rich.markup import escape
from rich.tree import Tree

from gradlab.kit.autograd_graph import Graph, Node
from gradlab.report import repeats
from gradlab.report.graph_svg import born_here, box_lines, header, why_nonfinite

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
    once, then referred to; repeated layers once, their other copies one line (gradlab.report.repeats); the steps
    after backward (clip, all-reduce) come last, with what they measured."""
    root = Tree("\n".join(f"[bold]{escape(line)}[/]" if i == 0 else escape(line)
                          for i, line in enumerate(header(graph, drawing=False))))
    seen: set[int | str] = set()
    hide = repeats.hidden(repeats.find(graph))

    def add(parent: Tree, node: Node, forbidden: bool) -> None:
        if node.id in hide:
            folded(parent, hide[node.id])
            return
        if node.id in seen:
            parent.add(f"[dim]↑ #{node.id} {escape(node.name)} again: the gradients it receives add up[/]")
            return
        seen.add(node.id)
        branch = parent.add(_tree_label(graph, node, forbidden))
        for e in graph.outgoing(node):
            if not graph.nodes[e.dst].outside:
                add(branch, graph.nodes[e.dst], e.forbidden)

    def folded(parent: Tree, series: repeats.Series) -> None:
        """A series' other copies as one line, then what comes after them."""
        if series.key in seen:
            return
        seen.add(series.key)
        head, more, _ = series.lines(clickable=False)
        branch = parent.add(f"[dim]⋮ {escape(head)}: {escape(more)} ({len(series.rest)} nodes folded; --graph "
                            "FILE.html unfolds them)[/]")
        inside = set(series.rest)
        for e in (e for i in series.rest for e in graph.outgoing(graph.nodes[i])):
            if e.dst not in inside and not graph.nodes[e.dst].outside:
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
