"""Execute the notebooks in notebooks/ on a real Jupyter kernel (nbclient + ipykernel).

    python scripts/notebooks.py OUTDIR [--quick] [--answers] [NAME ...]

Each notebook runs top to bottom in a fresh kernel from the notebooks/ folder; a cell that raises (a failed claim
is an assert) stops it and the script exits 1 naming the notebook and the cell. The executed notebooks, outputs
included, are written to OUTDIR (`make notebooks` uses build/notebooks, which git ignores). --quick sets
GRADLAB_NOTEBOOK_QUICK=1: the small budgets the test suite uses. --answers fills every "Your turn" exercise cell
(metadata "gradlab-exercise") with its model answer (its lesson's exercises/answers.py) and sets
GRADLAB_NOTEBOOK_ANSWERS=1, under which the notebook asserts that the answer passes its check.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TIMEOUT_S = 600  # per cell


def execute(path: Path, quick: bool, answers: bool = False):
    """The executed notebook; raises nbclient's CellExecutionError when a cell fails."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    if answers:
        from gradlab.practice import all_exercises, answer_source

        for cell in nb.cells:
            if "gradlab-exercise" in cell.metadata:
                cell.source = answer_source(all_exercises()[cell.metadata["gradlab-exercise"]]).strip() + "\n"
    os.environ["GRADLAB_NOTEBOOK_QUICK"] = "1" if quick else "0"  # the kernel inherits this process's environment
    os.environ["GRADLAB_NOTEBOOK_ANSWERS"] = "1" if answers else "0"
    NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def main() -> None:
    import nbformat
    from nbclient.exceptions import CellExecutionError

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args:
        sys.exit(__doc__)
    out, names = Path(args[0]), args[1:]
    out.mkdir(parents=True, exist_ok=True)
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if names:
        paths = [p for p in paths if any(n in p.stem for n in names)]
    failed = []
    for path in paths:
        start = time.perf_counter()
        try:
            nb = execute(path, "--quick" in sys.argv, "--answers" in sys.argv)
        except CellExecutionError as e:
            failed.append(path.name)
            print(f"FAILED {path.name}: {str(e).strip().splitlines()[-1]}", flush=True)
            continue
        nbformat.write(nb, out / path.name)
        print(f"{time.perf_counter() - start:6.1f} s  {path.name} → {out / path.name}", flush=True)
    if failed:
        sys.exit(f"notebooks: {len(failed)} failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
