"""Draw every lesson's backward graph into docs/graphs/<lesson>.svg and .html (`make docs`): the page each lesson's
docs page embeds, clickable (docs/lessons/<lesson>.md), and the picture beside it.

    python scripts/graphs.py [LESSON ...]

Each is what `gradlab graph LESSON --out docs/graphs/LESSON.svg` (and .html) writes at the default settings: the
lesson's graphs(config) drawn by gradlab.report.graph, so no lesson has to train for its picture.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from gradlab.lessons import LESSONS
from gradlab.report.graph import write_graph

OUT = Path(__file__).resolve().parent.parent / "docs" / "graphs"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or list(LESSONS):
        start = time.perf_counter()
        info = LESSONS[name]
        graphs = info.load().graphs(info.config())
        for path in (OUT / f"{name}.svg", OUT / f"{name}.html"):
            write_graph(str(path), graphs, f"gradlab {name}: the backward pass, measured", None)
        print(f"{time.perf_counter() - start:6.1f} s  {path.with_suffix('.*')}")


if __name__ == "__main__":
    main()
