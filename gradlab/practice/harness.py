"""What every exercise's harness shares. A harness (gradlab/lessons/<lesson>/exercises/harness.py) makes an exercise's
inputs and calls a function on them the way the lesson uses it; it is the only code of an exercise that runs beside
a submission.

The sandbox's contract (gradlab/practice/isolate.py binds these files one by one and nothing else of gradlab; tests/
test_sandbox.py imports every harness inside the real sandbox with only its own files bound):
  * a harness module imports torch, the standard library and this module; nothing else of gradlab (no reference,
    no known mistake, no model answer: those stay in checks.py and answers.py, on gradlab's side). The one exception
    is a worker launcher for the distributed exercises, named in gradlab.practice.sandbox.SHARED, which must itself
    import only the standard library and torch at module level;
  * this module imports only torch and the standard library;
  * a harness opens no socket in `call`: an exercise whose function runs on gloo workers forms their groups in
    `prepare`, which runs BEFORE any code of the submission, because where the sandbox has no network namespace of
    its own (the uid fallback) every process seals itself (seal(): no new socket) before the submission loads.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Harness:
    cases: Callable[[int], list[dict]]  # seed -> the inputs: [{"label", "kind", tensors…}]
    call: Callable[[Callable, dict], dict]  # (a function, one input) -> its outputs {name: tensor or [tensors]}
    # (the inputs, LOAD) -> one callable per input giving its outputs. Runs in the sandbox before any code of the
    # submission: it may start processes and open the loopback connections they need, then seal() them; LOAD()
    # runs the submission in the process that calls it and returns its function (a worker calls it after sealing).
    prepare: Callable[[list[dict], Callable[[], Callable]], list[Callable[[], dict]]] | None = None


def loaded(net: torch.nn.Module, weights: list[torch.Tensor]) -> torch.nn.Module:
    """NET with its parameters set to WEIGHTS (an input carries tensors, not modules)."""
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights, strict=True):
            p.copy_(w)
    return net


# ---------------------------------------------------------------------------------------------------------------
# The network, for exercises that run on gloo workers
# ---------------------------------------------------------------------------------------------------------------

def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_interface() -> str | None:
    """The loopback interface's name (lo on Linux, lo0 on macOS), for GLOO_SOCKET_IFNAME."""
    names = [name for _, name in socket.if_nameindex()]
    return next((n for n in ("lo", "lo0") if n in names), None)


def seal() -> None:
    """Where the sandbox has no network namespace of its own (the uid fallback sets GRADLAB_SEAL_INET), this process
    and what it forks from now on create no socket at all (socketpair() still works). Elsewhere nothing happens:
    bwrap's sandbox has only a private loopback, and a student's own check needs no seal."""
    if os.environ.get("GRADLAB_SEAL_INET") == "1":
        from gradlab.practice import seccomp

        seccomp.install(inet=True, base=False)


def gloo_harness(cases: Callable[[int], list[dict]], rank_args: Callable[[dict], list[tuple]],
                 outputs: Callable[[list[list[torch.Tensor]]], dict]) -> Harness:
    """The Harness of an exercise whose function runs on every rank of a gloo group on 127.0.0.1: one forked worker
    per rank, RANK_ARGS(case)[rank] its arguments, the function's list of tensors from every rank made the case's
    outputs by OUTPUTS. Every group is formed before the submission loads (prepare); each worker then seals itself
    and loads the submission on its own. `call` does the same for a function at hand (gradlab's side)."""
    def prepare(inputs: list[dict], load: Callable[[], Callable]) -> list[Callable[[], dict]]:
        return _gloo_groups(inputs, load, rank_args, outputs)

    def call(fn: Callable, case: dict) -> dict:
        return _gloo_groups([case], lambda: fn, rank_args, outputs)[0]()

    return Harness(cases=cases, call=call, prepare=prepare)


def _send(fd: int, message) -> None:
    import pickle
    import struct

    data = pickle.dumps(message)
    os.write(fd, struct.pack("<I", len(data)) + data)


def _receive(fd: int, deadline: float):
    """A worker's message, or ("error", why) when it ends or stays silent past DEADLINE."""
    import pickle
    import select
    import struct
    import time

    data = b""
    while True:
        if len(data) >= 4 and len(data) >= 4 + struct.unpack("<I", data[:4])[0]:
            try:
                return pickle.loads(data[4:])
            except Exception as e:  # a worker the submission broke
                return ("error", f"its message could not be read ({type(e).__name__})")
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return ("error", "it did not answer in time")
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return ("error", "it ended without an answer")
        data += chunk


def _gloo_worker(args: tuple, rank: int, world: int, port: int, load: Callable, go: int, result: int) -> None:
    import datetime

    import torch.distributed as dist

    try:
        try:
            dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                    timeout=datetime.timedelta(seconds=15))
            seal()  # the group's connections exist: from now on no new socket (the uid fallback)
        except BaseException as e:
            _send(result, ("error", f"{type(e).__name__}: {e}"))
            return
        _send(result, ("ready",))
        if os.read(go, 1) != b"G":  # the submission did not load: nothing to run
            return
        try:
            out = load()(*args)
            if not isinstance(out, list | tuple) or not all(isinstance(t, torch.Tensor) for t in out):
                message = ("error", f"it returned {type(out).__name__}, not a list of tensors")
            else:
                message = ("ok", [t.detach().cpu().numpy().copy() for t in out])  # by value: no shared memory
        except BaseException as e:
            message = ("error", f"{type(e).__name__}: {e}")
        _send(result, message)
        try:
            dist.barrier()  # every rank has answered: none leaves while another still talks to it
        finally:
            dist.destroy_process_group()
    finally:
        os._exit(0)


def _gloo_groups(inputs: list[dict], load: Callable[[], Callable], rank_args: Callable[[dict], list[tuple]],
                 outputs: Callable[[list[list[torch.Tensor]]], dict]) -> list[Callable[[], dict]]:
    import time

    import torch.distributed

    name = loopback_interface()
    if name and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = name  # gloo's connections stay on the loopback
    groups, ours = [], []
    for case in inputs:
        args, port, members = rank_args(case), free_port(), []
        for rank in range(len(args)):
            go_r, go_w = os.pipe()
            res_r, res_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                for fd in [*ours, go_w, res_r]:
                    os.close(fd)
                _gloo_worker(args[rank], rank, len(args), port, load, go_r, res_w)
            os.close(go_r)
            os.close(res_w)
            ours += [go_w, res_r]
            members.append({"pid": pid, "go": go_w, "result": res_r})
        groups.append(members)
    deadline = time.monotonic() + 60
    for members in groups:  # every worker is in its group (and sealed) before any code of the submission runs
        for m in members:
            m["ready"] = _receive(m["result"], deadline)

    def run(members: list[dict]) -> dict:
        failed = [(r, m["ready"][1]) for r, m in enumerate(members) if m["ready"][0] != "ready"]
        got = []
        if not failed:
            for m in members:
                os.write(m["go"], b"G")
            got = [_receive(m["result"], time.monotonic() + 30) for m in members]
            failed = [(r, g[1]) for r, g in enumerate(got) if g[0] != "ok"]
        for m in members:
            os.close(m["go"])
            os.close(m["result"])
            if failed:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(m["pid"], 9)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(m["pid"], 0)
        if failed:
            raise RuntimeError(f"rank {failed[0][0]} of {len(members)} failed: {failed[0][1]}")
        return outputs([[torch.from_numpy(a) for a in g[1]] for g in got])

    return [lambda members=members: run(members) for members in groups]
