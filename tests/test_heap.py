"""Python's collector in gradlab's own processes (gradlab/kit/heap.py): set at the start, what the imports made frozen
once they are done; a library call leaves the caller's collector alone."""

import gc
import subprocess
import sys
from pathlib import Path

from conftest import invoke

import gradlab

AT_EXIT = ("import atexit, gc, sys\n"
           "atexit.register(lambda: print(gc.get_freeze_count(), gc.get_threshold()[0], file=sys.stderr))\n")


def test_the_gradlab_command_freezes_what_torch_imported():
    """`gradlab log1pexp` and `gradlab check` as the console script runs them (gradlab.cli.main.main): generation 0
    every heap.GEN0 containers, and at exit the frozen objects are torch's (hundreds of thousands); `gradlab --help`,
    which imports no torch, freezes nothing."""
    from gradlab.kit import heap

    def frozen(*args: str) -> tuple[int, int]:
        code = AT_EXIT + f"sys.argv = ['gradlab', *{list(args)!r}]\nfrom gradlab.cli.main import main\nmain()\n"
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        count, threshold = proc.stderr.split()[-2:]
        return int(count), int(threshold)

    count, threshold = frozen("log1pexp", "--x", "0", "--quiet")
    assert threshold == heap.GEN0 and count > 100_000, (count, threshold)
    answer = Path(__file__).parent / "practice_corpus" / "jacobian.jacobian_loop" / "right_batched_eye.py"
    count, threshold = frozen("check", str(answer), "--exercise", "jacobian.jacobian_loop", "--quiet")  # the grader
    assert threshold == heap.GEN0 and count > 100_000, (count, threshold)
    assert frozen("--help") == (0, heap.GEN0)


def test_torchs_import_in_a_process_of_gradlabs_own_runs_no_collection_and_leaves_torch_frozen():
    """own_process() then `import torch`: no collection of any generation during the import (at GEN0 alone, about 25
    ran), the collector on again after it, what the import made frozen, torch's module and spec with their own
    loader, and the hook gone from sys.meta_path."""
    code = ("import gc, sys\nfrom gradlab.kit import heap\nassert 'torch' not in sys.modules\nheap.own_process()\n"
            "before = [g['collections'] for g in gc.get_stats()]\nimport torch\n"
            "ran = sum(g['collections'] for g in gc.get_stats()) - sum(before)\n"
            "hooks = [f for f in sys.meta_path if type(f).__module__ == heap.__name__]\n"
            "print(ran, gc.isenabled(), gc.get_freeze_count() > 100_000, type(torch.__loader__).__name__,\n"
            "      type(torch.__spec__.loader).__name__, bool(hooks))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["0", "True", "True", "SourceFileLoader", "SourceFileLoader", "False"], out.stderr


def test_a_submission_runs_with_the_collector_on_and_torch_frozen(tmp_path):
    """The sandbox's child imports torch and builds the inputs with the collector off, then freezes what exists and
    turns the collector on before any line of the submission runs: a submission's cycles are collected. By the
    submission's first line no more collections have run than importing the child's module makes, with gradlab's
    package around it, in a Python started as the sandbox starts it (+3); measured: 36 for that import, 21 in the
    sandbox with the collector off from main()'s start, 49 when it ran through the imports at GEN0."""
    from conftest import REPO, check_file

    count = "sum(g['collections'] for g in gc.get_stats())"
    module_alone = subprocess.run(
        [sys.executable, "-I", "-c", f"import gc, sys; sys.path.insert(0, {str(REPO)!r}); "
                                     f"import gradlab.practice.inside.child; print({count})"],
        capture_output=True, text=True, timeout=120, check=True)
    path = tmp_path / "softplus.py"
    most = int(module_alone.stdout) + 3
    path.write_text(f"import gc\n\nimport torch\n\nRAN = {count}\n"
                    f"assert gc.isenabled() and gc.get_freeze_count() > 100_000 and RAN <= {most}, RAN\n"
                    "\n\ndef softplus(x):\n    assert gc.isenabled() and gc.get_threshold()[0] == 10_000\n"
                    "    return torch.logaddexp(x, torch.zeros_like(x))\n")
    r = check_file(path, "log1pexp.softplus")
    assert r.exit_code == 0 and r.claims and all(c.passed for c in r.claims), (r.stopped, r.metrics.get("diagnosis"))


def test_imported_freezes_only_once_and_only_where_own_process_armed_it():
    code = ("import gc, torch\nfrom gradlab.kit import heap\n"
            "heap.imported(); before = gc.get_freeze_count()\n"
            "heap.own_process(); heap.imported(); once = gc.get_freeze_count()\n"
            "x = [[] for _ in range(1000)]; heap.imported()\n"
            "print(before, once > 100_000, gc.get_freeze_count() == once, gc.get_threshold()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["0", "True", "True", "10000"], out.stdout


def test_a_library_call_leaves_the_callers_collector_as_it_found_it():
    """A test's CliRunner and gradlab.run in a notebook run gradlab in the caller's process: its collector is the
    caller's."""
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    assert invoke("log1pexp", "--x", "0").exit_code == 0
    gradlab.run("log1pexp", x="0")
    # nothing frozen meanwhile (a freeze would add every object alive; frozen objects freed since count no more)
    assert gc.get_threshold() == threshold and gc.get_freeze_count() <= frozen


def test_a_library_call_freezes_for_its_own_time_where_the_caller_froze_nothing():
    """gradlab.run and gradlab.check in a fresh process (a notebook's kernel): while the lesson runs, what existed
    before and what torch's import made are frozen; once the call returns nothing is frozen any more. A caller
    that froze objects of its own (this test worker, tests/conftest.py) keeps exactly those frozen."""
    code = ("import gc, gradlab\nfrom gradlab import runner\n"
            "during, execute = [], runner.execute\n"
            "def spied(*args, **kwargs):\n"
            "    result = execute(*args, **kwargs)\n"
            "    during.append(gc.get_freeze_count())\n"
            "    return result\n"
            "runner.execute = spied\n"
            "assert gradlab.run('log1pexp', x='0').exit_code == 0\n"
            "after_run = gc.get_freeze_count()\n"
            "from gradlab.lessons.log1pexp.exercises.answers import softplus\n"
            "assert gradlab.check(softplus, 'log1pexp.softplus').exit_code == 0\n"
            "print(during[-1] > 100_000, after_run, gc.get_freeze_count())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["True", "0", "0"], out.stdout + out.stderr
    frozen = gc.get_freeze_count()
    assert frozen > 0  # conftest froze what collection made
    gradlab.run("log1pexp", x="0")
    assert gc.get_freeze_count() <= frozen  # not unfrozen, nothing added


def test_the_sandboxs_child_sets_the_same_threshold():
    """The child (gradlab/practice/inside/child.py) cannot import gradlab.kit.heap, which is not bound into the
    sandbox: its copy of GEN0 is the same number."""
    from gradlab.kit import heap
    from gradlab.practice.inside import child

    assert child.GC_GEN0 == heap.GEN0
