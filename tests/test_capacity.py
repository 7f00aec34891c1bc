"""Where gradlab runs in a container, a Slurm job or a pod: what it is given (its CPU affinity, its cgroups' CPU quota,
memory and process limits, cgroup v1 and v2) sizes each sandbox and how many run at once, a check the machine ended is
never kept as a grade, and a right answer gets full marks under a 1-CPU quota (a real cgroup, as root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import invoke
from test_practice import SGD_RIGHT, solution

from gradlab.practice import capacity, cgroups, check, isolate, sandbox

GB = 1 << 30


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_budget_is_the_tightest_limit_above_gradlab_in_cgroup_v1(tmp_path, monkeypatch):
    """A quota on a parent (a container's --cpus=1, here on docker/) bounds gradlab's own cgroup below it, which has
    none (-1): cgroup v1 refuses a child's quota above it, so it is read from every folder up to the root."""
    root = tree(tmp_path, {"cpu/docker/cpu.cfs_quota_us": "100000", "cpu/docker/cpu.cfs_period_us": "100000",
                           "cpu/docker/job/cpu.cfs_quota_us": "-1", "cpu/docker/job/cpu.cfs_period_us": "100000",
                           "memory/docker/job/memory.limit_in_bytes": str(3 * GB),
                           "memory/docker/memory.limit_in_bytes": "9223372036854771712",
                           "pids/docker/job/pids.max": "max", "pids/docker/pids.max": "200",
                           "pids/docker/pids.current": "40"})
    monkeypatch.setattr(cgroups, "_own", lambda hierarchy: "/docker/job")
    found = cgroups.budget.__wrapped__(root)
    assert found.quota == 1.0 and found.cpus == 1.0 and found.memory == min(3 * GB, cgroups._available_memory())
    assert found.pids == 160 and any("docker" in s for s in found.said)


def test_the_budget_reads_cgroup_v2_cpu_max_memory_max_and_pids(tmp_path, monkeypatch):
    root = tree(tmp_path, {"cgroup.controllers": "cpu memory pids", "pod/cpu.max": "150000 100000",
                           "pod/memory.max": str(2 * GB), "pod/pids.max": "max", "pod/c/cpu.max": "max 100000",
                           "pod/c/memory.max": "max", "pod/c/pids.max": "64", "pod/c/pids.current": "4"})
    monkeypatch.setattr(cgroups, "_own", lambda hierarchy: "/pod/c")
    found = cgroups.budget.__wrapped__(root)
    assert (found.quota, found.pids) == (1.5, 60) and found.memory == min(2 * GB, cgroups._available_memory())
    assert found.cpus == min(1.5, len(os.sched_getaffinity(0)))


def test_a_container_without_a_cgroup_namespace_reads_its_own_folder_at_the_root(tmp_path, monkeypatch):
    """Docker without a cgroup namespace: /proc/self/cgroup names /docker/ID, the container sees its cgroup at the
    mount's root."""
    root = tree(tmp_path, {"cgroup.controllers": "cpu memory pids", "cpu.max": "100000 100000"})
    monkeypatch.setattr(cgroups, "_own", lambda hierarchy: "/docker/0123abcd")
    assert cgroups.budget.__wrapped__(root).quota == 1.0


@pytest.mark.parametrize(("cpus", "memory", "pids", "at_once", "why"), [
    (1.0, 64 * GB, None, 1, "1 CPUs"),  # docker run --cpus=1: one at a time
    (0.5, 64 * GB, None, 1, "0.5 CPUs"),
    (2, 64 * GB, None, 2, "2 CPUs"),
    (64, 256 * GB, None, isolate.SLOTS, f"{isolate.SLOTS} sandbox slots"),
    (16, 2 * GB, None, 2, "2048 MB of memory"),  # (2 GB - gradlab's 1 GB) / 512 MB a check
    (16, 64 * GB, 100, 3, "100 free tasks"),
])
def test_checks_at_once_and_each_sandbox_fit_what_gradlab_is_given(cpus, memory, pids, at_once, why):
    plan = capacity.plan_for(cgroups.Budget(cpus=cpus, quota=None, memory=memory, pids=pids))
    assert (plan.at_once, plan.why) == (at_once, why)
    assert plan.cpus == min(2.0, cpus)  # never a quota above gradlab's own (EINVAL under cgroup v1)
    assert capacity.CHECK_MEMORY <= plan.group_memory <= isolate.Limits().group_memory
    assert plan.at_once * plan.group_memory <= max(memory - capacity.GRADLAB_MEMORY, capacity.CHECK_MEMORY)
    assert pids is None or plan.at_once * plan.nproc <= pids
    assert capacity.plan_for(cgroups.Budget(cpus=cpus, quota=None, memory=memory, pids=pids), True).at_once == 1


def test_a_sigkill_from_outside_is_the_machines_and_a_full_sandbox_the_students():
    """The sandbox killed while its cgroup held far less than its limit: the container's OOM killer (or anyone) did
    it, not the submission's own limit; a sandbox at its limit, or with no cgroup to tell, is the student's."""
    limits = isolate.Limits()

    def got(peak, group="v1"):
        return sandbox.received(isolate.Outcome(mode="bwrap", returncode=-9, cgroup=group, memory_peak=peak), None,
                                20.0, limits)

    outside = got(300 << 20)
    assert outside["environment"] == "killed" and "killed from outside" in outside["error"]
    assert "environment" not in got(limits.group_memory) and "environment" not in got(300 << 20, group="")
    late = sandbox.received(isolate.Outcome(mode="bwrap", returncode=-9, stopped="startup"), None, 20.0, limits)
    assert late["environment"] == "startup" and "not your code" in late["error"]


def test_a_check_the_machine_ended_is_graded_again_and_the_teacher_told(tmp_path, monkeypatch):
    """A file gradlab could not check scores 0 in this run's gradebook but is marked so in results.json, said on
    stderr, exit code 1, and graded again by the next run (it was kept: a bad night's zeros stayed). The sandbox is a
    stand-in here (what is tested is the bookkeeping)."""
    calls = []

    def fake(submission, seed, broken=()):
        calls.append(submission.shown)
        if submission.shown.startswith(broken):
            return check.environment_result(submission.exercise, submission.shown,
                                            "gradlab could not check this file: OSError: [Errno 22] Invalid argument")
        return check.stopped_result(submission.exercise, submission.shown, "stand-in", seed)

    monkeypatch.setattr(isolate, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    monkeypatch.setattr(isolate, "_STOPPING", threading.Event())
    for name in ("ann", "bob", "cy"):
        (tmp_path / f"{name}.py").write_text(f"# {name}\n")
    args = ("grade", str(tmp_path), "--exercise", "mnist.sgd_step", "--out", str(tmp_path / "out"), "--seed", "1")
    monkeypatch.setattr(check, "result_of", lambda s, seed: fake(s, seed, broken=("bob",)))
    first = invoke(*args)
    assert first.exit_code == 1 and "1 file could not be graded because of this machine" in first.stderr
    assert "bob/sgd_step.py" in first.stderr and "Invalid argument" in first.stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["students"]["bob"]["sgd_step.py"]["environment"] and not data["students"]["ann"]["sgd_step.py"][
        "environment"]
    calls.clear()
    monkeypatch.setattr(check, "result_of", fake)
    again = invoke(*args)
    assert again.exit_code == 0 and calls == ["bob/sgd_step.py"] and "could not be graded" not in again.stderr


def _cpu_quota_parent(tmp_path: Path) -> tuple[Path, str]:
    """A cgroup with a 1-CPU quota that a test's process can join: cgroup v1's cpu hierarchy, or cgroup v2 where the
    root delegates cpu; skipped where neither can be made (not root, no cgroupfs)."""
    if os.geteuid() != 0:
        pytest.skip("making a cgroup needs root")
    name = f"gradlab-test-quota-{os.getpid()}"
    if (cgroups.ROOT / "cpu" / "cpu.cfs_quota_us").exists():
        folder = cgroups.ROOT / "cpu" / name
        folder.mkdir()
        (folder / "cpu.cfs_period_us").write_text("100000")
        (folder / "cpu.cfs_quota_us").write_text("100000")
        return folder, "v1"
    if "cpu" in (cgroups.ROOT / "cgroup.subtree_control").read_text().split() if (
            cgroups.ROOT / "cgroup.subtree_control").exists() else False:
        folder = cgroups.ROOT / name
        folder.mkdir()
        (folder / "cpu.max").write_text("100000 100000")
        return folder, "v2"
    pytest.skip("no cgroup v1 cpu hierarchy, and cgroup v2's root delegates no cpu controller here")


def test_a_right_answer_gets_full_marks_under_a_one_cpu_quota(tmp_path):
    """The issue's container: gradlab in a cgroup whose quota is 1 CPU. Each sandbox's cgroup asked for 2 CPUs, the
    kernel refused it (EINVAL) and every check ended "gradlab could not check this file". One sandbox start."""
    if isolate.detect().mode not in ("bwrap", "uid"):
        pytest.skip(f"needs the root sandbox ({isolate.detect().why})")
    (tmp_path / "sgd_step.py").write_text(solution("mnist.sgd_step", SGD_RIGHT))
    folder, version = _cpu_quota_parent(tmp_path)
    code = ("from gradlab.practice import capacity; p = capacity.plan(); print('plan', p.at_once, p.cpus, flush=True);"
            "from gradlab.cli.main import cli; cli(['check', 'sgd_step.py'])")
    try:
        r = subprocess.run(["/bin/sh", "-c", f'echo $$ > {folder}/cgroup.procs && exec "$@"', "sh", sys.executable,
                            "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    finally:
        folder.rmdir()
    assert r.returncode == 0 and "all 4 claims hold" in r.stdout, (version, r.stdout[-2000:], r.stderr[-2000:])
    assert "plan 1 1.0" in r.stdout
