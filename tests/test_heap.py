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
