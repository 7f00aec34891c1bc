"""The userns mode (issue #34): a teacher who is not root grades a class where bubblewrap can make a user namespace.
The suite (root) starts gradlab as a uid of its own, the teacher, on a class of attacks written as a student could:
reading the teacher's other files (a secret of theirs, a classmate's file, gradlab's references), signalling the
teacher's processes, the network, a fork bomb while the teacher runs more processes than a sandbox may, 10 GB in one
process, a daemon, the disk and the kernel. Every attack file is otherwise a right answer, so an attack that worked
would pass. It skips, saying why, where the suite is not root, or where that uid cannot run this Python with torch
and gradlab (a clone or a Python under a folder other users cannot enter, such as /root), or bwrap --unshare-user
fails for it; GRADLAB_REQUIRE_SANDBOX does not turn these skips into failures (CI's clone may lie in such a folder)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import REPO, once
from test_sandbox import ATTACKS, CLIP, HEAD, Listener

from gradlab.practice.sandbox import cgroups, modes
from gradlab.practice.sandbox.limits import Limits, package_dir

TEACHER = 1_690_000 + os.getpid() % 10_000  # a uid of its own, in no passwd file: its processes are the test's
CROWD = 100  # processes the teacher runs meanwhile: more than a sandbox's RLIMIT_NPROC allows

ATTACKS_USERNS = {
    "copy.py": ATTACKS["copy.py"],  # the teacher's secret, a classmate's file, gradlab's references: @PATHS@
    "signal.py": '''
import signal

found = {"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()), "ppid": os.getppid()}
for label, pid in (("teacher's process", @VICTIM@), ("every process it may signal", -1)):
    try:
        os.kill(pid, signal.SIGKILL)
        found[label] = "killed"
    except OSError as e:
        found[label] = e.strerror
try:
    with open("@RESULTS@", "w") as f:
        f.write('{"forged": true}')
    found["results"] = "written"
except OSError as e:
    found["results"] = e.strerror
report(**found)
''',
    "daemon.py": ATTACKS["daemon.py"],
    "net.py": ATTACKS["net.py"],
    "flood.py": ATTACKS["flood.py"],
    "memory.py": '''
try:
    block = bytearray(10 << 30)
    report(memory="10 GB allocated")
except MemoryError:
    report(memory="MemoryError")
''',
    "limits.py": ATTACKS["limits.py"] + '''
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
remount = libc.mount(None, b"/usr", None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND, MS_RDONLY off: rw
caps = {line.split(":")[0]: line.split()[1] for line in open("/proc/self/status") if line.startswith("Cap")}
report(remount_usr="allowed" if remount == 0 else os.strerror(ctypes.get_errno()), caps=caps,
       home_listed=os.path.exists("@HOME@"))
''',
    "honest.py": "",
}


def _teacher_env(home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8", "COLUMNS": "160",
            "PYTHONPATH": str(REPO), "CUDA_VISIBLE_DEVICES": "", "GRADLAB_DEVICE": "cpu"}


def as_teacher(argv: list[str], home: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(argv, user=TEACHER, group=TEACHER, extra_groups=[], cwd=home, env=_teacher_env(home),
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def teacher_problem(home: Path) -> str | None:
    """Why gradlab cannot run as the teacher here, or None."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "the userns tests start gradlab as another user, which needs a Linux suite run as root"
    paths = [Path(sys.executable), Path(os.path.realpath(sys.executable))]
    blocked = next((f" ({p} is not searchable by other users)" for x in paths for p in reversed(x.parents)
                    if not os.stat(p).st_mode & 0o001), "")
    try:
        r = as_teacher([sys.executable, "-c", "import torch, gradlab"], home, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return f"uid {TEACHER} cannot run {sys.executable}{blocked}: {e}"
    if r.returncode != 0:
        return (f"uid {TEACHER} cannot run {sys.executable} with torch and this clone's gradlab{blocked}: "
                + " ".join(r.stderr.decode(errors="replace").split())[-300:])
    if not shutil.which("bwrap"):
        return "no bwrap on PATH"
    r = as_teacher(["bwrap", "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc",
                    "/proc", "/bin/true"], home, timeout=60)  # bubblewrap's own, whatever gradlab makes of it
    if r.returncode != 0:
        return f"bwrap --unshare-user fails for uid {TEACHER}: " + " ".join(r.stderr.decode(errors="replace").split())
    return None


def _teacher_home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="gl-userns-"))  # in /tmp: the teacher can reach it (tmp_path may not be)
    os.chown(home, TEACHER, TEACHER)
    os.chmod(home, 0o700)
    return home


def _teacher_processes() -> list[int]:
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.stat(f"/proc/{p}").st_uid == TEACHER:
                    found.append(int(p))
            except OSError:
                pass
    return found


def _named(comm: str) -> list[int]:
    found = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if Path(f"/proc/{p}/comm").read_text().strip() == comm:
                    found.append(int(p))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded once by `gradlab grade` as the teacher (or why it cannot be, to skip with)."""
    folder = once(tmp_path_factory, "userns-class", lambda f: (f / "result.pickle").write_bytes(pickle.dumps(_grade())))
    result = pickle.loads((folder / "result.pickle").read_bytes())
    if "skip" in result:
        pytest.skip(result["skip"])
    return result


def _grade() -> dict:
    home = _teacher_home()
    try:
        problem = teacher_problem(home)
        return {"skip": problem} if problem else _grade_in(home)
    finally:
        for pid in _teacher_processes():  # nothing of the teacher's outlives the test (the crowd, a leftover)
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(home, ignore_errors=True)


def _grade_in(home: Path) -> dict:
    subs, out, drop = home / "subs", home / "graded", home / "drop"
    for d in (subs, drop):
        d.mkdir()
        os.chown(d, TEACHER, TEACHER)
    secret = home / "secret.txt"  # the teacher's own file, outside anything bound
    secret.write_text("the teacher's secret\n")
    os.chown(secret, TEACHER, TEACHER)
    os.chmod(secret, 0o600)
    package = Path(package_dir())
    victim = subprocess.Popen(["sleep", "600"], user=TEACHER, group=TEACHER, extra_groups=[], cwd=home)
    crowd = [subprocess.Popen(["sleep", "600"], user=TEACHER, group=TEACHER, extra_groups=[], cwd=home)
             for _ in range(CROWD)]
    listener = Listener()
    fills = {"@PATHS@": repr([str(secret), str(subs / "honest.py"), str(package / "lessons/clip/exercises/checks.py"),
                              str(REPO / "gradlab/lessons/clip/exercises/answers.py"), str(out / "results.json")]),
             "@VICTIM@": str(victim.pid), "@RESULTS@": str(out / "results.json"),
             "@MARKER@": str(drop / "daemon-was-here"), "@PORT@": str(listener.port), "@HOME@": str(home)}
    for name, body in ATTACKS_USERNS.items():
        for key, value in fills.items():
            body = body.replace(key, value)
        (subs / name).write_text(HEAD + body)
        os.chown(subs / name, TEACHER, TEACHER)
    try:
        started = time.monotonic()
        proc = as_teacher([sys.executable, "-m", "gradlab", "grade", str(subs), "--exercise", CLIP, "--out",
                           str(out)], home)
        wall = time.monotonic() - started
        time.sleep(2)  # the daemon would write 1 s after its check
        after = {"victim": victim.poll(), "crowd": sum(c.poll() is None for c in crowd), "accepted": listener.accepted,
                 "daemons": _named("gl-daemon"), "marker": (drop / "daemon-was-here").exists(),
                 "left": sorted(set(_teacher_processes()) - {victim.pid, *(c.pid for c in crowd)})}
    finally:
        listener.server.close()
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else {}
    records = {s: next(iter(files.values())) for s, files in results.get("students", {}).items()}
    reports: dict[str, dict] = {}  # what each attack reported (all of its lines)
    for student, rec in records.items():
        for line in rec.get("printed", "").splitlines():
            if line.startswith("ATTACK {"):
                reports.setdefault(student, {}).update(json.loads(line[7:]))
    return {"returncode": proc.returncode, "stdout": proc.stdout.decode(errors="replace"),
            "stderr": proc.stderr.decode(errors="replace"), "wall": wall, "records": records, "reports": reports,
            "after": after, "uid": TEACHER}


def passed(record: dict) -> bool:
    return record["passed"] and record["score"] == record["points"]


def test_a_teacher_who_is_not_root_grades_a_class_in_the_userns_mode(graded):
    assert graded["returncode"] == 0, graded["stderr"][-3000:]
    assert set(graded["records"]) == {n.removesuffix(".py") for n in ATTACKS_USERNS}, graded["records"].keys()
    assert all(r["sandbox"] == "userns" for r in graded["records"].values())
    said = " ".join(graded["stdout"].split())
    assert "gradlab: note: submissions run in bubblewrap in a user namespace of their own" in said, said
    assert ("bounded as a whole in processes and threads" in said and "only per process" in said) or \
        "a cgroup bounds each sandbox as a whole" in said, said
    assert passed(graded["records"]["honest"])


def test_the_teachers_other_files_are_out_of_reach(graded):
    found = graded["reports"]["copy"]
    assert found["files"] == [] and found["imports"] == [] and found["frames"] == [], found
    assert passed(graded["records"]["copy"])  # a right answer: only the copying was in vain
    assert graded["reports"]["limits"]["home_listed"] is False


def test_the_teachers_processes_and_gradlab_cannot_be_signalled(graded):
    found, after = graded["reports"]["signal"], graded["after"]
    assert found["pids"] == [1, 2] and found["ppid"] == 1, found  # its namespace's init and itself
    assert found["teacher's process"] == "No such process" and found["every process it may signal"] != "killed"
    assert found["results"] != "written" and after["victim"] is None and after["crowd"] == CROWD, (found, after)
    assert passed(graded["records"]["signal"])


def test_no_network_but_a_private_loopback(graded):
    found = graded["reports"]["net"]
    assert found["host loopback"].startswith("refused") and graded["after"]["accepted"] == 0, found
    assert found["dns"].startswith("failed") and found["route"].startswith("none"), found


def test_a_fork_bomb_is_bounded_in_its_own_namespace_while_the_teacher_runs_more(graded):
    """RLIMIT_NPROC set inside the sandbox's user namespace counts its tasks alone: the teacher ran CROWD processes
    (more than the limit) and the bomb still forked, up to the limit and no further."""
    children = graded["reports"]["flood"]["children"]
    assert Limits().nproc < CROWD and 0 < children < Limits().nproc, children
    assert passed(graded["records"]["flood"]) and graded["after"]["crowd"] == CROWD


def test_ten_gb_in_one_process_is_refused(graded):
    assert graded["reports"]["memory"] == {"memory": "MemoryError"}


def test_nothing_outlives_its_check(graded):
    after = graded["after"]
    assert graded["reports"]["daemon"] == {"daemon": "started"}
    assert after["daemons"] == [] and not after["marker"] and after["left"] == [], after


def test_disk_capabilities_and_the_kernel_are_bounded(graded):
    found, limits = graded["reports"]["limits"], Limits()
    assert found["/tmp MB"] <= limits.tmp_bytes >> 20 and found[". MB"] <= limits.box_bytes >> 20, found
    assert found["memfd_create"] == found["shmget"] == found["unshare user+mount"] == "Operation not permitted"
    assert found["remount_usr"] == "Operation not permitted", found
    assert set(found["caps"].values()) == {"0000000000000000"}, found["caps"]
    assert found["uid"] == graded["uid"] and found["nproc"] == limits.nproc, found


# ------------------------------------------------------------------------------------ detection and the cgroup

def test_as_root_the_userns_mode_is_never_picked(monkeypatch):
    """Root keeps its modes: GRADLAB_SANDBOX=userns as root gives plain, and says why."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    found = modes.detect_capped("userns")
    assert found.mode == "plain" and "userns is for other users" in found.why


def test_the_userns_line_says_what_is_bounded_as_a_whole_and_what_per_process():
    without = modes.userns_message("", "not delegated (test)")
    assert "no cgroup here (not delegated (test))" in without
    assert "bounded as a whole in processes and threads (96, counted in its user namespace)" in without
    assert "in memory (4 GB) and CPU time only per process" in without
    assert "a cgroup bounds each sandbox as a whole (2 GB of memory, 2 CPUs, 96" in modes.userns_message("v2", "")


@pytest.mark.parametrize(("mode", "cgroup", "most"), [("userns", "", 1), ("userns", "v2", 2), ("bwrap", "", 2),
                                                       ("uid", "v1", 2)])
def test_without_a_cgroup_the_userns_mode_grades_one_sandbox_at_a_time(monkeypatch, mode, cgroup, most):
    """Nothing bounds the CPU of a userns sandbox without a cgroup as a whole: a flood in one would starve the one
    beside it, so none runs beside it; root's modes are unchanged."""
    from gradlab.practice.classroom import pool

    monkeypatch.setattr(modes, "detect", lambda: modes.Detected(mode, ""))
    monkeypatch.setattr(cgroups, "available", lambda: (cgroup, "" if cgroup else "none (test)"))
    monkeypatch.setattr(cgroups, "budget", lambda: cgroups.Budget(cpus=2, quota=None, memory=64 << 30, pids=None))
    assert pool.at_once() == most  # (2 CPUs given: tests/test_capacity.py sizes it from what gradlab is given)
    if mode == "userns":  # and its note says so
        assert ("so they run one at a time" in modes.userns_message(cgroup, "none (test)")) == (most == 1)


def _fake_cgroupfs(root: Path, own: str, writable: bool) -> Path:
    """A cgroup v2 tree in plain files: the root's controllers, and this process's folder OWN."""
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    base = root / own.lstrip("/")
    base.mkdir(parents=True)
    for name, text in (("cgroup.controllers", "cpu memory pids\n"), ("cgroup.subtree_control", ""),
                       ("cgroup.procs", "")):
        (base / name).write_text(text)
    if not writable:
        (base / "cgroup.subtree_control").chmod(0o444)
    return base


@pytest.mark.parametrize("writable", [True, False])
def test_not_root_a_cgroup_is_made_only_in_a_delegated_folder(tmp_path, monkeypatch, writable):
    """Not root, a sandbox's cgroup is made in this process's own v2 folder when it is delegated (writable), as for
    root; else available() says which file is not writable. (The cgroupfs here is plain files: what is checked is
    the choice and the files written, not the kernel's enforcement.)"""
    base = _fake_cgroupfs(tmp_path, "/user.slice/user-1000.slice/user@1000.service/app.slice/gl.scope", writable)
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)
    monkeypatch.setattr(cgroups, "_own", lambda hierarchy: "/user.slice/user-1000.slice/user@1000.service/app.slice/"
                                                           "gl.scope")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and (
        os.stat(p).st_mode & 0o222 != 0))  # as root every file is writable: go by the mode bits, as the user would
    cgroups.available.cache_clear()
    try:
        version, why = cgroups.available()
        if writable:
            assert (version, why) == ("v2", "")
            assert set((base / "cgroup.subtree_control").read_text().split()) == {"+cpu", "+memory", "+pids"}
            group = cgroups.Group(memory=1 << 30, pids=96, cpus=2.0)
            assert group.dirs[0].parent == base and (group.dirs[0] / "memory.max").read_text() == str(1 << 30)
            assert (group.dirs[0] / "pids.max").read_text() == "96"
        else:
            assert version == "" and why == f"your cgroup {base} is not delegated to you (cgroup.subtree_control is " \
                                            "not writable)"
    finally:
        cgroups.available.cache_clear()


def test_not_root_cgroup_v1_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)  # no cgroup.controllers: v1 (or none)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    cgroups.available.cache_clear()
    try:
        assert cgroups.available() == ("", f"{tmp_path} is not cgroup v2, and cgroup v1's folders are root's")
    finally:
        cgroups.available.cache_clear()


def test_not_root_a_delegated_cgroup_that_holds_processes_is_said_so(tmp_path, monkeypatch):
    """A delegated leaf (a terminal's scope: the shell and gradlab live in it) cannot enable controllers for a child
    (the kernel answers EBUSY): the note says that, not a bare errno."""
    import errno

    base = _fake_cgroupfs(tmp_path, "/user.slice/app.slice/term.scope", writable=True)
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)
    monkeypatch.setattr(cgroups, "_own", lambda hierarchy: "/user.slice/app.slice/term.scope")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)

    def busy():
        raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))

    monkeypatch.setattr(cgroups, "_v2_base", busy)
    cgroups.available.cache_clear()
    try:
        assert cgroups.available() == ("", f"your cgroup {base} holds processes, gradlab's own at least, so no "
                                           "controller can be enabled below it")
    finally:
        cgroups.available.cache_clear()
