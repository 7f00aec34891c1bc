"""Drawings of measured backward graphs (gradlab.kit.autograd_graph.Graph), written where --graph says: an SVG
(gradlab.report.graph_svg), a self-contained HTML page that steps (gradlab.report.graph_page) or a rich Tree for the
terminal (gradlab.report.graph_tree); and GraphView, what gradlab.graph returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Group

from gradlab.kit.autograd_graph import Graph
from gradlab.report.files import STDOUT, check_graph_suffix, write_bytes
from gradlab.report.graph_page import page
from gradlab.report.graph_svg import svg
from gradlab.report.graph_tree import tree


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
