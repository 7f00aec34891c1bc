"""Starting or joining a torch.distributed job: the process plumbing of `gradlab ddp`, kept out of the lesson.

A Job (frozen, handed once to every worker) names a per-rank function FN(rank, world, device, *args, report=...)
and how the ranks meet. Three ways it runs:
  * torchrun started this process (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set): join its job with
    init_method env://. torchrun owns the processes; its rendezvous endpoint decides which machines take part.
  * --workers 1: this process is the whole job (a group of one, on 127.0.0.1).
  * --workers W > 1: gradlab starts W processes itself (torch.multiprocessing, spawn), rendezvous over TCP on
    127.0.0.1 at a free port, and gloo keeps to the loopback interface: nothing leaves the machine. (torch's
    rendezvous store listens on every interface, with no option to narrow it; every connection is loopback.)
Every rank's return value is gathered (all_gather_object) so every rank, and the parent, gets all of them.

A worker that raises, dies or stops answering never hangs gradlab: collectives time out (--timeout), the parent
watches every child, kills the rest, reaps them, and names the rank that failed (RunFailed: exit code 1). Workers
ignore Ctrl-C (the terminal sends it to all of them; the parent stops them) and exit if the parent disappears.
torch is imported only inside the functions: `gradlab --help` must stay fast.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import queue as queue_module
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from gradlab.errors import GradlabError, RunFailed, check

TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
BACKENDS = ("auto", "gloo", "nccl")
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # what stops a run: the parent's to handle
# The parent when gradlab started (this module is imported before torch, within a fraction of a second): a torchrun
# rank watches it from then on, so a launcher killed while the rank still imports torch is noticed too.
PARENT_AT_START = os.getppid()
# Beyond --timeout, how long the parent waits for a first word from workers that are still starting (importing
# torch in W processes on a busy 2-core laptop takes a while).
STARTUP_S = 60.0
GRACE_S = 3.0  # after one worker fails, how long the others get to fail on their own before they are killed


@dataclass(frozen=True)
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

    check(requested in BACKENDS, f"unknown --backend {requested!r}: use one of {', '.join(BACKENDS)}")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if requested == "nccl":
        check(device_type == "cuda" and gpus > 0,
              "--backend nccl needs CUDA GPUs, and this run has none; use --backend gloo (or auto), which runs "
              "on the CPU")
        check(gpus >= gpus_needed, f"--backend nccl needs one GPU per worker on this machine: {gpus_needed} "
                                   f"workers, {gpus} GPUs; use fewer --workers or --backend gloo")
        return "nccl"
    if requested == "auto" and device_type == "cuda" and gpus >= gpus_needed:
        return "nccl"
    return "gloo"


def check_port(port: int) -> None:
    """--port P must be free on 127.0.0.1 (0: pick a free one when the job starts)."""
    check(0 <= port <= 65535, f"--port must be between 0 and 65535, got {port}; leave it out to pick a free one")
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the rendezvous store does
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise GradlabError(f"--port {port}: 127.0.0.1:{port} is already in use; choose another --port or leave "
                               f"it out (a free one is picked)") from None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_interface() -> str | None:
    names = [name for _, name in socket.if_nameindex()]
    return next((n for n in ("lo", "lo0") if n in names), None)


@contextlib.contextmanager
def _loopback_only() -> Iterator[None]:
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


def _join_on_loopback(job: Job, rank: int, world: int) -> None:
    """Join (or, as rank 0, host) the group of WORLD processes meeting at 127.0.0.1:job.port, gloo on loopback."""
    import torch.distributed as dist

    with _loopback_only():
        dist.init_process_group(job.backend, init_method=f"tcp://127.0.0.1:{job.port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=job.timeout_s))


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
        _exit_with_parent(PARENT_AT_START)
    if launched is None and job.workers > 1:
        job = replace(job, backend=choose_backend(job.backend, job.device_type, job.workers),
                      port=job.port or free_port())
        results, mine = _spawn(job, progress, meanwhile)
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
    job = replace(job, backend=choose_backend(job.backend, job.device_type, 1), port=job.port or free_port())
    _join_on_loopback(job, 0, 1)
    results = _run_and_gather(job, 0, 1, _device(job.device_type, 0), progress)
    return results, {"mode": "in-process", "world": 1, "backend": job.backend,
                     "rendezvous": f"127.0.0.1:{job.port}"}, mine


# ---------------------------------------------------------------------------------------------------------------
# gradlab's own workers: spawned, watched, reaped.
# ---------------------------------------------------------------------------------------------------------------

def _exit_with_parent(parent: int) -> None:
    """A worker whose parent is gone (killed with SIGKILL, say) exits instead of waiting for a timeout."""
    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _worker(rank: int, job: Job, messages, parent: int) -> None:
    """One spawned rank. It never prints: progress, the result (rank 0) and errors go to the parent's queue."""
    for signum in STOP_SIGNALS:  # Ctrl-C (or SIGTERM to the group) reaches every process: the parent decides
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _exit_with_parent(parent)
    devnull = os.open(os.devnull, os.O_WRONLY)  # torch's C++ warnings would interleave with the parent's report
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        import torch

        torch.set_num_threads(job.threads)
        _join_on_loopback(job, rank, job.workers)

        def report(text: str, done: int, total: int) -> None:
            messages.put(("progress", rank, text, done, total))

        report("started", 0, 0)
        everyone = _run_and_gather(job, rank, job.workers, _device(job.device_type, rank), report)
        if rank == 0:
            messages.put(("result", rank, everyone))
        code = 0
    except BaseException as e:
        text = " ".join(f"{type(e).__name__}: {e}".split())
        messages.put(("error", rank, text[:300]))
        code = 1
    messages.close()
    messages.join_thread()  # everything sent has reached the pipe
    os._exit(code)  # skip the interpreter's slow teardown of torch: nothing is left to clean up


@contextlib.contextmanager
def _main_not_rerun() -> Iterator[None]:
    """A spawned child normally re-runs the parent's main script first, so a script without an
    `if __name__ == "__main__":` guard would start workers again from every worker. The workers need nothing from
    it (FN lives in gradlab), so the script is hidden from multiprocessing while they start."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    for k in saved:
        setattr(main, k, None) if k == "__spec__" else delattr(main, k)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(main, k, v)


@contextlib.contextmanager
def _children_ignore_ctrl_c() -> Iterator[None]:
    """Ctrl-C in a terminal reaches every process of the foreground group. While the workers are started SIGINT is
    blocked: each child inherits the blocked signal from its first instruction, so a Ctrl-C during its start-up
    cannot print a traceback from it (its _worker then ignores SIGINT for good), and this process gets the Ctrl-C
    as soon as the block ends, as a KeyboardInterrupt: stopping the workers is its job (_reap). SIGTERM and SIGHUP,
    sent to the group by a shell or a closing terminal, are handled the same way. The block binds this thread only,
    and the kernel may hand a signal to another thread of the process (torch's, say), whose handler would then
    interrupt a start half-way (the child would print an EOFError from its bootstrap): so while the workers start,
    the handlers only note the signal, and it is raised again the moment they have started."""
    pending: list[int] = []
    main = threading.current_thread() is threading.main_thread()  # handlers can only be set in the main thread
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS} if main else {}
    for s in previous:
        signal.signal(s, lambda signum, frame: pending.append(signum))
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        for s, handler in previous.items():
            signal.signal(s, handler)
        if pending:
            signal.raise_signal(pending[0])  # to the handler just restored: Ctrl-C's, or gradlab's SIGTERM


def _spawn(job: Job, progress: Callable, meanwhile: Callable) -> tuple[list, Any]:
    """Start the job's workers, run MEANWHILE in a thread beside them, watch both; stop and reap them in any case."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    procs = [ctx.Process(target=_worker, name=f"gradlab-ddp-rank-{r}", daemon=True,
                         args=(r, job, messages, os.getpid())) for r in range(job.workers)]
    stop, mine = threading.Event(), {}
    side = threading.Thread(target=_capture, args=(meanwhile, stop, mine), daemon=True)
    try:
        with _main_not_rerun(), _children_ignore_ctrl_c():
            for p in procs:
                p.start()
        side.start()
        return _watch(job, procs, _Mailbox(messages, progress), side, mine)
    finally:
        stop.set()
        _reap(procs)
        messages.close()
        messages.cancel_join_thread()
        if side.is_alive():
            side.join()  # it stops at its next stop_if_cancelled()


def _watch(job: Job, procs: list, mailbox: _Mailbox, side: threading.Thread, mine: dict) -> tuple[list, Any]:
    """Read the workers' messages until the job is done (every worker exited 0 with the result sent, and this
    process's own share finished), or failed: a worker's error, a worker gone, this process's share raising, or
    silence for longer than the timeout allows."""
    silence = job.timeout_s + STARTUP_S
    while True:
        if "error" in mine:  # this process's own share failed: the job cannot be judged
            raise mine["error"]
        mailbox.receive(0.2)
        if "EADDRINUSE" in mailbox.errors.get(0, ""):  # another job took the port between check and bind
            raise GradlabError(f"--port {job.port}: 127.0.0.1:{job.port} is already in use (another gradlab ddp "
                               f"started at the same time?); choose another --port or leave it out (a free one is "
                               f"picked)")
        exited = [p.exitcode for p in procs]
        all_done = all(code == 0 for code in exited)
        if all_done and mailbox.result is None:  # the result may still be on its way through the pipe
            mailbox.wait_until(lambda: mailbox.result is not None, GRACE_S)
        if mailbox.errors or any(code not in (None, 0) for code in exited) or (all_done and mailbox.result is None):
            # the other ranks get GRACE_S to fail on their own (a lost peer, a collective that timed out), so that
            # the report can tell the cause from its consequences
            mailbox.progress = lambda *a: None
            mailbox.wait_until(lambda: not any(p.is_alive() for p in procs), GRACE_S)
            mailbox.drain()
            raise RunFailed(_failure(procs, mailbox.errors, job.timeout_s))
        if all_done and not side.is_alive():
            if "error" in mine:
                raise mine["error"]
            return mailbox.result, mine["value"]
        if time.monotonic() - mailbox.heard > silence:
            alive = [r for r, p in enumerate(procs) if p.is_alive()]
            raise RunFailed(f"no worker answered for {silence:.0f} s (rank{'s' * (len(alive) > 1)} "
                            f"{', '.join(map(str, alive))} still running); stopped them all. Is the machine "
                            f"overloaded? Try fewer --workers or a longer --timeout")


class _Mailbox:
    """The workers' messages to this process, read in one place: ("progress", rank, text, done, total) moves the
    progress bar (rank 0's), ("result", rank, every rank's result) and ("error", rank, text) are kept."""

    def __init__(self, messages, progress: Callable) -> None:
        self.messages, self.progress = messages, progress
        self.result: list | None = None
        self.errors: dict[int, str] = {}
        self.heard = time.monotonic()  # when the last message came

    def receive(self, timeout: float | None) -> bool:
        """Take one message, waiting up to TIMEOUT seconds (None: only one already there); False if none came."""
        try:
            kind, rank, *payload = self.messages.get(timeout=timeout) if timeout else self.messages.get_nowait()
        except (queue_module.Empty, OSError, ValueError):  # nothing, or the queue is already closed
            return False
        self.heard = time.monotonic()
        if kind == "progress":
            text, done, total = payload
            if rank == 0 and total:
                self.progress(text, done, total)
        elif kind == "result":
            (self.result,) = payload
        elif kind == "error":
            (self.errors[rank],) = payload
        return True

    def wait_until(self, done: Callable[[], bool], seconds: float) -> None:
        """Receive until DONE() or SECONDS have passed."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and not done():
            self.receive(0.1)

    def drain(self) -> None:
        """Receive whatever is left, without waiting."""
        while self.receive(None):
            pass


class Cancelled(Exception):
    """Raised by stop_if_cancelled() in this process's own share of the work once the job has failed or been
    interrupted."""


def _capture(meanwhile: Callable, stop: threading.Event, out: dict) -> None:
    def stop_if_cancelled() -> None:
        if stop.is_set():
            raise Cancelled

    try:
        out["value"] = meanwhile(stop_if_cancelled)
    except Cancelled:
        pass
    except BaseException as e:  # handed to the main thread, which raises it
        out["error"] = e


def _failure(procs, errors: dict[int, str], timeout_s: float) -> str:
    """One line: which rank failed first and how; the others are named as having stopped with it."""
    culprits = []
    for rank, p in enumerate(procs):
        code = p.exitcode
        if code is not None and code < 0:
            culprits.append(f"worker rank {rank} (pid {p.pid}) was killed by {signal.Signals(-code).name}")
        elif code not in (None, 0, 1) or (code == 1 and rank not in errors):
            culprits.append(f"worker rank {rank} (pid {p.pid}) exited with code {code}")
    if errors:  # the ranks that are still alive while others gave up: they hung
        culprits += [f"worker rank {rank} (pid {p.pid}) stopped answering (no reply within --timeout {timeout_s:g} s)"
                     for rank, p in enumerate(procs) if p.is_alive()]
    if culprits:
        others = sorted(errors)
        tail = f"; rank{'s' * (len(others) > 1)} {', '.join(map(str, others))} stopped with it" if others else ""
        return f"{'; '.join(culprits)}{tail}; the run stopped before its claims were checked"
    rank = min(errors) if errors else 0
    return (f"worker rank {rank} failed: {errors.get(rank, 'it exited without a result')}; the run stopped before "
            f"its claims were checked")


def _reap(procs) -> None:
    """Kill whatever still runs (SIGKILL also ends a stopped process) and wait for every child: no orphans."""
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        if p.pid is not None:
            p.join(timeout=10)
