"""gradlab's own worker processes: started, watched, reaped. The supervision half of a distributed job (the launch
half, gradlab.kit.distributed, says what each worker runs: joining the process group and the job's function).

start() runs BODY(rank, report) in N spawned processes (fresh interpreters: BODY must be importable, spawn pickles
it, and the parent's main script is not run again in them) and returns rank 0's return value. Every message a worker
sends goes through one queue, read in one place (_Mailbox): progress (rank 0's moves the progress bar), rank 0's
result, a worker's error.

A worker that raises, dies or stops answering never hangs gradlab: the parent watches every child, gives the others
a moment to fail on their own (so the report tells the cause from its consequences), kills the rest, reaps them,
and names the rank that failed (RunFailed: exit code 1). Workers ignore Ctrl-C (the terminal sends it to all of
them; the parent stops them) and exit if the parent disappears.

At module level this module imports the standard library and gradlab.errors only (torch inside the functions, which
keeps `gradlab --help` fast). The exercises whose functions run on gloo workers start theirs themselves
(gradlab.kit.harness.gloo_harness: forked before the submission loads, which the sandbox needs).
"""

from __future__ import annotations

import contextlib
import os
import queue as queue_module
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from gradlab.errors import RunFailed
from gradlab.kit import heap

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}  # what stops a run: the parent's to handle
# Beyond the collectives' timeout, how long the parent waits for a first word from workers that are still starting
# (importing torch in W processes on a busy 2-core laptop takes a while).
STARTUP_S = 60.0
GRACE_S = 3.0  # after one worker fails, how long the others get to fail on their own before they are killed


def start(body: Callable[[int, Callable], Any], workers: int, *, timeout_s: float,
          name: str = "gradlab-worker", progress: Callable = lambda *a: None,
          meanwhile: Callable[[Callable[[], None]], Any] = lambda stop_if_cancelled: None) -> tuple[Any, Any]:
    """Run BODY(rank, report) in WORKERS spawned processes (named NAME-rank-R), MEANWHILE in a thread
    of this one, watch both; stop and reap the workers in any case. Return (rank 0's return value, what MEANWHILE
    returned). REPORT(text, done, total) moves PROGRESS (rank 0's). TIMEOUT_S: how long a worker may wait for the
    others in a collective (a worker silent longer than that plus STARTUP_S has hung). The workers' standard output
    and error go to /dev/null (torch's C++ warnings would interleave with the parent's report). MEANWHILE must
    call stop_if_cancelled() often: it raises Cancelled once the job has failed or been interrupted."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    procs = [ctx.Process(target=_worker, name=f"{name}-rank-{r}", daemon=True,
                         args=(r, body, messages, os.getpid())) for r in range(workers)]
    stop, mine = threading.Event(), {}
    side = threading.Thread(target=_capture, args=(meanwhile, stop, mine), daemon=True)
    try:
        with _main_not_rerun(), _children_ignore_ctrl_c():
            for p in procs:
                p.start()
        side.start()
        return _watch(timeout_s, procs, _Mailbox(messages, progress), side, mine, stop)
    finally:
        stop.set()
        _reap(procs)
        messages.close()
        messages.cancel_join_thread()
        if side.is_alive():
            side.join()  # it stops at its next stop_if_cancelled()


def exit_with_parent(parent: int) -> None:
    """A worker whose parent is gone (killed with SIGKILL, say) exits instead of waiting for a timeout."""
    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _worker(rank: int, body: Callable, messages, parent: int) -> None:
    """One rank. It never prints: progress, the result (rank 0) and errors go to the parent's queue."""
    heap.own_process()  # a process of gradlab's own, torch imported by now (unpickling BODY): gradlab.kit.heap
    heap.imported()
    for signum in STOP_SIGNALS:  # Ctrl-C (or SIGTERM to the group) reaches every process: the parent decides
        signal.signal(signum, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    exit_with_parent(parent)
    devnull = os.open(os.devnull, os.O_WRONLY)  # torch's C++ warnings would interleave with the parent's report
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        def report(text: str, done: int, total: int) -> None:
            messages.put(("progress", rank, text, done, total))

        result = body(rank, report)
        if rank == 0:
            messages.put(("result", rank, result))
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


def _watch(timeout_s: float, procs: list, mailbox: _Mailbox, side: threading.Thread, mine: dict,
           stop: threading.Event) -> tuple[Any, Any]:
    """Read the workers' messages until the job is done (every worker exited 0 with the result sent, and this
    process's own share finished), or failed: a worker's error, a worker gone, this process's share raising, or
    silence for longer than the timeout allows. Once it has failed, this process's share is cancelled (STOP) at
    once, not after the others' grace: its result can no longer be used."""
    silence = timeout_s + STARTUP_S
    while True:
        if "error" in mine:  # this process's own share failed: the job cannot be judged
            raise mine["error"]
        mailbox.receive(0.2)
        exited = [p.exitcode for p in procs]
        all_done = all(code == 0 for code in exited)
        if all_done and mailbox.result is None:  # the result may still be on its way through the pipe
            mailbox.wait_until(lambda: mailbox.result is not None, GRACE_S)
        if mailbox.errors or any(code not in (None, 0) for code in exited) or (all_done and mailbox.result is None):
            # the other ranks get GRACE_S to fail on their own (a lost peer, a collective that timed out), so that
            # the report can tell the cause from its consequences
            mailbox.progress = lambda *a: None
            stop.set()  # this process's share stops at its next stop_if_cancelled() instead of computing on
            mailbox.wait_until(lambda: not any(p.is_alive() for p in procs), GRACE_S)
            mailbox.drain()
            raise RunFailed(_failure(procs, mailbox.errors, timeout_s))
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
    progress bar (rank 0's), ("result", 0, what rank 0's body returned) and ("error", rank, text) are kept."""

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
