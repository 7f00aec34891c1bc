"""The thread policy: one thread for small tensors, one per idle CPU for the larger models, --threads wins."""

import json

import pytest
import torch
from conftest import assert_one_line_error, invoke

from gradlab import threads
from gradlab.errors import GradlabError
from gradlab.lessons import LESSONS


def test_small_tensor_lessons_run_on_one_thread():
    assert threads.choose("one", None) == (1, "small tensors")


@pytest.mark.parametrize(("idle", "cpus", "expected"), [(1.9, 2, 2), (1.2, 2, 1), (0.2, 2, 1), (7.6, 4, 4),
                                                       (2.6, 8, 3)])
def test_idle_policy_takes_one_thread_per_idle_cpu(monkeypatch, idle, cpus, expected):
    monkeypatch.setattr(threads, "idle_cpus", lambda window=0.1: idle)
    monkeypatch.setattr(threads, "available_cpus", lambda: cpus)
    n, why = threads.choose("idle", None)
    assert n == expected and f"{idle:.1f} of {cpus} CPUs idle" == why


def test_requested_threads_win_and_are_checked():
    assert threads.choose("idle", 3) == (3, "--threads")
    for bad in (0, -1, threads.MAX_THREADS + 1):
        with pytest.raises(GradlabError, match="--threads must be between 1 and"):
            threads.validate(bad)


def test_idle_cpus_is_a_fraction_of_the_machine():
    assert 0.0 <= threads.idle_cpus(0.02) <= (threads.os.cpu_count() or 1) + 1e-9


def test_every_lesson_has_a_known_policy():
    assert {info.threads for info in LESSONS.values()} <= set(threads.POLICIES)


def test_the_run_uses_and_reports_the_chosen_threads(tmp_path):
    before = torch.get_num_threads()
    try:
        out = tmp_path / "r.json"
        result = invoke("log1pexp", "--x", "0", "--json", str(out))
        assert result.exit_code == 0 and "1 thread (small tensors)" in result.output
        r = json.loads(out.read_text())
        assert (r["threads"], r["threads_why"]) == (1, "small tensors")
        result = invoke("log1pexp", "--x", "0", "--threads", "2", "--json", str(out))
        assert "2 threads (--threads)" in result.output and json.loads(out.read_text())["threads"] == 2
    finally:
        torch.set_num_threads(before)


def test_bad_thread_count_is_one_line(tmp_path):
    out = tmp_path / "r.json"
    assert_one_line_error(invoke("jacobian", "--threads", "0", "--json", str(out)), "--threads must be between 1")
    assert not out.exists()
