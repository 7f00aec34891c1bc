"""What every exercise's harness shares. A harness (gradlab/lessons/<lesson>/exercises/harness.py) makes an exercise's
inputs and calls a function on them the way the lesson uses it; it is the only code of an exercise that runs beside
a submission, so it imports torch and this module, nothing else of gradlab (no reference, no known mistake).

Besides the function's outputs, a harness may report two rules (gradlab.practice.exercise.RESERVED): which inputs the
function changed in place (`changed`) and whether it built an autograd graph (`Graph`). It raises `Returned` when
the function returned something of the wrong kind (a tuple where a list is asked for): the check then says what came
back instead of blaming an exception on the student's code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

CHANGED = "inputs changed"  # the keys of gradlab.practice.exercise.RESERVED (that module is not imported here)
GRAPH = "autograd graph"


@dataclass(frozen=True)
class Harness:
    cases: Callable[[int], list[dict]]  # seed -> the inputs: [{"label", "kind", tensors…}]
    call: Callable[[Callable, dict], dict]  # (a function, one input) -> its outputs {name: tensor or [tensors]}


class Returned(TypeError):
    """The function returned, but not what the exercise asks for: the message says what it returned."""


def loaded(net: torch.nn.Module, weights: list[torch.Tensor]) -> torch.nn.Module:
    """NET with its parameters set to WEIGHTS (an input carries tensors, not modules)."""
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights, strict=True):
            p.copy_(w)
    return net


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
        raise Returned(f"{what} is {kind_of(value)}, not a list of tensors")
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
# Real torch.distributed workers (gloo on 127.0.0.1): the exercises whose function runs on every rank
# ---------------------------------------------------------------------------------------------------------------

def _worker(fn, args, rank: int, world: int, port: int, results) -> None:
    import datetime
    import os

    import torch.distributed as dist

    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=15))
        try:
            out = fn(*args)
            results.put((rank, [t.detach().numpy().copy() for t in tensor_list(out, "what it returned")]))
            dist.barrier()  # every rank has returned: none leaves while another still talks to it
        finally:
            dist.destroy_process_group()
    except Returned as e:
        results.put((rank, ("returned", str(e))))
    except BaseException as e:
        results.put((rank, ("raised", f"{type(e).__name__}: {e}")))
    finally:
        results.close()
        results.join_thread()  # what was put has left this process
        os._exit(0)


def on_workers(fn: Callable, args_per_rank: list[tuple]) -> list[list[torch.Tensor]]:
    """FN(*args) on one real gloo worker per rank, each forked (so that it inherits FN, the submission's function, as
    it is) and meeting on 127.0.0.1; every rank's list of tensors comes back (by value: no shared-memory handles)."""
    import multiprocessing
    import os
    import socket

    with socket.socket() as s:  # a free port on the loopback interface
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    names = [name for _, name in socket.if_nameindex()]
    loopback = next((n for n in ("lo", "lo0") if n in names), None)
    chosen = loopback is not None and "GLOO_SOCKET_IFNAME" not in os.environ
    if chosen:  # gloo connects on the interface GLOO_SOCKET_IFNAME names: the loopback, unless the user set one
        os.environ["GLOO_SOCKET_IFNAME"] = loopback
    try:
        procs = [ctx.Process(target=_worker, args=(fn, args, r, len(args_per_rank), port, results), daemon=True)
                 for r, args in enumerate(args_per_rank)]
        for p in procs:
            p.start()
    finally:
        if chosen:
            os.environ.pop("GLOO_SOCKET_IFNAME", None)
    try:
        got = dict(results.get(timeout=30) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    for r in range(len(procs)):
        if isinstance(got[r], tuple):
            how, message = got[r]
            if how == "returned":
                raise Returned(f"on rank {r}, {message}")
            raise RuntimeError(f"rank {r} of {len(procs)} failed: {message}")
    return [[torch.from_numpy(a) for a in got[r]] for r in range(len(procs))]
