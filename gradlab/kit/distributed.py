"""Starting or joining a torch.distributed job: the launch half of `gradlab ddp`'s process plumbing, kept out of the
lesson (the supervision half, gradlab.kit.workers, starts, watches and reaps gradlab's own workers).

A Job (frozen, handed once to every worker) names a per-rank function FN(rank, world, device, *args, report=...)
and how the ranks meet. Three ways it runs:
  * torchrun started this process (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set): join its job with
    init_method env://. torchrun owns the processes; its rendezvous endpoint decides which machines take part.
  * --workers 1: this process is the whole job (a group of one, on 127.0.0.1).
  * --workers W > 1: gradlab starts W processes itself (start_workers: gradlab.kit.workers, spawn), rendezvous over TCP
    at the store this process hosts on a socket it binds on 127.0.0.1 (hosted_store), and gloo keeps to the loopback
    interface: nothing listens beyond it, nothing leaves the machine.
Every rank's return value is gathered (all_gather_object) so every rank, and the parent, gets all of them. A
collective that waits longer than the job's timeout fails (--timeout), and so does the run, naming the rank.

At module level this module imports the standard library, gradlab.errors, gradlab.kit.workers and gradlab.kit.shared
only (torch inside the functions, which keeps `gradlab --help` fast). The exercises whose functions run on gloo workers
do not use it: in the sandbox a submission's workers are forked after their groups are formed and before any of its
code loads (gradlab.kit.harness.gloo_harness), which a launcher that starts, then joins, cannot do.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from gradlab.errors import GradlabError, OptionError, check, check_option
from gradlab.kit import workers
from gradlab.kit.shared import loopback_interface, loopback_listener

TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
BACKENDS = ("auto", "gloo", "nccl")
# The parent when gradlab started (this module is imported before torch, within a fraction of a second): a torchrun
# rank watches it from then on, so a launcher killed while the rank still imports torch is noticed too.
PARENT_AT_START = os.getppid()


@dataclass(frozen=True, kw_only=True)
class Job:
    """What every rank runs and how the ranks meet: built once, passed whole to each worker."""

    fn: Callable  # fn(rank, world, device, *args, report=...) -> this rank's result; importable (spawn pickles it)
    args: tuple  # the same for every rank
    workers: int  # processes gradlab starts itself (torchrun's count instead when torchrun started this one)
    backend: str  # auto | gloo | nccl
    port: int  # rendezvous port on 127.0.0.1; 0: a free one
    timeout_s: float  # how long a collective may wait for the other ranks
    device_type: str  # cpu | cuda | mps
    threads: int  # torch threads per worker


def torchrun_rank() -> tuple[int, int, int] | None:
    """(rank, world size, local rank) when torchrun (or another env:// launcher) started this process, else None."""
    if not all(v in os.environ for v in TORCHRUN_VARS):
        return None
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local = int(os.environ.get("LOCAL_RANK", rank))
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
        port = int(os.environ["MASTER_PORT"])
    except ValueError:
        raise GradlabError("RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE or MASTER_PORT is not a whole number; "
                           "let torchrun set them") from None
    check(0 <= rank < world, f"RANK {rank} is not below WORLD_SIZE {world}; let torchrun set them")
    check(local >= 0 and local_world >= 1, f"LOCAL_RANK {local} or LOCAL_WORLD_SIZE {local_world} is out of range; "
                                           f"let torchrun set them")
    check(1 <= port <= 65535, f"MASTER_PORT {port} is not a port (1 to 65535); let torchrun set it")
    return rank, world, local


def check_master_addr() -> None:
    """MASTER_ADDR must name a host this machine can resolve (else torch prints pages of C++ frames)."""
    addr = os.environ.get("MASTER_ADDR", "")
    try:
        socket.getaddrinfo(addr, None)
    except (OSError, UnicodeError):
        raise GradlabError(f"MASTER_ADDR {addr!r} does not resolve to an address on this machine; give torchrun "
                           f"a reachable --rdzv-endpoint (or --standalone on one machine)") from None


def is_rank_zero() -> bool:
    """True unless this process is a torchrun worker other than rank 0 (only rank 0 prints and writes files)."""
    try:
        launched = torchrun_rank()
    except GradlabError:
        return True
    return launched is None or launched[0] == 0


def choose_backend(requested: str, device_type: str, gpus_needed: int) -> str:
    """gloo or nccl. auto: nccl when the run is on CUDA and there is a GPU for every local worker, else gloo."""
    import torch

    check_option(requested in BACKENDS, "backend",
                 lambda say: f"unknown {say('backend')} {requested!r}: use one of {', '.join(BACKENDS)}")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "nccl":
        check_option(device_type == "cuda" and gpus > 0, "backend",
                     lambda say: f"{say('backend', 'nccl')} needs CUDA GPUs, and this run has none; use "
                                 f"{say('backend', 'gloo')} (or auto), which runs on the CPU")
        check_option(gpus >= gpus_needed, "backend",
                     lambda say: f"{say('backend', 'nccl')} needs one GPU per worker on this machine: {gpus_needed} "
                                 f"workers, {gpus} GPUs; use fewer {say('workers')} or {say('backend', 'gloo')}")
        return "nccl"
    if requested == "auto" and device_type == "cuda" and gpus >= gpus_needed:
        return "nccl"
    return "gloo"


def check_port(port: int) -> None:
    """--port P must be free on 127.0.0.1 (0: pick a free one when the job starts)."""
    check_option(0 <= port <= 65535, "port",
                 f"must be between 0 and 65535, got {port}; leave it out to pick a free one")
    if port == 0:
        return
    with _bound(port):
        pass


def _bound(port: int) -> socket.socket:
    """shared.loopback_listener(PORT); a port in use is the --port error."""
    try:
        return loopback_listener(port)
    except OSError:
        raise OptionError("port", lambda say: f"{say('port', port)}: 127.0.0.1:{port} is already in use; "
                                              f"choose another {say('port')} or leave it out (a free one is "
                                              f"picked)") from None


def hosted_store(job: Job, world: int) -> tuple[Job, Any]:
    """The group's rendezvous store, hosted by this process: (the job with its port, the store), which listens as
    long as it is referenced (keep it for the job's time; a process group keeps it too). Its listening socket is
    bound here, on 127.0.0.1 only, before any rank starts, at job.port or, for 0, at a free port the kernel picks
    in that same bind; torch's TCPStore takes it over (master_listen_fd, which the store closes when it goes). A
    port picked first and bound later, when rank 0 started its store, could be taken in between by any connection
    on the machine (measured: a suite run failed so, `--port 51223 ... already in use`, with no --port given); and
    a store that binds the port itself listens on every interface."""
    import torch.distributed as dist

    listener = _bound(job.port)
    port = listener.getsockname()[1]
    fd = listener.detach()  # the store's from here on
    try:
        store = dist.TCPStore("127.0.0.1", port, world, is_master=True, wait_for_workers=False,
                              timeout=datetime.timedelta(seconds=job.timeout_s), master_listen_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise
    return replace(job, port=port), store


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """gloo opens its connections on the interface GLOO_SOCKET_IFNAME names (else the one the hostname resolves
    to): the loopback one, unless the user set it."""
    name, before = loopback_interface(), os.environ.get("GLOO_SOCKET_IFNAME")
    if name and before is None:
        os.environ["GLOO_SOCKET_IFNAME"] = name
    try:
        yield
    finally:
        if name and before is None:
            os.environ.pop("GLOO_SOCKET_IFNAME", None)


def _join_on_loopback(job: Job, rank: int, world: int, store: Any = None) -> None:
    """Join the group of WORLD processes whose store listens at 127.0.0.1:job.port (STORE: this process hosts it),
    gloo on loopback."""
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=job.timeout_s)
    if store is None:
        store = dist.TCPStore("127.0.0.1", job.port, world, is_master=False, timeout=timeout)
    with loopback_only():
        dist.init_process_group(job.backend, store=store, rank=rank, world_size=world, timeout=timeout)


def _device(device_type: str, local_rank: int):
    import torch

    if device_type == "cuda":  # one GPU per worker when there are enough; else they share (gloo, e.g. Colab's one)
        index = local_rank % torch.cuda.device_count()
        torch.cuda.set_device(index)
        return torch.device("cuda", index)
    return torch.device(device_type)


def _run_and_gather(job: Job, rank: int, world: int, device, report: Callable) -> list:
    """The job's function on this rank, then every rank's result on every rank; the process group is destroyed in
    any case."""
    import torch.distributed as dist

    try:
        mine = job.fn(rank, world, device, *job.args, report=report)
        everyone: list[Any] = [None] * world
        dist.all_gather_object(everyone, mine)
        return everyone
    finally:
        dist.destroy_process_group()


def run(job: Job, progress: Callable = lambda *a: None,
        meanwhile: Callable[[Callable[[], None]], Any] = lambda stop_if_cancelled: None) -> tuple[list, dict, Any]:
    """Run JOB on every rank (see the module docstring); return (every rank's result, how it ran, what MEANWHILE
    returned). MEANWHILE(stop_if_cancelled) is this process's own work: with spawned workers it runs in a thread
    while they start and run (importing torch takes them seconds), else before this rank's share. It must call
    stop_if_cancelled() often: it raises Cancelled once the job has failed or been interrupted."""
    import torch.distributed as dist

    launched = torchrun_rank()
    if launched is not None:  # torchrun killed (SIGKILL): this rank must not train on as an orphan
        workers.exit_with_parent(PARENT_AT_START)
    if launched is None and job.workers > 1:
        job = replace(job, backend=choose_backend(job.backend, job.device_type, job.workers))
        results, mine, job = start_workers(job, progress, meanwhile)
        return results, {"mode": "spawn", "world": job.workers, "backend": job.backend,
                         "rendezvous": f"127.0.0.1:{job.port}"}, mine
    # from here on this process joins a group itself (torchrun's, or a group of one): there can be only one
    check(not (dist.is_available() and dist.is_initialized()),
          "this process already has a torch.distributed process group (initialized before gradlab ddp ran); run "
          "gradlab ddp in a fresh process, with workers=2 or more (they are separate processes), or call "
          "torch.distributed.destroy_process_group() first")
    mine = meanwhile(lambda: None)
    if launched is not None:
        rank, world, local = launched
        check_master_addr()
        job = replace(job, backend=choose_backend(job.backend, job.device_type,
                                                  int(os.environ.get("LOCAL_WORLD_SIZE", 1))))
        dist.init_process_group(job.backend, init_method="env://", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=job.timeout_s))
        results = _run_and_gather(job, rank, world, _device(job.device_type, local),
                                  progress if rank == 0 else (lambda *a: None))
        return results, {"mode": "torchrun", "world": world, "backend": job.backend,
                         "rendezvous": f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"}, mine
    job, store = hosted_store(replace(job, backend=choose_backend(job.backend, job.device_type, 1)), 1)
    _join_on_loopback(job, 0, 1, store)
    results = _run_and_gather(job, 0, 1, _device(job.device_type, 0), progress)
    return results, {"mode": "in-process", "world": 1, "backend": job.backend,
                     "rendezvous": f"127.0.0.1:{job.port}"}, mine


def start_workers(job: Job, progress: Callable = lambda *a: None,
                  meanwhile: Callable[[Callable[[], None]], Any] = lambda stop_if_cancelled: None
                  ) -> tuple[list, Any, Job]:
    """JOB on job.workers processes that gradlab spawns and supervises (gradlab.kit.workers), meeting at the store
    this process hosts on 127.0.0.1 (hosted_store: job.port, or a free one when 0) over the job's backend, gloo on
    the loopback interface; return (every rank's result, what MEANWHILE returned, the job with its port). The
    workers print nothing (their output goes to /dev/null)."""
    job, store = hosted_store(job, job.workers)
    try:
        results, mine = workers.start(functools.partial(_rank, job), job.workers, timeout_s=job.timeout_s,
                                      name="gradlab-ddp", progress=progress, meanwhile=meanwhile)
    finally:
        del store  # the job is over, however it ended: the port is free again
    return results, mine, job


def _rank(job: Job, rank: int, report: Callable) -> list:
    """What each of gradlab's own workers runs: join the group on the loopback, then the job's function; every
    rank's result (rank 0's is the one that reaches the parent)."""
    import torch

    torch.set_num_threads(job.threads)
    _join_on_loopback(job, rank, job.workers)
    report("started", 0, 0)
    return _run_and_gather(job, rank, job.workers, _device(job.device_type, rank), report)
