"""What came back from a sandbox, checked before anything of gradlab's uses it.

Everything that comes back is untrusted: plain data (gradlab/practice/inside/wire.py: safetensors' format, JSON and raw
tensor bytes, read in time linear in their size, within a size cap; never a pickle, which can be made to hold gradlab
for hours); then its structure is checked against the references' (one output per input, the same keys, the same number
of tensors, plain CPU tensors of the expected shapes whose storage is no larger than they need); every string in it is
sanitized. Any violation is a failed check of that submission, said in one line."""

from __future__ import annotations

import math
import signal
from dataclasses import dataclass

from gradlab.kit.text import one_line, sanitize
from gradlab.practice.inside import backward, wire
from gradlab.practice.sandbox import traced
from gradlab.practice.sandbox.limits import STARTUP_S, Limits, Outcome

SHOWN = 2000  # characters of printed output a report shows at most (gradlab.practice.judging.judge)
KINDS = ("syntax", "import", "missing", "todo", "raised", "timeout", "died", "output")



class Bad(Exception):
    """What came back is not what the exercise's outputs look like: the message says what is wrong."""


@dataclass(frozen=True, kw_only=True)
class Received:
    """What a submission's sandbox returned, every part checked and sanitized: what gradlab.practice.judging.judge
    reads. OK: the function ran on every input and OUTPUTS holds its outputs, one per input (tensors, shaped as the
    references'); else KIND (one of KINDS) says how it stopped and ERROR says it in one line, TRACE its traceback."""

    ok: bool
    outputs: list | None = None  # OK: one output per input
    kind: str = ""  # not OK: syntax, import, missing, todo, raised, timeout, died, output
    error: str = ""  # not OK: one line, sanitized
    trace: str = ""  # not OK: the traceback cut to the student's own file, sanitized
    printed: str = ""  # the last part of what it printed, sanitized
    printed_bytes: int = 0  # how much it printed in all
    warnings: tuple[str, ...] = ()  # the warnings it raised, one line each
    used: tuple[str, ...] = ()  # the forbidden calls it made (Exercise.forbidden)
    isolated: bool = False  # it ran in an isolated sandbox (not "plain")
    sandbox: str = ""  # the mode: bwrap, userns, uid, plain
    environment: str = ""  # "startup" or "killed": it ended by the machine's doing, not the student's (never kept)
    graph: dict | None = None  # check --graph: the backward pass it ran, caught (gradlab/practice/inside/backward.py)
    nonfinite: dict | None = None  # OK: where its first NaN or inf appeared, {"input": i, "line": "N: code (…)"}
    traced: tuple | None = None  # OK: its operations on its inputs, traced (gradlab/practice/sandbox/traced.py)

    @classmethod
    def stopped(cls, kind: str, error: str, **rest) -> Received:
        """A submission that did not run to its outputs (gradlab's own pre-flight too: a syntax error, a missing
        function)."""
        return cls(ok=False, kind=kind, error=error, **rest)


def received(outcome: Outcome, expected: list[dict] | None, timeout_s: float,
             limits: Limits | None = None, graph: bool = False) -> Received:
    """OUTCOME as judge() reads it, every part of it checked and sanitized (GRAPH: and its "graph", the caught
    backward pass, or None)."""
    return Received(**_received(outcome, expected, timeout_s, limits or Limits(), graph))


def _received(outcome: Outcome, expected: list[dict] | None, timeout_s: float, limits: Limits, graph: bool) -> dict:
    printed = outcome.printed.decode("utf-8", errors="replace")
    base = {"printed": sanitize(printed), "printed_bytes": int(outcome.printed_bytes), "warnings": (),
            "used": (), "trace": "", "isolated": outcome.mode != "plain", "sandbox": outcome.mode}
    if outcome.stopped == "startup":
        return base | {"ok": False, "kind": "died", "environment": "startup",
                       "error": f"gradlab's sandbox did not start your code within {STARTUP_S:g} s (a busy "
                                f"machine: not your code's doing); {AGAIN}"}
    if outcome.stopped:
        why = {"timeout": f"your code ran longer than {timeout_s:g} s and was stopped (an endless loop?)",
               "printed too much": f"your code printed more than {limits.printed_max >> 20} MB and was stopped",
               "output too large": f"your code sent back more than {limits.output_max >> 20} MB and was stopped"}
        return base | {"ok": False, "kind": "timeout" if outcome.stopped == "timeout" else "died",
                       "error": why.get(outcome.stopped, f"your code was stopped: {outcome.stopped}")}
    if not outcome.output:
        code = outcome.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
            if name == "SIGKILL" and (outside := killed_from_outside(outcome, limits)):
                return base | {"ok": False, "kind": "died", "environment": "killed",
                               "error": f"gradlab's sandbox was killed from outside ({outside}: the machine's or the "
                                        f"container's out-of-memory killer?), not by your code's limits; {AGAIN}"}
            error = f"your code was killed by {name}" + (" (out of memory?)" if name == "SIGKILL" else "")
        else:
            error = f"your code ended the process (exit code {code}) before returning: os._exit or similar"
        return base | {"ok": False, "kind": "died", "error": error}
    try:
        got = wire.decode(outcome.output)
        if graph and type(got) is dict:
            base["graph"] = backward.checked(got.pop("graph", None))
        return base | _checked(got, expected)
    except backward.Bad as e:
        return base | {"ok": False, "kind": "output", "error": one_line(f"your code's graph: {e}", 400)}
    except (Bad, wire.Malformed) as e:
        return base | {"ok": False, "kind": "output", "error": one_line(f"your code's outputs {e}", 400)}


AGAIN = "the next run of gradlab grade checks it again"
OWN_OOM = 0.9  # a sandbox SIGKILLed with its cgroup's memory peak above this share of its limit hit its own limit


def killed_from_outside(outcome: Outcome, limits: Limits) -> str:
    """Why a SIGKILL that gradlab did not send came from outside the sandbox, in words, or "" when it may be the
    sandbox's own: only a cgroup's memory peak tells (below OWN_OOM of its limit, its own out-of-memory killer did not
    act). A submission that SIGKILLs itself is graded again on every run (and scores 0 each time)."""
    peak = outcome.memory_peak
    if not outcome.cgroup or peak is None or peak >= OWN_OOM * limits.group_memory:
        return ""
    return f"SIGKILL while its processes held {peak >> 20} MB of their {limits.group_memory >> 20} MB"


def _text(value, most: int) -> str:
    """VALUE, text of the submission's, cut to MOST characters: sanitized once, by the caller."""
    if not isinstance(value, str):
        raise Bad(f"hold {type(value).__name__} where text is expected")
    return value[:most]


# What one result may hold beyond the references' own values: a result of a few MB can hold 300,000 small lists and
# numbers; walking and copying them is bounded by one budget that every container and value the check walks spends.
MOST_ITEMS = 100_000  # containers, tensors and numbers in one result
MOST_EXTRA_VALUES = 1 << 20  # numbers in tensors the references do not have (rule outputs and the like)


class _Budget:
    def __init__(self) -> None:
        self.items, self.extra = MOST_ITEMS, MOST_EXTRA_VALUES

    def spend(self, where: str, extra_values: int = 0) -> None:
        self.items -= 1
        self.extra -= extra_values
        if self.items < 0:
            raise Bad(f"hold more than {MOST_ITEMS:,} tensors, lists and numbers (the limit was reached {where})")
        if self.extra < 0:
            raise Bad(f"hold more than {MOST_EXTRA_VALUES:,} values the reference does not have (the limit was "
                      f"reached {where})")


def _checked(got, expected: list[dict] | None) -> dict:
    """GOT, the child's dict, checked and cleaned: its strings sanitized, its outputs shaped as EXPECTED."""
    if type(got) is not dict or type(got.get("ok")) is not bool:
        raise Bad(f"are {_kind(got)}, not the result gradlab's child sends")
    out = {"warnings": tuple(one_line(_text(w, 600), 500) for w in _items(got.get("warnings", []), 50)),
           "used": tuple(one_line(_text(u, 200), 120) for u in _items(got.get("used", []), 50))}
    if not got["ok"]:
        kind = got.get("kind")
        return out | {"ok": False, "kind": kind if kind in KINDS else "raised",
                      "error": one_line(_text(got.get("error", ""), 4000), 1000),
                      "trace": sanitize(_text(got.get("trace", ""), 20_000))}
    outputs = got.get("outputs")
    if type(outputs) not in (list, tuple):
        raise Bad(f"are {_kind(outputs)} where a list of outputs is expected")
    if expected is not None and len(outputs) != len(expected):
        raise Bad(f"are {len(outputs)} where {len(expected)} (one per input) are expected")
    budget = _Budget()
    departs = got.get("nonfinite")  # where the first NaN or inf appeared: {"input": i, "line": "N: code (…)"}
    if type(departs) is dict and type(departs.get("input")) is int and 0 <= departs["input"] < len(outputs):
        out["nonfinite"] = {"input": departs["input"], "line": one_line(_text(departs.get("line", ""), 400), 300)}
    if got.get("traced") is not None:  # its operations traced: checked, or dropped whole
        out["traced"] = traced.checked(got["traced"], len(outputs))
    if expected is None:
        return out | {"ok": True, "outputs": [_clean(o, None, f"output {i + 1}", 0, budget)
                                              for i, o in enumerate(outputs)]}
    return out | {"ok": True, "outputs": [_output(o, e, i, budget) for i, (o, e) in enumerate(zip(outputs, expected,
                                                                                                      strict=True))]}


def _items(value, most: int) -> list:
    if type(value) not in (list, tuple):
        raise Bad(f"hold {_kind(value)} where a list is expected")
    return list(value[:most])


def _output(got, want: dict, i: int, budget: _Budget) -> dict:
    where = f"on input {i + 1}"
    if not isinstance(got, dict):
        raise Bad(f"{where} are {_kind(got)}, not a dict of tensors")
    missing = [k for k in want if k not in got]
    if missing:
        raise Bad(f"{where} lack {missing[0]!r}")
    clean = {}
    for key, value in got.items():
        if type(key) is not str:
            raise Bad(f"{where} have a key that is {_kind(key)}")
        clean[key] = _clean(value, want.get(key), f"{where}: {key!r}", 0, budget)
    return clean


def _clean(got, want, where: str, depth: int, budget: _Budget):
    """GOT, checked against WANT (None: a value the reference does not have, kept only if small), within BUDGET."""
    import torch

    if depth > 4:
        raise Bad(f"{where} is nested too deep")
    budget.spend(where, got.numel() if want is None and type(got) in (torch.Tensor, torch.nn.Parameter) else 0)
    if isinstance(want, torch.Tensor) or (want is None and isinstance(got, torch.Tensor)):
        return _tensor(got, want, where)
    if isinstance(want, list | tuple) or (want is None and type(got) in (list, tuple)):
        if type(got) not in (list, tuple):
            raise Bad(f"{where} is {_kind(got)} where a list of {len(want)} tensors is expected")
        if want is not None and len(got) != len(want):
            raise Bad(f"{where} has {len(got)} tensor{'' if len(got) == 1 else 's'} where {len(want)} "
                      f"{'is' if len(want) == 1 else 'are'} expected")
        if want is None and len(got) > 64:
            raise Bad(f"{where} has {len(got)} items")
        return [_clean(g, w, f"{where}[{j}]", depth + 1, budget)
                for j, (g, w) in enumerate(zip(got, want if want is not None else [None] * len(got), strict=True))]
    if isinstance(want, dict) or (want is None and isinstance(got, dict)):
        if not isinstance(got, dict) or (want is not None and set(got) != set(want)) or len(got) > 64:
            raise Bad(f"{where} is {_kind(got)} where {_kind(want)} is expected")
        return {k: _clean(v, want.get(k) if want else None, f"{where}[{k!r}]", depth + 1, budget)
                for k, v in got.items()
                if type(k) is str}
    if type(got) in (bool, int, float) and (want is None or type(want) in (bool, int, float)):
        return got if not isinstance(got, float) or math.isfinite(got) or want is not None else float("nan")
    if got is None and want is None:
        return None
    raise Bad(f"{where} is {_kind(got)} where {_kind(want)} is expected")


REAL = ("float16", "bfloat16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64", "bool")


def shape_hint(got: tuple[int, ...], want: tuple[int, ...]) -> str:
    """What a shape that is not the expected one usually means, from the two shapes alone: the values are not
    compared (they cannot be, in another shape), so a known mistake that changes the shape is named here."""
    if got == want:
        return ""
    if len(got) == len(want) == 2 and got == want[::-1]:
        return ": the expected shape transposed (rows and columns swapped: one row per output?)"
    drop = lambda s: tuple(n for n in s if n != 1)  # noqa: E731
    if drop(got) == drop(want):
        more = len(got) > len(want)
        return (f": a dimension of size 1 {'too many' if more else 'missing'} "
                f"({'keepdim=True, or an unsqueeze' if more else 'keepdim=True forgotten, or a squeeze'}?)")
    if len(got) == len(want) + 1 and got[-1] == got[-2] and want and want[-1] == got[-1]:
        return (": one dimension more, square: an (N, 1) combined with an (N,) broadcasts to (N, N) (check the "
                "shapes you add or multiply)")
    if math.prod(got) == math.prod(want):
        return (": the same number of values, arranged differently (a reshape, or a stack or cat along another "
                "dimension?)")
    return ""


def _tensor(got, want, where: str):
    """GOT as a plain CPU tensor of WANT's shape (WANT None: at most 4096 values), owning its memory."""
    import torch

    if type(got) not in (torch.Tensor, torch.nn.Parameter):
        raise Bad(f"{where} is {_kind(got)}, not a tensor")
    if got.layout != torch.strided or got.device.type != "cpu" or str(got.dtype).removeprefix("torch.") not in REAL:
        raise Bad(f"{where} is a {got.layout} {got.dtype} tensor on {got.device}, not a real-valued CPU tensor")
    shape = tuple(got.shape)
    if want is not None and shape != tuple(want.shape):
        hint = shape_hint(shape, tuple(want.shape))
        raise Bad(f"{where} has shape {shape} where {tuple(want.shape)} is expected{hint}")
    numel = math.prod(shape)
    if want is None and numel > 4096:
        raise Bad(f"{where} holds {numel} values")
    size = got.element_size()
    extent = got.storage_offset() + 1 + sum((n - 1) * s for n, s in zip(shape, got.stride(), strict=True)) if numel \
        else 0
    storage = got.untyped_storage().nbytes()
    if extent * size > storage:
        raise Bad(f"{where} points outside its storage")
    if storage > 8 * numel * size + 4096:  # a view into a far larger storage, or a stride-0 view
        raise Bad(f"{where} keeps {storage:,} bytes of storage for {numel:,} values")
    return got.detach().clone(memory_format=torch.contiguous_format)


def _kind(value) -> str:
    if value is None:
        return "None"
    name = type(value).__name__
    if isinstance(value, list | tuple | dict):
        return f"a {name} of {len(value)} item{'' if len(value) == 1 else 's'}"
    article = "an" if name[:1].lower() in "aeiou" else "a"
    if type(value).__module__ == "torch" and hasattr(value, "shape"):
        return f"{article} {name} of shape {tuple(value.shape)}"
    return f"{article} {name}"
