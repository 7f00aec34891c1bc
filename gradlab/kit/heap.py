"""Python's cyclic garbage collector and what importing torch leaves in memory: set once per process gradlab owns.

CPython's collector (the `gc` module) runs generation 0 every 700 new container objects (tuples, lists, dicts,
objects) and the older generations every 10 runs of the younger, and a full collection walks every container alive.
Importing torch leaves a few hundred thousand of them (modules' functions, classes and tables) that live as long as
the process; a lesson, a check or a ddp worker then creates small containers by the million (each tensor's Python
wrapper, autograd's nodes, the lessons' tuples), so the collector runs often and its full runs walk all of torch
each time, to free nothing. Sampled across a whole `make test` (`perf record -a`, 2 cores), 15% of the machine's CPU
time was in the collector (gc_collect_main and the visits it makes), spread over the suite's processes.

So a process gradlab owns (its `gradlab` command, a ddp worker, the sandbox's child) collects generation 0 every
GEN0 containers from its start (`own_process`; the command, through _TorchImport, and the child, in its main(),
import torch with the collector off and freeze it at once), and once torch and the code about to run are imported,
`imported()` freezes what exists (gc.freeze: "move them to a permanent generation and ignore them in all the future
collections", Python's documentation of the gc module): later collections walk only what the run itself created.
Nothing else changes: reference counting still frees every object whose count falls to 0, frozen or not, and the
cycles the run creates are still collected; only a cycle that already existed at the freeze and is dropped later
stays (the imports make almost none).

Measured on 2 cores (AMD EPYC, torch 2.14.1, Python 3.11.7, quiet, one run each, `/usr/bin/time`, without → with):
`gradlab jacobian` 3.61 s → 2.54 s, `gradlab log1pexp` 2.28 s → 1.54 s, `gradlab ddp` 8.57 s → 7.61 s, `gradlab dqn
--quick` 11.68 s → 10.69 s, `gradlab check` of a right answer 2.0 s → 1.7 s; over a whole `make test`, the collector's
share of the CPU went from 15 % to 9 %.

A library call runs in its caller's process, whose collector is the caller's. gradlab.run and gradlab.check (a
notebook's kernel, a script) borrow it for the call (`lent`): if the caller has frozen nothing, what exists is frozen
for the call's time, torch's import too, and unfrozen as the call returns, which leaves the collector as it was
found. Measured on 2 cores, two notebooks run on their Jupyter kernel by scripts/notebooks.py, interleaved runs,
whole-machine CPU time, without → with: 03-jacobian 12.57 → 11.95 CPU-s (median of 3), 07-actor-critic 19.88 →
18.24 (median of 2). A test's CliRunner, which calls the command's function in the test's process, changes nothing.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.abc
import sys
from collections.abc import Iterator

GEN0 = 10_000  # new containers between two runs of generation 0 (CPython's default: 700)

_owned = False
_frozen = False
_lent = False


def own_process() -> None:
    """At the start of a process that is gradlab's own: generation 0 every GEN0 containers, torch's import without
    the collector (_TorchImport), and arm imported()."""
    global _owned
    _owned = True
    gc.set_threshold(GEN0, *gc.get_threshold()[1:])
    if "torch" not in sys.modules and not any(isinstance(f, _TorchImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchImport())


class _TorchImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: on the first `import torch` it leaves sys.meta_path and hands the spec the other
    finders give back with a loader that runs torch's import with the collector off and freezes what it made right
    after (gc.freeze), before the collector is on again (the gc module's documentation gives the same order to a
    process that forks: gc.disable() early, gc.freeze(), then gc.enable()). At GEN0 the import still sets off
    about 25 collections of the young generations (tests/test_heap.py counts them), each walking up to GEN0 new
    objects (GEN0 × 10 for generation 1) and freeing almost nothing; switched back on without the freeze, the
    collector's first run would walk the whole import at once. Measured on 2 cores (whole machine CPU, 8 runs
    interleaved, medians, with the sandbox's child doing the same): `gradlab check` of a right answer 2.66 → 2.53
    CPU-s, `gradlab jacobian` 2.43 → 2.36, `gradlab log1pexp` 1.58 → 1.57."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                spec.loader = _WithoutCollector(spec.loader)
                return spec
        return None


class _WithoutCollector(importlib.abc.Loader):
    def __init__(self, loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self.loader  # torch as any import leaves it: its own loader
        was_on = gc.isenabled()
        gc.disable()
        try:
            self.loader.exec_module(module)
        finally:
            gc.freeze()
            if was_on:
                gc.enable()


@contextlib.contextmanager
def lent() -> Iterator[None]:
    """Around a library call (gradlab.run, gradlab.check: a notebook's kernel, a script): the caller's process, lent
    for the call. If the caller has frozen nothing, every object alive is frozen for the call, again once torch is
    imported (imported()), and all unfrozen when it returns (gc.unfreeze: "move all objects in the permanent
    generation into the oldest generation"): the call's collections walk what the call makes, not the caller's
    objects nor torch's, and the caller's collector is left as it was found. A caller that froze objects of its own
    keeps them as they are: nothing is done then."""
    global _lent
    if _owned or _lent or gc.get_freeze_count():
        yield
        return
    _lent = True
    gc.freeze()
    try:
        yield
    finally:
        _lent = False
        gc.unfreeze()


def imported() -> None:
    """Torch and the code about to run are imported: freeze every object alive (once, and only in a process
    own_process() armed; and during a call lent() wraps)."""
    global _frozen
    if _lent:
        gc.freeze()
    elif _owned and not _frozen:
        _frozen = True
        gc.freeze()
