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

from gradlab.practice.judging import check
from gradlab.practice.sandbox import box, capacity, cgroups, modes, returned, slots
from gradlab.practice.sandbox.limits import Limits, Outcome
from gradlab.version import __version__

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
    (1.0, 64 * GB, None, 1, "1 CPU"),  # docker run --cpus=1: one at a time
    (0.5, 64 * GB, None, 1, "0.5 CPUs"),
    (2, 64 * GB, None, 2, "2 CPUs"),
    (64, 256 * GB, None, slots.SLOTS, f"{slots.SLOTS} sandbox slots"),
    (16, 2 * GB, None, 2, "2048 MB of memory"),  # (2 GB - gradlab's 1 GB) / 512 MB a check
    (16, 64 * GB, 100, 3, "100 free tasks"),
])
def test_checks_at_once_and_each_sandbox_fit_what_gradlab_is_given(cpus, memory, pids, at_once, why):
    plan = capacity.plan_for(cgroups.Budget(cpus=cpus, quota=None, memory=memory, pids=pids))
    assert (plan.at_once, plan.why) == (at_once, why)
    assert plan.cpus == min(2.0, cpus)  # never a quota above gradlab's own (EINVAL under cgroup v1)
    assert capacity.CHECK_MEMORY <= plan.group_memory <= Limits().group_memory
    assert plan.at_once * plan.group_memory <= max(memory - capacity.GRADLAB_MEMORY, capacity.CHECK_MEMORY)
    assert pids is None or plan.at_once * plan.nproc <= pids
    assert capacity.plan_for(cgroups.Budget(cpus=cpus, quota=None, memory=memory, pids=pids), True).at_once == 1


def test_a_sigkill_from_outside_is_the_machines_and_a_full_sandbox_the_students():
    """The sandbox killed while its cgroup held far less than its limit: the container's OOM killer (or anyone) did
    it, not the submission's own limit; a sandbox at its limit, or with no cgroup to tell, is the student's."""
    limits = Limits()

    def got(peak, group="v1"):
        return returned.received(Outcome(mode="bwrap", returncode=-9, cgroup=group, memory_peak=peak), None,
                                20.0, limits)

    outside = got(300 << 20)
    assert outside.environment == "killed" and "killed from outside" in outside.error
    assert not got(limits.group_memory).environment and not got(300 << 20, group="").environment
    late = returned.received(Outcome(mode="bwrap", returncode=-9, stopped="startup"), None, 20.0, limits)
    assert late.environment == "startup" and "not your code" in late.error


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

    monkeypatch.setattr(modes, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    monkeypatch.setattr(box, "_STOPPING", threading.Event())
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


def test_zeros_an_older_gradlab_kept_from_the_machine_are_graded_again(tmp_path):
    """results.json written before records said "environment" (the issue's container: every check "gradlab could not
    check this file") is not kept by the next run."""
    from gradlab.practice.classroom import course, gradebook

    (tmp_path / "ann.py").write_text("# ann\n")
    [task] = gradebook.tasks(str(tmp_path), [course.Item("sgd_step.py", "mnist.sgd_step")], by_file=True)
    old = {"student": "ann", "digest": task.digest, "key": task.item.key(1, "v"), "stopped": None}
    assert gradebook.reusable(old, task, 1, "v")
    for stopped in ("gradlab could not check this file: OSError: [Errno 22] Invalid argument",
                    "gradlab's judging of your outputs took longer than 60 s and was stopped"):
        assert not gradebook.reusable(old | {"stopped": stopped}, task, 1, "v")
    assert not gradebook.reusable(old | {"environment": "killed"}, task, 1, "v")


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
    if modes.detect().mode not in ("bwrap", "uid"):
        pytest.skip(f"needs the root sandbox ({modes.detect().why})")
    (tmp_path / "sgd_step.py").write_text(solution("mnist.sgd_step", SGD_RIGHT))
    folder, version = _cpu_quota_parent(tmp_path)
    code = ("from gradlab.practice.sandbox import capacity, modes; p = capacity.plan(modes.detect().mode); "
            "print('plan', p.at_once, p.cpus, flush=True);"
            "from gradlab.cli.main import cli; cli(['check', 'sgd_step.py'])")
    try:
        r = subprocess.run(["/bin/sh", "-c", f'echo $$ > {folder}/cgroup.procs && exec "$@"', "sh", sys.executable,
                            "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    finally:
        folder.rmdir()
    assert r.returncode == 0 and "all 4 claims hold" in r.stdout, (version, r.stdout[-2000:], r.stderr[-2000:])
    assert "plan 1 1.0" in r.stdout


def _cgroup2_mount() -> Path | None:
    """Where cgroup v2 is mounted (/sys/fs/cgroup itself on a v2 machine; /sys/fs/cgroup/unified beside the v1
    hierarchies on a hybrid one), from /proc/self/mountinfo; None without one."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            return Path(fields[4])
    return None


V2_PROBE = """
import json, sys
from pathlib import Path
import {module} as cgroups
root = Path(sys.argv[1])
cgroups.ROOT = root
found = cgroups.budget.__wrapped__(root)
out = {{"own": str(cgroups._own_folder("", root)), "cgroup": Path("/proc/self/cgroup").read_text(),
        "quota": found.quota, "memory": found.memory, "pids": found.pids, "said": found.said,
        "available": list(cgroups.available.__wrapped__())}}
if out["available"][0] == "v2":
    group = cgroups.Group(memory=256 << 20, pids=16, cpus=2.0)
    out["group"] = {{"folder": str(group.dirs[0]), "cpu.max": (group.dirs[0] / "cpu.max").read_text().strip()}}
    group.remove()
print(json.dumps(out))
"""


def test_cgroup_v2_for_real_in_a_subtree_and_in_a_cgroup_namespace(tmp_path):
    """cgroups.py on a real cgroup v2 hierarchy, not a folder tree laid out as one: a process moved into a new
    subtree (JOB) reads its budget and makes its group there, seen from the host (/proc/self/cgroup names the path)
    and from a cgroup namespace with cgroup2 mounted inside (a container's view: its own cgroup at the mount's root).
    Where v2 has cpu, memory and pids, JOB gets a 1-CPU cpu.max, 1 GiB and 64 tasks, which both views must read,
    and a sandbox's group asking for 2 CPUs must get 1. Where v2 holds none of them (a hybrid machine whose v1
    hierarchies have them all), the tree is still read for real (no limit found, and available() says why no group
    can be made there), then the test is skipped with what was measured. Two short processes, no sandbox."""
    if os.geteuid() != 0:
        pytest.skip("making a cgroup needs root")
    mount = _cgroup2_mount()
    if mount is None:
        pytest.skip("no cgroup v2 mount here")
    wanted = {"cpu", "memory", "pids"}
    controllers = set((mount / "cgroup.controllers").read_text().split())
    limits = wanted <= controllers
    if limits and not wanted <= set((mount / "cgroup.subtree_control").read_text().split()):
        try:
            (mount / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))
        except OSError as e:
            pytest.skip(f"cgroup v2 at {mount} has {' '.join(sorted(wanted))} but cannot delegate them ({e})")
    parent = mount / f"gradlab-test-v2-{os.getpid()}"
    job, inside = parent / "job", tmp_path / "cgroup2"
    inside.mkdir()
    parent.mkdir()
    try:
        if limits:
            (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in sorted(wanted)))
        job.mkdir()
        if limits:  # on JOB itself, as a container's runtime sets them on the container's own cgroup
            for key, value in {"cpu.max": "100000 100000", "memory.max": str(GB), "pids.max": "64"}.items():
                (job / key).write_text(value)
        code = V2_PROBE.format(module=cgroups.__name__)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        views = {}
        for view, command in {
                "host": f'exec "$0" -c "$1" {mount}',
                "namespace": f'exec unshare --cgroup --mount sh -c \'mount -t cgroup2 none {inside} && '
                             f'exec "$0" -c "$1" {inside}\' "$0" "$1"'}.items():
            r = subprocess.run(["/bin/sh", "-c", f"echo $$ > {job}/cgroup.procs && {command}", sys.executable, code],
                               capture_output=True, text=True, timeout=120, env=env)
            assert r.returncode == 0, (view, r.stdout[-2000:], r.stderr[-2000:])
            views[view] = json.loads(r.stdout)
    finally:
        for folder in (job, parent):
            for _ in range(50):  # a process that just ended leaves its cgroup a moment later
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    threading.Event().wait(0.02)
    host, namespace = views["host"], views["namespace"]
    assert host["own"] == str(job) and f"0::/{parent.name}/job\n" in host["cgroup"], host
    assert namespace["own"] == str(inside) and "0::/\n" in namespace["cgroup"], namespace
    if limits:
        for view in (host, namespace):
            assert view["quota"] == 1.0 and 0 < view["pids"] <= 63 and view["memory"] <= GB, view
            assert view["available"] == ["v2", ""], view
            assert view["group"]["cpu.max"] == "100000 100000", view  # 2 CPUs asked, 1 given: JOB's quota
        return
    for view in (host, namespace):
        assert (view["quota"], view["pids"]) == (None, None) and not any("cgroup" in s for s in view["said"]), view
        assert view["available"] == ["", f"no cgroup could be made (cgroup v2 at {view['own']} lacks cpu memory pids "
                                          "controllers)"], view
    bound = {line.split()[0]: line.split()[1] for line in Path("/proc/cgroups").read_text().splitlines()[1:]}
    pytest.skip(f"cgroup v2 at {mount} has controllers [{' '.join(sorted(controllers))}]: "
                + ", ".join(f"{c} is in cgroup v1 hierarchy {bound.get(c, '?')}" for c in sorted(wanted - controllers))
                + " (a controller is in one hierarchy at a time), so no v2 cgroup can take a limit here; the v2 tree "
                "was read for real, from the host and from a cgroup namespace")


# -------------------------------------------------------------------- a class over several machines
def test_two_shards_merged_write_exactly_what_one_run_writes(tmp_path, monkeypatch):
    """--shard 1/2 and 2/2 (the same --seed) then --merge: grades.csv, canvas.csv, class.html, every feedback file and
    results.json as one run over the whole class wrote them (but the time in the "graded ..." line). The sandbox is a
    stand-in that judges each file in this process (what is tested is the split and the merge)."""
    from test_grade import SOFTMAX_IN_PLACE, SOFTMAX_NO_B, SOFTMAX_RIGHT, judged

    from gradlab.practice.classroom import shards

    bodies = {"right": SOFTMAX_RIGHT, "no_b": SOFTMAX_NO_B, "in_place": SOFTMAX_IN_PLACE}
    results = {}

    def fake(submission, seed):
        if submission.stop is not None:
            return check.stopped_result(submission.exercise, submission.shown, submission.stop, seed)
        kind = submission.source.decode().split("\n")[0][2:]
        if kind not in results:
            results[kind] = judged("mnist.softmax_grad", solution("mnist.softmax_grad", bodies[kind]))
        result = results[kind]
        result.config = {"file": submission.shown}
        return result

    monkeypatch.setattr(modes, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    monkeypatch.setattr(box, "_STOPPING", threading.Event())
    monkeypatch.setattr(check, "result_of", fake)
    subs = tmp_path / "subs"
    names = ["ann", "Bob", "cy", "dee", "Eve Ng", "fay", "gus", "hal"]
    for i, name in enumerate(names):
        (subs / name).mkdir(parents=True)
        (subs / name / "softmax_grad.py").write_text(f"# {list(bodies)[i % 3]}\n")
    (subs / "ivy").mkdir()  # nothing handed in
    (tmp_path / "course.toml").write_text('[exercises]\n"softmax_grad.py" = "mnist.softmax_grad"\n')
    common = (str(subs), "--course", str(tmp_path / "course.toml"), "--seed", "7")
    assert invoke("grade", *common, "--out", str(tmp_path / "one")).exit_code == 0
    for k in (1, 2):
        part = invoke("grade", *common, "--shard", f"{k}/2", "--out", str(tmp_path / f"part{k}"))
        assert part.exit_code == 0, part.output
    sizes = [len(json.loads((tmp_path / f"part{k}" / "results.json").read_text())["students"]) for k in (1, 2)]
    assert sum(sizes) == 9 and min(sizes) > 0
    merged = invoke("grade", "--merge", str(tmp_path / "part2"), str(tmp_path / "part1"), "--out",
                    str(tmp_path / "merged"))
    assert merged.exit_code == 0, merged.output
    one = {p.relative_to(tmp_path / "one"): p for p in (tmp_path / "one").rglob("*") if p.is_file()}
    got = {p.relative_to(tmp_path / "merged"): p for p in (tmp_path / "merged").rglob("*") if p.is_file()}
    assert sorted(one) == sorted(got) and len(one) == 4 + 2 * 9

    def same(path: Path) -> str:
        return re_made.sub("graded TIME", path.read_text())

    import re
    re_made = re.compile(r"graded \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    for rel in one:
        assert same(one[rel]) == same(got[rel]), rel
    assert all(shards.Shard(1, 2).holds(s) != shards.Shard(2, 2).holds(s) for s in names)


@pytest.mark.parametrize(("args", "fragment"), [
    (["--shard", "3/2"], "give K/N"),
    (["--shard", "1/2"], "--shard 1/2 needs --seed N"),
    (["--merge"], "--merge needs the --out folders"),
])
def test_bad_shard_or_merge_is_one_line(tmp_path, monkeypatch, args, fragment):
    from conftest import assert_one_line_error

    monkeypatch.setattr(modes, "detect", lambda: SimpleNamespace(isolated=True, mode="bwrap", why=""))
    (tmp_path / "subs" / "ann").mkdir(parents=True)
    where = [] if "--merge" in args else [str(tmp_path / "subs"), "--exercise", "mnist.sgd_step"]
    out = invoke("grade", *where, *args, "--out", str(tmp_path / "out"))
    assert_one_line_error(out, fragment)
    assert not (tmp_path / "out").exists()


def test_merge_refuses_parts_that_are_not_one_class(tmp_path):
    from conftest import assert_one_line_error

    for k, seed in ((1, 7), (2, 8)):
        (tmp_path / f"p{k}").mkdir()
        (tmp_path / f"p{k}" / "results.json").write_text(json.dumps(
            {"gradlab": __version__, "seed": seed, "course": [], "students": {}, "order": {}, "made": "", "source": "c",
             "shard": f"{k}/2"}))
    out = invoke("grade", "--merge", str(tmp_path / "p1"), str(tmp_path / "p2"), "--out", str(tmp_path / "out"))
    assert_one_line_error(out, "another seed")
    out = invoke("grade", "--merge", str(tmp_path / "p1"), "--out", str(tmp_path / "out"))
    assert_one_line_error(out, "give each of 1/2 ... 2/2 once")


def test_the_many_machines_examples_shard_the_same_class_and_merge_it():
    """examples/many-machines: the Slurm array, the GitHub Actions matrix and the Kubernetes Indexed Job give every part
    the same --seed and K/N from 1 to N, and merge with --merge (read, not run: no cluster here)."""
    import yaml

    base = Path(__file__).resolve().parent.parent / "examples" / "many-machines"
    slurm = (base / "grade.sbatch").read_text()
    assert "#SBATCH --array=1-8" in slurm and '--shard "$K/$N"' in slurm and "--merge parts/part-*" in slurm
    assert subprocess.run(["bash", "-n", str(base / "grade.sbatch")]).returncode == 0
    flow = yaml.safe_load((base / ".github" / "workflows" / "grade.yml").read_text())
    ks = flow["jobs"]["part"]["strategy"]["matrix"]["k"]
    assert ks == list(range(1, len(ks) + 1)) and flow["env"]["PARTS"] == str(len(ks))
    steps = " ".join(s.get("run", "") for s in flow["jobs"]["part"]["steps"])
    assert '--seed "$SEED"' in steps and '--shard "${{ matrix.k }}/$PARTS"' in steps
    assert "--merge parts/part-*" in " ".join(s.get("run", "") for s in flow["jobs"]["merge"]["steps"])
    job = yaml.safe_load((base / "kubernetes-job.yaml").read_text())
    assert job["spec"]["completionMode"] == "Indexed"
    command = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert f'--shard "$K/{job["spec"]["completions"]}"' in command and "JOB_COMPLETION_INDEX + 1" in command
    merge = yaml.safe_load((base / "kubernetes-merge.yaml").read_text())
    assert "--merge /class/parts/part-*" in merge["spec"]["template"]["spec"]["containers"][0]["command"][-1]


def test_the_userns_line_gives_the_sandbox_the_quota_allows(monkeypatch):
    """Not root with a delegated cgroup under a 1-CPU quota: the note says 1 CPU, as the sandbox gets (it said 2)."""
    monkeypatch.setattr(modes, "detect", lambda: modes.Detected("userns", "not root"))
    monkeypatch.setattr(cgroups, "available", lambda: ("v2", ""))
    monkeypatch.setattr(cgroups, "budget", lambda: cgroups.Budget(cpus=1.0, quota=1.0, memory=64 * GB, pids=None))
    said = modes.not_isolated_message(None, capacity.limits("userns"))
    assert "(2 GB of memory, 1 CPU, 96 processes and threads)" in said
