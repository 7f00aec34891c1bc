"""The thread policy: one thread, whatever the machine's load, unless --threads says otherwise."""

import json

import pytest
import torch
from conftest import assert_one_line_error, invoke

from gradlab.errors import GradlabError
from gradlab.kit import threads


def test_one_thread_unless_asked(monkeypatch):
    assert threads.choose(None) == (1, "small tensors")
    monkeypatch.setattr(threads, "cpus", lambda: 4)
    assert threads.choose(3) == (3, "--threads")
    for bad in (0, -1, 5, 1000):
        with pytest.raises(GradlabError, match="--threads must be between 1 and"):
            threads.validate(bad)


def test_the_run_uses_and_reports_the_chosen_threads(tmp_path, monkeypatch):
    monkeypatch.setattr(threads, "cpus", lambda: 4)  # as on a 4-CPU machine: up to 4 threads may be asked for
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # not the 1 the run must set (conftest gives every test process one)
    try:
        out = tmp_path / "r.json"
        result = invoke("log1pexp", "--x", "0", "--json", str(out))
        assert result.exit_code == 0 and "1 thread (small tensors)" in result.output
        r = json.loads(out.read_text())
        assert (r["threads"], r["threads_why"]) == (1, "small tensors") and torch.get_num_threads() == 1
        result = invoke("log1pexp", "--x", "0", "--threads", "2", "--json", str(out))
        assert "2 threads (--threads)" in result.output and json.loads(out.read_text())["threads"] == 2
        result = invoke("all", "--quick", "--lessons", "log1pexp", "--threads", "3")
        assert result.exit_code == 0 and "3 threads (--threads)" in result.output
    finally:
        torch.set_num_threads(before)


def test_bad_thread_count_is_one_line(tmp_path):
    out = tmp_path / "r.json"
    assert_one_line_error(invoke("jacobian", "--threads", str(threads.cpus() + 1)), "(the CPUs this machine has)")
    assert_one_line_error(invoke("jacobian", "--threads", "0", "--json", str(out)), "--threads must be between 1")
    assert not out.exists()
    assert_one_line_error(invoke("all", "--threads", "0"), "--threads must be between 1")
