"""Any console, any folder (issue "Any console, any folder"): a console that cannot show gradlab's symbols, a deleted
working folder, missing HOME/TMPDIR/MPLCONFIGDIR, bad thread variables, SIGTERM during `all` and `report`."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

GRADLAB = [sys.executable, "-m", "gradlab"]


def run(args, encoding=None, **kw):
    env = {**os.environ, "COLUMNS": "80", **kw.pop("env", {})}
    if encoding:
        env["PYTHONIOENCODING"] = encoding
    return subprocess.run([*GRADLAB, *args], capture_output=True, env=env, timeout=240, **kw)


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_console_that_cannot_show_the_symbols_gets_ascii_and_every_number(encoding):
    for args, numbers in ((["log1pexp", "--explain"], ["3.72007598e-44", "0.693147182", "2.06115362e-09"]),
                          (["list"], ["gradlab ddp"]), (["--help"], ["Softmax regression"]),
                          (["jacobian", "--help"], ["W = log softmax"])):
        proc = run(args, encoding)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode(errors="replace")
        text = proc.stdout.decode(encoding)  # strictly: every byte is of that encoding
        for number in numbers:
            assert number in text, (number, text[-2000:])
        if args[0] == "log1pexp":
            assert "[ok]" in text and "+----" in text  # ✓ and the box lines, spelled in ASCII


def test_files_stay_utf8_whatever_the_console(tmp_path):
    out = tmp_path / "r.json"
    assert run(["jacobian", "--json", str(out)], "ascii").returncode == 0
    assert "≡" in out.read_text(encoding="utf-8")


def test_a_deleted_working_folder_is_one_line(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.Popen(["/bin/sh", "-c", f"cd {gone} && rmdir {gone} && exec {sys.executable} -m gradlab "
                                              f"log1pexp --json r.json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and err.decode().strip().startswith("gradlab: error: the current folder no longer "
                                                                     "exists"), err


def test_missing_home_tmpdir_and_mplconfigdir_still_run_and_plot(tmp_path):
    env = {"HOME": str(tmp_path / "no-home"), "TMPDIR": str(tmp_path / "no-tmp"),
           "MPLCONFIGDIR": str(tmp_path / "no-mpl")}
    proc = run(["clip", "--epochs", "1", "--train-size", "500", "--plot", str(tmp_path / "p.png")], env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_thread_variables_are_dropped_not_fatal():
    proc = run(["log1pexp"], env={"OMP_NUM_THREADS": "abc", "MKL_NUM_THREADS": "-3", "OPENBLAS_NUM_THREADS": ""})
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()


@pytest.mark.parametrize("command", ["report"])  # report runs the lessons as `all` does, then writes: the harder
def test_sigterm_during_all_or_report_is_one_line_and_leaves_no_report(tmp_path, command):
    out = tmp_path / "site"
    args = [command, "--lessons", "jacobian,dqn"] + (["--out", str(out)] if command == "report" else [])
    # bytes, not text: the lines read here are buffered apart from what communicate() then reads from the pipe, and
    # the two can split a UTF-8 character (a box line's ━): decoding the rest failed once in a full run
    proc = subprocess.Popen([*GRADLAB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    for line in proc.stdout:  # a lesson's output is printed when it has run: jacobian's, then dqn trains
        if b"gradlab jacobian" in line:
            break
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 143 and err.strip() == "gradlab: error: terminated (SIGTERM)", err
    assert not out.exists()
