"""A function's torch operations recorded as plain data: for each operation called from the watched code, its line,
its name, its output (a small copy, taken when the operation ran) and which earlier recorded values its tensor
arguments are (by identity: every recorded tensor is kept alive while tracing, so an id is never reused, and a tensor
changed since it was recorded, through a view, is no longer taken for that value).

The sandbox's child (gradlab/practice/inside/child.py) traces the submission's own operations on its inputs, in
order, once every output is known; gradlab traces the reference's the same way, in its own process
(gradlab/practice/judging/departure.py), and finds where the student's values first depart from every value a right
answer computes. Bounded: at most MOST_OPS operations, MOST_VALUES numbers copied and MOST_S seconds in all; past any
bound the trace says it is incomplete (and nothing is concluded from it).

A recorded node is {"line", "code", "op", "args", "value", "kind"}: one per tensor an operation returns (max's
values and indices are two), or one without a value for an operation that returns none (kind "autograd": backward,
autograd.grad, a .grad read; "escape": a tensor turned into a Python number or truth value, where the values leave
what can be traced). "args": the indices of the earlier nodes its tensor arguments are, -1 for a tensor that is no
recorded value's any more (changed in place through a view); "inputs": how many tensor arguments it had in all (0: a
constant made from nothing, torch.zeros). Bound into the sandbox: imports nothing of gradlab's.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import sys
import time
import warnings

MOST_OPS = 2000  # nodes recorded in all
MOST_VALUES = 2_000_000  # numbers copied in all
MOST_S = 3.0  # seconds of tracing in all
MOST_ARGS = 64  # traced arguments of one operation (torch.stack of a list)
MOST_DEPTH = 40  # frames looked through for the watched code's line
REAL = {"float16", "bfloat16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool"}  # the wire's
ESCAPES = {"item", "tolist", "__bool__", "__float__", "__int__", "__index__", "numpy"}
CONSTANTS = {"zeros", "ones", "empty", "full", "arange", "eye", "linspace"}
IN_PLACE = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__idiv__"}


def made_from_nothing(name: str) -> bool:
    """Whether an operation's value is a constant, whatever its tensor arguments hold (their shape, dtype, device)."""
    return name.endswith("_like") or name.startswith("new_") or name in CONSTANTS


def written(name: str) -> bool:
    """Whether an operation writes into its first argument (z[0] = 3, add_, copy_)."""
    return name in IN_PLACE or (name.endswith("_") and not name.startswith("_"))


def _name(func) -> str:
    name = getattr(func, "__name__", "") or type(func).__name__
    if name in ("__get__", "__set__"):  # a property: Tensor.grad.__get__ is "grad"
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return str(name)[:60]


def _tensors(value, torch, depth: int = 0) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if depth < 2 and isinstance(value, list | tuple):
        return [t for v in value[:64] for t in _tensors(v, torch, depth + 1)]
    if depth < 2 and isinstance(value, dict):
        return [t for v in list(value.values())[:64] for t in _tensors(v, torch, depth + 1)]
    return []


@contextlib.contextmanager
def _quiet():
    """The submission's prints and warnings swallowed (in the sandbox's child, where nothing else runs)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


class Stopped(BaseException):
    """Raised inside the traced call once a bound is passed: a rerun costs at most the budget, not a whole input."""


class Tracer:
    """Records the operations WHERE(frame) names a line for: WHERE returns (line, code) or None (not watched)."""

    def __init__(self, where, most_ops: int = MOST_OPS, most_values: int = MOST_VALUES, most_s: float = MOST_S):
        self.where, self.most_ops, self.values_left, self.most_s = where, most_ops, most_values, most_s
        self.nodes: list[dict] = []
        self.complete = True
        self._of: dict[int, tuple[int, int, object]] = {}  # id(tensor) -> (node, its version then, the tensor)
        self._backward = -1  # the last backward node: each follows from the one before, a .grad read from the last
        self._until = 0.0

    def run(self, call, untrusted: bool = True) -> dict:
        """CALL() traced: {"complete", "nodes"}; an exception from CALL makes the trace incomplete. UNTRUSTED (the
        sandbox's child, the submission's code): what it prints or warns is swallowed and anything it raises,
        SystemExit included, ends the trace. Else (gradlab's own process, the reference, maybe in one of `gradlab
        grade`'s threads) nothing process-wide is touched — sys.stdout and the warnings filters are shared by every
        thread: swapping them lost a progress line another thread printed — and Ctrl-C goes through."""
        import torch
        from torch.overrides import TorchFunctionMode

        tracer = self

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if not tracer.complete and not _name(func).startswith("_"):  # past a bound: the run is cut short
                    raise Stopped  # (its outputs are known already); never in torch's own state changes
                given = _tensors(list(args) + list((kwargs or {}).values()), torch)
                before = [tracer._node_of(t) for t in given]  # before an in-place operation changes its version
                out = func(*args, **(kwargs or {}))
                if tracer.complete:
                    try:
                        tracer._record(func, given, before, out, sys._getframe(1), torch)
                    except Exception:  # a value the tracer cannot copy: nothing concluded
                        tracer.complete = False
                return out

        self._until = time.perf_counter() + self.most_s
        grad = torch.is_grad_enabled()
        quiet = _quiet() if untrusted else contextlib.nullcontext()
        ends: tuple[type[BaseException], ...] = (BaseException,) if untrusted else (Exception, Stopped)
        try:  # what the code prints or warns again is not shown twice
            with quiet, Mode():
                call()
        except ends:
            self.complete = False
        finally:  # a run cut short inside the code's no_grad() leaves this thread as it found it
            torch.set_grad_enabled(grad)
        return {"complete": self.complete, "nodes": self.nodes if self.complete else []}

    def _record(self, func, given: list, before: list, out, frame, torch) -> None:
        at = self.where(frame)
        if at is None:
            return
        if time.perf_counter() > self._until:
            self.complete = False
            return
        name = _name(func)
        if made_from_nothing(name):  # torch.zeros_like(r): a constant, whatever r holds
            given, before = [], []
        outs = _tensors(out, torch)
        if given and (name in IN_PLACE or (written(name) and not outs)):
            outs = given[:1]  # z[0] = 3 changes z: z's new value
        kind = "autograd" if name in ("backward", "grad") else "escape" if name in ESCAPES else "value"
        if kind == "escape":
            outs = []
        if not outs and kind == "value":
            return  # a size, a dtype, a shape: no value of its own
        argnodes = sorted({a for a in before if a is not None} | ({self._backward} if kind == "autograd" and
                                                                   self._backward >= 0 else set()))
        if len(argnodes) > MOST_ARGS:
            raise ValueError("too many arguments")
        line, code = at
        base = {"line": int(line), "code": code, "op": name, "args": argnodes, "inputs": len(given),
                "kind": kind}
        if not outs:
            self._add(dict(base, value=None))
            if name == "backward":
                self._backward = len(self.nodes) - 1
            return
        for t in outs[:4]:
            self._add(dict(base, value=self._copy(t, torch)))
            self._of[id(t)] = (len(self.nodes) - 1, t._version, t)

    def _node_of(self, t):
        known = self._of.get(id(t))
        if known is None or known[2] is not t:
            return None  # an input, a parameter, a tensor made where nothing was watched
        return known[0] if known[1] == t._version else -1

    def _copy(self, t, torch):
        if t.layout != torch.strided or str(t.dtype).removeprefix("torch.") not in REAL or t.device.type == "meta":
            raise ValueError("a tensor that cannot be copied")
        self.values_left -= t.numel()
        if self.values_left < 0:
            raise ValueError("too many values")
        return t.detach().to("cpu").clone(memory_format=torch.contiguous_format)

    def _add(self, node: dict) -> None:
        if len(self.nodes) >= self.most_ops:
            raise ValueError("too many operations")
        self.nodes.append(node)


def watched_file(mine):
    """WHERE for a Tracer: the line of the innermost frame whose file MINE(filename) is true, looking through at most
    MOST_DEPTH frames (an operation inside torch.nn or the harness's module, called from that file, is that line's)."""
    def where(frame):
        for _ in range(MOST_DEPTH):
            if frame is None:
                return None
            name = frame.f_code.co_filename
            if mine(name):
                code = linecache.getline(name, frame.f_lineno).strip()
                return frame.f_lineno, code[:120]
            frame = frame.f_back
        return None
    return where


def everywhere(frame):
    """WHERE for the reference's trace: every operation, wherever it is called from."""
    return 0, ""


def trace_inputs(call_on, cases: list, mine, most_s: float = MOST_S) -> list[dict]:
    """CALL_ON(case) traced on the CASES in order, the operations called from the files MINE(filename) names, while
    one budget lasts: [{"input": i, "complete", "nodes"}] (the last one incomplete where the budget ran out)."""
    deadline, ops, values = time.perf_counter() + most_s, MOST_OPS, MOST_VALUES
    traces = []
    for i, case in enumerate(cases):
        left = deadline - time.perf_counter()
        if ops <= 0 or left <= 0:
            break
        tracer = Tracer(watched_file(mine), most_ops=ops, most_values=values, most_s=left)
        got = tracer.run(lambda c=case: call_on(c))
        traces.append({"input": i, **got})
        if not got["complete"]:
            break
        ops, values = ops - len(got["nodes"]), tracer.values_left
    return traces
