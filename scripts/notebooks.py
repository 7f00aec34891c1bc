"""Execute the notebooks in notebooks/ on a real Jupyter kernel (nbclient + ipykernel), with the suite's checks.

    python scripts/notebooks.py OUTDIR [--quick] [--answers] [NAME ...]

Each notebook runs top to bottom in a fresh kernel from the notebooks/ folder. What a student sees holds no test
wiring: this script runs an in-memory copy into which it inserts its own cells (tagged "gradlab-injected"), and
a cell that raises stops the notebook and the script, which exits 1 naming the notebook and the cell:

  * after each cell marked "gradlab-check": NAME (cell metadata), the assertions CHECKS[lesson][NAME]: that the
    lesson's claims hold, and that what a "Now break it" section's "What happened" cell says is what the run did;
  * with --quick, after the cell tagged "parameters" (papermill's convention), `QUICK = True`: the small budgets
    the test suite uses, which every claim still holds on;
  * with --answers, every "Your turn" exercise cell (metadata "gradlab-exercise") is filled with its model answer
    (its lesson's exercises/answers.py), and after its check cell an assertion that the answer passes.

The executed notebooks, outputs and inserted cells included, are written to OUTDIR (`make notebooks` uses
build/notebooks, which git ignores).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
TIMEOUT_S = 600  # per cell
INJECTED = "gradlab-injected"  # the tag of the cells this script inserts
# How a notebook's kernel ends once its last cell has run: at once (SIGKILL), not by jupyter_client's polite shutdown,
# which a kernel that has imported torch does not answer in time: it waits out half of shutdown_wait_time (2.5 s),
# then sends SIGTERM (measured on 2026-11-28, jupyter_client 8.10: 0.97 s for a kernel that ran 1+1, 2.7 s once it
# had imported torch). Nothing is left to save then: the outputs are in the notebook already.
SHUTDOWN = "immediate"


@contextlib.contextmanager
def kernel_manager() -> Iterator[object | None]:
    """The manager of a notebook's kernel, for nbclient's `km=`: its five channels on Unix sockets in a folder of
    its own, removed after (jupyter_client's ipc transport), where the system has them. On TCP, jupyter_client finds
    five free ports and the kernel binds them once it has started, a second later; in between any connection on the
    machine can take one, and the kernel then dies (ipykernel tries a port it was given once): the race that failed
    a run of `gradlab ddp`'s rendezvous (gradlab/kit/distributed.py, hosted_store). None (TCP, nbclient's own
    manager) where there are no Unix sockets or the folder's path is too long for one."""
    if os.name != "posix":
        yield None
        return
    from jupyter_client.manager import AsyncKernelManager

    with tempfile.TemporaryDirectory(prefix="gradlab-kernel-") as folder:
        if len(folder) > 80:  # a Unix socket's path has at most 107 bytes
            yield None
            return
        yield AsyncKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(folder, "channel"),
                                 connection_file=os.path.join(folder, "kernel.json"))

# What each notebook's marked cells must show, by lesson and marker: the claims of its main run hold, and each
# "What happened" cell is true of the run before it. Each assertion's message says what the notebook's text says.
CHECKS = {
    "mnist": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "lr-50": (
            "claims = {c.id: c for c in big.claims}\n"
            "assert not claims['manual-equals-optimizer'].passed, 'the runs should drift apart at lr 50'\n"
            "assert not claims['analytic-equals-autograd'].passed, 'the runs should drift apart at lr 50'\n"
            "assert claims['analytic-gradient-one-batch'].passed and claims['one-step-agrees'].passed, "
            "'from the same weights the gradients and one step should still agree'"),
        "no-shuffle": "assert plain.exit_code == 0, [c.id for c in plain.claims if not c.passed]",
    },
    "clip": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "none": (
            "dead, clipped = raw.metrics['none']['test_accuracy'], r.metrics['global-norm']['test_accuracy']\n"
            "assert dead < 0.2 and clipped > 0.5, ('without clipping the accuracy should fall to about chance, one "
            "digit in ten, where the clipped run learns', dead, clipped)\n"
            "longest, clipped_longest = raw.metrics['none']['longest_step'], r.metrics['global-norm']['longest_step']\n"
            "assert longest > 10 * clipped_longest, ('steps many times longer than the clipped run\\'s longest', "
            "longest, clipped_longest)"),
    },
    "jacobian": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "output": "assert other.exit_code == 0, [c.id for c in other.claims if not c.passed]",
    },
    "log1pexp": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "graph": ("first = view.graphs[0].first_nonfinite\n"
                  "assert first is not None and first.name == 'ExpBackward0', first"),
        "float64": (
            "rows = {(x, what): row for x, what, *row in wide.tables[0].rows}\n"
            "naive, sigmoid = rows[(100.0, 'gradient')][0], rows[(100.0, 'gradient')][-1]\n"
            "assert 'float64' in wide.tables[0].title and naive == sigmoid == 1.0, "
            "('in float64 the naive gradient at x = 100 should be right', naive)"),
        "x-1000": (
            "import math\n"
            "for table in far.tables[:2]:\n"
            "    rows = {(x, what): row for x, what, *row in table.rows}\n"
            "    columns = table.headers[2:]\n"
            "    at = {c: rows[(1000.0, 'gradient')][i] for i, c in enumerate(columns)}\n"
            "    assert math.isnan(at['naive log(1+exp(x))']), (table.title, at)\n"
            "    assert math.isnan(at['torch.where guard']), (table.title, at)\n"
            "    assert at['double where'] == at['stable Function'] == at['exact'] == 1.0, (table.title, at)\n"
            "    value = {c: rows[(1000.0, 'value')][i] for i, c in enumerate(columns)}\n"
            "    assert math.isinf(value['naive log(1+exp(x))']), (table.title, value)\n"
            "assert [t.title.split(':')[0] for t in far.tables[:2]] == ['float32', 'float64'], far.tables[:2]"),
        "second": ("assert errors['e rebuilt from x'] < 1e-12, errors\n"
                   "assert errors['e kept on ctx'] > 0.1, errors"),
    },
    "gaussian-policy": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "few-updates": (
            "claims = {c.id: c for c in short.claims}\n"
            "assert not claims['reinforce-reaches-optimum'].passed, 'μ should fall short of a* in 20 updates'\n"
            "bound = 0.1  # reinforce-reaches-optimum's: within 0.1 of a*\n"
            "assert short.metrics['exact_final_distance'] > bound, ('Adam on the exact gradient should fall short "
            "too', short.metrics['exact_final_distance'])"),
        "huge-lr": (
            "claims = {c.id: c for c in wild.claims}\n"
            "assert claims['sigma-shrinks'].value < 1e-3, ('σ should collapse to almost nothing', "
            "claims['sigma-shrinks'].value)\n"
            "assert not claims['reinforce-reaches-optimum'].passed, 'μ should end far from a*'\n"
            "assert wild.metrics['exact_final_distance'] < 0.1, ('Adam on the exact gradient should get there', "
            "wild.metrics['exact_final_distance'])\n"
            "sigma, mu = max(wild.metrics['final_sigma']), min(abs(m) for m in wild.metrics['final_mu'])\n"
            "assert 5 * sigma < 2**-25 * mu, ('an action μ + σε, |ε| < 5, should round to μ in float32', sigma, mu)\n"
            "assert learning.rows[-1][1] == learning.rows[-2][1], ('μ should stop moving', learning.rows[-2:])"),
    },
    "dqn": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "no-stop-grad": (
            "assert reaches['no-stop-grad'] > 0 and reaches['stop-grad'] == 0, reaches\n"
            "assert claim.passed, (claim.text, claim.value)"),
    },
    "actor-critic": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "backward": (
            "claims = {c.id: c for c in same.claims}\n"
            "same_weights = claims['explicit-equals-backward']\n"
            "assert same_weights.passed and same_weights.value == 0, ('identical, to the bit', same_weights.value)\n"
            "assert not claims['learns'].passed, 'learns fails in a run this short'"),
        "torch-rmsprop": (
            "claims = {c.id: c for c in other.claims}\n"
            "assert claims['tf1-rmsprop-by-hand'].passed and claims['optimizers-differ'].passed, claims\n"
            "ratios = [row[-1] for row in other.tables[0].rows]\n"
            "assert ratios == sorted(ratios, reverse=True) and min(ratios) > 1, ratios"),
    },
    "ddp": {
        "run": "assert r.exit_code == 0, [c.id for c in r.claims if not c.passed] or r.stopped",
        "uneven": "assert claim.passed, (claim.text, claim.value)",
        "loose-clip": (
            "assert not claim.passed, (claim.text, claim.value, 'clipping should never act at 1e6')\n"
            "above = next(c for c in r.claims if c.id == 'clip-then-reduce-differs')\n"
            "assert above.passed, 'the two orders differed in the run above'\n"
            "ranks = next(t for t in loose.tables if t.title.startswith('data parallel'))\n"
            "assert all(row[2] < 1e6 for row in ranks.rows), ('no gradient is that long', ranks.rows)"),
    },
}


def injected(source: str):
    """A code cell this script inserts: tagged, and saying so in its first line."""
    import nbformat

    cell = nbformat.v4.new_code_cell(f"# inserted by scripts/notebooks.py (not in the notebook)\n{source}")
    cell.metadata["tags"] = [INJECTED]
    return cell


def prepare(nb, lesson: str, *, quick: bool, answers: bool):
    """NB with this script's cells inserted (see the module's docstring); raises ValueError when a marker and
    CHECKS disagree (a check with no cell to follow, or a marked cell with no check), so none is lost silently."""
    from gradlab.practice import all_exercises, answer_source

    checks = CHECKS.get(lesson, {})
    marked = [c.metadata["gradlab-check"] for c in nb.cells if "gradlab-check" in c.metadata]
    if sorted(marked) != sorted(checks):
        raise ValueError(f"{lesson}: the cells marked gradlab-check are {sorted(marked)}, CHECKS has {sorted(checks)}")
    exercises = all_exercises()
    cells = []
    for i, cell in enumerate(nb.cells):
        before = nb.cells[i - 1].metadata.get("gradlab-exercise") if i else None  # this is that exercise's check
        if answers and "gradlab-exercise" in cell.metadata:
            cell.source = answer_source(exercises[cell.metadata["gradlab-exercise"]]).strip() + "\n"
        cells.append(cell)
        if "gradlab-check" in cell.metadata:
            cells.append(injected(checks[cell.metadata["gradlab-check"]]))
        if quick and "parameters" in cell.metadata.get("tags", []):
            cells.append(injected("QUICK = True"))
        if answers and before:
            name = f"check_{exercises[before].function}"
            if not cell.source.startswith(f"{name} = gradlab.check("):
                raise ValueError(f"{lesson}: the cell after {before}'s starter is not its check ({name} = ...)")
            cells.append(injected(f"assert {name}.exit_code == 0, {name}.stopped or {name}.metrics.get('diagnosis')"))
    if quick and not any("parameters" in c.metadata.get("tags", []) for c in nb.cells):
        raise ValueError(f"{lesson}: no cell tagged 'parameters' to set QUICK after")
    nb.cells = cells
    return nb


def execute(path: Path, quick: bool, answers: bool = False):
    """The executed notebook; raises nbclient's CellExecutionError when a cell fails."""
    import nbformat
    from nbclient import NotebookClient

    nb = prepare(nbformat.read(path, as_version=4), path.stem.split("-", 1)[1], quick=quick, answers=answers)
    with kernel_manager() as km:
        NotebookClient(nb, km=km, timeout=TIMEOUT_S, kernel_name="python3", shutdown_kernel=SHUTDOWN,
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
