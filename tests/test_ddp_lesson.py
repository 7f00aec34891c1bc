"""gradlab ddp: splitting a batch over micro-batches and workers, on the real torch.distributed (gloo, loopback).

W = 1 runs in this process; W = 2 and 3 spawn workers; one test goes through the real torchrun. Failures are real
too: a worker is killed (SIGKILL) or stopped (SIGSTOP) from outside, and Ctrl-C is sent to the process group."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import invoke
from hypothesis import given, settings
from hypothesis import strategies as st

from gradlab.errors import GradlabError
from gradlab.kit import distributed
from gradlab.lessons.ddp import lesson as D

SMALL = {"steps": 4, "batch_size": 24, "micro_batches": 4}
GRADLAB = [sys.executable, "-m", "gradlab"]


def claims(result) -> dict:
    return {c.id: c for c in result.claims}


# ------------------------------------------------------------------------------------------------- splitting

def test_uneven_micro_batches_are_the_issues_64_32_4():
    assert D.micro_batch_sizes(100, 3, uneven=True) == [64, 32, 4]
    assert D.micro_batch_sizes(100, 4, uneven=False) == [25] * 4
    assert D.shard_sizes(100, 3) == [34, 33, 33]


@given(batch=st.integers(1, 5000), parts=st.integers(1, 64), uneven=st.booleans())
@settings(max_examples=300, deadline=None)
def test_every_split_covers_the_batch_with_non_empty_parts(batch, parts, uneven):
    parts = min(parts, batch)
    for sizes in (D.micro_batch_sizes(batch, parts, True) if uneven else D.shard_sizes(batch, parts),):
        assert len(sizes) == parts and sum(sizes) == batch and min(sizes) >= 1


def test_accumulation_recipes_against_the_full_batch_gradient(sample):
    """At the same weights: Σ loss_k/K and Σ Σℓ/B give g; Σ loss_k gives K·g; uneven means of means do not."""
    config = D.Config(**SMALL)
    x, y = D.global_batches(config, sample, torch.device("cpu"))[0]
    model = D.new_model(config, torch.device("cpu"))
    g = D.full_batch_grads(model, x, y)

    def accumulated(sizes, how):
        D.accumulate(model, x, y, sizes, how)
        return [p.grad.clone() for p in model.parameters()]

    assert D.relative_to_largest(accumulated([6] * 4, "mean/K"), g) < 1e-6
    assert D.relative_to_largest(accumulated([6] * 4, "mean"), [4 * t for t in g]) < 1e-6
    assert D.relative_to_largest(accumulated([16, 4, 2, 2], "sum/B"), g) < 1e-6
    assert D.relative_to_largest(accumulated([16, 4, 2, 2], "mean/K"), g) > 1e-3  # the bug the lesson shows


# ------------------------------------------------------------------------------------------------- whole runs

def test_one_worker_in_this_process_holds_every_claim_and_repeats_bit_for_bit(sample):
    a = D.run(D.Config(workers=1, **SMALL), sample)
    b = D.run(D.Config(workers=1, **SMALL), sample)
    assert all(c.passed for c in a.claims), [(c.id, c.value) for c in a.claims if not c.passed]
    # with one worker nothing is reduced: the orders agree bit for bit, and the claims that compare workers would
    # compare a computation with itself, so they are left out and a note says so
    assert a.metrics["ranks"][0]["clip_order"] == 0.0
    assert not {"allreduce-mean-equals-full", "clip-then-reduce-differs", "norm-same-on-every-rank",
                "norm-sharded-equals-single", "replicas-identical"} & set(claims(a))
    assert any(note.startswith("one worker: nothing is reduced") for note in a.notes)
    assert a.metrics["job"]["mode"] == "in-process"
    assert a.curves["training loss per step"].series == b.curves["training loss per step"].series
    assert [c.value for c in a.claims] == [c.value for c in b.claims]


def test_two_spawned_workers_float64_uneven_micro_batches(sample):
    r = D.run(D.Config(workers=2, dtype="float64", uneven=True, micro_batches=3, steps=4, batch_size=40), sample)
    c = claims(r)
    assert all(x.passed for x in r.claims), [(x.id, x.value) for x in r.claims if not x.passed]
    assert r.metrics["job"]["mode"] == "spawn" and r.metrics["job"]["backend"] == "gloo"
    assert r.metrics["micro_batch_sizes"] == [32, 4, 4]
    # float64: the equalities hold to 1e-12, and the differences are far from rounding
    assert c["ddp-equals-single"].bound == 1e-12 and c["mean-of-means-differs"].value > 1e-3
    assert c["clip-then-reduce-differs"].value > 1e-3
    assert c["norm-sharded-equals-single"].value < 1e-12  # sqrt(Σ_r ‖g_r‖²) over 1/W slices = one process's ‖g‖
    rank = r.metrics["ranks"][0]
    assert abs(rank["norm_twice"] / rank["norm"] - 2 ** 0.5) < 1e-12  # reduced again: √W·‖g‖ (a fact, not a claim)
    assert c["no-sync-sends-k-times-less"].value == 3
    assert len({rank["pid"] for rank in r.metrics["ranks"]} | {os.getpid()}) == 3  # two other processes


def test_three_workers_with_unequal_shards(sample):
    r = D.run(D.Config(workers=3, steps=3, batch_size=100, micro_batches=4), sample)
    c = claims(r)
    assert all(x.passed for x in r.claims), [(x.id, x.value) for x in r.claims if not x.passed]
    assert r.metrics["shard_sizes"] == [34, 33, 33]
    assert c["allreduce-mean-differs"].value > 1e-3  # /W of unequal shard means is not the mean
    assert c["allreduce-weighted-equals-full"].value < 1e-6
    assert abs(r.metrics["ranks"][0]["norm_twice"] / r.metrics["ranks"][0]["norm"] - 3 ** 0.5) < 1e-6
    assert c["norm-sharded-equals-single"].passed and "1/3 of the flat gradient" in c["norm-sharded-equals-single"].text


def test_one_micro_batch_leaves_out_the_claims_that_would_compare_a_computation_with_itself(sample):
    r = D.run(D.Config(workers=1, steps=2, batch_size=24, micro_batches=1), sample)
    assert all(c.passed for c in r.claims), [(c.id, c.value) for c in r.claims if not c.passed]
    assert not {"accumulate-mean-over-k", "accumulate-without-k", "no-sync-sends-k-times-less"} & set(claims(r))
    assert any(note.startswith("one micro-batch:") for note in r.notes)


@given(n=st.integers(1, 300), world=st.integers(1, 16))
@settings(max_examples=200, deadline=None)
def test_the_sharded_norms_slices_cover_the_gradient_once(n, world):
    """sharded_norm's slices (torch.tensor_split of the flat gradient, one per rank) partition it: their squared
    norms add up to ‖g‖², which is why the all-reduced sum is ‖g‖ and not √W·‖g‖."""
    g = torch.randn(n, dtype=torch.float64)
    slices = torch.tensor_split(g, world)
    assert len(slices) == world and torch.equal(torch.cat(slices), g)
    assert abs(float(sum(t.norm() ** 2 for t in slices)) - float(g.norm() ** 2)) < 1e-9 * float(g.norm() ** 2 + 1)


def test_batchnorm_makes_the_mean_of_shard_gradients_differ_from_the_whole_batchs():
    """The docstring's condition on the loss, measured: with BatchNorm each shard is normalised by its own
    statistics, so the mean of two equal shards' gradients is not the whole batch's; without it, it is."""
    torch.manual_seed(0)
    x, y = torch.randn(64, 10, dtype=torch.float64), torch.randint(0, 3, (64,))
    differences = {}
    for name, norm in (("batchnorm", torch.nn.BatchNorm1d(16)), ("none", torch.nn.Identity())):
        model = torch.nn.Sequential(torch.nn.Linear(10, 16), norm, torch.nn.ReLU(), torch.nn.Linear(16, 3)).double()
        params = list(model.parameters())
        whole = torch.autograd.grad(torch.nn.functional.cross_entropy(model(x), y), params)
        shards = [torch.autograd.grad(torch.nn.functional.cross_entropy(model(xs), ys), params)
                  for xs, ys in zip(x.split(32), y.split(32), strict=True)]
        differences[name] = D.relative_to_largest([(a + b) / 2 for a, b in zip(*shards, strict=True)], list(whole))
    assert differences["batchnorm"] > 1e-2 and differences["none"] < 1e-12


def test_the_forgotten_k_is_a_k_times_step_for_sgd_and_nearly_none_for_adam_and_rmsprop(sample):
    """The docstring's table, measured: K× the gradient is K× SGD's step, and within 1% of Adam's and RMSprop's."""
    config = D.Config(steps=3, batch_size=24, micro_batches=4)
    rows = {r["optimizer"]: r for r in D.forgotten_k_by_optimizer(config, D.global_batches(config, sample,
                                                                                             torch.device("cpu")),
                                                                  torch.device("cpu"))}
    assert abs(rows["SGD"]["first_step_ratio"] - 4) < 1e-5
    assert abs(rows["Adam"]["first_step_ratio"] - 1) < 1e-2 and abs(rows["RMSprop"]["first_step_ratio"] - 1) < 1e-2
    assert rows["SGD"]["apart"] > 1 > 0.5 > rows["Adam"]["apart"]


def test_a_claim_can_fail_a_clip_norm_above_every_gradient_norm(sample):
    """The "≠" claims are measured, not asserted: with a cap no gradient reaches, both orders agree and it fails."""
    r = D.run(D.Config(workers=2, clip_norm=1e6, **SMALL), sample)
    assert not claims(r)["clip-then-reduce-differs"].passed and r.exit_code == 1


# ------------------------------------------------------------------------------------------------- the CLI

@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers must be at least 1"),
    (["--workers", "101"], "more than the 100 samples of the global batch"),
    (["--micro-batches", "3"], "does not divide --batch-size 100"),
    (["--micro-batches", "50", "--workers", "3"], "more than the 33 samples of the smallest worker's shard"),
    (["--uneven", "--micro-batches", "1"], "--uneven needs --micro-batches 2"),
    (["--backend", "nccl"], "--backend nccl needs CUDA GPUs"),
    (["--timeout", "0"], "--timeout must be between 1 and 86400 seconds"),
    (["--port", "70000"], "--port must be between 0 and 65535"),
])
def test_bad_input_is_one_line_exit_2_and_no_file(args, message, tmp_path):
    out = tmp_path / "r.json"
    result = invoke("ddp", *args, "--json", str(out))
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_port_in_use_is_refused_before_anything_runs(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = invoke("ddp", "--port", str(port), "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 2 and f"127.0.0.1:{port} is already in use" in result.stderr
    assert not (tmp_path / "r.json").exists()


def test_backend_choice_with_cuda_mocked_present_and_absent(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert distributed.choose_backend("auto", "cuda", 2) == "nccl"
    assert distributed.choose_backend("auto", "cuda", 3) == "gloo"  # not a GPU for every worker
    assert distributed.choose_backend("auto", "cpu", 2) == "gloo"
    assert distributed.choose_backend("nccl", "cuda", 2) == "nccl"
    with pytest.raises(GradlabError, match="one GPU per worker"):
        distributed.choose_backend("nccl", "cuda", 3)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert distributed.choose_backend("auto", "cuda", 1) == "gloo"
    with pytest.raises(GradlabError, match="needs CUDA GPUs"):
        distributed.choose_backend("nccl", "cuda", 1)


def test_cli_run_writes_json_with_every_claim(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("ddp", "--workers", "1", "--steps", "3", "--json", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["lesson"] == "ddp" and all(c["passed"] for c in data["claims"])
    assert "data parallel: 1 worker (in-process, gloo, rendezvous 127.0.0.1:" in result.output


def test_torchrun_starts_it_and_only_rank_0_prints_and_writes(tmp_path):
    """The real torchrun entry point, two processes on this machine: gradlab joins its job instead of spawning."""
    out = tmp_path / "r.json"
    torchrun = Path(sys.executable).parent / "torchrun"
    proc = subprocess.run([str(torchrun), "--standalone", "--nproc-per-node", "2", "-m", "gradlab", "ddp",
                           "--steps", "3", "--json", str(out)], capture_output=True, text=True, timeout=240,
                          env={**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": "1"})  # as the README says
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "OMP_NUM_THREADS" not in proc.stderr + proc.stdout  # torchrun's banner is for an unset variable only
    assert proc.stdout.count("claims checked at run time") == 1  # rank 0 alone renders
    data = json.loads(out.read_text())
    assert data["metrics"]["job"]["mode"] == "torchrun" and data["metrics"]["job"]["world"] == 2
    assert all(c["passed"] for c in data["claims"])


# ------------------------------------------------------------------------------------------------- failures

def children(pid: int) -> list[int]:
    """The spawned workers of PID (not multiprocessing's resource tracker)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                if "spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(child))
            except FileNotFoundError:
                pass
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def start_long_run(*extra: str, settle: float = 0, seen: int = 2) -> tuple[subprocess.Popen, list[int]]:
    """gradlab ddp with 2 workers and a long budget, in a session of its own; returns SETTLE seconds after SEEN
    workers exist (0 and 1: while gradlab is still starting the second)."""
    proc = subprocess.Popen([*GRADLAB, "ddp", "--steps", "20000", "--quiet", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        kids = children(proc.pid)
        if len(kids) >= seen:
            time.sleep(settle)
            return proc, kids
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the workers did not start")


def connections(proc: subprocess.Popen, kids: list[int], established: set, listening: set) -> None:
    """Watch the TCP sockets of gradlab and its workers until both workers' gloo connections are up (a loaded
    machine starts them slowly): rank 0 ↔ store ↔ rank 1, and gloo's pair. ESTABLISHED gets (local, remote) of each
    connection seen, LISTENING each listening address."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(established) < 4:
        sockets = tcp_sockets(proc.pid, *kids)
        established |= {(local, remote) for local, remote, state in sockets if state == "01"}
        listening |= {local for local, _, state in sockets if state == "0A"}
        time.sleep(0.1)


def test_a_failed_job_cancels_this_processs_own_share_at_once():
    """gradlab.kit.workers.start: rank 1 fails at once, rank 0 hangs. This process's own share (MEANWHILE, the
    single-process reference in `gradlab ddp`) is cancelled as soon as the failure is seen, not after the GRACE_S
    the other ranks get to fail on their own: its last step comes that long before start() gives up."""
    from worker_bodies import rank_1_fails_rank_0_hangs

    from gradlab.errors import RunFailed
    from gradlab.kit import workers

    steps = []

    def meanwhile(stop_if_cancelled):
        while True:
            stop_if_cancelled()
            steps.append(time.monotonic())
            time.sleep(0.01)

    with pytest.raises(RunFailed, match="rank 1"):
        workers.start(rank_1_fails_rank_0_hangs, 2, timeout_s=30, meanwhile=meanwhile)
    assert steps and time.monotonic() - steps[-1] > workers.GRACE_S - 1, time.monotonic() - steps[-1]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc to find the workers")
@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_worker_that_dies_or_hangs_fails_the_run_naming_its_rank_and_leaves_no_process(how):
    """Once both workers are connected and training (their gloo connections up, then a step's worth of time), one of
    them is killed, or stopped (SIGSTOP: it hangs): the run ends with one line naming it."""
    proc, kids = start_long_run("--timeout", "5")
    connections(proc, kids, set(), set())
    time.sleep(0.5)
    victim = kids[1]
    os.kill(victim, signal.SIGKILL if how == "kill" else signal.SIGSTOP)
    try:
        _, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    rank = next(r for r in (0, 1) if f"rank {r} (pid {victim})" in err)
    expected = "was killed by SIGKILL" if how == "kill" else "stopped answering"
    assert f"worker rank {rank} (pid {victim}) {expected}" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    time.sleep(0.5)
    assert not any(alive(k) for k in kids)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc to find the workers")
@pytest.mark.parametrize("settle, seen, signum, code, words", [
    (0, 1, signal.SIGINT, 130, "interrupted"), (None, 2, signal.SIGINT, 130, "interrupted"),
    (0, 1, signal.SIGTERM, 143, "terminated (SIGTERM)"),  # while computing, SIGTERM takes Ctrl-C's path
], ids=["ctrl-c-while-starting", "ctrl-c-while-computing", "sigterm-while-starting"])
def test_ctrl_c_stops_gradlab_and_its_workers(settle, seen, signum, code, words, request):
    if seen == 2:  # while computing: the run whose connections the loopback test watched, stopped the same way
        run = request.getfixturevalue("watched_then_interrupted")
        proc, err, kids = run.proc, run.err, run.kids
    else:
        proc, kids = start_long_run(settle=settle, seen=seen)
        os.killpg(proc.pid, signum)  # what a terminal (or `kill -TERM -PGID`) does: the whole process group
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        time.sleep(0.5)
    assert proc.returncode == code and err.strip() == f"gradlab: error: {words}", err
    assert not any(alive(k) for k in kids)


def tcp_sockets(*pids: int) -> list[tuple[str, str, str]]:
    """(local address, remote address, state) of the TCP sockets of PIDS (those still alive), from /proc (hex, as
    the kernel writes them). The kernel's tables are read once for all of them: each read walks every socket of the
    machine."""
    inodes = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except FileNotFoundError:  # gone
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[9] in inodes:
                found.append((f[1], f[2], f[3]))
    return found


LOOPBACK = ("0100007F:", "0000000000000000FFFF00000100007F:", "00000000000000000000000001000000:")  # v4, v4-in-v6, ::1


@pytest.fixture(scope="module")
def watched_then_interrupted() -> SimpleNamespace:
    """One long run of two workers, its TCP sockets watched until both workers' gloo connections are up (a loaded
    machine starts them slowly), then Ctrl-C sent to its process group, as a terminal does: the connections seen
    and how the run ended. The loopback test and ctrl-c-while-computing share it (each run loads torch three times)."""
    proc, kids = start_long_run()
    established, listening, err = set(), set(), ""
    try:
        connections(proc, kids, established, listening)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:  # it did not stop: take its workers too, or they train on for an hour
                os.killpg(proc.pid, signal.SIGKILL)
    time.sleep(0.5)
    return SimpleNamespace(proc=proc, err=err, kids=kids, established=established, listening=listening)


@pytest.mark.skipif(not Path("/proc/net/tcp").is_file(), reason="needs Linux /proc/net")
def test_every_connection_stays_on_the_loopback_interface(watched_then_interrupted):
    """Every established connection of gradlab and its workers is 127.0.0.1 to 127.0.0.1, and nothing listens beyond
    loopback: gloo keeps to it, and the rendezvous store listens on the socket gradlab bound on 127.0.0.1 (a TCPStore
    that binds its port itself listens on every interface)."""
    established, listening = watched_then_interrupted.established, watched_then_interrupted.listening
    assert len(established) >= 4, established
    assert all(local.startswith(LOOPBACK) and remote.startswith(LOOPBACK) for local, remote in established)
    assert listening and all(a.startswith(LOOPBACK) for a in listening), listening


def test_the_store_is_listening_on_its_port_before_any_rank_starts():
    """distributed.hosted_store: the port (a free one the kernel picks, for --port 0) is bound and listening on
    127.0.0.1 from the moment it is chosen, so no other connection on the machine can take it before rank 0 would
    have bound it (what failed a suite run: `--port 51223 ... already in use`, with no --port given); a port in use
    is the --port error; once the job is over the port is free again."""
    job = distributed.Job(fn=print, args=(), workers=2, backend="gloo", port=0, timeout_s=5, device_type="cpu",
                          threads=1)
    held, store = distributed.hosted_store(job, 2)
    assert held.port > 0 and store.port == held.port
    with socket.create_connection(("127.0.0.1", held.port), timeout=5):
        pass  # listening already: no rank has started
    mine = [local for local, _, state in tcp_sockets(os.getpid()) if state == "0A"]
    assert f"0100007F:{held.port:04X}" in mine, mine  # 127.0.0.1 only, not every interface
    with pytest.raises(GradlabError, match=f"127.0.0.1:{held.port} is already in use"):
        distributed.check_port(held.port)
    with pytest.raises(GradlabError, match=f"127.0.0.1:{held.port} is already in use"):
        distributed.hosted_store(replace(job, port=held.port), 2)
    del store  # the last reference: its server stops
    distributed.check_port(held.port)  # free again
