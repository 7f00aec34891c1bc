"""Draw every lesson's backward graph into docs/graphs/<lesson>.svg (`make docs`), the pictures each lesson's page
shows (docs/lessons/<lesson>.md).

    python scripts/graphs.py [LESSON ...]

Each is what `gradlab LESSON --graph docs/graphs/LESSON.svg` writes after a run at the default settings: the
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
        path = OUT / f"{name}.svg"
        write_graph(str(path), info.load().graphs(info.config()), f"gradlab {name}", None)
        print(f"{time.perf_counter() - start:6.1f} s  {path}")


if __name__ == "__main__":
    main()
