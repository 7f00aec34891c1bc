"""A sandbox's life, from gradlab's side: a Box is started (its cgroup, its uid slot, its command: bwrap, a uid of its
own or a plain child), watched within its time limit, its output collected (capped), and cleaned (everything it left
running killed, what it wrote removed, the slot released); stop_all() ends every Box of this process at once."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from gradlab.practice import harness_module
from gradlab.practice.sandbox import bwrap, capacity, cgroups, files, modes, returned, slots
from gradlab.practice.sandbox.limits import (
    GRADLAB_OOM_SCORE_ADJ,
    SANDBOX_OOM_SCORE_ADJ,
    START,
    STARTUP_S,
    Limits,
    Outcome,
)

# ------------------------------------------------------------------------------------------------------------- run

_LIVE: dict[int, object] = {}  # Boxes in progress: their kill_all, so that stop_all() can end them from any thread
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def stop_all() -> None:
    """Kill every sandbox this process runs, and start no new one (Ctrl-C or SIGTERM on a class's folder: gradlab
    writes what was graded and leaves at once, its sandboxes with it)."""
    _STOPPING.set()
    with _LIVE_LOCK:
        kills = list(_LIVE.values())
    for kill in kills:
        with contextlib.suppress(Exception):
            kill()


class _Reader(threading.Thread):
    """Drains a pipe: keeps the first KEEP bytes (or, TAIL, the last KEEP), counts them all, notes when the first
    arrived, and calls TOO_MUCH once past MOST."""

    def __init__(self, stream, keep: int, most: int, too_much, tail: bool = False) -> None:
        super().__init__(daemon=True)
        self.stream, self.keep, self.most, self.too_much, self.tail = stream, keep, most, too_much, tail
        self.data, self.total, self.first_at = bytearray(), 0, None

    def run(self) -> None:
        with self.stream as f:
            while chunk := f.read(1 << 16):
                if self.first_at is None:
                    self.first_at = time.monotonic()
                self.total += len(chunk)
                if self.tail:
                    self.data += chunk
                    if len(self.data) > 2 * self.keep:
                        del self.data[:-self.keep]
                elif len(self.data) < self.keep:
                    self.data += chunk[: self.keep - len(self.data)]
                if self.total > self.most:
                    self.too_much()
                    return

    def kept(self) -> bytes:
        return bytes(self.data[-self.keep:] if self.tail else self.data)


def run(command: list[str], *, package: dict[str, str], inputs: bytes, limits: Limits | None = None,
        env: dict[str, str] | None = None, mode: str | None = None) -> Outcome:
    """Run COMMAND in MODE (default: modes.detect()) in a Box of its own, from start to clean. "{pkg}" in COMMAND is
    the folder holding PACKAGE's files ({relative path: the file to copy or bind}), with an empty __init__.py in each
    package folder lacking one: the only code of gradlab's the process gets. INPUTS reach it through $GRADLAB_IN
    ("fd:N" or a path); what it writes to $GRADLAB_OUT comes back as Outcome.output; stdout and stderr come back cut
    to their last bytes."""
    box = Box(mode or modes.detect().mode, limits or Limits())
    try:
        box.start(command, package=package, inputs=inputs, env=env or {})
        box.watch()
        return box.collect()
    finally:
        box.clean()


class Box:
    """One sandbox's life: start() makes its cgroup, takes its uid slot and starts its process; watch() waits within
    its time limit; collect() kills what it left running and gathers what came out; clean() lets go of everything it
    holds, whatever happened (each of them once; clean() after an exception midway too)."""

    def __init__(self, mode: str, limits: Limits) -> None:
        if _STOPPING.is_set():
            raise RuntimeError("gradlab is stopping: no new sandbox is started")
        self.mode, self.limits = mode, limits
        self.started = time.monotonic()
        self.slot = slots.Slot(mode) if mode in ("uid", "bwrap") else None  # userns: the caller's uid, no slot
        self.uid = self.slot.uid if self.slot else None
        self.stopped: str | None = None  # why gradlab stopped it (Outcome.stopped)
        self.cleaned = False  # everything it left is gone (else its folder and slot are left to slots.recover())
        self.fds: list[int] = []  # what the process inherits, closed here once it started
        self.proc: subprocess.Popen | None = None
        self.group: cgroups.Group | None = None
        self.launch: _Launch | None = None
        self.readers: list[_Reader] = []

    def start(self, command: list[str], *, package: dict[str, str], inputs: bytes, env: dict[str, str]) -> None:
        self.group = _group(self.limits) if self.mode != "plain" else None
        group_fds = self.group.procs_fds() if self.group else []
        self.fds += group_fds
        out_r, out_w = os.pipe() if os.name == "posix" else (None, None)
        if out_w is not None:
            os.set_inheritable(out_w, True)
            self.fds.append(out_w)
        if self.uid is not None:
            slots.kill_uid(self.uid)  # leftovers of a gradlab that crashed: they would count against RLIMIT_NPROC
        self.launch = _launch(self.mode, command, uid=self.uid, limits=self.limits, package=package, inputs=inputs,
                              env=env, out_w=out_w, fds=self.fds, group_fds=group_fds)
        self.proc = subprocess.Popen(
            self.launch.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=self.launch.env, cwd=self.launch.cwd, pass_fds=self.fds, start_new_session=self.launch.new_session,
            preexec_fn=_plain_limits(self.limits) if self.mode == "plain" and os.name == "posix" else None)
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()
        with _LIVE_LOCK:
            _LIVE[id(self)] = self.kill_all
        self.readers = [_Reader(self.proc.stdout, self.limits.printed_kept, self.limits.printed_max,
                                self._too_much("printed too much"), tail=True)]
        if out_r is not None:  # the output pipe; the reader closes it
            self.readers.append(_Reader(open(out_r, "rb", buffering=0), self.limits.output_max + 2,  # noqa: SIM115
                                        self.limits.output_max + 1, self._too_much("output too large")))
        for r in self.readers:
            r.start()

    def _too_much(self, why: str):
        def stop() -> None:
            if not self.stopped:
                self.stopped = why
                self.kill_all()
        return stop

    def kill_all(self) -> None:
        """The process and everything of its uid (a sandbox's daemons, its workers)."""
        _kill(self.proc, self.mode)
        if self.uid is not None:
            slots.kill_uid(self.uid)

    def watch(self) -> None:
        """Wait for the process within its time limit, which runs from the moment the submission's own code starts
        (the child says so with its first byte out): torch's import on a busy machine is not the student's time;
        STARTUP_S caps it."""
        out = self.readers[1] if len(self.readers) > 1 else None
        while True:
            started_at = out.first_at if out is not None else self.started
            if started_at is None:
                deadline, step = self.started + STARTUP_S + self.limits.timeout_s, 0.05
            else:
                deadline, step = started_at + self.limits.timeout_s, math.inf
            left = deadline - time.monotonic()
            if left <= 0:  # before the child's first byte: the machine was too slow to start it, not the student
                self.stopped = self.stopped or ("timeout" if started_at is not None else "startup")
                return
            if _wait(self.proc, min(left, step)):
                return

    def collect(self) -> Outcome:
        """What the run came to: whatever it left behind killed (its uid's processes, then the cgroup, read for its
        memory peak before it goes), what it printed and sent."""
        self.kill_all()
        self.proc.wait()
        for r in self.readers:
            r.join(5)
        output = self.readers[1].kept() if len(self.readers) > 1 else _output_file(self.launch.out_file, self.limits)
        output = output[1:] if output[:1] == START else b""
        leftovers = slots.kill_uid(self.uid) if self.uid is not None else []
        peak = self.group.memory_peak() if self.group else None
        leftovers += self.group.remove() if self.group else []
        if self.mode == "uid":  # as the uid: what it wrote in its box and the machine's shared folders
            self.cleaned = slots.clean_as_uid(self.uid, (str(self.launch.work / "box"), *slots.SHARED_TMP))
        else:
            self.cleaned = not leftovers
        printed = self.readers[0]
        return Outcome(mode=self.mode, returncode=self.proc.returncode, stopped=self.stopped, printed=printed.kept(),
                       printed_bytes=printed.total, output=None if self.stopped else output,
                       wall_s=time.monotonic() - self.started, uid=self.uid, leftovers=leftovers,
                       cgroup=self.group.version if self.group else "", memory_peak=peak)

    def clean(self) -> None:
        """Let go of what the Box holds, whatever happened: the process, the fds, the cgroup, the folder, the slot."""
        with _LIVE_LOCK:
            _LIVE.pop(id(self), None)
        if self.proc is not None and self.proc.poll() is None:  # an exception of our own midway
            _kill(self.proc, self.mode)
            self.proc.wait()
        for fd in self.fds:
            os.close(fd)
        self.fds.clear()
        if self.group is not None:
            self.group.remove()
        work = self.launch.work if self.launch else None
        if work is not None and (self.mode == "plain" or self.cleaned):  # else left to slots.recover() (as the uid)
            shutil.rmtree(work, ignore_errors=True)
        if self.slot:
            self.slot.release(cleaned=self.cleaned)
            self.slot = None


@dataclass(kw_only=True)
class _Launch:
    cmd: list[str]
    env: dict[str, str]
    cwd: str
    new_session: bool  # its own session and process group (bwrap makes one itself)
    work: Path | None = None  # a folder of gradlab's for this run (uid, plain)
    out_file: Path | None = None  # where the outputs are written when no pipe can be passed (Windows)


def _launch(mode: str, command: list[str], *, uid: int | None, limits: Limits, package: dict[str, str],
            inputs: bytes, env: dict[str, str], out_w: int | None, fds: list[int], group_fds: list[int]) -> _Launch:
    """How COMMAND starts in MODE; the fds it must inherit are added to FDS. UID: the sandbox's (None: userns, the
    caller's own)."""
    base_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
                "PYTHONIOENCODING": "utf-8:backslashreplace", **env}
    if mode == "plain":
        return _launch_plain(command, package, inputs, base_env, out_w)
    in_fd = bwrap.memfd(inputs, "gradlab-inputs")
    fds.append(in_fd)
    base_env |= {"GRADLAB_IN": f"fd:{in_fd}", "GRADLAB_OUT": f"fd:{out_w}", "GLOO_SOCKET_IFNAME": "lo"}
    if mode in ("bwrap", "userns"):
        options = bwrap.bwrap_options(uid if uid is not None else os.getuid(), limits, package, fds,
                                {**base_env, "HOME": bwrap.BOX, "TMPDIR": "/tmp"}, user=mode == "userns")
        args_fd = bwrap.memfd(b"".join(s.encode() + b"\0" for s in options), "bwrap-args")
        fds.append(args_fd)
        launch = _Launch(cmd=["bwrap", "--args", str(args_fd), "--",
                              *bwrap.stage1_command(uid, limits, [in_fd, out_w], bwrap.PKG, group_fds),
                              *(a.replace("{pkg}", bwrap.PKG) for a in command)],
                         env={}, cwd="/", new_session=False)
    else:
        work = Path(tempfile.mkdtemp(prefix=f"gradlab-box-{uid}-"))  # root 0700 until filled
        pkg, box = work / "pkg", work / "box"
        _copy_package(package, pkg)
        box.mkdir(mode=0o700)
        (box / "tmp").mkdir(mode=0o700)
        for p in (box, box / "tmp"):
            os.chown(p, uid, uid)
        os.chmod(work, 0o711)  # others may pass through to pkg/, not list; box/ is the sandbox uid's alone
        launch = _Launch(cmd=[*bwrap.stage1_command(uid, limits, [in_fd, out_w], str(pkg), group_fds),
                              *(a.replace("{pkg}", str(pkg)) for a in command)],
                         env={**base_env, "HOME": str(box), "TMPDIR": str(box / "tmp"), "GRADLAB_SEAL_INET": "1"},
                         cwd=str(box), new_session=True, work=work)
    # the OOM killer's first choice, inherited by all of it (bwrap's /proc is read-only: it cannot lower it)
    launch.cmd = ["/bin/sh", "-c", f'echo {SANDBOX_OOM_SCORE_ADJ} > /proc/self/oom_score_adj && exec "$@"', "sh",
                  *launch.cmd]
    return launch


def _launch_plain(command: list[str], package: dict[str, str], inputs: bytes, base_env: dict[str, str],
                  out_w: int | None) -> _Launch:
    """As the caller, where it runs (a laptop; Windows too: no pipe to pass, a file instead)."""
    work = Path(tempfile.mkdtemp(prefix="gradlab-check-"))
    _copy_package(package, work / "pkg")
    (work / "in").write_bytes(inputs)
    out_file = None if out_w is not None else work / "out"
    popen_env = {**os.environ, **base_env, "GRADLAB_IN": str(work / "in"),
                 "GRADLAB_OUT": f"fd:{out_w}" if out_w is not None else str(out_file)}
    popen_env.pop("PYTHONPATH", None)
    return _Launch(cmd=[a.replace("{pkg}", str(work / "pkg")) for a in command], env=popen_env, cwd=str(work),
                   new_session=os.name == "posix", work=work, out_file=out_file)


def _output_file(out_file: Path | None, limits: Limits) -> bytes:
    if out_file is None or not out_file.is_file() or out_file.stat().st_size > limits.output_max:
        return b""
    return out_file.read_bytes()


def _group(limits: Limits) -> cgroups.Group | None:
    """The sandbox's own cgroup where this machine allows one (cgroups.available()), else None; gradlab's own process
    is made the OOM killer's last choice (the sandbox's processes are its first: stage 1)."""
    if not cgroups.available()[0]:
        return None
    _protect_gradlab()
    return cgroups.Group(memory=limits.group_memory, pids=limits.nproc, cpus=limits.cpus)


@functools.cache
def _protect_gradlab() -> None:
    with contextlib.suppress(OSError):  # root only: lowering it needs CAP_SYS_RESOURCE
        Path("/proc/self/oom_score_adj").write_text(str(GRADLAB_OOM_SCORE_ADJ))


def _copy_package(package: dict[str, str], pkg: Path) -> None:
    pkg.mkdir(mode=0o755)
    for rel, src in package.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        shutil.copyfile(src, pkg / rel)
    for stub in bwrap.init_stubs(package):
        (pkg / stub).write_bytes(b"")
    for p in [pkg, *pkg.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o444)


def _wait(proc: subprocess.Popen, timeout: float) -> bool:
    """Whether PROC ended within TIMEOUT. Popen.wait(timeout) polls with sleeps of up to 50 ms: a pidfd wakes at the
    exit itself."""
    if hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):
            pidfd = os.pidfd_open(proc.pid)
            try:
                return bool(select.select([pidfd], [], [], timeout)[0])
            finally:
                os.close(pidfd)
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def _kill(proc: subprocess.Popen, mode: str) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
        if mode in ("bwrap", "userns"):  # the namespace's init first: the kernel kills all of the namespace with it,
            for pid in _children(proc.pid):  # and the outer bwrap reaps it (killing the outer one first leaves the
                os.kill(pid, signal.SIGKILL)  # init to the host's init to reap)
            proc.wait(1)
        elif mode == "plain" and os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _plain_limits(limits: Limits):
    def apply() -> None:  # in the child, before it runs anything (POSIX)
        import resource

        for name, value in (("AS", limits.memory), ("FSIZE", limits.fsize), ("CORE", 0)):
            with contextlib.suppress(ValueError, OSError):  # macOS refuses some of them
                resource.setrlimit(getattr(resource, "RLIMIT_" + name), (value, value))
    return apply


# ------------------------------------------------------------------------- a submission's process, started at once
TIMEOUT_S = 20.0


class Sandbox:
    """The submission's process, started at once (it imports torch while gradlab computes the references).

    SOURCE is the submission: a file's bytes (KIND "source"), or a function pickled by cloudpickle ("pickle"); SHOWN
    the name the student knows it by (their file's path); LINES the text of notebook cells, for tracebacks, and
    CODE_FILES the cell file of each pickled code object (gradlab.practice.classroom.notebook.pickled)."""

    def __init__(self, exercise, seed: int, *, source: bytes, shown: str, kind: str = "source",
                 lines: dict[str, str] | None = None, code_files: list | None = None, timeout_s: float | None = None,
                 mode: str | None = None, graph: bool = False) -> None:
        self.timeout_s = timeout_s or TIMEOUT_S
        self.mode = mode or modes.detect().mode
        self.limits = capacity.limits(self.mode, self.timeout_s)
        header = {"harness": harness_module(exercise), "function": exercise.function, "seed": seed, "kind": kind,
                  "shown": shown, "lines": lines or {}, "code_files": code_files or [],
                  "forbidden": list(getattr(exercise, "forbidden", ())), "graph": graph}
        # GRAPH: the first input only, its backward pass caught (gradlab/practice/inside/backward.py)
        self.graph = graph
        inputs = json.dumps(header).encode() + b"\n" + source
        package = files.sandbox_files(harness_module(exercise))
        # a teacher's own exercise (gradlab.practice.classroom.own): its harness alone
        if getattr(exercise, "package", ""):
            package[f"{exercise.package}/harness.py"] = str(Path(exercise.folder) / "harness.py")
        self._outcome: dict = {}

        def started() -> None:
            try:
                self._outcome["value"] = run([sys.executable, "-I", "-c", files.CHILD, "{pkg}"], package=package,
                                             inputs=inputs, limits=self.limits, mode=self.mode)
            except BaseException as e:  # gradlab's own failure: reported as such, never as the student's
                self._outcome["error"] = e

        self._thread = threading.Thread(target=started, daemon=True)
        self._thread.start()

    def finish(self, expected: list[dict] | None = None) -> returned.Received:
        """What came back, checked (a Received: the outputs, or how it stopped, with what it printed and warned, the
        forbidden calls it made and the sandbox's mode). EXPECTED (the references' outputs) gives the structure the
        outputs must have. Waits for the process, at most the time limit from its start."""
        self._thread.join()
        if "error" in self._outcome:
            raise self._outcome["error"]
        return returned.received(self._outcome["value"], expected, self.timeout_s, self.limits, graph=self.graph)
