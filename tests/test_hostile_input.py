"""Inputs found by fuzzing that once crashed or hung gradlab (issue "No input crashes or hangs gradlab"): each is one
clear line and exit code 2 now, or a clean run, never a traceback, a hang or runaway memory."""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import assert_one_line_error, invoke

import gradlab
from gradlab.errors import GradlabError

GRADLAB = [sys.executable, "-m", "gradlab"]
LONG_NAME = "a" * 300 + ".json"


def test_config_on_a_device_or_a_fifo_is_refused_before_it_is_read(tmp_path):
    start = time.monotonic()
    assert_one_line_error(invoke("jacobian", "--config", "/dev/zero"), "is not a regular file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert_one_line_error(invoke("jacobian", "--config", str(fifo)), "is not a regular file")
    big = tmp_path / "big.toml"
    big.write_text("# x\n" * 300_000)
    assert_one_line_error(invoke("jacobian", "--config", str(big)), "more than a config file's")
    assert time.monotonic() - start < 10


def test_toml_nested_thousands_of_levels_is_one_line(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert_one_line_error(invoke("jacobian", "--config", str(deep)), "config file")


def test_a_huge_ddp_batch_is_refused_at_once():
    start = time.monotonic()
    assert_one_line_error(invoke("ddp", "--batch-size", "100000000000"), "--batch-size must be between 1 and 10,000")
    assert_one_line_error(invoke("ddp", "--batch-size", "9973", "--micro-batches", "4", "--workers", "1"),
                          "e.g. 1")  # a prime: its only divisors are 1 and itself, found without a long loop
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("args, fragment", [
    (["gaussian-policy", "--samples", "10000000000"], "--samples must be between 2"),
    (["gaussian-policy", "--epochs", "100000000000"], "--epochs must be between 1"),
    (["dqn", "--batch-size", "100000000000"], "--batch-size must be between 1 and"),
    (["dqn", "--buffer-size", "100000000000000"], "--buffer-size must be between 1 and"),
    (["dqn", "--gradient-steps", "1000000"], "--gradient-steps must be between 1 and"),
    (["actor-critic", "--envs", "100000", "--total-steps", "1000000"], "--envs must be between 1 and"),
])
def test_unbounded_sizes_have_upper_bounds(args, fragment):
    assert_one_line_error(invoke(*args), fragment)


@pytest.mark.parametrize("where", ["[/x]", "[bold]x[/bold]", "[red"])
def test_markup_in_user_text_is_printed_as_written(tmp_path, where):
    folder = tmp_path / where
    folder.mkdir(parents=True)
    out = invoke("log1pexp", "--json", str(folder / "r.json"))
    assert out.exit_code == 0 and f"wrote{folder / 'r.json'}" in "".join(out.output.split())
    assert_one_line_error(invoke("log1pexp", "--json", str(tmp_path / "missing" / where / "r.json")), where)
    assert_one_line_error(invoke("all", "--lessons", where), where)
    assert_one_line_error(invoke("jacobian", "--matrix", where), "--matrix")


def test_a_file_name_too_long_for_the_file_system_is_one_line(tmp_path):
    assert_one_line_error(invoke("log1pexp", "--json", str(tmp_path / LONG_NAME)), "choose")
    assert_one_line_error(invoke("clip", "--plot", str(tmp_path / (LONG_NAME + ".png"))), "choose")
    assert_one_line_error(invoke("report", "--out", str(tmp_path / LONG_NAME), "--lessons", "log1pexp"), "--out")


@pytest.mark.parametrize("options, fragment", [
    ({"lr": 10**400}, "too large"),
    ({"data_dir": ["a", "b"]}, "data_dir must be text"),
    ({"data_dir": 3}, "data_dir must be text"),
    ({"dataset": None}, "dataset must be text"),
])
def test_api_values_of_the_wrong_kind_or_size_raise_one_line(options, fragment):
    with pytest.raises(GradlabError) as e:
        gradlab.run("mnist", **options)
    assert fragment in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 300


@pytest.mark.parametrize("env, fragment", [
    ({"MASTER_PORT": "abc"}, "not a whole number"),
    ({"MASTER_PORT": "99999"}, "MASTER_PORT 99999 is not a port"),
    ({"LOCAL_WORLD_SIZE": "abc"}, "not a whole number"),
    ({"MASTER_ADDR": "no-such-host.invalid"}, "does not resolve"),
])
def test_bad_torchrun_variables_are_one_line(env, fragment):
    base = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29512"}
    assert_one_line_error(invoke("ddp", "--steps", "2", env={**base, **env}), fragment)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_killing_torchrun_leaves_no_gradlab_rank_running():
    torchrun = Path(sys.executable).parent / "torchrun"
    proc = subprocess.Popen([str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "gradlab", "ddp",
                             "--steps", "20000", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "OMP_NUM_THREADS": "1"}, start_new_session=True)

    def ranks() -> list[int]:
        found = []
        for p in Path("/proc").iterdir():
            try:
                cmd = (p / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if p.name.isdigit() and b"gradlab" in cmd and b"ddp" in cmd and int(p.name) != proc.pid \
                    and str(proc.pid) in _ancestors(p.name):
                found.append(int(p.name))
        return found

    try:
        deadline = time.monotonic() + 120
        while len(ranks()) < 2 and time.monotonic() < deadline:
            time.sleep(0.3)
        started = ranks()
        assert len(started) == 2, "torchrun did not start two ranks"
        time.sleep(2)
        proc.send_signal(signal.SIGKILL)  # the launcher dies without a word to its children
        proc.wait()
        deadline = time.monotonic() + 15
        while any(Path(f"/proc/{pid}").exists() and _running(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not [pid for pid in started if Path(f"/proc/{pid}").exists() and _running(pid)]
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _ancestors(pid: str) -> str:
    """The pids above PID, read from /proc (the ranks' parent is torchrun's agent, whose parent is torchrun)."""
    chain = []
    while pid not in ("0", "1"):
        try:
            pid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except OSError:
            break
        chain.append(pid)
    return " ".join(chain)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_ddp_in_a_process_that_already_has_a_process_group_is_one_line():
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)  # no port to find free
    try:
        with pytest.raises(GradlabError, match=r"already has a torch\.distributed process group"):
            gradlab.run("ddp", workers=1, steps=2)
    finally:
        dist.destroy_process_group()


def test_json_and_plot_naming_one_file_through_dots_or_a_link_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(invoke("clip", "--json", "o.json", "--plot", "./o.json"), "name the same file")
    (tmp_path / "link.json").symlink_to(tmp_path / "o.json")
    assert_one_line_error(invoke("clip", "--json", "o.json", "--plot", "link.json"), "name the same file")
    assert not (tmp_path / "o.json").exists()


def test_json_to_a_closed_standard_output_is_one_line():
    proc = subprocess.run([*GRADLAB, "log1pexp", "--json", "-"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, preexec_fn=lambda: os.close(1), timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == \
        "gradlab: error: --json -: standard output is closed; give a file name instead", proc.stderr


def test_report_onto_a_dangling_symlink_is_refused_before_any_lesson_runs(tmp_path):
    out = tmp_path / "site"
    out.symlink_to(tmp_path / "gone")
    start = time.monotonic()
    assert_one_line_error(invoke("report", "--out", str(out)), "which does not exist")
    assert time.monotonic() - start < 5


def test_a_port_taken_between_the_check_and_the_bind_is_named(monkeypatch):
    from gradlab.kit import distributed

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        monkeypatch.setattr(distributed, "check_port", lambda p: None)  # as if the other job bound it just after
        result = invoke("ddp", "--port", str(port), "--steps", "2", "--timeout", "20")
    assert_one_line_error(result, f"--port {port}", "already in use")


def test_sighup_is_one_line_like_ctrl_c():  # SIGTERM: test_ddp_lesson.py and test_environment.py
    for signum, code, words in ((signal.SIGHUP, 129, "terminated (SIGHUP: the terminal closed)"),):
        proc = subprocess.Popen([*GRADLAB, "dqn", "--total-steps", "200000", "--json", "r.json"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(4)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code and err.strip().splitlines()[-1] == f"gradlab: error: {words}", err
        assert not Path("r.json").exists()


def test_a_broken_pipe_is_not_a_failed_claim():
    proc = subprocess.run(f"set -o pipefail; {sys.executable} -m gradlab jacobian | head -1", shell=True,
                          capture_output=True, text=True, timeout=120, executable="/bin/bash",
                          env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 141 and proc.stderr == "", proc.stderr  # 128 + SIGPIPE, and nothing said
    assert "gradlab jacobian" in proc.stdout  # the one line head printed
