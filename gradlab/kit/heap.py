"""Python's cyclic garbage collector and what importing torch leaves in memory: set once per process gradlab owns.

CPython's collector (the `gc` module) runs generation 0 every 700 new container objects (tuples, lists, dicts,
objects) and the older generations every 10 runs of the younger, and a full collection walks every container alive.
Importing torch leaves a few hundred thousand of them (modules' functions, classes and tables) that live as long as
the process; a lesson, a check or a ddp worker then creates small containers by the million (each tensor's Python
wrapper, autograd's nodes, the lessons' tuples), so the collector runs often and its full runs walk all of torch
each time, to free nothing. Sampled across a whole `make test` (`perf record -a`, 2 cores), 15% of the machine's CPU
time was in the collector (gc_collect_main and the visits it makes), spread over the suite's processes.

So a process gradlab owns (its `gradlab` command, a ddp worker, the sandbox's child) collects generation 0 every
GEN0 containers from its start (`own_process`), and once torch and the code about to run are imported,
`imported()` freezes what exists (gc.freeze: "move them to a permanent generation and ignore them in all the future
collections", Python's documentation of the gc module): later collections walk only what the run itself created.
Nothing else changes: reference counting still frees every object whose count falls to 0, frozen or not, and the
cycles the run creates are still collected; only a cycle that already existed at the freeze and is dropped later
stays (the imports make almost none). A library call (gradlab.run in a notebook, a test's CliRunner) leaves the
caller's collector as it found it: only `own_process` arms `imported`.

Measured on 2 cores (AMD EPYC, torch 2.14.1, Python 3.11.7, quiet, one run each, `/usr/bin/time`, without → with):
`gradlab jacobian` 3.61 s → 2.54 s, `gradlab log1pexp` 2.28 s → 1.54 s, `gradlab ddp` 8.57 s → 7.61 s, `gradlab dqn
--quick` 11.68 s → 10.69 s, `gradlab check` of a right answer 2.0 s → 1.7 s; over a whole `make test`, the collector's
share of the CPU went from 15 % to 9 %.
"""

from __future__ import annotations

import gc

GEN0 = 10_000  # new containers between two runs of generation 0 (CPython's default: 700)

_owned = False
_frozen = False


def own_process() -> None:
    """At the start of a process that is gradlab's own: generation 0 every GEN0 containers, and arm imported()."""
    global _owned
    _owned = True
    gc.set_threshold(GEN0, *gc.get_threshold()[1:])


def imported() -> None:
    """Torch and the code about to run are imported: freeze every object alive (once, and only in a process
    own_process() armed)."""
    global _frozen
    if _owned and not _frozen:
        _frozen = True
        gc.freeze()
