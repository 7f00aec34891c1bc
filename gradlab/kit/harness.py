"""What every exercise's harness shares. A harness (gradlab/lessons/<lesson>/exercises/harness.py) makes an exercise's
inputs and calls a function on them the way the lesson uses it; it is the only code of an exercise that runs beside
a submission.

The sandbox's contract (gradlab/practice/sandbox/box.py binds these files one by one and nothing else of gradlab;
tests/
test_sandbox.py imports every harness inside the real sandbox with only its own files bound):
  * a harness module imports torch, the standard library and this module; nothing else of gradlab (no reference,
    no known mistake, no model answer: those stay in checks.py and answers.py, on gradlab's side); the modules a
    harness may import are named in gradlab.practice.sandbox.files.SHARED (this one, the names it shares with
    gradlab's side in gradlab.kit.shared, and the seccomp filter seal() loads);
  * this module imports only torch, the standard library and gradlab.kit.shared;
  * a harness opens no socket in `call`: an exercise whose function runs on gloo workers forms their groups in
    `prepare`, which runs BEFORE any code of the submission, because where the sandbox has no network namespace of
    its own (the uid fallback) every process seals itself (seal(): no new socket) before the submission loads.

Besides the function's outputs, a harness may report two rules (gradlab.kit.exercise.RESERVED): which inputs the
function changed in place (`changed`) and whether it built an autograd graph (`Graph`). It raises `Returned` when
the function returned something of the wrong kind (a tuple where a list is asked for): the check then says what came
back instead of blaming an exception on the student's code.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import pickle
import select
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

# CHANGED and GRAPH, the rules a harness reports beside a function's outputs, are part of this module's vocabulary
from gradlab.kit.shared import CHANGED, GRAPH, loopback_interface, loopback_listener  # noqa: F401


@dataclass(frozen=True, kw_only=True)
class Harness:
    cases: Callable[[int], list[dict]]  # seed -> the inputs: [{"label", "kind", tensors…}]
    call: Callable[[Callable, dict], dict]  # (a function, one input) -> its outputs {name: tensor or [tensors]}
    # (the inputs, LOAD) -> one callable per input giving its outputs. Runs in the sandbox before any code of the
    # submission: it may start processes and open the loopback connections they need, then seal() them; LOAD()
    # runs the submission in the process that calls it and returns its function (a worker calls it after sealing).
    prepare: Callable[[list[dict], Callable[[], Callable]], list[Callable[[], dict]]] | None = None


def default_init(net: torch.nn.Module, generator: torch.Generator) -> list[torch.Tensor]:
    """NET's parameters drawn as PyTorch's default init draws them (nn.Linear.reset_parameters, torch/nn/modules/
    linear.py: kaiming_uniform_ with a = √5 for the weight, U(±1/√fan_in) for the bias), but from GENERATOR: the
    weights an input starts from, as a lesson's model starts. Not from torch's global generator, which gradlab's
    threads share (the references of two submissions are computed at once, and making any module draws from it):
    inputs seeded there differed now and then from the ones the sandbox drew, and a right answer failed."""
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.kaiming_uniform_(m.weight, a=math.sqrt(5), generator=generator)
                if m.bias is not None:
                    bound = 1 / math.sqrt(m.in_features)
                    torch.nn.init.uniform_(m.bias, -bound, bound, generator=generator)
    return [p.detach().clone() for p in net.parameters()]


def loaded(net: torch.nn.Module, weights: list[torch.Tensor]) -> torch.nn.Module:
    """NET with its parameters set to WEIGHTS (an input carries tensors, not modules)."""
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights, strict=True):
            p.copy_(w)
    return net


class Returned(TypeError):
    """The function returned, but not what the exercise asks for: the message says what it returned."""


def changed(*pairs: tuple[torch.Tensor | list, torch.Tensor | list]) -> torch.Tensor:
    """One 0/1 per (what the function was given, a copy kept aside) pair: 1 where the function changed it in place
    (a list counts as changed when any of its tensors did)."""
    def differs(now, before) -> bool:
        if isinstance(now, list | tuple):
            return any(differs(n, b) for n, b in zip(now, before, strict=True))
        return not torch.equal(now.detach(), before) if now.shape == before.shape else True

    return torch.tensor([float(differs(now, before)) for now, before in pairs])


class Graph:
    """Counts the tensors autograd saves for a backward while the function runs: zero when it builds no graph (the
    inputs of a "no autograd" exercise arrive without requires_grad, so only the function's own requires_grad_(),
    autograd.grad or backward make one)."""

    def __enter__(self) -> Graph:
        self.saved = 0

        def pack(t):
            self.saved += 1
            return t

        self._hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)

    def count(self) -> torch.Tensor:
        return torch.tensor(float(self.saved))


def tensor_out(value, what: str) -> torch.Tensor:
    """VALUE if it is a tensor, else Returned saying what it is instead (WHAT names the output)."""
    if isinstance(value, torch.Tensor):
        return value
    raise Returned(f"{what} is {kind_of(value)}, not a tensor")


def tensor_list(value, what: str, n: int | None = None) -> list[torch.Tensor]:
    """VALUE as a list of tensors (a list or tuple of them), else Returned saying what came back."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], list | tuple):
        raise Returned(f"{what} is a tuple of {kind_of(value[0])} and {kind_of(value[1])}; return the list alone")
    if not isinstance(value, list | tuple) or not all(isinstance(t, torch.Tensor) for t in value):
        nones = sum(t is None for t in value) if isinstance(value, list | tuple) else 0
        raise Returned(f"{what} is {kind_of(value)}, not a list of tensors" + (
            f": {nones} of them None (a .grad that no backward filled, or that was reset to None)" if nones else ""))
    if n is not None and len(value) != n:
        raise Returned(f"{what} has {len(value)} tensors where {n} are expected")
    return list(value)


def tensor_pair(value, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """VALUE as two tensors, else Returned saying what came back."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise Returned(f"{what} is {kind_of(value)}; return two tensors, e.g. `return a, b`")
    return tensor_out(value[0], f"the first of {what}"), tensor_out(value[1], f"the second of {what}")


def kind_of(value) -> str:
    """A few words for what a value is: "a tensor of shape (3, 4)", "a tuple of 2 items", "None"."""
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, list | tuple):
        return f"a {type(value).__name__} of {len(value)} item{'' if len(value) == 1 else 's'}"
    return "None" if value is None else f"a {type(value).__name__}"


def function_outputs(cls, inputs: list[torch.Tensor], dy: torch.Tensor, directions: list[torch.Tensor],
                     name: str, names: tuple[str, ...] = ()) -> dict:
    """An autograd.Function CLS applied to INPUTS (each made a leaf that requires grad): its value, its gradients
    for the upstream gradient DY (vector-Jacobian products: with a random dy, a backward that forgets to multiply
    by dy cannot pass, as it does when the output is summed), and the second derivative along DIRECTIONS (the
    gradient of Σ_i ⟨gradient_i, direction_i⟩, so a backward that is a constant to autograd shows as 0). Keys:
    value, gradient, second for one input; value, "grad N", "second N" for inputs NAMES."""
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        raise Returned(f"{name} is {kind_of(cls)}, not a class derived from torch.autograd.Function")
    xs = [x.clone().requires_grad_(True) for x in inputs]
    y = tensor_out(cls.apply(*xs), f"what {name}.forward returned")
    if y.shape != dy.shape:
        raise Returned(f"{name}.forward returned a tensor of shape {tuple(y.shape)} where {tuple(dy.shape)} is "
                       "expected")
    if not y.requires_grad:
        raise Returned(f"{name}.forward's output has no graph: return a tensor computed from the inputs")
    if type(y.grad_fn) is not getattr(cls, "_backward_cls", None):  # autograd's node of this very Function
        raise Returned(f"{name}.apply did not run {name}'s own forward and backward (its output comes from "
                       f"{type(y.grad_fn).__name__}): write forward and backward, and leave apply as "
                       "torch.autograd.Function defines it")
    grads = torch.autograd.grad(y, xs, grad_outputs=dy, create_graph=True, allow_unused=True)
    grads = [torch.zeros_like(x) if g is None else g for x, g in zip(xs, grads, strict=True)]
    inner = sum((g * v).sum() for g, v in zip(grads, directions, strict=True) if g.requires_grad)
    seconds = torch.autograd.grad(inner, xs, allow_unused=True) if isinstance(inner, torch.Tensor) else [None] * len(xs)
    seconds = [torch.zeros_like(x.detach()) if s is None else s.detach() for x, s in zip(xs, seconds, strict=True)]
    return keyed(y.detach(), [g.detach() for g in grads], seconds, names)


def keyed(value: torch.Tensor, grads: list, seconds: list, names: tuple[str, ...] = ()) -> dict:
    """The outputs of function_outputs (and of a reference computed the same way) under their keys."""
    if not names:
        return {"value": value, "gradient": grads[0], "second": seconds[0]}
    return {"value": value, **{f"grad {n}": g for n, g in zip(names, grads, strict=True)},
            **{f"second {n}": s for n, s in zip(names, seconds, strict=True)}}


# ---------------------------------------------------------------------------------------------------------------
# The network, for exercises that run on gloo workers
# ---------------------------------------------------------------------------------------------------------------

def seal() -> None:
    """Where the sandbox has no network namespace of its own (the uid fallback sets GRADLAB_SEAL_INET), this process
    and what it forks from now on create no socket at all (socketpair() still works). Elsewhere nothing happens:
    bwrap's sandbox has only a private loopback, and a student's own check needs no seal."""
    if os.environ.get("GRADLAB_SEAL_INET") == "1":
        from gradlab.kit import seccomp

        seccomp.install(inet=True, base=False)


# What a gloo worker reports beside its result (the child sets it before the workers fork: the library calls the
# exercise forbids that the submission made on that worker), and what the workers reported, gathered in the parent.
WORKER_REPORT: Callable[[], list] | None = None
REPORTED: list = []


def gloo_harness(cases: Callable[[int], list[dict]], rank_args: Callable[[dict], list[tuple]],
                 outputs: Callable[[list[list[torch.Tensor]]], dict],
                 run: Callable[..., object] = lambda fn, *args: fn(*args)) -> Harness:
    """The Harness of an exercise whose function runs on every rank of a gloo group on 127.0.0.1: one forked worker
    per rank, RANK_ARGS(case)[rank] its arguments, RUN(fn, *arguments) how the function is called there (by default
    fn(*arguments)), the list of tensors it gives on every rank made the case's outputs by OUTPUTS. Every group is
    formed before the submission loads (prepare); each worker then seals itself and loads the submission on its
    own. `call` does the same for a function at hand (gradlab's side: the reference, a known mistake)."""
    def prepare(inputs: list[dict], load: Callable[[], Callable]) -> list[Callable[[], dict]]:
        return _gloo_groups(inputs, load, rank_args, outputs, run)

    def call(fn: Callable, case: dict) -> dict:
        return _gloo_groups([case], lambda: fn, rank_args, outputs, run)[0]()

    return Harness(cases=cases, call=call, prepare=prepare)


def _send(fd: int, message) -> None:
    data = pickle.dumps(message)
    os.write(fd, struct.pack("<I", len(data)) + data)


def _receive(fd: int, deadline: float):
    """A worker's message, or ("error", why) when it ends or stays silent past DEADLINE."""
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


def _gloo_worker(args: tuple, rank: int, world: int, port: int, listening: int | None, load: Callable, run: Callable,
                 go: int, result: int) -> None:
    """One rank of a group; rank 0 hosts the group's store on LISTENING, the socket its parent bound (at PORT)."""
    try:
        try:
            timeout = datetime.timedelta(seconds=15)
            store = dist.TCPStore("127.0.0.1", port, world, is_master=listening is not None, timeout=timeout,
                                  wait_for_workers=False, master_listen_fd=listening)
            dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=timeout)
            seal()  # the group's connections exist: from now on no new socket (the uid fallback)
        except BaseException as e:
            _send(result, ("error", f"{type(e).__name__}: {e}"))
            return
        _send(result, ("ready",))
        if os.read(go, 1) != b"G":  # the submission did not load: nothing to run
            return
        try:
            out = tensor_list(run(load(), *args), "what it returned")
            message = ("ok", [t.detach().cpu().numpy().copy() for t in out],  # by value: no shared memory
                       [str(u) for u in (WORKER_REPORT() if WORKER_REPORT else [])][:20])
        except Returned as e:
            message = ("returned", str(e))
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
                 outputs: Callable[[list[list[torch.Tensor]]], dict],
                 run: Callable[..., object]) -> list[Callable[[], dict]]:
    name = loopback_interface()
    if name and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = name  # gloo's connections stay on the loopback
    groups, ours = [], []
    for case in inputs:
        args, members = rank_args(case), []
        listener = loopback_listener()  # the group's store's socket, bound before any rank starts
        port, listening = listener.getsockname()[1], listener.detach()
        for rank in range(len(args)):
            go_r, go_w = os.pipe()
            res_r, res_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                for fd in [*ours, go_w, res_r, *([listening] if rank else [])]:
                    os.close(fd)
                _gloo_worker(args[rank], rank, len(args), port, None if rank else listening, load, run, go_r, res_w)
            os.close(go_r)
            os.close(res_w)
            ours += [go_w, res_r]
            members.append({"pid": pid, "go": go_w, "result": res_r})
        os.close(listening)  # rank 0's store has its own copy
        groups.append(members)
    deadline = time.monotonic() + 60
    for members in groups:  # every worker is in its group (and sealed) before any code of the submission runs
        for m in members:
            m["ready"] = _receive(m["result"], deadline)
    return [lambda members=members: _gloo_run(members, outputs) for members in groups]


def _gloo_run(members: list[dict], outputs: Callable[[list[list[torch.Tensor]]], dict]) -> dict:
    """One group's call: tell its workers (MEMBERS, each ready or not) to go, gather what each gave, reap them all;
    the case's outputs made by OUTPUTS, or the first rank's failure raised."""
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
    for g in got:
        if g[0] == "ok" and len(g) > 2 and isinstance(g[2], list):
            REPORTED.extend(u for u in g[2] if isinstance(u, str))  # the child keeps each name once
    if failed:
        rank, why = failed[0]
        if any(g[0] == "returned" for g in got[rank:rank + 1]):
            raise Returned(f"on rank {rank}, {why}")
        raise RuntimeError(f"rank {rank} of {len(members)} failed: {why}")
    return outputs([[torch.from_numpy(a) for a in g[1]] for g in got])
