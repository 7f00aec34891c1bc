"""The submission's process (started by gradlab/practice/sandbox/box.py: bubblewrap, a uid of its own or a plain child
process): run the student's code on every input through the exercise's harness and send back the outputs, tensors only.
gradlab itself never imports this module; in the sandbox it is one of the few files of gradlab's that exist (with the
harness, the shared harness module, stage 1 and the seccomp filters), so it imports nothing else of gradlab's at module
level.

    python -I -c "import sys; sys.path.insert(0, sys.argv[1]); from gradlab.practice.inside.child import main; main()" \
        PKG

$GRADLAB_IN ("fd:N" or a path) holds a JSON header line, then the submission: its source, or a function pickled by
cloudpickle (gradlab.check in a notebook; unpickled here, never in gradlab's process). The header names the harness
module, the function, the seed (the child makes the inputs itself, from the seed, while gradlab makes the same ones for
the references), the file's name as the student knows it, and the calls the exercise asks students not to use. The
result goes to $GRADLAB_OUT in gradlab/practice/inside/wire.py's format (safetensors'): {"ok", "outputs" | "kind",
"error", "trace"; "warnings", "used"; "nonfinite" or "traced": each input run again, its operations recorded by
gradlab/practice/inside/trace.py, for finding where a wrong value departs}. The process then leaves with os._exit: a
thread the submission left running cannot keep it alive.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import hashlib
import importlib
import inspect
import io
import json
import linecache
import os
import pickle
import re
import sys
import time
import traceback
import types
import warnings

# gradlab's files, here: the folder above gradlab/practice/inside/child.py's gradlab/
PKG_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
WARNINGS_KEPT = 20


def _read(where: str) -> bytes:
    if where.startswith("fd:"):
        fd, chunks = int(where[3:]), []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        os.close(fd)
        return b"".join(chunks)
    with open(where, "rb") as f:
        return f.read()


def _writer(where: str):
    return os.fdopen(int(where[3:]), "wb") if where.startswith("fd:") else open(where, "wb")


def _library(filename: str) -> bool:
    """Whether a frame's file is Python's own: the standard library, torch, site-packages, import machinery."""
    if filename.startswith("<frozen"):
        return True
    path = os.path.abspath(filename) if filename and not filename.startswith("<") else filename
    return any(path.startswith(r.rstrip(os.sep) + os.sep) for r in (sys.prefix, sys.base_prefix, sys.exec_prefix) if r)


def _gradlab(filename: str) -> bool:
    """Whether a frame's file is one of gradlab's package here (the child, the harness) or a teacher's own exercise's
    harness (its package gradlab_own_*, gradlab.practice.classroom.own), not a file that merely lies beside it (a
    checkout's
    examples/ or tests/): neither is the student's code, in a traceback or as the caller of a forbidden function."""
    return filename.startswith((os.path.join(PKG_ROOT, "gradlab") + os.sep, os.path.join(PKG_ROOT, "gradlab_own_")))


def _ours(filename: str) -> bool:
    return _library(filename) or _gradlab(filename)


def _students_call(frame) -> bool:
    """Whether the first frame above FRAME that is neither Python's nor torch's is the student's (not the harness's):
    torch.optim.SGD(...) from the student's code reaches Optimizer.__init__ through torch's own SGD.__init__."""
    while frame is not None and _library(frame.f_code.co_filename):
        frame = frame.f_back
    return frame is not None and not _gradlab(frame.f_code.co_filename)


def student_trace(error: BaseException, forward: str = "") -> tuple[str, str]:
    """(one line, the traceback cut to the frames of the student's own code): the line says the student's line that
    raised, and the tensors it names, measured (shape, dtype, whether they require grad); FORWARD, for an error
    raised inside a backward pass, the student's line whose operation's backward failed (anomaly())."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _ours(f.filename)]
    line = " ".join(f"{type(error).__name__}: {error}".split())
    if forward:  # torch's hint (enable anomaly detection) is what found the line: said instead
        line = line.split(" Hint: enable anomaly detection")[0]
    line = line[:300]
    if frames:
        code = (frames[-1].line or "").strip()
        line += f" (line {frames[-1].lineno}: {code[:80]})" if code else f" (line {frames[-1].lineno})"
        seen = _tensors_on(error, code)
        if seen:
            line += f"; the tensors on that line: {seen}"
    elif forward:
        line += f" (in the backward of your line {forward})"
    trace = "".join(traceback.format_list(frames)) + f"{type(error).__name__}: {error}"
    return line, trace[-20000:]


def _tensors_on(error: BaseException, code: str) -> str:
    """The tensors that CODE (the student's line that raised) names, as its frame held them: "x (100, 784)
    float64, W (784, 10) float32 requiring grad"; at most six."""
    import torch

    tb, frame = error.__traceback__, None
    while tb is not None:
        if not _ours(tb.tb_frame.f_code.co_filename):
            frame = tb.tb_frame
        tb = tb.tb_next
    if frame is None:
        return ""
    said = []
    for name in dict.fromkeys(re.findall(r"(?<![\w.])[A-Za-z_]\w*", code)):
        value = frame.f_locals.get(name)
        if isinstance(value, torch.Tensor) and len(said) < 6:
            grad = " requiring grad" if value.requires_grad else ""
            said.append(f"{name} {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}{grad}")
    return ", ".join(said)


def anomaly(call) -> str:
    """The student's line whose operation's backward raised, for an error that autograd's engine raised with no frame
    of the student's in its traceback: CALL run again under anomaly detection (NaN checks off), which warns with the
    traceback of the forward call behind the failing backward. "" when it names no line of the student's."""
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.autograd.detect_anomaly(check_nan=False):
                call()
        except BaseException:  # the error is already known: this run is for its warning
            pass
    for w in caught:
        text = str(w.message)
        if "Traceback of forward call" not in text:
            continue
        frames = re.findall(r'File "(.*?)", line (\d+), in .*\n\s*(.*)', text)
        mine = [(n, code) for f, n, code in frames if not _ours(f)]
        if mine:
            return f"{mine[-1][0]}: {mine[-1][1].strip()[:80]}"
    return ""


def _student_line(frame, mine) -> str:
    """"N: code" for the student's line that FRAME's call came from ("" when the first frame outside Python and torch
    is not the student's, MINE(filename) false: the harness's own operation)."""
    while frame is not None and _library(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None or not mine(frame.f_code.co_filename):
        return ""
    code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{frame.f_lineno}: {code[:80]}"


def _nonfinite(value, depth: int = 0) -> bool:
    """Whether VALUE (a tensor, or a list, tuple or dict of them) holds a NaN or an inf."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.is_floating_point() and value.numel() > 0 and not bool(torch.isfinite(value.detach()).all())
    if depth < 3 and isinstance(value, list | tuple):
        return any(_nonfinite(v, depth + 1) for v in value[:64])
    if depth < 3 and isinstance(value, dict):
        return any(_nonfinite(v, depth + 1) for v in list(value.values())[:64])
    return False


def first_nonfinite(call, most: int = 20_000, mine=None, function=None) -> str:
    """Where the first NaN or inf of CALL (one input, run again) appears, as the student's line: the first torch
    operation called from the student's file whose result holds one while its arguments do not (the first MOST
    operations watched), else the first backward that returns NaN (anomaly detection names the forward line behind
    it; the student's own autograd.Function FUNCTION, its backward). "" when neither names a line of the student's.
    MINE(filename): whether a file is the student's (here: any file neither Python's, torch's nor gradlab's)."""
    import torch
    from torch.overrides import TorchFunctionMode

    mine = mine or (lambda filename: not _ours(filename))
    found: list[str] = []

    class Watch(TorchFunctionMode):
        seen = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not found and self.seen < most:
                self.seen += 1
                if _nonfinite(out) and not _nonfinite(args) and not _nonfinite(kwargs or {}):
                    where = _student_line(sys._getframe(1), mine)
                    if where:
                        found.append(f"{where} ({getattr(func, '__name__', 'an operation')} made the first NaN or "
                                     "inf, from finite arguments)")
            return out

    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")  # what the student's code prints or warns again is not shown twice
        try:
            with Watch(), torch.autograd.detect_anomaly(check_nan=True):
                call()
        except BaseException as e:  # anomaly detection's NaN check raises: the warning before it names the line
            failed = re.search(r"Function '(\w+)' returned nan values", str(e))
            own = getattr(function, "backward", None) if isinstance(function, type) else None
            if not found and failed and own is not None and failed[1] == f"{function.__name__}Backward":
                code = getattr(own, "__code__", None)
                at = code.co_firstlineno if code else 0  # the def's line, below its decorators
                at = next((k for k in range(at, at + 8) if linecache.getline(code.co_filename, k).lstrip()
                           .startswith("def ")), at) if code else "?"
                found.append(f"{at}: the backward of your {function.__name__} (it returned the first NaN)")
            if not found and failed:
                for w in caught:
                    frames = re.findall(r'File "(.*?)", line (\d+), in .*\n\s*(.*)', str(w.message))
                    theirs = [(n, code) for f, n, code in frames if mine(f)]
                    if "Traceback of forward call" in str(w.message) and theirs:
                        found.append(f"{theirs[-1][0]}: {theirs[-1][1].strip()[:80]} (its backward, {failed[1]}, "
                                     "returned the first NaN)")
    return found[0] if found else ""


def _sendable(traced: list) -> bool:
    """Whether TRACED goes through the wire with room to spare for the outputs (its header at most half the wire's
    bound): a trace must never be what makes a result unreadable."""
    from gradlab.practice.inside import wire

    try:
        data = wire.encode({"traced": traced})
    except Exception:  # a value the wire cannot carry
        return False
    return int.from_bytes(data[:8], "little") <= wire.MOST_HEADER // 2


class Forbidden:
    """The calls an exercise asks students not to use (Exercise.forbidden: "torch.nn.utils.clip_grad_norm_"), wrapped
    before the submission is imported so that a call from the student's code is noted: a function, wherever a loaded
    module holds it; a method of a class; a class (its __init__: any subclass, named as the student used it). Calls
    from gradlab's harness, and calls made inside another forbidden call, are not the student's."""

    def __init__(self, names: list[str]) -> None:
        self.used: list[str] = []
        self.active = False  # while the submission loads, and while its function runs
        self.depth = 0
        self.replaced: list[tuple[object, str, object]] = []  # (owner, attribute, what it held): for restore()
        for name in names:
            with contextlib.suppress(Exception):  # a name this torch does not have: nothing to forbid
                self._wrap(name)

    def _wrap(self, name: str) -> None:
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ImportError:
                continue
        owner = None
        for attr in parts[i:]:
            owner, obj = obj, getattr(obj, attr)
        if isinstance(obj, type):  # a class: its __init__, as the subclass the student built
            owner, attr, original = obj, "__init__", obj.__init__
            label = ".".join(parts[:-1])
            self._set(owner, attr, self._wrapper(original, lambda args: f"{label}.{type(args[0]).__name__}"))
            return
        wrapper = self._wrapper(obj, lambda args: name)
        if type(obj).__name__ == "OpOverloadPacket":  # torch.ops.aten.X: its overloads too (X.default, X.out),
            for overload in obj.overloads():  # which functools.wraps would hand on unwatched
                setattr(wrapper, overload, self._wrapper(getattr(obj, overload), lambda args: name))
        self._set(owner, attr, wrapper)
        if type(owner).__name__ == "module":  # the same function under other names (torch.nn.utils.clip_grad...)
            for module in list(sys.modules.values()):
                for key, value in list(getattr(module, "__dict__", {}).items()):
                    if value is obj:
                        self._set(module, key, wrapper)

    def _set(self, owner, attr: str, value) -> None:
        self.replaced.append((owner, attr, owner.__dict__.get(attr, getattr(owner, attr))))
        setattr(owner, attr, value)

    def restore(self) -> None:
        """Put back everything wrapped (the child never needs to: it ends with the check; a process that goes on
        using torch does, e.g. torch.func's decompositions need torch.ops.aten's own objects)."""
        for owner, attr, original in reversed(self.replaced):
            setattr(owner, attr, original)
        self.replaced.clear()

    def _wrapper(self, original, label):
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            if self.depth == 0 and self.active and _students_call(sys._getframe(1)):
                used = label(args)
                if used not in self.used:
                    self.used.append(used)
            self.depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                self.depth -= 1
        return wrapper

    def watch(self, fn):
        """FN, noting forbidden calls while it runs (a class is given as is; the harness's call is watched)."""
        if isinstance(fn, type):
            return fn

        @functools.wraps(fn)
        def watched(*args, **kwargs):
            before, self.active = self.active, True
            try:
                return fn(*args, **kwargs)
            finally:
                self.active = before
        return watched


def restore_filenames(fn, code_files: list):
    """FN, unpickled, with each of its code objects' file name put back (the notebook cell it came from: CODE_FILES,
    [qualname, first line, bytecode digest, file name] each, made by gradlab.practice.classroom.notebook.pickled),
    whatever the
    pickler wrote there, so that a traceback shows the student's cell lines. The key is computed as in notebook.code_key
    (this module imports nothing of gradlab's)."""
    where = {(q, line, digest): name for q, line, digest, name in code_files}

    def fixed(code):
        consts = tuple(fixed(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
        key = (getattr(code, "co_qualname", code.co_name), code.co_firstlineno,  # no co_qualname on Python 3.10
               hashlib.sha256(code.co_code).hexdigest()[:16])
        return code.replace(co_filename=where.get(key, code.co_filename), co_consts=consts)

    roots = [fn] if not isinstance(fn, type) else list(vars(fn).values())
    todo = [f for f in (getattr(r, "__func__", r) for r in roots) if inspect.isfunction(f)]
    done: set[int] = set()
    while todo:  # FN, then the functions of its module it reaches through its globals (helpers from other cells)
        f = todo.pop()
        if id(f) in done:
            continue
        done.add(id(f))
        f.__code__ = fixed(f.__code__)
        todo += [g for g in f.__globals__.values() if inspect.isfunction(g) and g.__module__ == f.__module__]
    return fn


# Python's collector, as in every process of gradlab's own (gradlab/kit/heap.py says why and what it measured; it is
# not bound into the sandbox, so its GEN0 is repeated here and tests/test_heap.py checks the two agree): off while
# torch, the harness and the inputs are made, then what they made frozen and generation 0 every GC_GEN0 new containers
# before any code of the submission runs
GC_GEN0 = 10_000


def main() -> None:
    gc.disable()  # until the imports and the inputs are made: then frozen, and the collector on (below)
    header, payload = _received(os.environ["GRADLAB_IN"])
    out = _writer(os.environ["GRADLAB_OUT"])
    # gradlab's few files in the sandbox, imported before any code of the submission runs
    from gradlab.kit import harness as shared
    from gradlab.practice.inside import backward, wire

    function = header["function"]
    harness = importlib.import_module(header["harness"]).HARNESSES[function]
    cases = harness.cases(header["seed"])
    forbidden = Forbidden(header.get("forbidden", []))
    gc.freeze()  # torch, the harness, the inputs: made without the collector, now out of its reach
    gc.set_threshold(GC_GEN0, *gc.get_threshold()[1:])
    gc.enable()  # on before any code of the submission runs: its cycles are collected
    caught = _catch_warnings()
    for filename, text in header.get("lines", {}).items():  # a notebook's cells, for its traceback
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)

    def load():
        """Run the submission here and return its function (a worker of the harness calls it too)."""
        return _load(header, payload, forbidden)

    calls = None
    if harness.prepare:  # gloo workers: each watches the submission's calls and reports them with its result
        shared.WORKER_REPORT = lambda: list(forbidden.used)
        calls = harness.prepare(cases, lambda: forbidden.watch(load()))
    shared.seal()
    gc.freeze()  # torch, the harness and its inputs: no later collection walks them
    out.write(b"S")  # gradlab's clock for the submission starts now (gradlab.practice.sandbox.limits.START)
    out.flush()
    graph = bool(header.get("graph")) and not calls
    if graph:  # gradlab check --graph: the first input alone, its first backward pass caught
        cases = cases[:1]
        caught_call = backward.Caught(harness.call, cases[0], mine=lambda filename: not _ours(filename))
        harness = dataclasses.replace(harness, call=caught_call)
    result = _outputs(harness, cases, calls, load, forbidden, function, shared.REPORTED,
                      rerun=not graph)  # --graph: the first backward is caught once
    if graph and result.get("ok"):
        result["graph"] = harness.call.data
    try:
        data = wire.encode({**result, "warnings": caught, "used": forbidden.used})
    except TypeError as e:  # an output no result can hold (an object of the student's, a complex tensor)
        data = wire.encode({"ok": False, "kind": "output", "error": f"{function} returned {e}, which is not a "
                            "tensor, a number or a list of them", "trace": "", "warnings": caught,
                            "used": forbidden.used})
    out.write(data)
    out.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _received(where: str) -> tuple[dict, bytes]:
    """The JSON header line and the submission after it."""
    head, _, payload = _read(where).partition(b"\n")
    return json.loads(head), payload


def _catch_warnings() -> list[str]:
    """The warnings raised from now on, each once, at most WARNINGS_KEPT: the list they are kept in."""
    caught: list[str] = []

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if len(caught) < WARNINGS_KEPT:
            where = "" if _ours(filename) else f" (line {lineno} of {os.path.basename(filename)})"
            text = f"{category.__name__}: {message}{where}"
            if text not in caught:
                caught.append(text[:500])

    warnings.showwarning = show
    warnings.simplefilter("default")
    return caught


def _load(header: dict, payload: bytes, forbidden: Forbidden):
    """Run the submission PAYLOAD in this process, its forbidden calls watched; its function (None if it has none)."""
    function, shown = header["function"], header["shown"]
    before, forbidden.active = forbidden.active, True
    try:
        if header["kind"] == "pickle":
            return restore_filenames(pickle.loads(payload), header.get("code_files", []))
        source = payload.decode("utf-8", errors="replace")
        linecache.cache[shown] = (len(source), None, source.splitlines(True), shown)
        namespace = {"__name__": "student", "__file__": shown, "__builtins__": __builtins__}
        exec(compile(source, shown, "exec"), namespace)
        return namespace.get(function)
    finally:
        forbidden.active = before


def _outputs(harness, cases: list[dict], calls: list | None, load, forbidden: Forbidden, function: str,
             reported: list, *, rerun: bool = True) -> dict:
    """The submission loaded and called on every case: {"ok": True, "outputs"} (with "nonfinite": where the first
    NaN or inf appeared, when an output holds one and RERUN allows running that input again), or the first failure
    ({"ok": False, "kind", "error", "trace"}). CALLS: the harness's prepared calls (gloo workers, whose forbidden
    calls arrive in REPORTED), else None."""
    try:
        fn = load()
    except SyntaxError as e:
        return {"ok": False, "kind": "syntax", "error": f"syntax error at line {e.lineno}: {e.msg}", "trace": ""}
    except BaseException as e:  # an import error, an exception at the top of the file, sys.exit
        line, trace = student_trace(e)
        return {"ok": False, "kind": "import", "error": f"your file failed before {function}() was called: {line}",
                "trace": trace}
    if not callable(fn):
        return {"ok": False, "kind": "missing", "error": f"your file defines no function {function}()", "trace": ""}
    watched = forbidden.watch(fn)
    outputs, began = [], time.perf_counter()
    for i, case in enumerate(cases):
        try:
            if calls:
                outputs.append(calls[i]())
                forbidden.used += [u for u in dict.fromkeys(reported) if u not in forbidden.used]
            elif isinstance(fn, type):
                forbidden.active = True
                outputs.append(harness.call(fn, case))
                forbidden.active = False
            else:
                outputs.append(harness.call(watched, case))
        except NotImplementedError:
            return {"ok": False, "kind": "todo", "error": f"{function} raises NotImplementedError: write its body",
                    "trace": ""}
        except BaseException as e:
            forward = ""
            if not calls and isinstance(e, RuntimeError) and not any(
                    not _ours(f.filename) for f in traceback.extract_tb(e.__traceback__)):
                forward = anomaly(lambda c=case: harness.call(watched if not isinstance(fn, type) else fn, c))
            line, trace = student_trace(e, forward)
            return {"ok": False, "kind": "raised",
                    "error": f"{function}() raised on the input '{case['label']}': {line}", "trace": trace}
    first = next((i for i, o in enumerate(outputs) if _nonfinite(o)), None)
    if calls or not rerun or (first is None and isinstance(fn, type)):  # gloo workers, an autograd.Function: untraced
        return {"ok": True, "outputs": outputs}
    again = watched if not isinstance(fn, type) else fn
    if first is None:  # every input traced again while the budget lasts: gradlab finds where a wrong value departs
        from gradlab.practice.inside import trace

        if time.perf_counter() - began > trace.MOST_S:  # a slow answer is not run again: its time limit stays its own
            return {"ok": True, "outputs": outputs}
        traced = trace.trace_inputs(lambda c: harness.call(fn, c), cases,  # unwatched: its forbidden calls are known
                                    mine=lambda filename: not _ours(filename))
        return {"ok": True, "outputs": outputs, **({"traced": traced} if _sendable(traced) else {})}
    line = first_nonfinite(lambda: harness.call(again, cases[first]), function=fn)
    return {"ok": True, "outputs": outputs, **({"nonfinite": {"input": first, "line": line}} if line else {})}
